//! The harness end to end against the fake server: signup → collection → concurrent adds (one
//! rate-limited) → evaluate calls in batches in every mode → nDCG, recall and MRR over every
//! judged query, with the expected values worked by hand.

use std::sync::Mutex;

use serde_json::{json, Value};

use super::answers::AnswerError;
use super::beir::{Dataset, Doc, Qrels, Query};
use super::client::{Client, ClientError, Mode};
use super::fake_server::{FakeServer, KEY};
use super::run::{evaluate, index, RunError, RunOptions};

/// (query id, text, judgements as (corpus id, relevance)).
type Judged<'a> = (&'a str, &'a str, &'a [(&'a str, i32)]);

fn dataset(texts: &[(&str, &str)], queries: &[Judged<'_>]) -> Dataset {
    let corpus = texts.iter().map(|&(id, text)| Doc { id: id.into(), title: String::new(), text: text.into() }).collect();
    let mut qrels = Qrels::new();
    for &(id, _, judged) in queries {
        let judged = judged.iter().map(|&(d, r)| (d.to_string(), r)).collect();
        qrels.insert(id.into(), judged);
    }
    Dataset {
        name: "fake".into(),
        split: "test".into(),
        corpus,
        queries: queries.iter().map(|&(id, text, _)| Query { id: id.into(), text: text.into() }).collect(),
        qrels,
    }
}

const FRUIT: &[(&str, &str)] = &[("d1", "apples are red"), ("d2", "bananas are yellow"), ("d3", "cherries are red"), ("d4", "grapes are green")];

/// q1: d3 relevance 2, d1 relevance 1; q2: d2.
const FRUIT_QUERIES: &[Judged<'static>] = &[("q1", "red fruit", &[("d3", 2), ("d1", 1)]), ("q2", "yellow fruit", &[("d2", 1)])];

fn fruit() -> Dataset {
    dataset(FRUIT, FRUIT_QUERIES)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-4
}

const ALL_MODES: &[Mode] = &[Mode::Keyword, Mode::Semantic, Mode::Hybrid];

#[test]
fn signup_index_evaluate_and_score_against_a_fake_server() {
    let server = FakeServer::start();
    let anonymous = Client::new(&server.url()).unwrap();
    let signup = anonymous.signup("quality@example.org").unwrap();
    assert_eq!(signup.api_key, KEY);
    assert_eq!(signup.account.plan, "scribe");
    let client = Client::new(&server.url()).unwrap().with_key(signup.api_key);

    let data = fruit();
    let options = RunOptions::default();
    let run = index(&client, &data, "fake-eval", &options).unwrap();
    assert_eq!(run.doc_ids.len(), 4);
    assert_eq!(run.ingest.docs, 4);
    assert_eq!(run.ingest.pages, 4);
    assert_eq!(run.ingest.rate_limited, 1, "the first add was refused once and waited out");

    let report = evaluate(&client, &run, &data, ALL_MODES, &options).unwrap();
    assert_eq!(report.server.embedder.as_deref(), Some("fake-embedder"));
    assert_eq!(report.server.plan.as_deref(), Some("scribe"));
    let ndcg: Vec<f64> = report.modes.iter().map(|m| m.ndcg_at_10).collect();
    // keyword and hybrid: q1 ranks d1 (1) then d3 (2):
    //   DCG = 1/log2(2) + 2/log2(3) = 2.26186, IDCG = 2 + 1/log2(3) = 2.63093 → 0.85972
    //   q2 ranks d2 first → 1. Mean = (0.85972 + 1) / 2 = 0.92986.
    // semantic reverses: q1 d3, d1 → 1; q2 → 1. Mean = 1.
    assert!(close(ndcg[0], 0.92986), "{ndcg:?}");
    assert!(close(ndcg[1], 1.0), "{ndcg:?}");
    assert!(close(ndcg[2], 0.92986), "{ndcg:?}");
    let latency: Vec<Option<f64>> = report.modes.iter().map(|m| m.median_latency_ms).collect();
    assert_eq!(latency, [Some(1.5), Some(2.5), Some(3.5)]);
    for mode in &report.modes {
        assert_eq!((mode.queries, mode.empty, mode.recall_k), (2, 0, 50));
        assert!(close(mode.recall, 1.0));
        assert!(close(mode.mrr_at_10, 1.0));
    }
    assert_eq!((report.queries, report.unasked), (2, 0));
    assert!(report.notes.is_empty(), "{:?}", report.notes);

    // One call per mode, each naming the relevant documents by the ids the server gave them,
    // in corpus id order, with their relevance as gain.
    let state = server.state.lock().unwrap();
    let id = |text| Value::String(state.id_of(text));
    let questions = json!([
        {"query": "red fruit", "relevant": [{"document": id("apples are red")},
                                            {"document": id("cherries are red")}],
         "gains": [1.0, 2.0]},
        {"query": "yellow fruit", "relevant": [{"document": id("bananas are yellow")}],
         "gains": [1.0]},
    ]);
    assert_eq!(state.evaluations.len(), 3);
    for (body, mode) in state.evaluations.iter().zip(ALL_MODES) {
        let expected = json!({"questions": questions, "k": 50, "variants": [mode.as_str()],
                              "expand": false});
        assert_eq!(body, &expected);
    }
    let md = report.markdown();
    assert!(md.contains("| keyword | 0.9299 | @50 1.0000 | 1.0000 |"), "{md}");
    assert!(md.contains("| hybrid | 0.9299 |") && md.contains("| 2 | 0 | 3.5 |"), "{md}");
}

/// Every judged query counts in the means, as BEIR counts it: one whose judgements are all 0
/// and one whose relevant document is not in the corpus are not asked and score 0.
#[test]
fn judged_queries_with_nothing_to_find_are_not_asked_and_score_zero() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let queries: &[Judged<'_>] = &[
        ("q1", "red fruit", &[("d3", 2), ("d1", 1)]),
        ("q2", "yellow fruit warn", &[("d2", 1), ("d4", 0)]),
        ("q3", "green fruit", &[("d4", 0)]),
        ("q4", "purple fruit", &[("d9", 1)]),
    ];
    let data = dataset(FRUIT, queries);
    let run = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap();
    let report = evaluate(&client, &run, &data, &[Mode::Keyword], &RunOptions::default()).unwrap();
    // q1 0.85972 and q2 1 as above, q3 and q4 0: (0.85972 + 1) / 4 = 0.46493.
    // recall: (1 + 1 + 0 + 0) / 4 = 0.5; MRR@10 likewise.
    let keyword = &report.modes[0];
    assert!(close(keyword.ndcg_at_10, 0.46493), "{keyword:?}");
    assert!(close(keyword.recall, 0.5) && close(keyword.mrr_at_10, 0.5), "{keyword:?}");
    assert_eq!((keyword.queries, report.unasked), (4, 2));
    let asked = server.state.lock().unwrap().evaluations[0]["questions"].clone();
    assert_eq!(asked.as_array().unwrap().len(), 2, "{asked}");
    assert_eq!(report.notes, ["keyword: Search warning: the fake was asked to warn."]);
    let md = report.markdown();
    assert!(md.contains("2 of the 4 judged queries"), "{md}");
    assert!(md.contains("- keyword: Search warning: the fake was asked to warn."), "{md}");
}

static PROGRESS: Mutex<Vec<(String, usize, usize)>> = Mutex::new(Vec::new());

fn record_progress(phase: &str, done: usize, total: usize) {
    PROGRESS.lock().unwrap().push((phase.into(), done, total));
}

#[test]
fn batches_are_called_concurrently_and_reported_as_they_return() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = fruit();
    let options = RunOptions { batch: 1, concurrency: 2, progress: Some(record_progress), ..RunOptions::default() };
    let run = index(&client, &data, "fake-eval", &options).unwrap();
    let report = evaluate(&client, &run, &data, &[Mode::Keyword, Mode::Semantic], &options).unwrap();
    assert!(close(report.modes[0].ndcg_at_10, 0.92986), "{:?}", report.modes);
    assert!(close(report.modes[1].ndcg_at_10, 1.0), "{:?}", report.modes);
    let state = server.state.lock().unwrap();
    let sizes: Vec<usize> = state.evaluations.iter().map(|e| e["questions"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [1, 1, 1, 1]);
    let progress = PROGRESS.lock().unwrap();
    for mode in ["keyword", "semantic"] {
        let mut seen: Vec<(usize, usize)> = progress.iter().filter(|(phase, ..)| phase == mode).map(|&(_, done, total)| (done, total)).collect();
        seen.sort_unstable();
        assert_eq!(seen, [(1, 2), (2, 2)], "{mode}: {progress:?}");
    }
    assert_eq!(progress.iter().rfind(|(p, ..)| p == "index"), Some(&("index".into(), 4, 4)));
}

#[test]
fn a_k_below_ten_cuts_every_metric() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = fruit();
    let options = RunOptions { search_k: 1, ..RunOptions::default() };
    let run = index(&client, &data, "fake-eval", &options).unwrap();
    let report = evaluate(&client, &run, &data, &[Mode::Keyword], &options).unwrap();
    // q1 gets only d1: DCG = 1, IDCG = 2.63093 → 0.38009; q2 → 1.
    // nDCG mean = (0.38009 + 1) / 2 = 0.69005; recall@1 = (1/2 + 1) / 2 = 0.75; MRR = 1.
    let keyword = &report.modes[0];
    assert!(close(keyword.ndcg_at_10, 0.69005), "{keyword:?}");
    assert!(close(keyword.recall, 0.75), "{keyword:?}");
    assert!(close(keyword.mrr_at_10, 1.0), "{keyword:?}");
    assert_eq!(keyword.recall_k, 1);
    assert_eq!(server.state.lock().unwrap().evaluations[0]["k"], 1);
}

/// The @10 figures of the one k = 50 call are the ones a k = 10 call gives; only recall reads
/// past rank 10.
#[test]
fn a_relevant_document_past_rank_ten_counts_for_recall_only() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    // Twelve documents share the one query word; ties go by text, so "fruit 12" ranks 12th
    // (texts sort "fruit 01" .. "fruit 12"), and d12 is the only relevant one.
    let texts: Vec<(String, String)> = (1..=12).map(|i| (format!("d{i:02}"), format!("fruit {i:02}"))).collect();
    let texts: Vec<(&str, &str)> = texts.iter().map(|(i, t)| (i.as_str(), t.as_str())).collect();
    let data = dataset(&texts, &[("q1", "fruit", &[("d12", 1)])]);
    let run = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap();
    let at = |k| {
        let options = RunOptions { search_k: k, ..RunOptions::default() };
        evaluate(&client, &run, &data, &[Mode::Keyword], &options).unwrap().modes[0].clone()
    };
    let (deep, shallow) = (at(50), at(10));
    // At 50: nDCG@10 0 and MRR@10 0 (rank 12 is past 10), recall@50 1. At 10: all 0.
    assert_eq!((deep.ndcg_at_10, deep.mrr_at_10, deep.recall), (0.0, 0.0, 1.0));
    assert_eq!((shallow.ndcg_at_10, shallow.mrr_at_10, shallow.recall), (0.0, 0.0, 0.0));
    // The server's own nDCG@50 for it, 1/log2(13), agreed with the harness's (or `read` fails).
    let ks: Vec<Value> = server.state.lock().unwrap().evaluations.iter().map(|e| e["k"].clone()).collect();
    assert_eq!(ks, [json!(50), json!(10)]);
}

#[test]
fn a_document_id_the_server_does_not_know_fails_loudly() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = fruit();
    let mut run = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap();
    // The id map says d1 is doc_999, which the server never gave out.
    let real = server.state.lock().unwrap().id_of("apples are red");
    run.doc_ids.remove(&real);
    run.doc_ids.insert("doc_999".into(), "d1".into());
    let err = evaluate(&client, &run, &data, &[Mode::Hybrid], &RunOptions::default()).unwrap_err();
    assert!(
        matches!(&err, RunError::Answer { mode: Mode::Hybrid, source, .. }
            if matches!(**source, AnswerError::Unresolved { .. })),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("id map is wrong"), "{text}");
    assert!(text.contains("query q1: questions[0].relevant[0] (doc_999): no document has this id"), "{text}");
}

#[test]
fn a_document_split_into_pages_is_refused_before_any_call() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = dataset(&[("d1", "apples are red"), ("d2", "bananas\u{c}are yellow")], FRUIT_QUERIES);
    let run = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap();
    assert_eq!(run.multi_page, [("d2".to_string(), 2)]);
    let err = evaluate(&client, &run, &data, &[Mode::Keyword], &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::MultiPage { pages: 2, more: 0, .. }), "{err}");
    assert!(err.to_string().contains("corpus document d2 became 2 pages"), "{err}");
    assert!(server.state.lock().unwrap().evaluations.is_empty());
}

#[test]
fn a_refused_document_names_the_endpoint_status_and_body() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = dataset(&[("d1", "apples are red"), ("d2", "REJECT me")], FRUIT_QUERIES);
    let err = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("POST /v1/collections/col_1/documents"), "{text}");
    assert!(text.contains("HTTP 400"), "{text}");
    assert!(text.contains("invalid_document"), "{text}");
}

#[test]
fn a_missing_key_is_a_401_error() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap();
    match client.create_collection("x") {
        Err(ClientError::Status { status: 401, endpoint, body }) => {
            assert_eq!(endpoint, "POST /v1/collections");
            assert!(body.contains("invalid_key"));
        }
        other => panic!("expected a 401, got {other:?}"),
    }
}

#[test]
fn nothing_listening_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = Client::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let err = client.health().unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
    assert!(err.to_string().starts_with("GET /v1/health: "), "{err}");
}
