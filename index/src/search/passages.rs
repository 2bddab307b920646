//! The best passages of a result page: its chunks ranked by their BM25 score when the
//! keyword list saw them, then by how many query terms they hold, then by position.

use std::collections::HashMap;

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
    let mut ranked: Vec<(Passage, u32)> = chunks
        .into_iter()
        .map(|c| {
            let rec = &b.chunks[c as usize];
            let body = &p.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize];
            let held = text::terms(body);
            let matched: Vec<String> = terms.iter().filter(|t| held.contains(t)).cloned().collect();
            let score = chunk_scores.get(&(view as u32, c)).copied().unwrap_or(0.0);
            (Passage { chunk: c, matched, score }, rec.pos.to_native())
        })
        .collect();
    ranked.sort_by(|(a, apos), (b, bpos)| {
        b.score.total_cmp(&a.score).then(b.matched.len().cmp(&a.matched.len())).then(apos.cmp(bpos))
    });
    ranked.into_iter().take(n).map(|(p, _)| p).collect()
}
