//! Semantic candidates of one view: the page vectors nearest the query.

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query`, best first.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
    let rows = view.data.vectors();
    let dims = query.len();
    let mut scored: Vec<(u32, f32)> = rows
        .chunks_exact(dims)
        .enumerate()
        .filter(|(i, _)| allow(*i as u32))
        .map(|(i, r)| (i as u32, r.iter().zip(query).map(|(a, b)| a * b).sum()))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(depth);
    scored
}
