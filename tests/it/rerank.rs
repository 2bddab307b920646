//! The reranker stage: a local ONNX cross-encoder and the Jina, Cohere and Voyage APIs against fakes.
//!
//! The reranker stage through the API: a local ONNX cross-encoder (the same-shape
//! stand-in `models/standin_reranker.py` builds, random weights) reorders the top
//! pages exactly as its scores say, and `rerank: false` keeps the fused order; the
//! rerank APIs of Jina, Cohere and Voyage each round-trip against a fake upstream on
//! loopback speaking that vendor's wire format; a failing or slow one leaves the fused
//! order with a warning; an unknown reranker is 400 `unknown_reranker`.

use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::TestServer;

const QUERY: &str = "vaccine immune response";

/// Eight pages that all hold the query's words, so keyword search returns them all.
const PAGES: &[&str] = &[
    "A vaccine trains the immune system; the immune response follows within days.",
    "Vaccine schedules for children list each dose and the immune response it aims for.",
    "The stock market fell, and one analyst blamed a vaccine rumour for the response.",
    "Immune cells remember a pathogen after a vaccine, so a second response is faster.",
    "A vaccine response was measured in mice; the immune markers rose twofold.",
    "Cold chains keep a vaccine potent; a warm vial gives a weaker immune response.",
    "Paris is the capital of France, where a vaccine response study was run.",
    "Side effects after a vaccine are usually mild signs of the immune response.",
];

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// The stand-in cross-encoder, built once per test process with the models venv's
/// Python (ops/setup makes the venv) into a directory that lives as long as the process.
fn standin() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let cache =
            std::env::var("QUARRY_CACHE").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/quarry"));
        let status = std::process::Command::new(cache.join("venv/bin/python"))
            .arg(models_dir().join("standin_reranker.py"))
            .arg(dir.path())
            .status()
            .expect("the models venv exists (run ops/setup)");
        assert!(status.success(), "standin_reranker.py failed");
        dir
    })
    .path()
}

fn standin_config(extra: &str) -> String {
    format!(
        "[rerankers.standin]\nkind = \"onnx\"\nmodel = \"{}\"\ntokenizer = \"all-MiniLM-L6-v2.tokenizer.json\"\nmax_tokens = 256\npad_id = 0\n{extra}",
        standin().join("standin-reranker.onnx").display()
    )
}

fn corpus(s: &TestServer) -> (String, String) {
    let (_, key) = s.signup("rerank@example.com");
    let col = create_collection(s, &key, "rerank");
    for (i, text) in PAGES.iter().enumerate() {
        add(s, &key, &col, &json!({"title": format!("p{i}"), "text": text}));
    }
    (key, col)
}

fn search(s: &TestServer, key: &str, col: &str, body: Value) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn titles(r: &Value) -> Vec<String> {
    r["results"].as_array().unwrap().iter().map(|x| x["document"]["title"].as_str().unwrap().to_owned()).collect()
}

/// The order the stand-in's own scores give the first `top` results of `fused` (the
/// rest as they were): scored here, in the test, with the engine's reranker slot.
fn expected_order(fused: &Value, top: usize) -> Vec<String> {
    let results = fused["results"].as_array().unwrap();
    let top = top.min(results.len());
    let passages: Vec<&str> = results[..top].iter().map(|x| x["passages"][0]["text"].as_str().unwrap()).collect();
    let mut r = quarry_index::embed::Reranker::load(
        &models_dir().join("lib/libonnxruntime.so.1.31.1"),
        &standin().join("standin-reranker.onnx"),
        &models_dir().join("all-MiniLM-L6-v2.tokenizer.json"),
        256,
        0,
    )
    .unwrap();
    let scores = r.score(QUERY, &passages).unwrap();
    let mut order: Vec<usize> = (0..top).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let names = titles(fused);
    order.iter().map(|&i| names[i].clone()).chain(names[top..].iter().cloned()).collect()
}

#[test]
fn a_local_reranker_reorders_the_top_pages_and_says_so() {
    let s = TestServer::with_config(&standin_config(""));
    assert_eq!(s.get("/v1/health", None).json()["rerankers"], json!(["standin"]));
    let (key, col) = corpus(&s);
    let body = |rerank: Value| json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1, "rerank": rerank});

    let fused = search(&s, &key, &col, body(json!(false)));
    assert_eq!(fused["reranker"], Value::Null);
    assert!(fused["timings"].get("rerankMs").is_none(), "{fused}");
    assert_eq!(titles(&fused).len(), PAGES.len(), "every page matches: {fused}");
    let want = expected_order(&fused, 20);
    assert_ne!(want, titles(&fused), "the stand-in's order should differ from the fused one for this test to mean anything");

    for rerank in [json!(true), json!("standin"), Value::Null] {
        let b = if rerank.is_null() { json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1}) } else { body(rerank.clone()) };
        let r = search(&s, &key, &col, b);
        assert_eq!(titles(&r), want, "rerank {rerank}: {r}");
        assert_eq!(r["reranker"], json!({"name": "standin", "model": "standin-reranker"}));
        assert!(r["timings"]["rerankMs"].as_f64().unwrap() >= 0.0);
        assert_eq!(r["results"][0]["rank"], 1);
        // Scores stay the fused ones: the reranked first page keeps the score it had.
        let first = &r["results"][0];
        let before = fused["results"].as_array().unwrap().iter().find(|x| x["citation"] == first["citation"]).unwrap();
        assert_eq!(first["score"], before["score"]);
    }

    // `k` is cut after the rerank: the best reranked pages, not the fused top 3 reordered.
    let r = search(&s, &key, &col, json!({"query": QUERY, "mode": "keyword", "k": 3, "passages": 1}));
    assert_eq!(titles(&r), want[..3]);

    let again = search(&s, &key, &col, body(json!(false)));
    assert_eq!(titles(&again), titles(&fused), "rerank: false keeps the fused order");
}

#[test]
fn pages_past_rerank_top_keep_the_fused_order_below() {
    let s = TestServer::with_config(&standin_config("[rerank]\ntop = 4\n"));
    let (key, col) = corpus(&s);
    let fused = search(&s, &key, &col, json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1, "rerank": false}));
    let r = search(&s, &key, &col, json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1}));
    let want = expected_order(&fused, 4);
    assert_ne!(want[..4], titles(&fused)[..4], "the stand-in should reorder the first four for this test to mean anything");
    assert_eq!(titles(&r), want);
    assert_eq!(titles(&r)[4..], titles(&fused)[4..]);
}

#[test]
fn an_unknown_reranker_is_a_400_with_a_stable_code() {
    for s in [TestServer::start(), TestServer::with_config(&standin_config(""))] {
        let (_, key) = s.signup("unknown@example.com");
        let col = create_collection(&s, &key, "c");
        let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "q", "rerank": "nope"}));
        assert_eq!((r.status, r.code()), (400, "unknown_reranker".to_owned()), "{}", r.text());
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("nope"), "{}", r.text());
        // Nothing was spent on it.
        assert_eq!(s.get("/v1/account", Some(&key)).json()["usage"]["search"].as_u64().unwrap_or(0), 0);
    }
    // A server without rerankers answers rerank: true (the default) with the fused order.
    let s = TestServer::start();
    assert_eq!(s.get("/v1/health", None).json()["rerankers"], json!([]));
}

/// A fake rerank API on loopback: it records each request and ranks the documents it
/// is sent last-first (the reverse of the order they came in), in the wire format of
/// the vendor its path names. Model `fail` answers 500; model `slow` never answers.
struct FakeRerank {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl FakeRerank {
    fn start() -> FakeRerank {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let addr = super::loopback::listen(move |stream| serve(stream, &s));
        FakeRerank { addr, seen }
    }

    fn calls(&self) -> Vec<Call> {
        self.seen.lock().unwrap().clone()
    }
}

/// A request the fake saw: its path, its headers, its JSON body.
type Call = (String, Vec<(String, String)>, Value);
type Seen = Mutex<Vec<Call>>;

fn serve(stream: TcpStream, seen: &Seen) {
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut w = stream;
    while let Some(super::loopback::Request { path, headers, body }) = super::loopback::read_request(&mut r) {
        seen.lock().unwrap().push((path.clone(), headers, body.clone()));
        let (status, answer) = match body["model"].as_str().unwrap_or("") {
            "fail" => (500, json!({"detail": "upstream on fire"})),
            "slow" => {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
            _ => (200, answer(&path, &body)),
        };
        if !super::loopback::respond(&mut w, status, &answer) {
            return;
        }
    }
}

/// Each vendor's answer: every document ranked, the last sent first.
fn answer(path: &str, body: &Value) -> Value {
    let n = body["documents"].as_array().unwrap().len();
    let ranked: Vec<Value> = (0..n).rev().map(|i| json!({"index": i, "relevance_score": (i + 1) as f64 / n as f64})).collect();
    match path {
        "/jina/v1/rerank" => json!({"model": body["model"], "usage": {"total_tokens": 42}, "results": ranked}),
        "/cohere/v2/rerank" => json!({"id": "abc", "results": ranked, "meta": {"billed_units": {"search_units": 1}}}),
        "/voyage/v1/rerank" => json!({"object": "list", "data": ranked, "model": body["model"], "usage": {"total_tokens": 42}}),
        other => panic!("no rerank API at {other}"),
    }
}

fn remote_config(fake: &FakeRerank) -> String {
    let mut c = String::from("[rerank]\ndefault = \"none\"\ntimeout = \"500ms\"\n[llm]\nmax_retries = 0\n");
    for (vendor, version) in [("jina", "v1"), ("cohere", "v2"), ("voyage", "v1")] {
        c += &format!("[llm.providers.{vendor}]\nbase_url = \"http://{}/{vendor}/{version}\"\ntoken = \"key-{vendor}\"\n", fake.addr);
        c += &format!("[rerankers.{vendor}]\nkind = \"remote\"\nprovider = \"{vendor}\"\nmodel = \"{vendor}-rerank-model\"\n");
    }
    c += "[rerankers.broken]\nkind = \"remote\"\nprovider = \"jina\"\nmodel = \"fail\"\n";
    c += "[rerankers.slow]\nkind = \"remote\"\nprovider = \"cohere\"\nmodel = \"slow\"\n";
    c
}

#[test]
fn remote_rerankers_round_trip_each_vendors_wire_format() {
    let fake = FakeRerank::start();
    let s = TestServer::with_config(&remote_config(&fake));
    assert_eq!(s.get("/v1/health", None).json()["rerankers"], json!(["broken", "cohere", "jina", "slow", "voyage"]));
    let (key, col) = corpus(&s);
    let body = |rerank: Value| json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1, "rerank": rerank});
    let fused = search(&s, &key, &col, body(json!(false)));
    // default = "none": without a name nothing reranks.
    let plain = search(&s, &key, &col, json!({"query": QUERY, "mode": "keyword", "k": 8, "passages": 1}));
    assert_eq!((titles(&plain), &plain["reranker"]), (titles(&fused), &Value::Null));
    assert!(fake.calls().is_empty());
    let reversed: Vec<String> = titles(&fused).into_iter().rev().collect();
    let passages: Vec<Value> = fused["results"].as_array().unwrap().iter().map(|x| x["passages"][0]["text"].clone()).collect();

    for (vendor, path, count) in
        [("jina", "/jina/v1/rerank", "top_n"), ("cohere", "/cohere/v2/rerank", "top_n"), ("voyage", "/voyage/v1/rerank", "top_k")]
    {
        let r = search(&s, &key, &col, body(json!(vendor)));
        assert_eq!(titles(&r), reversed, "{vendor}: {r}");
        assert_eq!(r["reranker"], json!({"name": vendor, "model": format!("{vendor}-rerank-model")}));
        assert!(r["timings"]["rerankMs"].as_f64().is_some());
        assert_eq!(r["warnings"], json!([]));
        let (seen_path, headers, sent) = fake.calls().pop().unwrap();
        assert_eq!(seen_path, path);
        assert!(headers.contains(&("authorization".into(), format!("Bearer key-{vendor}"))), "{vendor}: {headers:?}");
        assert_eq!(sent["model"], format!("{vendor}-rerank-model"));
        assert_eq!(sent["query"], QUERY);
        assert_eq!(sent["documents"], Value::Array(passages.clone()), "{vendor}: the best passages, in the fused order");
        assert_eq!(sent[count], PAGES.len(), "{vendor}: {sent}");
    }
}

#[test]
fn a_failing_or_slow_remote_reranker_leaves_the_fused_order_and_says_so() {
    let fake = FakeRerank::start();
    let s = TestServer::with_config(&remote_config(&fake));
    let (key, col) = corpus(&s);
    let body = |rerank: Value| json!({"query": QUERY, "mode": "keyword", "k": 5, "passages": 1, "rerank": rerank});
    let fused = search(&s, &key, &col, body(json!(false)));
    for (name, says) in [("broken", "server_error"), ("slow", "no answer within 500ms")] {
        let started = std::time::Instant::now();
        let r = search(&s, &key, &col, body(json!(name)));
        assert!(started.elapsed() < Duration::from_secs(10), "{name} held the search");
        assert_eq!(titles(&r), titles(&fused), "{name}: {r}");
        assert_eq!(r["reranker"], Value::Null);
        let warning = r["warnings"][0].as_str().unwrap_or_default();
        assert!(warning.contains(name) && warning.contains(says), "{name}: {r}");
    }
    assert!(fake.calls().iter().any(|(_, _, b)| b["model"] == "fail"));
}

#[test]
fn evaluate_runs_hybrid_plus_rerank_with_the_default_reranker() {
    let s = TestServer::with(super::server::Options { embedder: Some("all-MiniLM-L6-v2".into()), config: standin_config(""), ..Default::default() });
    let (key, col) = corpus(&s);
    let body = json!({"k": 5, "variants": ["hybrid", "hybrid+rerank"], "questions": [
        {"query": QUERY, "relevant": [{"text": "A vaccine trains the immune system"}]},
        {"query": "cold chain vial potency", "relevant": [{"text": "Cold chains keep a vaccine potent"}]},
    ]});
    let r = post(&s, &format!("/v1/collections/{col}/evaluate"), &key, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = r.json();
    assert_eq!(r["reranker"], "standin", "{r}");
    assert_eq!(r["variants"].as_object().unwrap().keys().collect::<Vec<_>>(), ["hybrid", "hybrid+rerank"], "{r}");
    let reranked = r["perQuestion"].as_array().unwrap().iter().filter(|q| q["variant"] == "hybrid+rerank").count();
    assert_eq!(reranked, 2, "{r}");
    assert!(!r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("skipped")), "{r}");
}
