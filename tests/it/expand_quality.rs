//! Query expansion's retrieval quality on the vendored SciFact subset with the real embedder.
//!
//! Query expansion on SciFact, sized for CI: the vendored 500-document subset with the
//! real MiniLM embedder, keyword and hybrid evaluated with `expand` false and true on one
//! collection. Issue 22's bar: expansion may cost hybrid nDCG@10 0.005 at most (the
//! full-set figure comes from `bench/quality/run.sh --expand both`).

use std::path::Path;

use quarry_bench::quality::beir::Dataset;
use quarry_bench::quality::client::{Client, Mode};
use quarry_bench::quality::expand::{comparison, ALLOWED_LOSS};
use quarry_bench::quality::run::{evaluate, index, RunOptions};

use super::server::{Options, TestServer};

use super::plans::RAISED;

#[test]
fn expansion_costs_scifact_hybrid_no_more_than_the_bar() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), config: RAISED.into(), ..Options::default() });
    let (_, key) = s.signup("expand-quality@example.com");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scifact-500");
    let data = Dataset::load(&dir, "test").unwrap_or_else(|e| panic!("{e}"));
    let client = Client::new(&format!("http://{}", s.addr)).unwrap().with_key(key);
    let off = RunOptions::default();
    let run = index(&client, &data, "scifact-500", &off).unwrap();
    let modes = [Mode::Keyword, Mode::Hybrid];
    let without = evaluate(&client, &run, &data, &modes, &off).unwrap();
    let with = evaluate(&client, &run, &data, &modes, &RunOptions { expand: true, ..off }).unwrap();
    println!("{}", comparison(&without.modes, &with.modes));
    let ndcg = |r: &quarry_bench::quality::report::Report, m: Mode| r.modes.iter().find(|x| x.mode == m).unwrap().ndcg_at_10;
    let (before, after) = (ndcg(&without, Mode::Hybrid), ndcg(&with, Mode::Hybrid));
    assert!(after - before >= -ALLOWED_LOSS, "hybrid nDCG@10 {before:.4} → {after:.4} with expansion");
    assert!(without.queries >= 100);
}
