//! Semantic candidates of one view: the pages whose best window vector is nearest the
//! query. Rows are windows (a page longer than the embedder's window has several), found
//! through the segment's HNSW graph (re-scored exactly) when it has one, else by a scan —
//! of the int8 copy with exact re-scoring for segments of
//! [`QUANTIZE_MIN_ROWS`](crate::collection::view::QUANTIZE_MIN_ROWS) vectors or more,
//! of the f32 rows below that.
//!
//! Depth is in pages. A page ranks by its best row, which comes before its other rows
//! in the row list; so the first `depth` distinct pages of the best `k` rows are the best
//! `depth` pages whenever those `k` rows hold that many. When they do not, `k` doubles.
//! A view whose pages are one window each (rows = pages) asks for `depth` rows once, as
//! before windows.

use crate::collection::view::View;

/// The `depth` allowed pages most similar to `query` by their best window, best first,
/// each as (page, score, that window's row); `allow` is `None` when every page is
/// allowed, which spares the scan a call per row.
pub fn search_view(view: &View, query: &[f32], depth: usize, allow: Option<&dyn Fn(u32) -> bool>) -> Vec<(u32, f32, u32)> {
    let b = view.batch();
    let (rows, pages) = (b.windows.len(), b.pages.len());
    let page_of = |row: u32| b.windows[row as usize].page.to_native();
    let allow_row = allow.map(|a| move |row: u32| a(page_of(row)));
    let allow_row = allow_row.as_ref().map(|a| a as &dyn Fn(u32) -> bool);
    // Extra rows beyond one per page: at most that many rows are not a page's best.
    let extra = rows.saturating_sub(pages);
    let mut k = (depth + extra.min(depth)).min(rows);
    loop {
        let hits = rows_top_k(view, query, k, allow_row);
        let got = hits.len();
        let best = best_per_page(hits, page_of, depth);
        if best.len() >= depth || got < k || k >= rows {
            return best;
        }
        k = (k * 2).min(rows);
    }
}

/// The first hit of each page (page, score, row), in order, at most `depth`.
fn best_per_page(hits: Vec<crate::vector::Hit>, page_of: impl Fn(u32) -> u32, depth: usize) -> Vec<(u32, f32, u32)> {
    let mut out: Vec<(u32, f32, u32)> = Vec::with_capacity(depth.min(hits.len()));
    let mut seen = std::collections::HashSet::with_capacity(hits.len());
    for h in hits {
        if out.len() == depth {
            break;
        }
        let page = page_of(h.id);
        if seen.insert(page) {
            out.push((page, h.score, h.id));
        }
    }
    out
}

/// The best `k` rows (windows) of the view.
fn rows_top_k(view: &View, query: &[f32], k: usize, allow: Option<&dyn Fn(u32) -> bool>) -> Vec<crate::vector::Hit> {
    let rows = view.data.vectors();
    match (view.graph(), view.quantized(), allow) {
        (Some(g), _, allow) => g.search(rows, query, k, allow.unwrap_or(&|_| true)),
        (None, Some(q), None) => q.search(rows, query, k, |_| true),
        (None, Some(q), Some(allow)) => q.search(rows, query, k, allow),
        (None, None, allow) => crate::vector::exact_top_k(rows, query.len(), query, k, allow.unwrap_or(&|_| true)),
    }
}
