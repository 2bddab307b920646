//! The best passages of a result page: its chunks ranked by their BM25 score when the
//! keyword list saw them, then by how many query terms they hold, then by position; a
//! page only the semantic list found starts at the chunks of its best-matching window.

use crate::bm25::{Matches, Scored};
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

/// The keyword list's matches: per view, the chunks it scored in chunk order (so a
/// page's chunks, a run of ordinals, are found by two binary searches), with the query
/// terms each holds, and whether they are every chunk that holds one.
#[derive(Debug, Clone, Default)]
pub struct ChunkScores(Vec<Matches>);

impl ChunkScores {
    pub fn new(views: usize) -> ChunkScores {
        ChunkScores(vec![Matches::default(); views])
    }

    /// Sets `view`'s matches; their chunks must be in chunk order.
    pub fn set(&mut self, view: usize, matches: Matches) {
        debug_assert!(matches.chunks.is_sorted_by_key(|x| x.chunk));
        if self.0.len() <= view {
            self.0.resize(view + 1, Matches::default());
        }
        self.0[view] = matches;
    }

    /// The scored chunks of `view` in `chunks`, and whether they are every chunk there
    /// that holds a query term.
    fn within(&self, view: usize, chunks: std::ops::Range<u32>) -> (&[Scored], bool) {
        let Some(m) = self.0.get(view) else { return (&[], false) };
        let v = &m.chunks;
        let from = v.partition_point(|x| x.chunk < chunks.start);
        let to = from + v[from..].partition_point(|x| x.chunk < chunks.end);
        (&v[from..to], m.every)
    }
}

/// The best `n` passages of `page` in `view` for the query whose analysed terms `held`
/// looks for: chunks of the asked `kinds` when the page has any, ranked by their keyword
/// score in `scores`, else by the query terms they hold.
///
/// A chunk's matched terms come from the keyword list when it knows them: BM25 indexes
/// a chunk with its document's title, so a term it holds is in the chunk's text unless
/// the title holds it too. When the title holds it once, the chunk's text holds it if
/// and only if the indexed text holds it more than once (the list says which terms it
/// does); only the terms the title holds twice or more are looked for in the text. A
/// chunk the list did not score, when the list holds every match, holds no term at
/// all. Otherwise the chunk's text is searched for every term.
pub fn best(snap: &Snapshot, view: usize, page: u32, held: &Held, scores: &ChunkScores, kinds: u32, n: usize) -> Vec<Passage> {
    let b = snap.views[view].batch();
    let p = &b.pages[page as usize];
    let first = p.first_chunk.to_native();
    let all = first..first + p.chunks.to_native();
    let (scored, every) = scores.within(view, all.clone());
    let of_kind = |c: u32| kinds != 0 && b.chunks[c as usize].kinds.to_native() & kinds != 0;
    let chunks: Vec<u32> = if all.clone().any(of_kind) { all.filter(|&c| of_kind(c)).collect() } else { all.collect() };
    let body = |c: u32| {
        let rec = &b.chunks[c as usize];
        &p.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize]
    };
    let entry = |c: u32| scored.binary_search_by_key(&c, |x| x.chunk).ok().map(|i| scored[i]);
    // Which terms the document's title holds once or more and twice or more, looked
    // for only as chunks need them: (terms looked for, held once+, held twice+).
    let title = std::cell::Cell::new((0u64, 0u64, 0u64));
    let title_counts = |terms: u64| {
        let (looked, once, twice) = title.get();
        let new = terms & !looked;
        if new == 0 {
            return (once & terms, twice & terms);
        }
        let doc = &b.docs[p.doc.to_native() as usize];
        let (o, t) = doc.title.as_ref().map_or((0, 0), |t| held.counts(t.as_str(), new));
        title.set((looked | new, once | o, twice | t));
        ((once | o) & terms, (twice | t) & terms)
    };
    let matched = |c: u32| match entry(c) {
        Some(s) if s.terms != Scored::UNKNOWN => {
            let (terms, repeated) = (u64::from(s.terms), u64::from(s.repeated));
            let (once, twice) = title_counts(terms);
            let own = (terms & !once) | (once & !twice & repeated);
            held.names(own | held.mask(body(c), twice))
        }
        None if every => Vec::new(),
        _ => held.in_text(body(c)),
    };
    let pos = |c: u32| b.chunks[c as usize].pos.to_native();
    let score = |c: u32| entry(c).map_or(0.0, |s| s.score);
    // When BM25 scored some of the page's chunks, its scores rank them and only the
    // chosen few get their matched terms; otherwise (a page only the semantic list
    // found) every chunk's are needed, to rank them by the terms they hold.
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

/// The best `n` passages of `page` in `view` when only the semantic list found it: its
/// window vector `row` matched best, so that window's chunks come first (chunks of the
/// asked `kinds` when the page has any), then the page's other chunks; each group ranked
/// by the query terms its chunks' own text holds, then by position. A page that shares
/// no word with the query thus gets the window that answered it, not its first chunks;
/// a page of one window ranks exactly as [`best`] ranks a page the keyword list missed.
pub fn from_window(snap: &Snapshot, view: usize, page: u32, held: &Held, row: u32, kinds: u32, n: usize) -> Vec<Passage> {
    let b = snap.views[view].batch();
    let p = &b.pages[page as usize];
    let first = p.first_chunk.to_native();
    let all = first..first + p.chunks.to_native();
    let of_kind = |c: u32| kinds != 0 && b.chunks[c as usize].kinds.to_native() & kinds != 0;
    let chunks: Vec<u32> = if all.clone().any(of_kind) { all.filter(|&c| of_kind(c)).collect() } else { all.collect() };
    let pos = |c: u32| b.chunks[c as usize].pos.to_native();
    let window = b.windows.get(row as usize).filter(|w| w.page.to_native() == page).map_or(0..u32::MAX, |w| {
        let from = w.first_pos.to_native();
        from..from + w.chunks.to_native()
    });
    let (inside, outside): (Vec<u32>, Vec<u32>) = chunks.into_iter().partition(|&c| window.contains(&pos(c)));
    let rank = |chunks: Vec<u32>, n: usize| {
        let mut ranked: Vec<Passage> = chunks
            .into_iter()
            .map(|c| {
                let rec = &b.chunks[c as usize];
                let body = &p.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize];
                Passage { chunk: c, matched: held.in_text(body), score: 0.0 }
            })
            .collect();
        ranked.sort_by(|a, b| b.matched.len().cmp(&a.matched.len()).then(pos(a.chunk).cmp(&pos(b.chunk))));
        ranked.truncate(n);
        ranked
    };
    let mut out = rank(inside, n);
    if out.len() < n {
        let left = n - out.len();
        out.extend(rank(outside, left));
    }
    out
}

/// Adds to each passage's matched terms those of `extra` (the query expansions' own
/// terms) its chunk's text holds, after the query's.
pub fn add_matched(snap: &Snapshot, view: usize, passages: &mut [Passage], extra: &Held) {
    let b = snap.views[view].batch();
    for p in passages {
        let rec = &b.chunks[p.chunk as usize];
        let page = &b.pages[snap.views[view].page_of_chunk(p.chunk) as usize];
        let text = &page.text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize];
        for t in extra.in_text(text) {
            if !p.matched.contains(&t) {
                p.matched.push(t);
            }
        }
    }
}
