//! Semantic candidates of one view: the page vectors nearest the query, through the
//! segment's HNSW graph (re-scored exactly) when it has one, else by a scan — of the
//! int8 copy with exact re-scoring for segments of
//! [`QUANTIZE_MIN_ROWS`](crate::collection::view::QUANTIZE_MIN_ROWS) vectors or more,
//! of the f32 rows below that.

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query`, best first; `allow` is `None`
/// when every page is allowed, which spares the scan a call per row.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: Option<&dyn Fn(u32) -> bool>) -> Vec<(u32, f32)> {
    let rows = view.data.vectors();
    let hits = match (view.graph(), view.quantized(), allow) {
        (Some(g), _, allow) => g.search(rows, query, depth, allow.unwrap_or(&|_| true)),
        (None, Some(q), None) => q.search(rows, query, depth, |_| true),
        (None, Some(q), Some(allow)) => q.search(rows, query, depth, allow),
        (None, None, allow) => crate::vector::exact_top_k(rows, query.len(), query, depth, allow.unwrap_or(&|_| true)),
    };
    hits.into_iter().map(|h| (h.id, h.score)).collect()
}
