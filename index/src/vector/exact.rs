//! The exact scan: score every row against the query and keep the best `k`. It is the
//! ground truth the graph is measured against, the path used while a segment's graph
//! is not ready yet, and the faster path for small segments and very selective filters.

use super::dot::dot;
use super::top_k::TopK;

/// One search result: a row number within the segment and its cosine similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: u32,
    pub score: f32,
}

/// The `k` rows of `rows` (row-major, `dims` floats per row) with the highest dot
/// product with `query`, among those `allow` admits; best first, ties by id ascending.
///
/// Panics if `dims` is zero, `rows` is not a whole number of rows, or `query` is not
/// `dims` long.
pub fn exact_top_k(rows: &[f32], dims: usize, query: &[f32], k: usize, allow: &dyn Fn(u32) -> bool) -> Vec<Hit> {
    check_shape(rows, dims, query);
    if k == 0 {
        return Vec::new();
    }
    let mut top = TopK::new(k);
    for (id, row) in (0u32..).zip(rows.chunks_exact(dims)) {
        if allow(id) {
            top.push(id, dot(row, query));
        }
    }
    top.into_sorted()
}

pub(crate) fn check_shape(rows: &[f32], dims: usize, query: &[f32]) {
    check_rows(rows, dims);
    assert_eq!(query.len(), dims, "query has {} dims, rows have {dims}", query.len());
}

pub(crate) fn check_rows(rows: &[f32], dims: usize) {
    assert!(dims > 0, "vectors of zero dimensions");
    assert_eq!(rows.len() % dims, 0, "rows are not a whole number of {dims}-dim vectors");
    assert!(rows.len() / dims <= u32::MAX as usize, "more rows than u32 ids");
}
