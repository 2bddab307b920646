//! `expand: "llm"` against the fake upstream: paraphrases searched, a slow or failing model never fails the search.
//!
//! `expand: "llm"` against the fake upstream: the model's paraphrases are searched as
//! expansions of kind `llm`; a model that is slow or failing costs the search at most
//! `expand.timeout` and never fails it.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::TestServer;
use super::upstream::Upstream;

/// A server whose expansion model is `model` at the fake upstream.
fn server(up: &Upstream, model: &str, timeout: &str) -> TestServer {
    let a = up.addr;
    TestServer::with_config(&format!(
        r#"
[auth]
default_plan = "library"
[expand]
model = "oa/{model}"
timeout = "{timeout}"
[llm]
max_retry_delay = "200ms"
read_timeout = "20s"
[llm.providers.oa]
manifest = "openai"
base_url = "http://{a}/v1"
token = "sk-test-openai"
"#
    ))
}

fn post(s: &TestServer, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let r = s.request("POST", path, Some(key), Some(&body.to_string()));
    (r.status, r.json())
}

/// A collection where only a paraphrase reaches the relevant page.
fn corpus(s: &TestServer) -> (String, String) {
    let (_, key) = s.signup("expand-llm@example.com");
    let (status, c) = post(s, "/v1/collections", &key, &json!({"name": "cardio"}));
    assert_eq!(status, 201, "{c}");
    let col = c["id"].as_str().unwrap().to_owned();
    for (title, text) in [
        ("Ward protocol", "Suspected myocardial infarction: aspirin, an ECG within ten minutes, troponin at zero and three hours."),
        ("Ward rota", "Night shifts are covered by two registrars and one consultant on call."),
    ] {
        let (status, r) = post(s, &format!("/v1/collections/{col}/documents"), &key, &json!({"title": title, "text": text}));
        assert_eq!(status, 201, "{r}");
    }
    (key, col)
}

#[test]
fn a_models_paraphrases_are_searched_as_llm_expansions() {
    let up = Upstream::start();
    let s = server(&up, "r~expand~paraphrases", "5s");
    let (key, col) = corpus(&s);
    let path = format!("/v1/collections/{col}/search");
    let (_, off) = post(&s, &path, &key, &json!({"query": "heart attack care", "mode": "keyword"}));
    assert_eq!((&off["expand"], &off["results"]), (&json!(true), &json!([])), "{off}");
    assert_eq!(up.calls("r~expand~paraphrases"), 0, "expand: true never asks the model");
    let (status, r) = post(&s, &path, &key, &json!({"query": "heart attack care", "mode": "keyword", "expand": "llm"}));
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["expand"], "llm");
    // The fixture's three lines: the query itself is left out, the other two searched
    // where the collection holds their words ("cardiac arrest" it does not).
    assert_eq!(r["expansions"], json!([{"text": "myocardial infarction treatment", "kind": "llm", "weight": 0.5}]), "{r}");
    assert_eq!(r["results"][0]["document"]["title"], "Ward protocol");
    assert_eq!(r["results"][0]["retrievers"], json!(["keyword"]));
    assert!(r["timings"]["expandMs"].as_f64().unwrap() > 0.0);
    assert!(r["warnings"].as_array().unwrap().is_empty(), "{r}");
    // What the model was asked: the query, as the user's message.
    let bodies = up.state.bodies.lock().unwrap();
    let (_, body, _) = bodies.last().unwrap();
    assert_eq!(body["messages"].as_array().unwrap().last().unwrap()["content"], "heart attack care");
}

#[test]
fn a_slow_or_failing_model_never_fails_the_search() {
    let up = Upstream::start();
    // "trickle" takes ten seconds to answer; the search waits 400 ms.
    let s = server(&up, "trickle", "400ms");
    let (key, col) = corpus(&s);
    let path = format!("/v1/collections/{col}/search");
    let started = Instant::now();
    let (status, r) = post(&s, &path, &key, &json!({"query": "ECG", "mode": "keyword", "expand": "llm"}));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(status, 200, "{r}");
    assert_eq!((&r["expand"], &r["results"][0]["document"]["title"]), (&json!(true), &json!("Ward protocol")));
    let warnings = r["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("did not answer within 400ms")), "{r}");
    assert!(r["timings"]["expandMs"].as_f64().unwrap() >= 400.0, "{r}");

    let up = Upstream::start();
    let s = server(&up, "f~bad-request", "2s");
    let (key, col) = corpus(&s);
    let (status, r) = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "ECG", "mode": "keyword", "expand": "llm"}));
    assert_eq!((status, &r["expand"]), (200, &json!(true)), "{r}");
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("call failed")), "{r}");
    assert_eq!(up.calls("f~bad-request"), 1);
}
