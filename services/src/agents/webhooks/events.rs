//! The events a generation's transitions raise, as SOAT names them: every generation
//! raises `agents.generation.{started,requires_action,completed,failed}`, and one a
//! session started (`state.input.session_id`) raises `sessions.generation.*` beside
//! them. Raised by the write that commits the transition (`store::webhooks`' outbox),
//! computed from the stored state before it and the state written.
//!
//! What goes in `data`: ids, the status, the stop reason, the error's code and
//! message, and the output's text when the generation keeps its content (never under
//! `trace_content_mode: none` or after a purge). No secret value: the request's
//! `tool_context` and the run's transcript are never copied.

use serde_json::{json, Value};

use crate::agents::generation::record::{GenerationRecord, Status};
use crate::store::webhooks::Raised;

/// Every event name this server raises (what `events` patterns are checked against
/// for typos is left to the receiver: SOAT accepts any name).
pub const NAMES: &[&str] = &[
    "agents.generation.started",
    "agents.generation.requires_action",
    "agents.generation.completed",
    "agents.generation.failed",
    "sessions.generation.started",
    "sessions.generation.requires_action",
    "sessions.generation.completed",
    "sessions.generation.failed",
];

/// The events `g` raises over `before` (`None`: it is new).
pub fn raised(g: &GenerationRecord, before: Option<&GenerationRecord>) -> Vec<Raised> {
    let Some(what) = change(g.status(), before.map(GenerationRecord::status)) else { return Vec::new() };
    let mut out =
        vec![Raised { event_type: format!("agents.generation.{what}"), resource_type: "generation", resource_id: g.id.clone(), data: data(g) }];
    if let Some(session) = &g.state.input.session_id {
        let mut d = json!({"session_id": session, "generation_id": g.id, "trace_id": g.trace_id, "status": g.status().as_str()});
        if let Some(c) = &g.state.input.conversation_id {
            d["conversation_id"] = Value::from(c.as_str());
        }
        out.push(Raised { event_type: format!("sessions.generation.{what}"), resource_type: "session", resource_id: session.clone(), data: d });
    }
    out
}

/// Which lifecycle event a change of status is, if any (a resume, a step, a take-over
/// are none).
fn change(now: Status, before: Option<Status>) -> Option<&'static str> {
    if before == Some(now) {
        return None;
    }
    match now {
        Status::InProgress if before.is_none() => Some("started"),
        Status::InProgress => None,
        Status::RequiresAction => Some("requires_action"),
        Status::Completed => Some("completed"),
        Status::Failed => Some("failed"),
    }
}

fn data(g: &GenerationRecord) -> Value {
    let mut d = json!({
        "id": g.id,
        "agent_id": g.agent_id,
        "trace_id": g.trace_id,
        "status": g.status().as_str(),
        "stop_reason": g.stop_reason,
    });
    if let Some(e) = &g.error {
        d["error"] = json!({"code": e.code, "message": e.message});
    }
    if let Some(o) = g.state.output.as_ref().filter(|_| g.store_content && g.content_redacted_at.is_none()) {
        d["output"] = json!({"content": o.content, "model": o.model});
    }
    if let Some(s) = &g.state.input.session_id {
        d["session_id"] = Value::from(s.as_str());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generation as the store reads one back, with `status` and `input`.
    fn record(status: &str, input: Value, content: bool) -> GenerationRecord {
        let state = json!({"config": {}, "input": input, "steps": 1, "seq": 1, "reserved": 1, "messages": [],
            "output": {"model": "m", "content": "the answer", "finish_reason": "stop"}});
        serde_json::from_value(json!({
            "id": "gen_1", "account_id": "acct_1", "project_id": "proj_1", "agent_id": "agt_1", "trace_id": "trace_1",
            "initiator_generation_id": null, "parent_trace_id": null, "root_trace_id": null,
            "started_by_principal_type": "api_key", "started_by_principal_id": "key_1",
            "status": status, "stop_reason": null, "error": null, "agent_version": 1, "ai_provider_id": "aip_1",
            "action_id": null, "metadata": null, "idempotency_key": null, "store_content": content,
            "content_redacted_at": null, "started_at": "2026-01-01T00:00:00Z", "completed_at": null, "last_activity_at": null,
            "state": state,
        }))
        .expect("a generation record")
    }

    #[test]
    fn a_sessions_generation_raises_its_session_event_beside_its_own_and_no_secret() {
        let input = json!({"session_id": "sess_1", "conversation_id": "conv_1", "tool_context": {"token": "private-value"}});
        let before = record("in_progress", input.clone(), true);
        let after = record("completed", input, true);
        let got = raised(&after, Some(&before));
        let names: Vec<&str> = got.iter().map(|r| r.event_type.as_str()).collect();
        assert_eq!(names, ["agents.generation.completed", "sessions.generation.completed"]);
        assert_eq!((got[1].resource_type, got[1].resource_id.as_str()), ("session", "sess_1"));
        assert_eq!(got[1].data["generation_id"], "gen_1");
        assert_eq!(got[1].data["conversation_id"], "conv_1");
        assert_eq!(got[0].data["output"]["content"], "the answer");
        for r in &got {
            assert!(!r.data.to_string().contains("private-value"), "{}", r.data);
        }
        let started = raised_names(&record("in_progress", json!({"session_id": "sess_1"}), true), None);
        assert_eq!(started, ["agents.generation.started", "sessions.generation.started"]);
        assert_eq!(raised_names(&record("in_progress", json!({}), true), None), ["agents.generation.started"]);
        // No content kept (trace_content_mode none): no output in the event.
        let quiet = raised(&record("completed", json!({}), false), Some(&record("in_progress", json!({}), false)));
        assert!(quiet[0].data.get("output").is_none(), "{}", quiet[0].data);
    }

    fn raised_names(g: &GenerationRecord, before: Option<&GenerationRecord>) -> Vec<String> {
        raised(g, before).into_iter().map(|r| r.event_type).collect()
    }

    #[test]
    fn only_a_change_of_status_raises_an_event() {
        assert_eq!(change(Status::InProgress, None), Some("started"));
        assert_eq!(change(Status::InProgress, Some(Status::InProgress)), None);
        assert_eq!(change(Status::InProgress, Some(Status::RequiresAction)), None, "a resume");
        assert_eq!(change(Status::RequiresAction, Some(Status::InProgress)), Some("requires_action"));
        assert_eq!(change(Status::Completed, Some(Status::InProgress)), Some("completed"));
        assert_eq!(change(Status::Failed, Some(Status::RequiresAction)), Some("failed"));
        assert_eq!(change(Status::Failed, Some(Status::Failed)), None, "a chain limit's stamp");
    }
}
