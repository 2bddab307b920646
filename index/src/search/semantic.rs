//! Semantic candidates of one view: the page vectors nearest the query, through the
//! segment's HNSW graph (re-scored exactly) when it has one, else by a scan — of the
//! int8 copy with exact re-scoring for segments of 1,024 vectors or more, of the f32
//! rows below that.

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query`, best first.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
    let rows = view.data.vectors();
    let hits = match (view.graph(), view.quantized()) {
        (Some(g), _) => g.search(rows, query, depth, allow),
        (None, Some(q)) => q.search(rows, query, depth, allow),
        (None, None) => crate::vector::exact_top_k(rows, query.len(), query, depth, allow),
    };
    hits.into_iter().map(|h| (h.id, h.score)).collect()
}
