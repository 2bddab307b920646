//! Passage selection: the best 2 passages of each of the 10 pages a keyword search
//! returns, with the query terms each holds (`search::passages::best`), over 2,000 SciFact
//! abstracts (see `common/scifact.rs`) and SciFact's claims.
//!
//!     cargo bench -p quarry-bench --bench passages
//!
//! - `scored`: the pages' chunks carry the BM25 scores the keyword list gave them (a
//!   keyword or hybrid hit): ranked by score, only the two chosen are analysed. The
//!   query's term finders are built once per query, as the search path builds them.
//! - `unscored`: no chunk was scored (a page only the semantic list found): every chunk
//!   of the page is analysed for the terms it holds.
//! - `kinds`: as `scored`, with `kinds: ["table", "list"]` asked; SciFact abstracts
//!   hold no such chunk, so this is the cost of looking before falling back.
//!
//! - `highlights` (group `passages-highlights`): the words of each chosen passage that
//!   analyse to its matched terms, at page offsets (what a search answer's
//!   `passages[].highlights` carry), for the same pages, with the query's finders built
//!   once per query (`text::Highlighter`) as the search answer builds them; compare with
//!   `scored`, the selection it follows. `term_spans`: the same, building the finders
//!   for each passage (`text::term_spans`).
//!
//! Throughput is result pages.

#[path = "../common/scifact.rs"]
mod scifact;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quarry_index::bm25::Stats;
use quarry_index::chunk::{Kind, Kinds};
use quarry_index::search::{self, passages, ChunkScores, Mode, Query};
use quarry_index::text::{Held, Highlighter};

const DOCS: usize = 2_000;
const QUERIES: usize = 50;

/// One query's inputs to passage selection, as the search path has them.
struct Case {
    terms: Vec<String>,
    hits: Vec<search::Hit>,
    pages: Vec<(usize, u32)>,
    chunk_scores: ChunkScores,
}

fn cases(corpus: &scifact::Corpus) -> Vec<Case> {
    let snap = &corpus.snapshot;
    let view = &snap.views[0];
    scifact::queries(QUERIES)
        .into_iter()
        .map(|text| {
            let q = Query::new(text, Mode::Keyword);
            let results = search::search(snap, &q);
            // The chunk scores the keyword list keeps.
            let stats = Stats::of(&[&view.bm25], &results.terms).expect("statistics");
            let scored = view.bm25.scored(&results.terms, &stats, 200, None::<fn(u64) -> bool>).expect("search");
            let mut chunk_scores = ChunkScores::new(1);
            chunk_scores.set(0, scored);
            Case { pages: results.hits.iter().map(|h| (h.view, h.page)).collect(), chunk_scores, terms: results.terms, hits: results.hits }
        })
        .filter(|c| !c.pages.is_empty())
        .collect()
}

fn selection(c: &mut Criterion) {
    let corpus = scifact::corpus(DOCS);
    let snap = &corpus.snapshot;
    let cases = cases(&corpus);
    let pages: usize = cases.iter().map(|c| c.pages.len()).sum();
    let no_scores = ChunkScores::new(1);
    let tables = Kinds::EMPTY.with(Kind::Table).with(Kind::List).0;
    let mut g = c.benchmark_group("passages-best2");
    g.throughput(Throughput::Elements(pages as u64));
    for (name, kinds, scored) in [("scored", 0, true), ("unscored", 0, false), ("kinds", tables, true)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0;
                for case in &cases {
                    let scores = if scored { &case.chunk_scores } else { &no_scores };
                    let held = Held::new(&case.terms);
                    for &(view, page) in &case.pages {
                        n += passages::best(snap, view, page, &held, scores, kinds, 2).len();
                    }
                }
                n
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("passages-highlights");
    g.throughput(Throughput::Elements(pages as u64));
    g.bench_function("highlights", |b| {
        b.iter(|| {
            let mut n = 0;
            for case in &cases {
                let marker = Highlighter::new(&case.terms);
                for hit in &case.hits {
                    for (chunk, ps) in snap.hit_view(hit).passages {
                        n += marker.spans(chunk.text, &ps.matched).len();
                    }
                }
            }
            n
        })
    });
    g.bench_function("term_spans", |b| {
        b.iter(|| {
            let mut n = 0;
            for case in &cases {
                for hit in &case.hits {
                    for (chunk, ps) in snap.hit_view(hit).passages {
                        n += quarry_index::text::term_spans(chunk.text, &ps.matched).len();
                    }
                }
            }
            n
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = selection
}
criterion_main!(benches);
