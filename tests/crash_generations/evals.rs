//! Eval runs under `kill -9` (evaluations, issue 37): one background run of 40 items on
//! a slow upstream, the server killed at seeded random moments (`CRASH_SEED` replays
//! them) and restarted on the same data directory, four times. Afterwards the run has
//! completed with one result per item, each item ran as exactly one generation (the
//! generations are idempotent per run and item: a restart finds the one it started),
//! pinned to the version under test, and no item scored before a kill was asked again
//! after it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quarry_test_support::scripted_llm::{text, Reply, Scripted};
use quarry_test_support::server::{Options, TestServer};
use serde_json::{json, Value};

use super::{send, Rng, CONFIG};

const ITEMS: usize = 40;
const KILLS: usize = 4;
const ANSWER: &str = "Invoices go out on the first of the month.";

#[test]
fn kill_9_during_an_eval_run_scores_every_item_once_as_one_generation() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1);
    eprintln!("seed {seed} (CRASH_SEED={seed} replays the kill times)");
    let rng = Arc::new(Rng(Mutex::new(seed)));
    let up = Scripted::start();
    up.on("Grade this answer", text(r#"{"score": 1, "reasoning": "right"}"#));
    up.on("CANARY-RULES", Reply::Slow(Duration::from_millis(400), Box::new(text(ANSWER))));
    up.otherwise(text("I do not know."));
    let log = std::env::temp_dir().join(format!("crash-evals-{seed}.log"));
    let mut s = TestServer::with(Options { config: CONFIG.into(), log: Some(log), ..Options::default() });
    let (_, key) = s.signup("crash-evals@example.com");
    let call = |s: &TestServer, method: &str, path: &str, body: Option<Value>| -> Value {
        let (status, v) = send(s.addr, method, path, &key, &[], body.as_ref()).unwrap();
        assert!((200..300).contains(&status), "{method} {path}: {status} {v}");
        v
    };
    let p = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "m"});
    let provider = call(&s, "POST", "/api/v1/ai-providers", Some(p))["id"].as_str().unwrap().to_owned();
    let agent =
        call(&s, "POST", "/api/v1/agents", Some(json!({"ai_provider_id": provider, "instructions": "Be vague."})))["id"].as_str().unwrap().to_owned();
    call(&s, "PATCH", &format!("/api/v1/agents/{agent}"), Some(json!({"instructions": "CANARY-RULES: be exact."})));
    let dataset = call(&s, "POST", "/api/v1/datasets", Some(json!({"name": "billing"})))["id"].as_str().unwrap().to_owned();
    for i in 0..ITEMS {
        let item = json!({"input": [{"role": "user", "content": format!("Q{i}: when is my invoice issued?")}], "expected_output": ANSWER});
        call(&s, "POST", &format!("/api/v1/datasets/{dataset}/items"), Some(item));
    }
    let scorers = json!([{"type": "exact_match"}, {"type": "regex", "pattern": "first"},
        {"type": "llm_judge", "prompt": "Grade this answer: {{output}}", "pass_threshold": 0.5, "ai_provider_id": provider}]);
    let eval = json!({"name": "suite", "agent_id": agent, "dataset_id": dataset, "scorers": scorers, "pass_threshold": 1.0});
    let eval = call(&s, "POST", "/api/v1/evals", Some(eval))["id"].as_str().unwrap().to_owned();
    let run = call(&s, "POST", &format!("/api/v1/evals/{eval}/runs"), Some(json!({"agent_version": 2})))["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/evals/{eval}/runs/{run}");
    let question = |r: &Value| r["input"][0]["content"].as_str().unwrap().split(':').next().unwrap().to_owned();
    let asked = |q: &str| up.bodies().iter().filter(|b| b.to_string().contains(&format!("{q}:")) && !b.to_string().contains("Grade this")).count();
    // Per question scored before some kill: how often the agent had been asked then.
    let mut frozen: BTreeMap<String, usize> = BTreeMap::new();
    for round in 0..KILLS {
        std::thread::sleep(Duration::from_millis(150 + rng.below(900)));
        let results = call(&s, "GET", &format!("{path}/results?limit=100"), None);
        for q in results["data"].as_array().unwrap().iter().map(question) {
            frozen.entry(q.clone()).or_insert_with(|| asked(&q));
        }
        eprintln!("round {round}: {} items scored, kill -9", frozen.len());
        s.kill9();
        s.restart();
    }
    let start = Instant::now();
    let done = loop {
        let r = call(&s, "GET", &path, None);
        if r["status"] != "running" && r["status"] != "queued" {
            break r;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "the run did not settle: {r}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        (done["status"].as_str(), done["passed"].as_bool(), done["completed_count"].as_u64(), done["errored_count"].as_u64()),
        (Some("completed"), Some(true), Some(ITEMS as u64), Some(0)),
        "{done}"
    );
    let results = call(&s, "GET", &format!("{path}/results?limit=100"), None);
    let results = results["data"].as_array().unwrap().clone();
    assert_eq!(results.len(), ITEMS);
    let mut items: Vec<String> = results.iter().map(|r| r["dataset_item_id"].as_str().unwrap().to_owned()).collect();
    items.sort();
    items.dedup();
    assert_eq!(items.len(), ITEMS, "one result per item");
    let mut generations: Vec<String> = results.iter().map(|r| r["generation_id"].as_str().unwrap().to_owned()).collect();
    generations.sort();
    generations.dedup();
    assert_eq!(generations.len(), ITEMS, "one generation per item");
    let listed = call(&s, "GET", "/api/v1/generations?limit=100", None);
    assert_eq!(listed["total"].as_u64(), Some(ITEMS as u64), "no item started a second generation across the restarts");
    for g in listed["data"].as_array().unwrap() {
        assert_eq!((g["agent_version"].as_u64(), g["status"].as_str()), (Some(2), Some("completed")), "{g}");
    }
    for (q, then) in &frozen {
        assert_eq!(asked(q), *then, "{q} was asked again after it was scored");
    }
}
