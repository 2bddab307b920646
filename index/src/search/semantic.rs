//! Semantic candidates of one view: the page vectors nearest the query, through the
//! segment's HNSW graph (re-scored exactly) when it has one, else by the exact scan.

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query`, best first.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
    let rows = view.data.vectors();
    let hits = match view.graph() {
        Some(g) => g.search(rows, query, depth, allow),
        None => crate::vector::exact_top_k(rows, query.len(), query, depth, allow),
    };
    hits.into_iter().map(|h| (h.id, h.score)).collect()
}
