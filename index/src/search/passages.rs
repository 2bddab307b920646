//! The best passages of a result page: its chunks ranked by their BM25 score when the
//! keyword list saw them, then by how many query terms they hold, then by position.

use crate::collection::Snapshot;
use crate::text::Held;

#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// The chunk's ordinal in its view.
    pub chunk: u32,
    /// The query's index terms the chunk holds, in query order.
    pub matched: Vec<String>,
    pub score: f32,
}

/// The keyword list's chunk scores: per view, (chunk, score) in chunk order, so a page's
/// chunks (a run of ordinals) are found by two binary searches.
#[derive(Debug, Clone, Default)]
pub struct ChunkScores(Vec<Vec<(u32, f32)>>);

impl ChunkScores {
    pub fn new(views: usize) -> ChunkScores {
        ChunkScores(vec![Vec::new(); views])
    }

    /// Sets `view`'s scores; `scored` must be in chunk order.
    pub fn set(&mut self, view: usize, scored: Vec<(u32, f32)>) {
        debug_assert!(scored.is_sorted_by_key(|x| x.0));
        if self.0.len() <= view {
            self.0.resize(view + 1, Vec::new());
        }
        self.0[view] = scored;
    }

    /// The scored chunks of `view` in `chunks`.
    fn within(&self, view: usize, chunks: std::ops::Range<u32>) -> &[(u32, f32)] {
        let Some(v) = self.0.get(view) else { return &[] };
        let from = v.partition_point(|x| x.0 < chunks.start);
        let to = from + v[from..].partition_point(|x| x.0 < chunks.end);
        &v[from..to]
    }
}

/// The best `n` passages of `page` in `view` for the query whose analysed terms `held`
/// looks for: chunks of the asked `kinds` when the page has any, ranked by their keyword
/// score in `scores`, else by the query terms they hold.
pub fn best(snap: &Snapshot, view: usize, page: u32, held: &Held, scores: &ChunkScores, kinds: u32, n: usize) -> Vec<Passage> {
    let b = snap.views[view].batch();
    let p = &b.pages[page as usize];
    let first = p.first_chunk.to_native();
    let all = first..first + p.chunks.to_native();
    let scored = scores.within(view, all.clone());
    let of_kind = |c: u32| kinds != 0 && b.chunks[c as usize].kinds.to_native() & kinds != 0;
    let chunks: Vec<u32> = if all.clone().any(of_kind) { all.filter(|&c| of_kind(c)).collect() } else { all.collect() };
    let body = |c: u32| {
        let rec = &b.chunks[c as usize];
        &p.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize]
    };
    let matched = |c: u32| held.in_text(body(c));
    let pos = |c: u32| b.chunks[c as usize].pos.to_native();
    let score = |c: u32| scored.binary_search_by_key(&c, |x| x.0).map_or(0.0, |i| scored[i].1);
    // When BM25 scored some of the page's chunks, its scores rank them and only the
    // chosen few are analysed for their matched terms; otherwise (a page only the
    // semantic list found) every chunk is analysed and ranked by the terms it holds.
    if chunks.iter().any(|&c| score(c) > 0.0) {
        let mut ranked: Vec<(u32, f32)> = chunks.into_iter().map(|c| (c, score(c))).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(pos(a.0).cmp(&pos(b.0))));
        return ranked.into_iter().take(n).map(|(c, s)| Passage { chunk: c, matched: matched(c), score: s }).collect();
    }
    let mut ranked: Vec<Passage> = chunks.into_iter().map(|c| Passage { chunk: c, matched: matched(c), score: 0.0 }).collect();
    ranked.sort_by(|a, b| b.matched.len().cmp(&a.matched.len()).then(pos(a.chunk).cmp(&pos(b.chunk))));
    ranked.truncate(n);
    ranked
}
