//! Response serialisation: the search endpoint's JSON body (`api::agentlex::search::body`,
//! the handler's own code) for k = 10 results with 2 passages each, from real searches
//! of 2,000 SciFact abstracts (see `common/scifact.rs`) with SciFact's claims: result
//! structs built from the archived pages (citations, kinds, offsets), then the handler's
//! hand-written JSON, beside serde_json's for the same answers.
//!
//!     cargo bench -p quarry-bench --bench serialize
//!
//! Throughput is in bytes of response body; each iteration serializes the next of 50
//! searches (about 20 KB each).

#[path = "../common/scifact.rs"]
mod scifact;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quarry::api::agentlex::input::search as input;
use quarry::api::agentlex::search::{body, body_serde};
use quarry::search::query::Searched;
use quarry_index::search::{self, Query};
use quarry_index::text;
use serde_json::json;

const DOCS: usize = 2_000;
const QUERIES: usize = 50;

/// What `query::run` hands the handler for `claim`, in keyword mode.
fn searched(corpus: &scifact::Corpus, claim: &str) -> (input::SearchIn, Searched) {
    let parsed_in = input::parse(json!({"query": claim, "mode": "keyword", "k": 10, "passages": 2}).to_string().as_bytes()).expect("a valid request");
    let req = &parsed_in.request;
    let parsed = text::parse(&req.query);
    let q = Query {
        phrases: parsed.phrases.clone(),
        k: req.k,
        passages: req.passages,
        filters: req.filters.clone(),
        ..Query::new(parsed.text.clone(), req.mode)
    };
    let snapshot = corpus.snapshot.clone();
    let results = search::search(&snapshot, &q);
    let s = Searched {
        results,
        snapshot,
        mode: req.mode,
        intent: parsed.intent,
        phrases: parsed.phrases,
        embed_ms: None,
        warnings: Vec::new(),
        reranker: None,
        rerank_ms: None,
        expanded: Default::default(),
    };
    (parsed_in, s)
}

fn serialize(c: &mut Criterion) {
    let corpus = scifact::corpus(DOCS);
    let searches: Vec<_> = scifact::queries(QUERIES).iter().map(|q| searched(&corpus, q)).collect();
    let sizes: Vec<usize> = searches.iter().map(|(req, s)| body(req, s, "general", Instant::now()).len()).collect();
    let results: usize = searches.iter().map(|(_, s)| s.results.hits.len()).sum();
    let total: usize = sizes.iter().sum();
    eprintln!("search-response: {QUERIES} searches, {results} results, {} bytes per body on average", total / QUERIES);
    let mut g = c.benchmark_group("search-response");
    g.throughput(Throughput::Bytes((total / QUERIES) as u64));
    let mut i = 0;
    g.bench_function("k10-passages2", |b| {
        b.iter(|| {
            i = (i + 1) % QUERIES;
            let (req, s) = &searches[i];
            body(req, s, "general", Instant::now())
        })
    });
    // The same answers through serde_json, which the handler's writer must equal byte
    // for byte: the reference for its speed.
    g.bench_function("k10-passages2-serde", |b| {
        b.iter(|| {
            i = (i + 1) % QUERIES;
            let (req, s) = &searches[i];
            body_serde(req, s, "general", Instant::now())
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = serialize
}
criterion_main!(benches);
