//! The search path over one snapshot: filters → BM25 over chunks rolled up to pages ∥
//! vector search over window vectors (a page by its best window) → weighted reciprocal-rank fusion → quoted phrases
//! enforced → near-duplicates folded → the cut → the best passages of each page.

pub mod filter;
pub mod fusion;
/// Public for the passage-selection bench (`bench/benches/passages.rs`); the search
/// path calls it through [`search`].
pub mod passages;
mod semantic;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::bm25::Stats;
use crate::collection::Snapshot;
use crate::text;
pub use filter::{Allowed, Filters};
use fusion::{List, PageKey};
pub use passages::{ChunkScores, Passage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

#[derive(Debug, Clone)]
pub struct Query {
    /// The query text without its quote marks.
    pub text: String,
    pub phrases: Vec<String>,
    /// Quoted words taken as emphasis (`text::ParsedQuery::emphasis`): weighed more, not
    /// enforced.
    pub emphasis: Vec<String>,
    pub mode: Mode,
    pub k: usize,
    pub passages: usize,
    /// The query's embedding, for semantic and hybrid modes.
    pub vector: Option<Vec<f32>>,
    pub filters: Filters,
    /// Reciprocal-rank constant and the weights of the keyword and semantic lists.
    pub rrf_k: f64,
    pub weights: [f64; 2],
    /// How deep each list goes before fusion.
    pub depth: usize,
    /// Rewrites of the query (`crate::expand`), each its own keyword list fused with
    /// the keyword weight × its weight. Empty: no extra work at all.
    pub expansions: Vec<crate::expand::Expansion>,
}

impl Query {
    /// `text` (already parsed: no quote marks) in `mode` with the API's defaults: 10
    /// pages of 2 passages, no filter, reciprocal-rank k 60 with equal weights, lists
    /// 100 deep (`index.depth`).
    pub fn new(text: impl Into<String>, mode: Mode) -> Query {
        Query {
            text: text.into(),
            phrases: Vec::new(),
            emphasis: Vec::new(),
            mode,
            k: 10,
            passages: 2,
            vector: None,
            filters: Filters::default(),
            rrf_k: 60.0,
            weights: [1.0, 1.0],
            depth: 100,
            expansions: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub view: usize,
    pub page: u32,
    pub score: f64,
    pub keyword: bool,
    pub semantic: bool,
    pub duplicates: u32,
    pub also_in: u32,
    pub passages: Vec<Passage>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    pub keyword_ms: f64,
    pub semantic_ms: f64,
    pub phrase_ms: f64,
    /// The expansions' keyword lists.
    pub expansion_ms: f64,
    pub total_ms: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Results {
    pub hits: Vec<Hit>,
    pub considered: usize,
    pub warnings: Vec<String>,
    pub timings: Timings,
    /// The analysed query terms.
    pub terms: Vec<String>,
    /// The expansions searched: those of the query's whose own terms the collection holds.
    pub expansions: Vec<crate::expand::Expansion>,
    /// The searched expansions' analysed terms that are not the query's.
    pub expansion_terms: Vec<String>,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

pub fn search(snap: &Snapshot, q: &Query) -> Results {
    let started = Instant::now();
    let (terms, weights) = text::weighted_terms(&q.text, &q.emphasis);
    let mut out = Results { terms, ..Results::default() };
    if !q.emphasis.is_empty() {
        out.warnings.push(emphasis_warning(&q.emphasis));
    }
    let allowed: Vec<Arc<Allowed>> = snap.views.iter().zip(&snap.dead).map(|(v, d)| Arc::new(Allowed::new(v, d.clone(), &q.filters))).collect();
    let mut chunk_scores = ChunkScores::new(snap.views.len());
    let t = Instant::now();
    let keyword = if q.mode != Mode::Semantic { keyword(snap, &allowed, (&out.terms, &weights), q.depth, &mut chunk_scores) } else { Vec::new() };
    out.timings.keyword_ms = ms(t);
    let t = Instant::now();
    let (semantic, best_rows) = match (&q.vector, q.mode) {
        (Some(v), Mode::Semantic | Mode::Hybrid) => semantic(snap, &allowed, v, q.depth),
        _ => (Vec::new(), Default::default()),
    };
    out.timings.semantic_ms = ms(t);
    let t = Instant::now();
    let expanded = if q.mode != Mode::Semantic { expansion_lists(snap, &allowed, q, &out.terms, &mut out.expansions) } else { Vec::new() };
    out.timings.expansion_ms = ms(t);
    let fused = if expanded.is_empty() {
        fusion::rrf([&keyword, &semantic], q.weights, q.rrf_k)
    } else {
        let mut lists = vec![List { keys: &keyword, weight: q.weights[0], slot: 0 }, List { keys: &semantic, weight: q.weights[1], slot: 1 }];
        lists.extend(expanded.iter().map(|(keys, weight)| List { keys, weight: *weight, slot: 0 }));
        fusion::rrf_lists(&lists, q.rrf_k)
    };
    let t = Instant::now();
    let fused = enforce_phrases(snap, fused, &q.phrases, &mut out.warnings);
    out.timings.phrase_ms = ms(t);
    out.considered = fused.len();
    let mut hits = fold_duplicates(snap, fused, q.k);
    out.expansion_terms = expansion_terms(&out.expansions, &out.terms);
    let all: Vec<String> = out.terms.iter().chain(&out.expansion_terms).cloned().collect();
    let held = text::Held::new(&all);
    let extra = (!out.expansion_terms.is_empty()).then(|| text::Held::new(&out.expansion_terms));
    for h in &mut hits {
        // A page no keyword list found takes its passages from the window that matched.
        let row = if h.keyword { None } else { best_rows.get(&(h.view as u32, h.page)) };
        h.passages = match row {
            Some(&row) => passages::from_window(snap, h.view, h.page, &held, row, q.filters.kinds, q.passages),
            None => passages::best(snap, h.view, h.page, &held, &chunk_scores, q.filters.kinds, q.passages),
        };
        if let Some(extra) = &extra {
            passages::add_matched(snap, h.view, &mut h.passages, extra);
        }
    }
    out.hits = hits;
    out.timings.total_ms = ms(started);
    out
}

/// One keyword list per expansion, with its fusion weight (keyword weight × its own);
/// their chunk scores are not kept (passages are ranked by the query's own). An
/// expansion none of whose own terms (those the query lacks) the collection holds is
/// skipped: its list would be the query's again, counted twice.
fn expansion_lists(
    snap: &Snapshot,
    allowed: &[Arc<Allowed>],
    q: &Query,
    own: &[String],
    used: &mut Vec<crate::expand::Expansion>,
) -> Vec<(Vec<PageKey>, f64)> {
    if q.expansions.is_empty() || snap.views.is_empty() {
        return Vec::new();
    }
    let terms: Vec<Vec<String>> = q.expansions.iter().map(|e| dedup(text::terms(&e.text))).collect();
    let fresh: Vec<String> = dedup(terms.iter().flatten().filter(|t| !own.contains(t)).cloned().collect());
    let views: Vec<&crate::bm25::Bm25> = snap.views.iter().map(|v| &v.bm25).collect();
    let Ok(stats) = Stats::of(&views, &fresh) else { return Vec::new() };
    let mut out = Vec::new();
    for (e, terms) in q.expansions.iter().zip(&terms) {
        if !terms.iter().any(|t| !own.contains(t) && stats.chunks_holding(t) > 0) {
            continue;
        }
        let mut scores = ChunkScores::new(snap.views.len());
        let ones = vec![1.0; terms.len()];
        out.push((keyword(snap, allowed, (terms, &ones), q.depth, &mut scores), q.weights[0] * e.weight));
        used.push(e.clone());
    }
    out
}

/// The expansions' index terms the query's own do not hold, each once.
fn expansion_terms(used: &[crate::expand::Expansion], own: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in used.iter().flat_map(|e| text::terms(&e.text)) {
        if !own.contains(&t) && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Each term once, in query order. A query has a few dozen terms at most: a scan of
/// those kept beats hashing and cloning each.
fn dedup(terms: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(terms.len());
    for t in terms {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// What the answer says when quoted words were weighed rather than enforced: each word
/// once, however often it was quoted (each quote still weighs).
fn emphasis_warning(words: &[String]) -> String {
    let mut quoted: Vec<String> = Vec::with_capacity(words.len());
    for w in words {
        let w = format!("\"{w}\"");
        if !quoted.contains(&w) {
            quoted.push(w);
        }
    }
    format!(
        "In a long query a quoted single word is emphasis, not a required phrase: {} weighed more, pages without {} kept.",
        quoted.join(", "),
        if quoted.len() > 1 { "them" } else { "it" }
    )
}

/// BM25 over every view with the collection's statistics; chunks rolled up to pages
/// by their best chunk.
fn keyword(
    snap: &Snapshot,
    allowed: &[Arc<Allowed>],
    (terms, weights): (&[String], &[f32]),
    depth: usize,
    chunk_scores: &mut ChunkScores,
) -> Vec<PageKey> {
    if terms.is_empty() || snap.views.is_empty() {
        return Vec::new();
    }
    let views: Vec<&crate::bm25::Bm25> = snap.views.iter().map(|v| &v.bm25).collect();
    let Ok(stats) = Stats::of(&views, terms) else { return Vec::new() };
    let mut pages = TopKeys::new(depth);
    for (vi, view) in snap.views.iter().enumerate() {
        let (view_c, allow) = (view.clone(), allowed[vi].clone());
        let ok = move |c: u64| allow.page(&view_c, view_c.page_of_chunk(c as u32));
        let filter = (!allowed[vi].is_everything()).then_some(ok);
        // When block-max WAND prunes (long postings lists), two chunks per page of
        // depth: pages rarely hold more hits than that among the best, and a shorter
        // top list lets it skip more.
        let Ok(matches) = view.bm25.scored_weighted(terms, weights, &stats, depth * 2, filter) else { continue };
        // In chunk order a page's chunks are a run: its score is the run's best.
        let mut run: Option<(u32, f32)> = None;
        for &crate::bm25::Scored { chunk, score, .. } in &matches.chunks {
            let page = view.page_of_chunk(chunk);
            match &mut run {
                Some((p, best)) if *p == page => *best = best.max(score),
                _ => {
                    if let Some((p, best)) = run {
                        pages.push(rank_key((vi as u32, p), best));
                    }
                    run = Some((page, score));
                }
            }
        }
        if let Some((p, best)) = run {
            pages.push(rank_key((vi as u32, p), best));
        }
        chunk_scores.set(vi, matches);
    }
    pages.ranked()
}

/// Cosine over window vectors (they are normalised: a dot product), a page scored by
/// its best window; with the row of each listed page's best window.
fn semantic(snap: &Snapshot, allowed: &[Arc<Allowed>], query: &[f32], depth: usize) -> (Vec<PageKey>, HashMap<PageKey, u32>) {
    let mut pages: Vec<u128> = Vec::new();
    let mut rows = HashMap::new();
    for (vi, view) in snap.views.iter().enumerate() {
        let dims = view.batch().dims.to_native() as usize;
        if dims != query.len() {
            continue;
        }
        let allow = |p: u32| allowed[vi].page(view, p);
        let allow = (!allowed[vi].is_everything()).then_some(&allow as &dyn Fn(u32) -> bool);
        for (page, score, row) in semantic::search_view(view, query, depth, allow) {
            pages.push(rank_key((vi as u32, page), score));
            rows.insert((vi as u32, page), row);
        }
    }
    (ranked(pages, depth), rows)
}

/// A page and its score as one integer that sorts best first, ties by key: the score's
/// bits made order-preserving (as `f32::total_cmp` orders) and inverted, above the key.
/// The keyword list selects the best of every matching page (thousands on SciFact), and
/// on plain integers that selection needs no comparator.
#[inline]
fn rank_key(key: PageKey, score: f32) -> u128 {
    let ordered = crate::vector::total_order_bits(score);
    ((!ordered as u128) << 64) | ((key.0 as u128) << 32) | key.1 as u128
}

/// Best first, ties by key; at most `depth`. Each page appears once in `v`.
fn ranked(mut v: Vec<u128>, depth: usize) -> Vec<PageKey> {
    if v.len() > depth {
        v.select_nth_unstable(depth);
        v.truncate(depth);
    }
    v.sort_unstable();
    v.into_iter().map(|k| ((k >> 32) as u32, k as u32)).collect()
}

/// The `depth` best of a stream of [`rank_key`]s (thousands of matching pages on
/// SciFact, a hundred wanted), kept in a buffer of twice the depth: when it fills, the
/// best `depth` are selected and the worst of them becomes the cut no later key may
/// reach past, so most keys are one comparison and the buffer never grows.
struct TopKeys {
    keys: Vec<u128>,
    depth: usize,
    /// Keys at or above it cannot be among the best `depth`.
    cut: u128,
}

impl TopKeys {
    fn new(depth: usize) -> TopKeys {
        TopKeys { keys: Vec::with_capacity(2 * depth.max(1)), depth, cut: u128::MAX }
    }

    #[inline]
    fn push(&mut self, key: u128) {
        if key >= self.cut {
            return;
        }
        if self.keys.len() == self.keys.capacity() {
            self.keys.select_nth_unstable(self.depth);
            self.cut = self.keys[self.depth];
            self.keys.truncate(self.depth);
            if key >= self.cut {
                return;
            }
        }
        self.keys.push(key);
    }

    fn ranked(self) -> Vec<PageKey> {
        ranked(self.keys, self.depth)
    }
}

/// Keeps the pages holding every quoted phrase; with none, warns and keeps the order.
fn enforce_phrases(snap: &Snapshot, fused: Vec<fusion::Fused>, phrases: &[String], warnings: &mut Vec<String>) -> Vec<fusion::Fused> {
    let wanted: Vec<String> = phrases.iter().map(|p| text::normalize_for_match(p)).filter(|p| !p.is_empty()).collect();
    if wanted.is_empty() {
        return fused;
    }
    let holds = |f: &fusion::Fused| {
        let page = &snap.views[f.key.0 as usize].batch().pages[f.key.1 as usize];
        let norm = text::normalize_for_match(page.text.as_str());
        wanted.iter().all(|p| text::contains_phrase(&norm, p))
    };
    let kept: Vec<fusion::Fused> = fused.iter().filter(|f| holds(f)).cloned().collect();
    if kept.is_empty() && !fused.is_empty() {
        warnings.push(format!(
            "No page holds the quoted phrase{} {}; the results are the unfiltered order.",
            if wanted.len() > 1 { "s" } else { "" },
            phrases.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", ")
        ));
        return fused;
    }
    kept
}

/// The first `k` pages that are not near-duplicates of a better-ranked one, each with
/// its near-duplicates folded in: `duplicates` counts them, `also_in` the other
/// documents they came from. A page past the cut is still read, since it may be the
/// twin of one of the `k`, but nothing folds into it: the work is n·k, not n².
fn fold_duplicates(snap: &Snapshot, fused: Vec<fusion::Fused>, k: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    // Per kept hit its simhash (None for a page without words); and (kept hit, view,
    // document ordinal) for each document folded into one. A live document lives in one
    // view, so (view, ordinal) names it without reading its id.
    let mut kept: Vec<Option<u64>> = Vec::new();
    let mut docs: Vec<(usize, (u32, u32))> = Vec::new();
    for f in fused {
        let (view, page) = (f.key.0 as usize, f.key.1);
        let (simhash, doc) = snap.views[view].page_fold(page);
        let doc = (f.key.0, doc);
        // A page without words hashes to 0 and has nothing to be a near-duplicate of.
        let hash = Some(simhash).filter(|&h| h != 0);
        let twin = hash.and_then(|h| kept.iter().position(|k| k.is_some_and(|k| text::near_duplicate(k, h))));
        if let Some(i) = twin {
            hits[i].duplicates += 1;
            if !docs.contains(&(i, doc)) {
                hits[i].also_in += 1;
                docs.push((i, doc));
            }
            continue;
        }
        if hits.len() == k {
            continue;
        }
        docs.push((kept.len(), doc));
        kept.push(hash);
        hits.push(Hit {
            view,
            page,
            score: f.score,
            keyword: f.ranks[0].is_some(),
            semantic: f.ranks[1].is_some(),
            duplicates: 0,
            also_in: 0,
            passages: Vec::new(),
        });
    }
    hits
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod windows_tests;
