//! The harness end to end against the fake server: signup → collection → concurrent adds (one
//! rate-limited) → searches in every mode → nDCG, with the expected values worked by hand.

use std::collections::HashMap;

use super::beir::{Dataset, Doc, Qrels, Query};
use super::client::{Client, ClientError, Mode};
use super::fake_server::{FakeServer, KEY};
use super::run::{evaluate, index, RunOptions};

fn dataset(texts: &[(&str, &str)]) -> Dataset {
    let corpus = texts
        .iter()
        .map(|&(id, text)| Doc {
            id: id.into(),
            title: String::new(),
            text: text.into(),
        })
        .collect();
    let queries = vec![
        Query {
            id: "q1".into(),
            text: "red fruit".into(),
        },
        Query {
            id: "q2".into(),
            text: "yellow fruit".into(),
        },
    ];
    let mut qrels = Qrels::new();
    qrels.insert(
        "q1".into(),
        HashMap::from([("d3".into(), 2), ("d1".into(), 1)]),
    );
    qrels.insert("q2".into(), HashMap::from([("d2".into(), 1)]));
    Dataset {
        name: "fake".into(),
        split: "test".into(),
        corpus,
        queries,
        qrels,
    }
}

const FRUIT: &[(&str, &str)] = &[
    ("d1", "apples are red"),
    ("d2", "bananas are yellow"),
    ("d3", "cherries are red"),
    ("d4", "grapes are green"),
];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-4
}

#[test]
fn signup_index_search_and_score_against_a_fake_server() {
    let server = FakeServer::start();
    let anonymous = Client::new(&server.url()).unwrap();
    let signup = anonymous.signup("quality@example.org").unwrap();
    assert_eq!(signup.api_key, KEY);
    assert_eq!(signup.account.plan, "scribe");
    let client = Client::new(&server.url()).unwrap().with_key(signup.api_key);

    let data = dataset(FRUIT);
    let options = RunOptions::default();
    let run = index(&client, &data, "fake-eval", &options).unwrap();
    assert_eq!(run.doc_ids.len(), 4);
    assert_eq!(run.ingest.docs, 4);
    assert_eq!(run.ingest.pages, 8);
    assert_eq!(
        client.rate_limited_count(),
        1,
        "the first add was refused once"
    );

    let report = evaluate(
        &client,
        &run,
        &data,
        &[Mode::Keyword, Mode::Semantic, Mode::Hybrid],
        &options,
    )
    .unwrap();
    assert_eq!(report.server.embedder.as_deref(), Some("fake-embedder"));
    assert_eq!(report.server.plan.as_deref(), Some("scribe"));
    let ndcg: Vec<f64> = report.modes.iter().map(|m| m.ndcg_at_10).collect();
    // keyword and hybrid: q1 ranks d1 (1) then d3 (2), each page twice rolled up to once:
    //   DCG = 1/log2(2) + 2/log2(3) = 2.26186, IDCG = 2 + 1/log2(3) = 2.63093 → 0.85972
    //   q2 ranks d2 first → 1. Mean = (0.85972 + 1) / 2 = 0.92986.
    // semantic reverses: q1 d3, d1 → 1; q2 → 1. Mean = 1.
    assert!(close(ndcg[0], 0.92986), "{ndcg:?}");
    assert!(close(ndcg[1], 1.0), "{ndcg:?}");
    assert!(close(ndcg[2], 0.92986), "{ndcg:?}");
    for mode in &report.modes {
        assert_eq!(mode.queries, 2);
        assert_eq!(mode.recall_k, 50);
        assert!(close(mode.recall, 1.0));
        assert_eq!(mode.median_total_ms, Some(2.5));
    }
    let searches = server.state.lock().unwrap().searches.clone();
    assert_eq!(searches.len(), 6);
    assert!(searches
        .iter()
        .all(|s| s["k"] == 50 && s["expand"] == false));
    let md = report.markdown();
    assert!(md.contains("| keyword | 0.9299 |"), "{md}");
}

#[test]
fn one_page_per_search_cuts_before_the_roll_up() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = dataset(FRUIT);
    let options = RunOptions {
        search_k: 1,
        ..RunOptions::default()
    };
    let run = index(&client, &data, "fake-eval", &options).unwrap();
    let report = evaluate(&client, &run, &data, &[Mode::Keyword], &options).unwrap();
    // q1 gets only d1's first page: DCG = 1, IDCG = 2.63093 → 0.38009; q2 → 1.
    // nDCG mean = (0.38009 + 1) / 2 = 0.69005; recall@1 = (1/2 + 1) / 2 = 0.75.
    let keyword = &report.modes[0];
    assert!(close(keyword.ndcg_at_10, 0.69005), "{keyword:?}");
    assert!(close(keyword.recall, 0.75), "{keyword:?}");
}

#[test]
fn a_refused_document_names_the_endpoint_status_and_body() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap().with_key(KEY);
    let data = dataset(&[("d1", "apples are red"), ("d2", "REJECT me")]);
    let err = index(&client, &data, "fake-eval", &RunOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("POST /v1/collections/col_1/documents"),
        "{text}"
    );
    assert!(text.contains("HTTP 400"), "{text}");
    assert!(text.contains("invalid_document"), "{text}");
}

#[test]
fn a_missing_key_is_a_401_error() {
    let server = FakeServer::start();
    let client = Client::new(&server.url()).unwrap();
    match client.create_collection("x") {
        Err(ClientError::Status {
            status: 401,
            endpoint,
            body,
        }) => {
            assert_eq!(endpoint, "POST /v1/collections");
            assert!(body.contains("invalid_key"));
        }
        other => panic!("expected a 401, got {other:?}"),
    }
}

#[test]
fn nothing_listening_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let err = client.health().unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err}");
    assert!(err.to_string().starts_with("GET /v1/health: "), "{err}");
}
