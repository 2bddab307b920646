//! BM25 queries over a real segment: 2,000 SciFact abstracts added and flushed through
//! the engine (see `common/scifact.rs`), queried with SciFact's claims.
//!
//!     cargo bench -p quarry-bench --bench bm25
//!
//! - `bm25/stats+top200`: the collection statistics of the query's terms, then the best
//!   200 chunks of the segment's tantivy index by tantivy's top-k collector (what a keyword
//!   list of depth 100 asked before it streamed every match).
//! - `bm25/stats+scored`: the same statistics, then what the search path now asks
//!   (`Bm25::scored`): every matching chunk in chunk order when the postings are few, as
//!   SciFact's are.
//! - `search/keyword-k10`: the whole engine search in keyword mode as the server runs
//!   it (analysis, BM25, roll-up to pages, near-duplicate folding, 2 passages for each
//!   of 10 pages), for the share BM25 takes of it.
//!
//! Throughput is queries; each iteration takes the next of 200 claims.

#[path = "../common/scifact.rs"]
mod scifact;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quarry_index::bm25::Stats;
use quarry_index::search::{self, Mode, Query};
use quarry_index::text;

const DOCS: usize = 2_000;
const QUERIES: usize = 200;
const DEPTH: usize = 100;

/// A keyword query as the server builds it with its default settings.
fn keyword_query(q: &str) -> Query {
    let parsed = text::parse(q);
    Query { phrases: parsed.phrases, depth: DEPTH, ..Query::new(parsed.text, Mode::Keyword) }
}

fn bm25(c: &mut Criterion) {
    let corpus = scifact::corpus(DOCS);
    let view = &corpus.snapshot.views[0];
    // As the search path analyses them: each term once, in query order.
    let terms: Vec<Vec<String>> = scifact::queries(QUERIES)
        .iter()
        .map(|q| {
            let mut seen = std::collections::HashSet::new();
            text::terms(q).into_iter().filter(|t| seen.insert(t.clone())).collect()
        })
        .collect();
    let queries: Vec<Query> = scifact::queries(QUERIES).iter().map(|q| keyword_query(q)).collect();
    let mut g = c.benchmark_group("bm25");
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("stats+top200", |b| {
        b.iter(|| {
            i = (i + 1) % QUERIES;
            let stats = Stats::of(&[&view.bm25], &terms[i]).expect("statistics");
            view.bm25.search(&terms[i], &stats, 2 * DEPTH, None::<fn(u64) -> bool>).expect("search")
        })
    });
    g.bench_function("stats+scored", |b| {
        b.iter(|| {
            i = (i + 1) % QUERIES;
            let stats = Stats::of(&[&view.bm25], &terms[i]).expect("statistics");
            view.bm25.scored(&terms[i], &stats, 2 * DEPTH, None::<fn(u64) -> bool>).expect("search")
        })
    });
    g.finish();
    let mut g = c.benchmark_group("search");
    g.throughput(Throughput::Elements(1));
    g.bench_function("keyword-k10", |b| {
        b.iter(|| {
            i = (i + 1) % QUERIES;
            search::search(&corpus.snapshot, &queries[i])
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bm25
}
criterion_main!(benches);
