//! Filter evaluation: which pages of a segment a search may return, computed once per
//! view per search before any list is ranked (`search::Allowed::new`), over 2,000 SciFact
//! abstracts with made-up metadata (see `common/scifact.rs`). The filters come from
//! search request bodies parsed by the server's own parser, so dotted keys, value lists,
//! numbers sent as text and date ranges take the path a client's would.
//!
//!     cargo bench -p quarry-bench --bench filter
//!
//! `kinds` do not remove pages (they choose passages; see `passages.rs`). The last group
//! runs a whole keyword search with and without a metadata filter, for what the filter
//! adds to a search: the page set, then tantivy's per-hit check against it.

#[path = "../common/scifact.rs"]
mod scifact;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry::api::agentlex::input::search as input;
use quarry_index::search::{self, Allowed, Filters, Mode, Query};
use serde_json::{json, Value};

const DOCS: usize = 2_000;

fn filters(mut body: Value) -> Filters {
    body["query"] = json!("ALDH1 expression and breast cancer prognosis");
    let parsed = input::parse(body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{body}: {}", e.message));
    assert!(parsed.request.filters.restricts(), "{body}");
    parsed.request.filters
}

fn cases() -> Vec<(&'static str, Filters)> {
    let ids: Vec<String> = (0..DOCS).step_by(40).map(|i| format!("doc_{i:06}")).collect();
    vec![
        ("metadata-dotted-key", filters(json!({"filters": {"metadata": {"journal.name": "Nature"}}}))),
        (
            "metadata-value-lists",
            filters(json!({"filters": {"metadata": {"journal.name": ["Nature", "Cell", "Lancet"], "tags": ["oncology", "genetics"]}}})),
        ),
        ("metadata-number-as-text", filters(json!({"filters": {"metadata": {"year": "2005"}}}))),
        ("date-range", filters(json!({"filters": {"date": {"from": "2000-01-01", "to": "2004-12-31"}}}))),
        ("documents-50", filters(json!({"documents": ids}))),
        ("headings", filters(json!({"filters": {"headings": "Results"}}))),
        ("metadata+date", filters(json!({"filters": {"metadata": {"journal.name": ["Nature", "Cell"]}, "date": {"from": "1995", "to": "2010"}}}))),
    ]
}

fn evaluation(c: &mut Criterion) {
    let corpus = scifact::corpus(DOCS);
    let (view, dead) = (&corpus.snapshot.views[0], &corpus.snapshot.dead[0]);
    let pages = view.batch().pages.len();
    let mut g = c.benchmark_group("allowed-pages");
    g.throughput(Throughput::Elements(pages as u64));
    for (name, f) in cases() {
        let allowed = Allowed::new(view, dead.clone(), &f);
        let kept = (0..pages as u32).filter(|&p| allowed.page(view, p)).count();
        eprintln!("allowed-pages/{name}: {kept} of {pages} pages pass");
        g.bench_function(name, |b| b.iter(|| Allowed::new(view, dead.clone(), &f)));
    }
    g.finish();

    let mut g = c.benchmark_group("search-keyword-k10");
    g.throughput(Throughput::Elements(1));
    let queries = scifact::queries(200);
    let lists = cases().into_iter().find(|(n, _)| *n == "metadata-value-lists").expect("a case").1;
    for (name, f) in [("unfiltered", Filters::default()), ("metadata-value-lists", lists)] {
        let mut i = 0;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let q = Query { filters: f.clone(), ..Query::new(queries[i].clone(), Mode::Keyword) };
                search::search(&corpus.snapshot, &q)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = evaluation
}
criterion_main!(benches);
