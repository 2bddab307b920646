//! Semantic candidates of one view: the page vectors nearest the query, by an exact
//! SIMD scan (see `vector` for the HNSW graph used above its crossover).

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query`, best first.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
    let rows = view.data.vectors();
    crate::vector::exact_top_k(rows, query.len(), query, depth, allow).into_iter().map(|h| (h.id, h.score)).collect()
}
