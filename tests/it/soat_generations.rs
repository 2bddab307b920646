//! SOAT generations and traces as records: lists, get, PATCH, purge, trace trees and tenancy.
//!
//! SOAT generations and traces through HTTP (`/api/v1/generations`, `/api/v1/traces`):
//! lists with their filters and pages (newest first), get, the metadata PATCH (a
//! shallow merge, strict body), the content purge and the transcript before and after
//! it, the trace tree with child traces and its generations, the purge cascading down
//! a trace tree, tenancy (another account, another project's key), and an agent's
//! force delete taking its generations and traces in its own project with it.
//!
//! The last test reads runs the runner made (`generate?wait=true` on a scripted
//! upstream); the others need exact timestamps, statuses and tree shapes, so [`seed`]
//! stops the server, writes settled generations and their traces into its own store
//! with `Records::create_generation` (the call the runner makes), and starts it again
//! on the same data directory.

use serde_json::{json, Value};

use super::client::Response;
use super::server::TestServer;
use super::soat::{call, ok, refused};
use quarry::agents::generation::{GenerationRecord, TraceRecord};

use super::plans::ROOMY;

fn code(r: Response, status: u16) -> String {
    refused(r, status)["code"].as_str().unwrap().to_owned()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

fn ids(v: &Value) -> Vec<String> {
    v["data"].as_array().unwrap_or_else(|| panic!("no data: {v}")).iter().map(id).collect()
}

/// Where records go: an account, a project of it, an agent there.
#[derive(Clone)]
pub(super) struct Owner {
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
}

/// An account with a provider and an agent in its default project: (key, owner).
fn account(s: &TestServer, email: &str) -> (String, Owner) {
    let (account_id, key) = s.signup(email);
    let aip = id(&ok(call(s, "POST", "/api/v1/ai-providers", &key, Some(json!({"name": "p", "provider": "openai", "default_model": "m"}))), 201));
    let agent = ok(call(s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": aip, "name": "a"}))), 201);
    (key, Owner { account_id, project_id: agent["project_id"].as_str().unwrap().to_owned(), agent_id: id(&agent) })
}

/// A trace of `o`'s agent, below `parent` when given (under `root`).
pub(super) fn trace(o: &Owner, id: &str, parent: Option<&str>, root: Option<&str>, created: &str) -> TraceRecord {
    serde_json::from_value(json!({
        "id": id, "account_id": o.account_id, "project_id": o.project_id, "agent_id": o.agent_id, "step_count": 2,
        "parent_trace_id": parent, "root_trace_id": root, "error": null, "content_redacted_at": null,
        "created_at": created, "updated_at": created,
    }))
    .unwrap()
}

/// A completed generation of `o`'s agent in `trace`: asked one question, it called a
/// tool, then answered.
pub(super) fn generation(o: &Owner, id: &str, trace: &str, started: &str) -> GenerationRecord {
    let text = |role: &str, t: &str| json!({"role": role, "content": [{"type": "text", "text": t}]});
    let state = json!({
        "config": {}, "input": {}, "steps": 2, "seq": 0, "reserved": 0,
        "output": {"model": "m", "content": "18 degrees", "finish_reason": "stop"},
        "messages": [
            text("user", "weather in Paris?"),
            {"role": "assistant", "content": [{"type": "tool_call", "id": "call_1", "tool_name": "weather", "args": {"city": "Paris"}}]},
            {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "call_1", "tool_name": "weather", "output": {"c": 18}}]},
            text("assistant", "18 degrees"),
        ],
    });
    serde_json::from_value(json!({
        "id": id, "account_id": o.account_id, "project_id": o.project_id, "agent_id": o.agent_id, "trace_id": trace,
        "initiator_generation_id": null, "parent_trace_id": null, "root_trace_id": null,
        "started_by_principal_type": "api_key", "started_by_principal_id": "key_test",
        "status": "completed", "stop_reason": "stop", "error": null, "agent_version": 1, "ai_provider_id": null,
        "action_id": null, "metadata": {"team": "payments"}, "idempotency_key": null, "store_content": true,
        "content_redacted_at": null, "started_at": started, "completed_at": started, "last_activity_at": started,
        "state": state,
    }))
    .unwrap()
}

/// Writes `traces` and `generations` into the server's store (stopped for it, then
/// started again on the same data directory and port): each generation with its
/// trace, when that trace is one of `traces` not written yet.
pub(super) fn seed(s: &mut TestServer, traces: Vec<TraceRecord>, generations: Vec<GenerationRecord>) {
    assert!(s.terminate(std::time::Duration::from_secs(20)).success());
    {
        let records = crate::records_of(s);
        let mut pending = traces;
        for g in &generations {
            let new = pending.iter().position(|t| t.id == g.trace_id).map(|i| pending.remove(i));
            records.create_generation(g, new.as_ref(), None).expect("a generation is written");
        }
        for t in &pending {
            records.insert(t).expect("a trace is written");
        }
    }
    s.restart();
}

#[test]
fn generations_are_listed_filtered_paged_and_read() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "generations-list@example.org");
    // Seeded as the store holds one (only the transitions write a live record's status).
    let mut failed = serde_json::to_value(generation(&o, "gen_b", "trace_1", "2026-01-01T00:00:02.000Z")).unwrap();
    failed["status"] = json!("failed");
    let mut failed: GenerationRecord = serde_json::from_value(failed).unwrap();
    failed.initiator_generation_id = Some("gen_a".into());
    seed(
        &mut s,
        vec![trace(&o, "trace_1", None, None, "2026-01-01T00:00:01.000Z"), trace(&o, "trace_2", None, None, "2026-01-01T00:00:03.000Z")],
        vec![generation(&o, "gen_a", "trace_1", "2026-01-01T00:00:01.000Z"), failed, generation(&o, "gen_c", "trace_2", "2026-01-01T00:00:03.000Z")],
    );
    let list = |q: &str| ok(call(&s, "GET", &format!("/api/v1/generations{q}"), &key, None), 200);
    let all = list("");
    assert_eq!(
        (ids(&all), &all["total"], &all["limit"], &all["offset"]),
        (vec!["gen_c".to_owned(), "gen_b".into(), "gen_a".into()], &json!(3), &json!(50), &json!(0))
    );
    assert_eq!(ids(&list("?trace_id=trace_1")), ["gen_b", "gen_a"]);
    assert_eq!(ids(&list("?status=failed")), ["gen_b"]);
    assert_eq!(ids(&list("?initiator_generation_id=gen_a")), ["gen_b"]);
    assert_eq!(ids(&list(&format!("?agent_id={}&status=completed", o.agent_id))), ["gen_c", "gen_a"]);
    assert!(ids(&list("?agent_id=agent_nobody")).is_empty());
    let page = list("?limit=1&offset=1");
    assert_eq!((ids(&page), &page["total"], &page["limit"]), (vec!["gen_b".to_owned()], &json!(3), &json!(1)));
    assert_eq!(code(call(&s, "GET", "/api/v1/generations?status=done", &key, None), 400), "VALIDATION_FAILED");
    assert_eq!(code(call(&s, "GET", "/api/v1/generations?limit=0", &key, None), 400), "VALIDATION_FAILED");

    let g = ok(call(&s, "GET", "/api/v1/generations/gen_b", &key, None), 200);
    assert_eq!(
        (&g["status"], &g["trace_id"], &g["agent_id"], &g["project_id"]),
        (&json!("failed"), &json!("trace_1"), &json!(o.agent_id), &json!(o.project_id))
    );
    assert_eq!((&g["metadata"], &g["content_redacted_at"], &g["step_count"]), (&json!({"team": "payments"}), &Value::Null, &json!(2)));
    assert_eq!(code(call(&s, "GET", "/api/v1/generations/gen_nope", &key, None), 404), "RESOURCE_NOT_FOUND");

    let traces = ok(call(&s, "GET", "/api/v1/traces", &key, None), 200);
    assert_eq!((ids(&traces), &traces["total"]), (vec!["trace_2".to_owned(), "trace_1".into()], &json!(2)));
    assert_eq!(ids(&ok(call(&s, "GET", "/api/v1/traces?limit=1&offset=1", &key, None), 200)), ["trace_1"]);
    let t = ok(call(&s, "GET", "/api/v1/traces/trace_1", &key, None), 200);
    assert_eq!((&t["agent_id"], &t["step_count"], &t["parent_trace_id"]), (&json!(o.agent_id), &json!(2), &Value::Null));
    assert_eq!(code(call(&s, "GET", "/api/v1/traces/trace_nope", &key, None), 404), "RESOURCE_NOT_FOUND");
}

#[test]
fn metadata_is_shallow_merged_from_a_strict_body() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "generations-patch@example.org");
    seed(&mut s, vec![trace(&o, "trace_1", None, None, "2026-01-01T00:00:01Z")], vec![generation(&o, "gen_a", "trace_1", "2026-01-01T00:00:01Z")]);
    let patch = |body: Value| call(&s, "PATCH", "/api/v1/generations/gen_a", &key, Some(body));
    ok(patch(json!({"metadata": {"ticket_id": "OPS-4821"}})), 200);
    let g = ok(patch(json!({"metadata": {"team": "risk", "note": null}})), 200);
    assert_eq!(g["metadata"], json!({"team": "risk", "ticket_id": "OPS-4821", "note": null}));
    assert_eq!(ok(call(&s, "GET", "/api/v1/generations/gen_a", &key, None), 200)["metadata"], g["metadata"]);
    for bad in [json!({"metadata": {"a": 1}, "status": "failed"}), json!({"metadata": "x"}), json!({"metadata": null}), json!({})] {
        assert_eq!(code(patch(bad.clone()), 400), "VALIDATION_FAILED", "{bad}");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/generations/gen_a", &key, None), 200)["metadata"], g["metadata"], "a refused PATCH changes nothing");
    assert_eq!(code(call(&s, "PATCH", "/api/v1/generations/gen_nope", &key, Some(json!({"metadata": {}}))), 404), "RESOURCE_NOT_FOUND");
}

#[test]
fn a_purge_leaves_the_skeleton_and_empties_the_transcript() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "generations-purge@example.org");
    seed(&mut s, vec![trace(&o, "trace_1", None, None, "2026-01-01T00:00:01Z")], vec![generation(&o, "gen_a", "trace_1", "2026-01-01T00:00:01Z")]);
    let t = ok(call(&s, "GET", "/api/v1/generations/gen_a/transcript", &key, None), 200);
    assert_eq!(
        (&t["generation_id"], &t["trace_id"], &t["status"], &t["step_count"]),
        (&json!("gen_a"), &json!("trace_1"), &json!("completed"), &json!(2))
    );
    assert_eq!(t["input"], json!([{"role": "user", "content": "weather in Paris?"}]));
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{t}");
    assert_eq!(steps[0]["tool_calls"], json!([{"id": "call_1", "tool_name": "weather", "args": {"city": "Paris"}}]));
    assert_eq!(steps[0]["tool_results"], json!([{"tool_call_id": "call_1", "tool_name": "weather", "result": {"c": 18}, "error": null}]));
    assert_eq!((&steps[1]["index"], &steps[1]["text"], &steps[1]["finish_reason"]), (&json!(1), &json!("18 degrees"), &json!("stop")));
    assert_eq!(t["output"], json!({"content": "18 degrees", "finish_reason": "stop"}));

    let purged = ok(call(&s, "DELETE", "/api/v1/generations/gen_a/content", &key, None), 200);
    let at = purged["content_redacted_at"].as_str().expect("stamped").to_owned();
    assert_eq!(
        (&purged["id"], &purged["status"], &purged["stop_reason"], &purged["agent_version"]),
        (&json!("gen_a"), &json!("completed"), &json!("stop"), &json!(1))
    );
    assert_eq!((&purged["metadata"], &purged["output"], &purged["content_redacted"]), (&Value::Null, &Value::Null, &json!(true)));
    assert_eq!(ok(call(&s, "GET", "/api/v1/generations/gen_a", &key, None), 200), purged, "the skeleton reads back");
    let t = ok(call(&s, "GET", "/api/v1/generations/gen_a/transcript", &key, None), 200);
    assert_eq!((&t["input"], &t["steps"], &t["output"], &t["step_count"]), (&Value::Null, &json!([]), &Value::Null, &json!(2)));
    assert_eq!(t["content_redacted_at"], json!(at));
    let again = ok(call(&s, "DELETE", "/api/v1/generations/gen_a/content", &key, None), 200);
    assert_eq!(again["content_redacted_at"], json!(at), "idempotent: the first stamp stays");
    assert_eq!(code(call(&s, "DELETE", "/api/v1/generations/gen_nope/content", &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "GET", "/api/v1/generations/gen_nope/transcript", &key, None), 404), "RESOURCE_NOT_FOUND");
}

#[test]
fn a_trace_tree_nests_child_traces_and_a_purge_cascades_down_it() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "traces-tree@example.org");
    seed(
        &mut s,
        vec![
            trace(&o, "trace_root", None, None, "2026-01-01T00:00:01Z"),
            trace(&o, "trace_child", Some("trace_root"), Some("trace_root"), "2026-01-01T00:00:02Z"),
            trace(&o, "trace_grand", Some("trace_child"), Some("trace_root"), "2026-01-01T00:00:03Z"),
            trace(&o, "trace_other", None, None, "2026-01-01T00:00:04Z"),
        ],
        vec![
            generation(&o, "gen_root", "trace_root", "2026-01-01T00:00:01Z"),
            generation(&o, "gen_child", "trace_child", "2026-01-01T00:00:02Z"),
            generation(&o, "gen_grand", "trace_grand", "2026-01-01T00:00:03Z"),
            generation(&o, "gen_other", "trace_other", "2026-01-01T00:00:04Z"),
        ],
    );
    let t = ok(call(&s, "GET", "/api/v1/traces/trace_grand/tree?include=generations", &key, None), 200);
    assert_eq!((&t["id"], ids(&json!({"data": t["generations"]}))), (&json!("trace_root"), vec!["gen_root".to_owned()]), "rooted at the root: {t}");
    let child = &t["children"][0];
    assert_eq!((&child["id"], &child["parent_trace_id"], t["children"].as_array().unwrap().len()), (&json!("trace_child"), &json!("trace_root"), 1));
    assert_eq!((&child["generations"][0]["id"], &child["children"][0]["id"]), (&json!("gen_child"), &json!("trace_grand")));
    assert_eq!(child["children"][0]["children"], json!([]));
    let bare = ok(call(&s, "GET", "/api/v1/traces/trace_root/tree", &key, None), 200);
    assert!(bare.get("generations").is_none() && bare["children"][0].get("generations").is_none(), "{bare}");
    assert_eq!(code(call(&s, "GET", "/api/v1/traces/trace_nope/tree", &key, None), 404), "RESOURCE_NOT_FOUND");

    let purged = ok(call(&s, "DELETE", "/api/v1/traces/trace_child/content", &key, None), 200);
    assert_eq!((&purged["id"], &purged["content_redacted"]), (&json!("trace_child"), &json!(true)));
    let redacted = |path: &str| !ok(call(&s, "GET", path, &key, None), 200)["content_redacted_at"].is_null();
    assert!(redacted("/api/v1/traces/trace_grand"), "the purge reaches the child's child");
    assert!(!redacted("/api/v1/traces/trace_root") && !redacted("/api/v1/traces/trace_other"));
    for (g, want) in [("gen_root", false), ("gen_child", true), ("gen_grand", true), ("gen_other", false)] {
        assert_eq!(redacted(&format!("/api/v1/generations/{g}")), want, "{g}");
    }
    let t = ok(call(&s, "GET", "/api/v1/generations/gen_grand/transcript", &key, None), 200);
    assert_eq!((&t["steps"], &t["input"]), (&json!([]), &Value::Null));
    ok(call(&s, "DELETE", "/api/v1/traces/trace_root/content", &key, None), 200);
    assert!(redacted("/api/v1/generations/gen_root"));
}

#[test]
fn another_account_or_project_sees_no_generation_or_trace() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "generations-owner@example.org");
    let (stranger, _) = account(&s, "generations-stranger@example.org");
    let other = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "P2"}))), 201));
    let sk2 =
        ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "ci", "project_id": other}))), 201)["key"].as_str().unwrap().to_owned();
    seed(&mut s, vec![trace(&o, "trace_1", None, None, "2026-01-01T00:00:01Z")], vec![generation(&o, "gen_a", "trace_1", "2026-01-01T00:00:01Z")]);
    for k in [&stranger, &sk2] {
        for (method, path) in [
            ("GET", "/api/v1/generations/gen_a"),
            ("PATCH", "/api/v1/generations/gen_a"),
            ("DELETE", "/api/v1/generations/gen_a/content"),
            ("GET", "/api/v1/generations/gen_a/transcript"),
            ("GET", "/api/v1/traces/trace_1"),
            ("GET", "/api/v1/traces/trace_1/tree"),
            ("DELETE", "/api/v1/traces/trace_1/content"),
        ] {
            let body = (method == "PATCH").then(|| json!({"metadata": {"x": 1}}));
            assert_eq!(code(call(&s, method, path, k, body), 404), "RESOURCE_NOT_FOUND", "{method} {path}");
        }
        assert!(ids(&ok(call(&s, "GET", "/api/v1/generations", k, None), 200)).is_empty());
        assert!(ids(&ok(call(&s, "GET", "/api/v1/traces", k, None), 200)).is_empty());
    }
    // The owner's account key lists another of its projects only when asked for it.
    assert!(ids(&ok(call(&s, "GET", &format!("/api/v1/traces?project_id={other}"), &key, None), 200)).is_empty());
    assert_eq!(ids(&ok(call(&s, "GET", &format!("/api/v1/traces?project_id={}", o.project_id), &key, None), 200)), ["trace_1"]);
    let g = ok(call(&s, "GET", "/api/v1/generations/gen_a", &key, None), 200);
    assert!(g["content_redacted_at"].is_null() && g["metadata"] == json!({"team": "payments"}), "nothing the others sent took effect: {g}");
}

#[test]
fn force_deleting_an_agent_takes_its_generations_and_traces_in_its_project() {
    let mut s = TestServer::with_config(ROOMY);
    let (key, o) = account(&s, "generations-force@example.org");
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "P2"}))), 201));
    let (_, keep) = account(&s, "generations-force-keep@example.org");
    // A generation of the agent made in another project (as through a share) stays.
    let shared = Owner { project_id: p2.clone(), ..o.clone() };
    seed(
        &mut s,
        vec![trace(&o, "trace_1", None, None, "2026-01-01T00:00:01Z"), trace(&shared, "trace_2", None, None, "2026-01-01T00:00:02Z")],
        vec![
            generation(&o, "gen_a", "trace_1", "2026-01-01T00:00:01Z"),
            generation(&o, "gen_b", "trace_1", "2026-01-01T00:00:02Z"),
            generation(&shared, "gen_c", "trace_2", "2026-01-01T00:00:03Z"),
            generation(&keep, "gen_kept", "trace_kept", "2026-01-01T00:00:04Z"),
        ],
    );
    let path = format!("/api/v1/agents/{}", o.agent_id);
    let e = refused(call(&s, "DELETE", &path, &key, None), 409);
    assert_eq!(
        (&e["code"], &e["meta"]["generation_count"], &e["meta"]["trace_count"]),
        (&json!("AGENT_HAS_DEPENDENTS"), &json!(3), &json!(2)),
        "{e}"
    );
    ok(call(&s, "GET", "/api/v1/generations/gen_a", &key, None), 200);
    ok(call(&s, "DELETE", &format!("{path}?force=true"), &key, None), 204);
    for gone in ["/api/v1/generations/gen_a", "/api/v1/generations/gen_b", "/api/v1/traces/trace_1"] {
        assert_eq!(code(call(&s, "GET", gone, &key, None), 404), "RESOURCE_NOT_FOUND", "{gone}");
    }
    assert!(ids(&ok(call(&s, "GET", "/api/v1/generations", &key, None), 200)).is_empty());
    assert!(ids(&ok(call(&s, "GET", "/api/v1/traces", &key, None), 200)).is_empty());
    assert_eq!(ids(&ok(call(&s, "GET", &format!("/api/v1/generations?project_id={p2}"), &key, None), 200)), ["gen_c"]);
    ok(call(&s, "GET", "/api/v1/traces/trace_2", &key, None), 200);
}

/// The same reads over runs the runner made: `generate?wait=true` against a scripted
/// upstream (a client tool paused and answered, then a child run in a trace below
/// it), read back, purged down the tree, and gone with the agent's force delete.
#[test]
fn runs_made_by_generate_read_back_purge_and_go_with_their_agent() {
    use super::scripted_llm::{text, tools, Reply, Scripted};
    use super::soat_generate::{agent, setup, tool};
    let up = Scripted::start();
    up.on("weather in Paris", Reply::Seq(vec![tools(&[("ask_user", json!({"city": "Paris"}))]), text("18 degrees")]));
    up.otherwise(text("child answer"));
    let s = TestServer::with_config(super::plans::LAB);
    let st = setup(&s, &up, "generations-runner@example.org");
    let t = tool(&s, &st, json!({"name": "ask_user", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let generate = |body: Value| ok(call(&s, "POST", &format!("/api/v1/agents/{a}/generate?wait=true"), &st.key, Some(body)), 200);
    let paused = generate(json!({"messages": [{"role": "user", "content": "weather in Paris?"}], "metadata": {"team": "payments"}}));
    assert_eq!(paused["status"], "requires_action", "{paused}");
    let (gen, tr) = (id(&paused), paused["trace_id"].as_str().unwrap().to_owned());
    let c = paused["required_action"]["tool_calls"][0]["id"].clone();
    let done = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate/{gen}/tool-outputs"),
            &st.key,
            Some(json!({"tool_outputs": [{"tool_call_id": c, "output": {"c": 18}}]})),
        ),
        200,
    );
    assert_eq!(done["status"], "completed", "{done}");

    let tx = ok(call(&s, "GET", &format!("/api/v1/generations/{gen}/transcript"), &st.key, None), 200);
    assert_eq!(tx["input"], json!([{"role": "user", "content": "weather in Paris?"}]), "{tx}");
    assert_eq!((tx["steps"].as_array().map(Vec::len), &tx["step_count"]), (Some(2), &json!(2)), "{tx}");
    assert_eq!(
        (&tx["steps"][0]["tool_calls"][0]["tool_name"], &tx["steps"][0]["tool_calls"][0]["args"]),
        (&json!("ask_user"), &json!({"city": "Paris"}))
    );
    assert_eq!((&tx["steps"][0]["tool_results"][0]["tool_call_id"], &tx["steps"][0]["tool_results"][0]["result"]), (&c, &json!({"c": 18})), "{tx}");
    assert_eq!((&tx["steps"][1]["text"], &tx["output"]["content"]), (&json!("18 degrees"), &json!("18 degrees")));

    let child = generate(json!({"messages": [{"role": "user", "content": "sub-task"}], "parent_trace_id": tr, "root_trace_id": tr}));
    assert_eq!(child["status"], "completed", "{child}");
    let child_trace = child["trace_id"].as_str().unwrap().to_owned();
    assert_ne!(child_trace, tr);
    let list = |q: &str| ids(&ok(call(&s, "GET", &format!("/api/v1/generations{q}"), &st.key, None), 200));
    assert_eq!(list(""), [id(&child), gen.clone()], "newest first");
    assert_eq!(list(&format!("?trace_id={child_trace}")), [id(&child)]);
    assert_eq!(list("?status=completed&limit=1&offset=1"), [gen.as_str()]);
    let tree = ok(call(&s, "GET", &format!("/api/v1/traces/{child_trace}/tree?include=generations"), &st.key, None), 200);
    assert_eq!((&tree["id"], &tree["generations"][0]["id"]), (&json!(tr), &json!(gen)), "{tree}");
    assert_eq!((&tree["children"][0]["id"], &tree["children"][0]["generations"][0]["id"]), (&json!(child_trace), &child["id"]), "{tree}");

    let g = ok(call(&s, "PATCH", &format!("/api/v1/generations/{gen}"), &st.key, Some(json!({"metadata": {"ticket_id": "OPS-1"}}))), 200);
    assert_eq!(g["metadata"], json!({"team": "payments", "ticket_id": "OPS-1"}));
    let purged = ok(call(&s, "DELETE", &format!("/api/v1/traces/{tr}/content"), &st.key, None), 200);
    assert!(purged["content_redacted_at"].is_string(), "{purged}");
    for g in [&gen, &id(&child)] {
        let v = ok(call(&s, "GET", &format!("/api/v1/generations/{g}"), &st.key, None), 200);
        assert!(v["content_redacted_at"].is_string() && v["metadata"].is_null() && v["output"].is_null(), "{v}");
        let tx = ok(call(&s, "GET", &format!("/api/v1/generations/{g}/transcript"), &st.key, None), 200);
        assert_eq!((&tx["input"], &tx["steps"], &tx["status"]), (&Value::Null, &json!([]), &json!("completed")), "{tx}");
    }
    assert!(ok(call(&s, "GET", &format!("/api/v1/traces/{child_trace}"), &st.key, None), 200)["content_redacted_at"].is_string());

    ok(call(&s, "DELETE", &format!("/api/v1/agents/{a}?force=true"), &st.key, None), 204);
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/generations/{gen}"), &st.key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/traces/{child_trace}"), &st.key, None), 404), "RESOURCE_NOT_FOUND");
    assert!(list("").is_empty());
}
