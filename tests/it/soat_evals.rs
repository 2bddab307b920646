//! evaluations (issue 37): datasets, evals and runs Quarry executes, over HTTP against the scripted upstream.
//!
//! A run executes every dataset item through the agent version under test as a real
//! generation (the scripted upstream answers per version, by its instructions) and
//! scores it (exact_match, contains, regex, and an llm judge on the same upstream);
//! a canary's promotion gate refuses every run a client could post and takes one
//! Quarry ran on the canary version; a run cancels; a run resumes after `kill -9`
//! without running again the items it had scored.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::plans::LAB;
use super::scripted_llm::{text, Reply, Scripted};
use super::server::TestServer;
use super::soat::{call, ok, refused};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

const ANSWER: &str = "Invoices go out on the first of the month.";

/// The upstream: the judge's rubric answered with a verdict, the canary's instructions
/// with the reference answer, anything else (the stable version) with a wrong one.
fn upstream() -> Scripted {
    let up = Scripted::start();
    up.on("Grade this answer", text(r#"{"score": 0.9, "reasoning": "It matches the reference."}"#));
    up.on("CANARY-RULES", text(ANSWER));
    up.otherwise(text("I do not know."));
    up
}

struct Setup {
    key: String,
    provider: String,
    agent: String,
    dataset: String,
    eval: String,
}

/// An account with a provider on `up`, an agent whose version 2 (the canary) answers
/// right and version 1 wrong, a dataset of `items` questions, and an eval of it.
fn setup(s: &TestServer, up: &Scripted, email: &str, items: usize) -> Setup {
    let (_, key) = s.signup(email);
    let p = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "m"});
    let provider = id(&ok(call(s, "POST", "/api/v1/ai-providers", &key, Some(p)), 201));
    let agent = id(&ok(call(s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": provider, "instructions": "Be vague."}))), 201));
    let v2 = ok(call(s, "PATCH", &format!("/api/v1/agents/{agent}"), &key, Some(json!({"instructions": "CANARY-RULES: be exact."}))), 200);
    assert_eq!(v2["version"], 2);
    let dataset = id(&ok(call(s, "POST", "/api/v1/datasets", &key, Some(json!({"name": "billing", "description": "invoices"}))), 201));
    for i in 0..items {
        let item = json!({"input": [{"role": "user", "content": format!("Question {i}: when is my invoice issued?")}], "expected_output": ANSWER});
        ok(call(s, "POST", &format!("/api/v1/datasets/{dataset}/items"), &key, Some(item)), 201);
    }
    let scorers = json!([
        {"type": "exact_match"},
        {"type": "contains", "value": "FIRST of the month"},
        {"type": "regex", "pattern": "^Invoices .+ month\\.$"},
        {"type": "llm_judge", "prompt": "Grade this answer: {{output}} against {{expected}}. Reply as JSON.", "pass_threshold": 0.7, "ai_provider_id": provider},
    ]);
    let eval = json!({"name": "billing-suite", "agent_id": agent, "dataset_id": dataset, "scorers": scorers, "pass_threshold": 1.0});
    let eval = id(&ok(call(s, "POST", "/api/v1/evals", &key, Some(eval)), 201));
    Setup { key, provider, agent, dataset, eval }
}

fn run_path(st: &Setup, run: &str) -> String {
    format!("/api/v1/evals/{}/runs/{run}", st.eval)
}

/// Polls the run until `done` holds of it (at most `limit`).
fn wait_for(s: &TestServer, st: &Setup, run: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let r = ok(call(s, "GET", &run_path(st, run), &st.key, None), 200);
        if done(&r) {
            return r;
        }
        assert!(start.elapsed() < limit, "the run did not get there in {limit:?}: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_promotion_gate_refuses_every_run_a_client_posts_and_takes_one_quarry_ran_on_the_canary() {
    let up = upstream();
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-gate@example.org", 2);
    let agent = format!("/api/v1/agents/{}", st.agent);
    let release = json!({"stable_version": 1, "canary_version": 2, "canary_percent": 10, "promotion_gate": st.eval});
    ok(call(&s, "PUT", &format!("{agent}/release"), &st.key, Some(release)), 200);
    let promote = format!("{agent}/release/promote");
    let runs = format!("/api/v1/evals/{}/runs", st.eval);
    // Every shape a client could post as a finished, passing run: none is accepted.
    for posted in [
        json!({"agent_version": 2, "status": "completed", "passed": true}),
        json!({"agent_version": 2, "passed": true}),
        json!({"status": "completed"}),
        json!({"wait": true, "agent_version": 2, "passed": true}),
        json!({"agent_version": 2, "executed": true, "aggregate_scores": {"pass_rate": 1}}),
        json!({"agent_version": 2, "completed_count": 2, "item_count": 2}),
        json!({"agent_version": "2", "status": "completed", "passed": "true"}),
    ] {
        let e = refused(call(&s, "POST", &runs, &st.key, Some(posted.clone())), 400);
        assert_eq!(e["code"], "VALIDATION_FAILED", "{posted}");
        assert_eq!(refused(call(&s, "POST", &promote, &st.key, None), 409)["code"], "PROMOTION_GATE_UNMET", "after {posted}");
    }
    assert_eq!(ok(call(&s, "GET", &runs, &st.key, None), 200)["total"], 0, "no posted run was recorded");
    // A run Quarry executed on the stable version does not clear a gate on the canary,
    // and fails: version 1 answers wrong.
    let stable = ok(call(&s, "POST", &runs, &st.key, Some(json!({"wait": true, "agent_version": 1}))), 201);
    assert_eq!((stable["status"].as_str(), stable["passed"].as_bool(), stable["agent_version"].as_u64()), (Some("completed"), Some(false), Some(1)));
    assert_eq!(refused(call(&s, "POST", &promote, &st.key, None), 409)["code"], "PROMOTION_GATE_UNMET");
    // The canary's own run: every item a generation on version 2, scored by all four.
    let canary = ok(call(&s, "POST", &runs, &st.key, Some(json!({"wait": true, "agent_version": 2, "baseline_run_id": stable["id"]}))), 201);
    assert_eq!(
        (canary["status"].as_str(), canary["passed"].as_bool(), canary["item_count"].as_u64(), canary["completed_count"].as_u64()),
        (Some("completed"), Some(true), Some(2), Some(2)),
        "{canary}"
    );
    let agg = &canary["aggregate_scores"];
    assert_eq!((agg["pass_rate"].as_f64(), agg["scored_item_count"].as_u64()), (Some(1.0), Some(2)), "{agg}");
    assert_eq!(agg["baseline"]["pass_rate_delta"].as_f64(), Some(1.0), "{agg}");
    let results = ok(call(&s, "GET", &format!("{}/results", run_path(&st, &id(&canary))), &st.key, None), 200);
    assert_eq!(results["total"], 2);
    for r in results["data"].as_array().unwrap() {
        assert_eq!((r["output"].as_str(), r["passed"].as_bool(), &r["error"]), (Some(ANSWER), Some(true), &Value::Null), "{r}");
        let scorers: Vec<&str> = r["scores"].as_array().unwrap().iter().map(|x| x["scorer"].as_str().unwrap()).collect();
        assert_eq!(scorers, ["exact_match", "contains", "regex", "llm_judge"]);
        assert_eq!(r["scores"][3]["reasoning"], "It matches the reference.");
        assert_eq!(r["scores"][3]["score"], 0.9);
        let g = ok(call(&s, "GET", &format!("/api/v1/generations/{}", r["generation_id"].as_str().unwrap()), &st.key, None), 200);
        assert_eq!((g["agent_version"].as_u64(), g["status"].as_str()), (Some(2), Some("completed")), "{g}");
    }
    let promoted = ok(call(&s, "POST", &promote, &st.key, None), 200);
    assert_eq!(promoted["active_release"], Value::Null);
    let live = ok(call(&s, "GET", &format!("{agent}/versions/{}", promoted["version"]), &st.key, None), 200);
    assert_eq!(live["eval_run_id"], canary["id"], "the version gone live names the run that cleared the gate");
    // The judge's request went to the scorer's provider with the rubric filled.
    let judged = up.bodies().into_iter().filter(|b| b.to_string().contains("Grade this answer")).count();
    assert_eq!(judged, 4, "one judge call per item and run");
    let _ = &st.provider;
}

#[test]
fn a_json_logic_scorer_scores_each_item_by_its_expression_over_output_input_and_metadata() {
    let up = upstream();
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-logic@example.org", 0);
    let items = format!("/api/v1/datasets/{}/items", st.dataset);
    for (question, must) in [("When is it issued?", "first of the month"), ("When is it due?", "last day")] {
        let item = json!({"input": [{"role": "user", "content": question}], "expected_output": ANSWER, "metadata": {"must": must}});
        ok(call(&s, "POST", &items, &st.key, Some(item)), 201);
    }
    // The answer must hold the item's phrase, and the item be asked by a user.
    let expression = json!({"and": [
        {"in": [{"var": "item.metadata.must"}, {"var": "output"}]},
        {"==": [{"var": "input.0.role"}, "user"]},
        {"!=": [{"var": "expected"}, null]},
    ]});
    let eval =
        json!({"name": "phrases", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "json_logic", "expression": expression}]});
    let eval = id(&ok(call(&s, "POST", "/api/v1/evals", &st.key, Some(eval)), 201));
    let runs = format!("/api/v1/evals/{eval}/runs");
    let run = ok(call(&s, "POST", &runs, &st.key, Some(json!({"wait": true, "agent_version": 2}))), 201);
    assert_eq!((run["status"].as_str(), run["completed_count"].as_u64()), (Some("completed"), Some(2)), "{run}");
    let results = ok(call(&s, "GET", &format!("{runs}/{}/results", id(&run)), &st.key, None), 200);
    let mut by_question: Vec<(String, f64, bool)> = results["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!((r["scores"][0]["scorer"].as_str(), r["output"].as_str()), (Some("json_logic"), Some(ANSWER)), "{r}");
            (r["input"][0]["content"].as_str().unwrap().to_owned(), r["scores"][0]["score"].as_f64().unwrap(), r["passed"].as_bool().unwrap())
        })
        .collect();
    by_question.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(by_question, [("When is it due?".to_owned(), 0.0, false), ("When is it issued?".to_owned(), 1.0, true)]);
    // Version 1 answers "I do not know.": neither phrase, both score 0.
    let stable = ok(call(&s, "POST", &runs, &st.key, Some(json!({"wait": true, "agent_version": 1}))), 201);
    assert_eq!(stable["aggregate_scores"]["pass_rate"].as_f64(), Some(0.0), "{stable}");
}

#[test]
fn datasets_and_evals_are_checked_and_a_background_run_cancels() {
    let up = upstream();
    up.on("Question 0", Reply::Slow(Duration::from_secs(2), Box::new(text(ANSWER))));
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-crud@example.org", 3);
    let datasets = "/api/v1/datasets";
    assert_eq!(refused(call(&s, "POST", datasets, &st.key, Some(json!({"name": "billing"}))), 409)["code"], "NAME_CONFLICT");
    let items = format!("{datasets}/{}/items", st.dataset);
    for bad in
        [json!({"input": []}), json!({"input": "hi"}), json!({"input": [{"role": "system", "content": "x"}]}), json!({"input": [{"role": "user"}]})]
    {
        refused(call(&s, "POST", &items, &st.key, Some(bad)), 400);
    }
    assert_eq!(ok(call(&s, "GET", &items, &st.key, None), 200)["total"], 3);
    let evals = "/api/v1/evals";
    for (bad, why) in [
        (
            json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "json_logic", "expression": {}}]}),
            "empty expression",
        ),
        (
            json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "json_logic", "expression": {"nope": [1]}}]}),
            "unknown operator",
        ),
        (
            json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "tool", "name": "t", "tool_id": "tool_x"}]}),
            "unsupported",
        ),
        (
            json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "exact_match"}, {"type": "exact_match"}]}),
            "twice",
        ),
        (json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [{"type": "llm_judge", "prompt": "p"}]}), "no threshold"),
        (json!({"name": "x", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [], "pass_threshold": 2}), "threshold"),
        (json!({"name": "x", "agent_id": st.agent, "dataset_id": "dset_nope", "scorers": []}), "no dataset"),
    ] {
        assert_eq!(refused(call(&s, "POST", evals, &st.key, Some(bad)), 400)["code"], "VALIDATION_FAILED", "{why}");
    }
    let runs = format!("{evals}/{}/runs", st.eval);
    let queued = ok(call(&s, "POST", &runs, &st.key, Some(json!({"agent_version": 2}))), 201);
    assert_eq!(queued["status"], "queued");
    let run = id(&queued);
    wait_for(&s, &st, &run, Duration::from_secs(10), |r| r["status"] == "running");
    let canceled = ok(call(&s, "POST", &format!("{}/cancel", run_path(&st, &run)), &st.key, None), 200);
    assert_eq!(canceled["status"], "canceled");
    refused(call(&s, "POST", &format!("{}/cancel", run_path(&st, &run)), &st.key, None), 400);
    std::thread::sleep(Duration::from_secs(3));
    let after = ok(call(&s, "GET", &run_path(&st, &run), &st.key, None), 200);
    assert_eq!((after["status"].as_str(), &after["passed"]), (Some("canceled"), &Value::Null), "a canceled run stays so: {after}");
    // Deleting the dataset takes its items and the evals bound to it.
    ok(call(&s, "DELETE", &format!("{datasets}/{}", st.dataset), &st.key, None), 204);
    refused(call(&s, "GET", &format!("{evals}/{}", st.eval), &st.key, None), 404);
}

#[test]
fn a_run_resumes_after_kill_9_and_scores_each_item_once() {
    let up = upstream();
    let slow = |t: &str| Reply::Slow(Duration::from_millis(700), Box::new(text(t)));
    up.on("Grade this answer", text(r#"{"score": 1, "reasoning": "ok"}"#));
    up.on("CANARY-RULES", slow(ANSWER));
    let mut s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-crash@example.org", 12);
    let runs = format!("/api/v1/evals/{}/runs", st.eval);
    let run = id(&ok(call(&s, "POST", &runs, &st.key, Some(json!({"agent_version": 2}))), 201));
    wait_for(&s, &st, &run, Duration::from_secs(30), |r| r["completed_count"].as_u64() >= Some(4));
    let question = |r: &Value| r["input"][0]["content"].as_str().unwrap().split(':').next().unwrap().to_owned();
    let scored = ok(call(&s, "GET", &format!("{}/results?limit=100", run_path(&st, &run)), &st.key, None), 200);
    let scored: Vec<String> = scored["data"].as_array().unwrap().iter().map(question).collect();
    s.kill9();
    assert!(scored.len() >= 4 && scored.len() < 12, "{scored:?}");
    let asked = |q: &str| up.bodies().iter().filter(|b| b.to_string().contains(&format!("{q}:")) && !b.to_string().contains("Grade this")).count();
    let before: Vec<usize> = scored.iter().map(|q| asked(q)).collect();
    s.restart();
    let done = wait_for(&s, &st, &run, Duration::from_secs(60), |r| r["status"] != "running" && r["status"] != "queued");
    assert_eq!(
        (done["status"].as_str(), done["passed"].as_bool(), done["completed_count"].as_u64()),
        (Some("completed"), Some(true), Some(12)),
        "{done}"
    );
    let results = ok(call(&s, "GET", &format!("{}/results?limit=100", run_path(&st, &run)), &st.key, None), 200);
    assert_eq!(results["total"], 12);
    let mut items: Vec<&str> = results["data"].as_array().unwrap().iter().map(|r| r["dataset_item_id"].as_str().unwrap()).collect();
    items.sort();
    items.dedup();
    assert_eq!(items.len(), 12, "one result per item");
    // The items scored before the kill were not run again.
    let after: Vec<usize> = scored.iter().map(|q| asked(q)).collect();
    assert_eq!(before, after, "{scored:?}");
    let generations: Vec<&str> = results["data"].as_array().unwrap().iter().map(|r| r["generation_id"].as_str().unwrap()).collect();
    let mut unique = generations.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 12, "one generation per item");
}

#[test]
fn an_item_curated_from_a_generation_copies_its_input_and_answer_and_outlives_it() {
    let up = upstream();
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-curate@example.org", 1);
    let question = json!([{"role": "user", "content": "When is my invoice issued, exactly?"}]);
    let g = ok(call(&s, "POST", &format!("/api/v1/agents/{}/generate?wait=true", st.agent), &st.key, Some(json!({"messages": question}))), 200);
    assert_eq!(g["status"], "completed", "{g}");
    let curate = format!("/api/v1/datasets/{}/items/from-generation", st.dataset);
    let item = ok(call(&s, "POST", &curate, &st.key, Some(json!({"generation_id": g["id"], "metadata": {"topic": "billing"}}))), 201);
    assert_eq!((&item["input"], &item["expected_output"], &item["source_generation_id"]), (&question, &json!(ANSWER), &g["id"]), "{item}");
    let bare = ok(call(&s, "POST", &curate, &st.key, Some(json!({"generation_id": g["id"], "expected_output": null}))), 201);
    assert_eq!(bare["expected_output"], Value::Null, "null: no reference answer");
    assert_eq!(refused(call(&s, "POST", &curate, &st.key, Some(json!({"generation_id": "gen_nope"}))), 404)["code"], "RESOURCE_NOT_FOUND");
    let (_, stranger) = s.signup("evals-curate-stranger@example.org");
    refused(call(&s, "POST", &curate, &stranger, Some(json!({"generation_id": g["id"]}))), 404);
    // A run scores the curated items; deleting one keeps its result, unlinked.
    let items = format!("/api/v1/datasets/{}/items", st.dataset);
    assert_eq!(ok(call(&s, "GET", &items, &st.key, None), 200)["total"], 3);
    let edited = ok(call(&s, "PUT", &format!("{items}/{}", id(&bare)), &st.key, Some(json!({"expected_output": ANSWER}))), 200);
    assert_eq!(edited["expected_output"], ANSWER);
    let run = ok(call(&s, "POST", &format!("/api/v1/evals/{}/runs", st.eval), &st.key, Some(json!({"wait": true, "agent_version": 2}))), 201);
    assert_eq!((run["passed"].as_bool(), run["completed_count"].as_u64()), (Some(true), Some(3)), "{run}");
    ok(call(&s, "DELETE", &format!("{items}/{}", id(&item)), &st.key, None), 204);
    let results = ok(call(&s, "GET", &format!("{}/results", run_path(&st, &id(&run))), &st.key, None), 200);
    let unlinked: Vec<&Value> = results["data"].as_array().unwrap().iter().filter(|r| r["dataset_item_id"].is_null()).collect();
    assert_eq!(unlinked.len(), 1, "{results}");
    assert_eq!(unlinked[0]["input"], question, "the result keeps its frozen input");
}

/// An eval of `st`'s dataset with only `scorers`, and a run of it on version 2 waited for.
fn run_with(s: &TestServer, st: &Setup, name: &str, scorers: Value) -> (String, Value) {
    let eval = json!({"name": name, "agent_id": st.agent, "dataset_id": st.dataset, "scorers": scorers, "pass_threshold": 1.0});
    let eval = id(&ok(call(s, "POST", "/api/v1/evals", &st.key, Some(eval)), 201));
    let run = ok(call(s, "POST", &format!("/api/v1/evals/{eval}/runs"), &st.key, Some(json!({"agent_version": 2, "wait": true}))), 201);
    (eval, run)
}

fn results(s: &TestServer, st: &Setup, eval: &str, run: &str) -> Vec<Value> {
    let r = ok(call(s, "GET", &format!("/api/v1/evals/{eval}/runs/{run}/results"), &st.key, None), 200);
    r["data"].as_array().unwrap().clone()
}

#[test]
fn embedding_similarity_scores_the_cosine_of_the_answer_and_the_reference_on_the_servers_embedder() {
    use super::server::Options;
    let up = upstream();
    let s = TestServer::with(Options { config: LAB.into(), embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    let st = setup(&s, &up, "evals-embedding@example.org", 2);
    let (eval, run) = run_with(&s, &st, "similar", json!([{"type": "embedding_similarity", "pass_threshold": 0.99}]));
    assert_eq!((run["status"].as_str(), run["passed"].as_bool()), (Some("completed"), Some(true)), "{run}");
    for r in results(&s, &st, &eval, &id(&run)) {
        let score = &r["scores"][0];
        assert_eq!(score["scorer"], "embedding_similarity", "{r}");
        assert!(score["score"].as_f64().unwrap() > 0.99, "the canary answers the reference itself: {r}");
    }
    // Version 1 answers something else: its cosine is lower, and under a high bar it fails.
    let v1 = ok(call(&s, "POST", &format!("/api/v1/evals/{eval}/runs"), &st.key, Some(json!({"agent_version": 1, "wait": true}))), 201);
    assert_eq!(v1["passed"], false, "{v1}");
    let low = results(&s, &st, &eval, &id(&v1))[0]["scores"][0]["score"].as_f64().unwrap();
    assert!(low < 0.99, "an unrelated answer is less similar: {low}");
    // No embedder on a server: the item errs, it never scores 0.
    let bare = TestServer::with_config(LAB);
    let st = setup(&bare, &up, "evals-embedding-none@example.org", 1);
    let (eval, run) = run_with(&bare, &st, "similar", json!([{"type": "embedding_similarity", "pass_threshold": 0.5}]));
    assert_eq!(run["errored_count"], 1, "{run}");
    assert!(results(&bare, &st, &eval, &id(&run))[0]["error"].as_str().unwrap_or_default().contains("embedder"));
}

#[test]
fn a_tool_scorer_calls_its_tool_with_the_items_variables_and_reads_its_verdict() {
    use std::io::BufReader;
    let up = upstream();
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-tool-scorer@example.org", 2);
    // The scoring service: full marks when the output says what the reference says.
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let seen2 = seen.clone();
    let addr = super::loopback::listen(move |stream| {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        while let Some(r) = super::loopback::read_request(&mut reader) {
            seen2.lock().unwrap().push(r.body.clone());
            let same = r.body["output"] == r.body["expected"];
            let verdict = if same { json!({"score": 1, "reasoning": "matches"}) } else { json!({"score": 0.2}) };
            if !super::loopback::respond(&mut out, 200, &verdict) {
                return;
            }
        }
    });
    let t = json!({"name": "grader", "type": "http", "execute": {"url": format!("http://{addr}/grade")}});
    let tool = id(&ok(call(&s, "POST", "/api/v1/tools", &st.key, Some(t)), 201));
    let scorer = json!({"type": "tool", "name": "grader", "tool_id": tool, "preset_parameters": {"strict": true}, "pass_threshold": 0.5});
    let (eval, run) = run_with(&s, &st, "graded", json!([scorer]));
    assert_eq!((run["status"].as_str(), run["passed"].as_bool()), (Some("completed"), Some(true)), "{run}");
    let rs = results(&s, &st, &eval, &id(&run));
    assert_eq!((rs[0]["scores"][0]["scorer"].as_str(), rs[0]["scores"][0]["reasoning"].as_str()), (Some("grader"), Some("matches")), "{rs:?}");
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one call per item");
    assert_eq!(
        (bodies[0]["output"].as_str(), bodies[0]["expected"].as_str(), bodies[0]["strict"].as_bool()),
        (Some(ANSWER), Some(ANSWER), Some(true))
    );
    assert_eq!(bodies[0]["input"][0]["role"], "user", "{}", bodies[0]);
    let v1 = ok(call(&s, "POST", &format!("/api/v1/evals/{eval}/runs"), &st.key, Some(json!({"agent_version": 1, "wait": true}))), 201);
    assert_eq!(v1["passed"], false, "the threshold decides without a passed: {v1}");
    // Refused at write: a built-in's name, a reserved preset key, a tool of no project of ours.
    for bad in [
        json!({"type": "tool", "name": "contains", "tool_id": tool}),
        json!({"type": "tool", "name": "g", "tool_id": tool, "preset_parameters": {"output": "fixed"}}),
        json!({"type": "tool", "name": "g", "tool_id": "tool_nope"}),
    ] {
        let e = json!({"name": "bad", "agent_id": st.agent, "dataset_id": st.dataset, "scorers": [bad]});
        assert_eq!(refused(call(&s, "POST", "/api/v1/evals", &st.key, Some(e)), 400)["code"], "VALIDATION_FAILED", "{bad}");
    }
}

#[test]
fn a_settled_eval_run_raises_its_event_and_a_failed_one_is_filed_as_an_exception() {
    let up = upstream();
    up.on("CANARY-RULES", Reply::Slow(Duration::from_secs(2), Box::new(text(ANSWER))));
    let s = TestServer::with_config(LAB);
    let st = setup(&s, &up, "evals-events@example.org", 2);
    let hook = json!({"name": "gate", "url": "http://127.0.0.1:9/hook", "events": ["eval_run.*"]});
    let hook = id(&ok(call(&s, "POST", "/api/v1/webhooks", &st.key, Some(hook)), 201));
    let (_, run) = run_with(&s, &st, "events", json!([{"type": "contains", "value": "first of the month"}]));
    let d = ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={hook}"), &st.key, None), 200);
    assert_eq!(d["data"].as_array().unwrap().len(), 1, "{d}");
    let e = &d["data"][0];
    assert_eq!(e["event_type"], "eval_run.completed", "{e}");
    let data = &e["payload"]["data"];
    assert_eq!((data["eval_run_id"].as_str(), data["passed"].as_bool()), (run["id"].as_str(), Some(true)), "{e}");
    assert_eq!(data["aggregate_scores"]["pass_rate"], 1.0, "the verdict travels with the event: {e}");
    // A run whose agent is deleted under it fails: eval_run.failed, and an exception.
    let runs = format!("/api/v1/evals/{}/runs", st.eval);
    let run = id(&ok(call(&s, "POST", &runs, &st.key, Some(json!({"agent_version": 2}))), 201));
    wait_for(&s, &st, &run, Duration::from_secs(10), |r| r["status"] == "running");
    ok(call(&s, "DELETE", &format!("/api/v1/agents/{}?force=true", st.agent), &st.key, None), 204);
    let failed = wait_for(&s, &st, &run, Duration::from_secs(30), |r| r["status"] == "failed" || r["status"] == "completed");
    assert_eq!(failed["status"], "failed", "{failed}");
    let d = ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={hook}"), &st.key, None), 200);
    let names: Vec<&str> = d["data"].as_array().unwrap().iter().map(|d| d["event_type"].as_str().unwrap_or("")).collect();
    assert!(names.contains(&"eval_run.failed"), "{names:?}");
    let x = ok(call(&s, "GET", "/api/v1/exceptions", &st.key, None), 200);
    let filed: Vec<&Value> = x["data"].as_array().unwrap().iter().filter(|x| x["detail"]["eval_run_id"].as_str() == Some(run.as_str())).collect();
    assert_eq!(filed.len(), 1, "{x}");
    assert_eq!((filed[0]["kind"].as_str(), filed[0]["status"].as_str()), (Some("run_failed"), Some("open")), "{x}");
}

#[test]
fn an_eval_item_the_running_cap_refuses_waits_for_a_slot_instead_of_erring() {
    let up = upstream();
    up.on("CANARY-RULES", Reply::Slow(Duration::from_millis(300), Box::new(text(ANSWER))));
    // One generation at a time for the account, and a run of four items, four at once.
    let s = TestServer::with_config(&format!("{LAB}[agents]\nmax_running_per_account = 1\n"));
    let st = setup(&s, &up, "evals-cap@example.org", 4);
    let (eval, run) = run_with(&s, &st, "capped", json!([{"type": "exact_match"}]));
    assert_eq!(
        (run["status"].as_str(), run["completed_count"].as_u64(), run["errored_count"].as_u64(), run["passed"].as_bool()),
        (Some("completed"), Some(4), Some(0), Some(true)),
        "{run}"
    );
    assert!(results(&s, &st, &eval, &id(&run)).iter().all(|r| r["error"].is_null()));
}
