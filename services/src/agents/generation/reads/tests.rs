//! The read side on a real store: records made with `create_generation` as the runner
//! makes them, read and purged through the services.

use serde_json::json;

use super::*;
use crate::agents::scope::testing::{a, others, scope};
use crate::store::generations::EventRow;

pub(crate) fn store() -> (tempfile::TempDir, Records) {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::open(dir.path()).unwrap();
    (dir, r)
}

fn trace(id: &str, s: &Scope, agent: &str, parent: Option<&str>, root: Option<&str>) -> TraceRecord {
    TraceRecord {
        id: id.into(),
        account_id: s.account_id.clone(),
        project_id: s.project_id.clone(),
        agent_id: agent.into(),
        step_count: 0,
        parent_trace_id: parent.map(Into::into),
        root_trace_id: root.map(Into::into),
        error: None,
        content_redacted_at: None,
        created_at: format!("2026-01-01T00:00:0{}Z", id.len() % 10),
        updated_at: "2026-01-01T00:00:00Z".into(),
        guardrail_events: Vec::new(),
    }
}

/// A settled generation with a two-step transcript (a tool call, then the answer)
/// after two input messages, built from JSON as the store reads it back.
pub(crate) fn generation(id: &str, s: &Scope, agent: &str, trace: &str, started: &str) -> GenerationRecord {
    let text = |role: &str, t: &str| json!({"role": role, "content": [{"type": "text", "text": t}]});
    let state = json!({
        "config": {}, "input": {}, "steps": 2, "seq": 2, "reserved": 2,
        "output": {"model": "m", "content": "18 degrees", "finish_reason": "stop"},
        "messages": [
            text("user", "earlier"), text("assistant", "earlier answer"), text("user", "weather in Paris?"),
            {"role": "assistant", "content": [{"type": "tool_call", "id": "call_1", "tool_name": "weather", "args": {"city": "Paris"}}]},
            {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "call_1", "tool_name": "weather", "output": {"c": 18}}]},
            text("assistant", "18 degrees"),
        ],
    });
    serde_json::from_value(json!({
        "id": id, "account_id": s.account_id, "project_id": s.project_id, "agent_id": agent, "trace_id": trace,
        "initiator_generation_id": null, "parent_trace_id": null, "root_trace_id": null,
        "started_by_principal_type": "api_key", "started_by_principal_id": "key_1",
        "status": "completed", "stop_reason": "stop", "error": null, "agent_version": 1, "ai_provider_id": "aip_1",
        "action_id": null, "metadata": {"team": "a"}, "idempotency_key": null, "store_content": true,
        "content_redacted_at": null, "started_at": started, "completed_at": started, "last_activity_at": null,
        "state": state,
    }))
    .expect("a generation record")
}

/// `g` as the store would read it back with another status (only the transitions
/// write a record's status).
fn with_status(g: GenerationRecord, status: &str) -> GenerationRecord {
    let mut v = serde_json::to_value(&g).expect("a record serializes");
    v["status"] = json!(status);
    serde_json::from_value(v).expect("a generation record")
}

#[test]
fn lists_filter_and_run_newest_first_in_the_scopes_project() {
    let (_d, r) = store();
    let s = a();
    r.create_generation(
        &generation("gen_1", &s, "agent_a", "trace_1", "2026-01-01T00:00:01Z"),
        Some(&trace("trace_1", &s, "agent_a", None, None)),
        None,
    )
    .unwrap();
    let mut g2 = with_status(generation("gen_2", &s, "agent_b", "trace_1", "2026-01-01T00:00:02Z"), "failed");
    g2.initiator_generation_id = Some("gen_1".into());
    r.create_generation(&g2, None, None).unwrap();
    let ids = |f: Filter| list_generations(&r, &s, &f).unwrap().into_iter().map(|g| g.id).collect::<Vec<_>>();
    assert_eq!(ids(Filter::default()), ["gen_2", "gen_1"]);
    assert_eq!(ids(Filter { agent_id: Some("agent_a".into()), ..Filter::default() }), ["gen_1"]);
    assert_eq!(ids(Filter { status: Some(Status::Failed), ..Filter::default() }), ["gen_2"]);
    assert_eq!(ids(Filter { initiator_generation_id: Some("gen_1".into()), ..Filter::default() }), ["gen_2"]);
    assert_eq!(ids(Filter { trace_id: Some("trace_x".into()), ..Filter::default() }), Vec::<String>::new());
    for other in others() {
        assert!(list_generations(&r, &other, &Filter::default()).unwrap().is_empty());
        assert!(matches!(get_generation(&r, &other, "gen_1"), Err(SoatError::NotFound { .. })));
        assert!(matches!(purge_generation(&r, &other, "gen_1"), Err(SoatError::NotFound { .. })));
        assert!(matches!(get_trace(&r, &other, "trace_1"), Err(SoatError::NotFound { .. })));
    }
}

#[test]
fn metadata_merges_and_a_purge_keeps_the_skeleton() {
    let (_d, r) = store();
    let s = a();
    r.create_generation(
        &generation("gen_1", &s, "agent_a", "trace_1", "2026-01-01T00:00:01Z"),
        Some(&trace("trace_1", &s, "agent_a", None, None)),
        None,
    )
    .unwrap();
    let m = |v: serde_json::Value| v.as_object().unwrap().clone();
    update_metadata(&r, &s, "gen_1", m(json!({"ticket": "OPS-1"}))).unwrap();
    let g = update_metadata(&r, &s, "gen_1", m(json!({"team": "b", "gone": null}))).unwrap();
    assert_eq!(g.metadata, Some(json!({"team": "b", "ticket": "OPS-1", "gone": null})));

    let t = transcript(&g);
    assert_eq!(
        t["input"],
        json!([{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "earlier answer"}, {"role": "user", "content": "weather in Paris?"}])
    );
    assert_eq!(t["steps"].as_array().unwrap().len(), 2);
    assert_eq!(t["steps"][0]["tool_calls"], json!([{"id": "call_1", "tool_name": "weather", "args": {"city": "Paris"}}]));
    assert_eq!(t["steps"][0]["tool_results"], json!([{"tool_call_id": "call_1", "tool_name": "weather", "result": {"c": 18}, "error": null}]));
    assert_eq!(t["steps"][0]["finish_reason"], "tool-calls");
    assert_eq!((t["steps"][1]["index"].clone(), t["steps"][1]["text"].clone()), (json!(1), json!("18 degrees")));
    assert_eq!(t["output"], json!({"content": "18 degrees", "finish_reason": "stop"}));

    r.save_step(&g, &[EventRow { seq: 1, data: "{}".into(), ends_stream: false }], 0, |_| true).unwrap();
    let purged = purge_generation(&r, &s, "gen_1").unwrap();
    let at = purged.content_redacted_at.clone().expect("stamped");
    assert_eq!((purged.metadata.clone(), purged.state.messages.len(), purged.state.output.clone()), (None, 0, None));
    assert_eq!((purged.status(), purged.state.steps, purged.agent_version), (Status::Completed, 2, Some(1)));
    assert!(r.generation_events("gen_1", 0).unwrap().is_empty(), "events dropped");
    let t = transcript(&purged);
    assert_eq!(
        (t["input"].clone(), t["steps"].clone(), t["output"].clone(), t["step_count"].clone()),
        (json!(null), json!([]), json!(null), json!(2))
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(purge_generation(&r, &s, "gen_1").unwrap().content_redacted_at, Some(at.clone()), "the first stamp stays");
    // A step saved after the purge keeps the stamp (the runner redacts what it saves).
    r.save_step(&g, &[], 0, |_| true).unwrap();
    assert_eq!(get_generation(&r, &s, "gen_1").unwrap().content_redacted_at, Some(at));
}

#[test]
fn a_tree_holds_the_children_and_a_trace_purge_cascades() {
    let (_d, r) = store();
    let s = a();
    r.create_generation(
        &generation("gen_1", &s, "agent_a", "trace_root", "2026-01-01T00:00:01Z"),
        Some(&trace("trace_root", &s, "agent_a", None, None)),
        None,
    )
    .unwrap();
    let child = trace("trace_child", &s, "agent_b", Some("trace_root"), Some("trace_root"));
    r.create_generation(&generation("gen_2", &s, "agent_b", "trace_child", "2026-01-01T00:00:02Z"), Some(&child), None).unwrap();
    let grandchild = trace("trace_grand", &s, "agent_b", Some("trace_child"), Some("trace_root"));
    r.create_generation(&generation("gen_3", &s, "agent_b", "trace_grand", "2026-01-01T00:00:03Z"), Some(&grandchild), None).unwrap();
    r.create_generation(
        &generation("gen_4", &s, "agent_a", "trace_other", "2026-01-01T00:00:04Z"),
        Some(&trace("trace_other", &s, "agent_a", None, None)),
        None,
    )
    .unwrap();

    let t = tree(&r, &s, "trace_grand", true).unwrap();
    assert_eq!(t["id"], "trace_root", "the tree is rooted at the root");
    assert_eq!(t["generations"][0]["id"], "gen_1");
    assert_eq!(t["children"][0]["id"], "trace_child");
    assert_eq!(t["children"][0]["children"][0]["id"], "trace_grand");
    assert_eq!(t["children"][0]["children"][0]["generations"][0]["id"], "gen_3");
    assert!(tree(&r, &s, "trace_root", false).unwrap().get("generations").is_none());

    let purged = purge_trace(&r, &s, "trace_child").unwrap();
    assert!(purged.content_redacted_at.is_some());
    assert!(get_trace(&r, &s, "trace_grand").unwrap().content_redacted_at.is_some());
    assert!(get_trace(&r, &s, "trace_root").unwrap().content_redacted_at.is_none(), "the parent is not below it");
    for (id, purged) in [("gen_1", false), ("gen_2", true), ("gen_3", true), ("gen_4", false)] {
        assert_eq!(get_generation(&r, &s, id).unwrap().content_redacted_at.is_some(), purged, "{id}");
    }
    let other = scope("acct_a", "proj_a2");
    assert!(matches!(tree(&r, &other, "trace_root", true), Err(SoatError::NotFound { .. })));
}

#[test]
fn an_agents_runs_go_only_in_its_own_project() {
    let (_d, r) = store();
    let s = a();
    let elsewhere = scope("acct_a", "proj_shared");
    r.create_generation(
        &generation("gen_1", &s, "agent_a", "trace_1", "2026-01-01T00:00:01Z"),
        Some(&trace("trace_1", &s, "agent_a", None, None)),
        None,
    )
    .unwrap();
    r.create_generation(
        &generation("gen_2", &elsewhere, "agent_a", "trace_2", "2026-01-01T00:00:02Z"),
        Some(&trace("trace_2", &elsewhere, "agent_a", None, None)),
        None,
    )
    .unwrap();
    assert_eq!(r.remove_agent_runs::<GenerationRecord>("acct_a", "proj_a", "agent_a").unwrap(), (1, 1));
    assert!(matches!(get_generation(&r, &s, "gen_1"), Err(SoatError::NotFound { .. })));
    assert!(list_traces(&r, &s).unwrap().is_empty());
    assert_eq!(get_generation(&r, &elsewhere, "gen_2").unwrap().id, "gen_2");
    assert_eq!(r.agent_dependents("agent_a").unwrap().generations, 1, "the other project's link stays");
}
