//! The best passages of a result page: its chunks ranked by their BM25 score when the
//! keyword list saw them, then by how many query terms they hold, then by position.

use rustc_hash::FxHashMap as HashMap;

use crate::collection::Snapshot;
use crate::text;

#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// The chunk's ordinal in its view.
    pub chunk: u32,
    /// The query's index terms the chunk holds, in query order.
    pub matched: Vec<String>,
    pub score: f32,
}

/// The best `n` passages of `page` in `view` for the analysed query `terms`: chunks of
/// the asked `kinds` when the page has any, ranked by their keyword score in
/// `chunk_scores` (keyed by (view, chunk)), else by the query terms they hold.
pub fn best(
    snap: &Snapshot,
    view: usize,
    page: u32,
    terms: &[String],
    chunk_scores: &HashMap<(u32, u32), f32>,
    kinds: u32,
    n: usize,
) -> Vec<Passage> {
    let b = snap.views[view].batch();
    let p = &b.pages[page as usize];
    let first = p.first_chunk.to_native();
    let all = first..first + p.chunks.to_native();
    let of_kind = |c: u32| kinds != 0 && b.chunks[c as usize].kinds.to_native() & kinds != 0;
    let chunks: Vec<u32> = if all.clone().any(of_kind) { all.filter(|&c| of_kind(c)).collect() } else { all.collect() };
    let body = |c: u32| {
        let rec = &b.chunks[c as usize];
        &p.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize]
    };
    let matched = |c: u32| text::held_terms(body(c), terms);
    let pos = |c: u32| b.chunks[c as usize].pos.to_native();
    let score = |c: u32| chunk_scores.get(&(view as u32, c)).copied().unwrap_or(0.0);
    // When BM25 scored some of the page's chunks, its scores rank them and only the
    // chosen few are analysed for their matched terms; otherwise (a page only the
    // semantic list found) every chunk is analysed and ranked by the terms it holds.
    if chunks.iter().any(|&c| score(c) > 0.0) {
        let mut ranked = chunks;
        ranked.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(pos(a).cmp(&pos(b))));
        return ranked.into_iter().take(n).map(|c| Passage { chunk: c, matched: matched(c), score: score(c) }).collect();
    }
    let mut ranked: Vec<Passage> = chunks.into_iter().map(|c| Passage { chunk: c, matched: matched(c), score: 0.0 }).collect();
    ranked.sort_by(|a, b| b.matched.len().cmp(&a.matched.len()).then(pos(a.chunk).cmp(&pos(b.chunk))));
    ranked.truncate(n);
    ranked
}
