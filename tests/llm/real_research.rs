//! Research end to end on the real local model (a `real_local_model` test).
//!
//! Research end to end on the real local model (Qwen2.5-Coder-1.5B-Instruct under
//! llama.cpp, as `ops/setup` installs it): the bundled legal sample indexed, one fast
//! research streamed. The stream's events come in the spec's order, every `[n]` of the
//! answer resolves to a source, and at least one quotation or claim is verified by code
//! against its page. Bounded: 180 s for the model to load, `RESEARCH_DEADLINE` for the
//! research (measured on an idle 2-core machine: see the closing note of issue 23). Runs
//! alone (nextest's threads-required, as every `real_local_model` test). Skipped when the
//! weights are not installed, unless $CI is set.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::local::{installed, LocalServer};
use super::sse_client::{chunk, head, open_at, post_at};

const LOAD: Duration = Duration::from_secs(180);
const RESEARCH_DEADLINE: Duration = Duration::from_secs(360);

#[test]
fn real_local_model_researches_a_sample_corpus_with_resolved_citations() {
    if !installed() {
        return;
    }
    // Three pages a search and 3,000 characters of sources: the shortest prompts that
    // still hold the answer page (the legal sample's fee clause).
    let s = LocalServer::start(
        "[llm.local]\nnice = 0\nthreads = 2\n[http]\nheader_read_timeout = \"300s\"\n[research]\nk = 3\nsource_chars = 3000\n",
        &[],
    );
    s.wait_ready(LOAD);
    let key = s.signup("real-research@x.org");
    let wait = Duration::from_secs(60);
    let r = post_at(s.addr, "/v1/collections", &key, &json!({ "name": "legal" }), wait);
    assert_eq!(r.status, 201);
    let col = r.json()["id"].as_str().unwrap().to_owned();
    let r = post_at(s.addr, &format!("/v1/collections/{col}/sample"), &key, &json!({ "domain": "legal" }), wait);
    assert!(r.status == 200 || r.status == 201, "{}", String::from_utf8_lossy(&r.body));
    let started = Instant::now();
    let question = json!({ "question": "When are fees due after an invoice?", "stream": true });
    let mut r = open_at(s.addr, &format!("/v1/collections/{col}/research"), &key, &question, RESEARCH_DEADLINE);
    let (status, headers) = head(&mut r);
    assert_eq!(status, 200);
    assert!(headers.iter().any(|(k, v)| k == "content-type" && v == "application/x-ndjson"), "{headers:?}");
    // Read as it streams, each event logged with when it came (the measurement).
    let mut events: Vec<Value> = Vec::new();
    let mut buf = Vec::new();
    while let Some(c) = chunk(&mut r) {
        buf.extend_from_slice(&c);
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let e: Value = serde_json::from_slice(&line[..line.len() - 1]).expect("one JSON event a line");
            if e["type"] != "delta" {
                eprintln!("{:>7.1}s {}", started.elapsed().as_secs_f64(), e.to_string().chars().take(200).collect::<String>());
            }
            events.push(e);
        }
        assert!(started.elapsed() < RESEARCH_DEADLINE, "the research took longer than {RESEARCH_DEADLINE:?}");
    }
    let took = started.elapsed();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    eprintln!("research took {took:?}: {kinds:?}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "done", "{last}");
    // The spec's order: searching first, queries and sources, the answer's deltas
    // before the answer, then verifying, claims, done.
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or_else(|| panic!("no {k} event: {kinds:?}"));
    assert_eq!((kinds[0], events[0]["stage"].as_str()), ("status", Some("searching")));
    assert!(at("query") < at("sources") && at("sources") < at("answer") && at("answer") < at("claims") && at("claims") < at("done"), "{kinds:?}");
    assert!(kinds.iter().rposition(|k| *k == "delta").unwrap() < at("answer"));
    let result = &last["result"];
    eprintln!("{}", serde_json::to_string_pretty(result).unwrap());
    let answer = result["answer"].as_str().unwrap();
    let sources = result["sources"].as_array().unwrap();
    assert!(!sources.is_empty() && !answer.is_empty());
    let mut rest = answer;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(']') {
            let n: usize = digits.parse().unwrap();
            assert!(n >= 1 && n <= sources.len(), "[{n}] resolves to nothing in {answer}");
        }
    }
    let v = &result["verification"];
    let verified_quotes = v["verified"].as_u64().unwrap();
    let verified_claims = v["claims"].as_array().unwrap().iter().filter(|c| !c["evidence"].is_null()).count();
    assert!(verified_quotes + verified_claims as u64 >= 1, "no quotation or claim verified: {v}");
}
