//! Retrieval quality (nDCG@10 per mode) on the vendored SciFact subset with the real embedder.
//!
//! Retrieval quality through the HTTP API, sized for CI: the fixed 500-document subset of
//! SciFact vendored in `tests/data/scifact-500` (exactly what `Dataset::subset(500)` keeps
//! of the full set; `tests/data/cut-subsets.py` cut it) with the real MiniLM embedder,
//! every test query whose relevant documents it holds, scored through the evaluate
//! endpoint in batches, nDCG@10 per mode. Hybrid must beat both of its single lists.
//! (The full-set numbers come from `quarry-quality`; see bench/README.md, "Numbers".)

use std::path::Path;

use quarry_bench::quality::beir::Dataset;
use quarry_bench::quality::client::{Client, Mode};
use quarry_bench::quality::run::{evaluate, index, RunOptions};

use super::server::{Options, TestServer};

/// The evaluation account's plan: the default plan with its limits raised, as an
/// operator would do for a benchmark (`quarry accounts set-plan` moves real accounts).
use super::plans::RAISED;

#[test]
fn hybrid_beats_keyword_and_semantic_on_a_scifact_subset() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), config: RAISED.into(), ..Options::default() });
    let (_, key) = s.signup("quality@example.com");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scifact-500");
    let data = Dataset::load(&dir, "test").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(data.corpus.len(), 500, "the vendored subset");
    let client = Client::new(&format!("http://{}", s.addr)).unwrap().with_key(key);
    let opts = RunOptions::default();
    let run = index(&client, &data, "scifact-500", &opts).unwrap();
    let report = evaluate(&client, &run, &data, &[Mode::Keyword, Mode::Semantic, Mode::Hybrid], &opts).unwrap();
    println!("{}", report.markdown());
    println!("The evaluation account is on the default plan with its limits raised by the test's configuration.");
    let ndcg = |m: Mode| report.modes.iter().find(|r| r.mode == m).unwrap().ndcg_at_10;
    let (k, sem, h) = (ndcg(Mode::Keyword), ndcg(Mode::Semantic), ndcg(Mode::Hybrid));
    assert!(report.queries >= 100, "only {} queries evaluated", report.queries);
    assert_eq!(report.unasked, 0, "the subset holds every relevant document, so every query is asked");
    assert!(h > k && h > sem, "hybrid {h:.4} must beat keyword {k:.4} and semantic {sem:.4}");
    assert!(k > 0.5 && sem > 0.5, "keyword {k:.4} and semantic {sem:.4} are implausibly low");
}
