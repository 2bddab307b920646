//! guardrails (issue 37) inside a generation: the input screened before the record is
//! first written (`screen_input`, so no original reaches the data directory), the
//! model's text before it is streamed, stored or returned, and each tool call before it
//! runs or is handed to the client. Each evaluation joins the run's state
//! (`guardrail_evaluations`) and, when it changed something, the trace.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::record::{Failure, Gate, InContent, InMessage, PendingCall};
use crate::agents::guardrails::document::Stage;
use crate::agents::guardrails::evaluate::{self, Applied, Decision, Evaluation, Subject};
use crate::error::Code;

/// An evaluation as the run's state keeps it.
pub fn record(e: &Evaluation) -> Value {
    let mut v = e.to_value();
    v["notable"] = Value::Bool(e.notable());
    v
}

/// The failure of a generation a guardrail stopped.
pub fn stopped(e: &Evaluation, code: Code, what: &str) -> Failure {
    let version = e.guardrail_version.map_or_else(|| "a dangling reference".to_owned(), |v| format!("version {v}"));
    Failure::new(code, format!("The guardrail {} ({version}) {what}.", e.guardrail_id))
        .with("guardrail_id", e.guardrail_id.clone())
        .with("guardrail_version", e.guardrail_version.map_or(Value::Null, Value::from))
}

/// Screens a text at `stage` through every guardrail: the text as it goes on, and the
/// evaluations that found something.
pub fn screen(guards: &[Applied], stage: Stage, text: &str, s: &Subject<'_>) -> (String, Vec<Evaluation>) {
    let mut out = text.to_owned();
    let mut found = Vec::new();
    for a in guards {
        if let Some((e, t)) = evaluate::text(a, stage, &out, s) {
            out = t;
            found.push(e);
        }
    }
    (out, found)
}

/// What screening a request's input decided.
pub struct Screened {
    /// Every evaluation that found something, as the run's state keeps it.
    pub evaluations: Vec<Value>,
    /// The evaluation that blocks the input, if any.
    pub blocked: Option<Value>,
    /// The evaluation that sends the input to approval, if any (and none blocks).
    pub approval: Option<Evaluation>,
}

/// The request's text messages screened before anything is written: redacted in place.
pub fn screen_input(guards: &[Applied], messages: &mut [InMessage], s: &Subject<'_>) -> Screened {
    let mut all = Vec::new();
    for m in messages.iter_mut() {
        if let InContent::Text(t) = &mut m.content {
            let (out, found) = screen(guards, Stage::Input, t, s);
            *t = out;
            all.extend(found);
        }
    }
    let blocked = all.iter().find(|e| e.decision == Decision::Blocked).map(|e| e.to_value());
    let approval = all.iter().find(|e| e.decision == Decision::RouteToApproval && blocked.is_none()).cloned();
    Screened { evaluations: all.iter().map(record).collect(), blocked, approval }
}

/// The gate an approval-routed evaluation `e` sets on what it holds (`what`: the call's
/// id, `output`, `input`), its item's id derived from the generation and `what`, so a
/// step decided again (after a restart) files no second item.
pub fn gate(e: &Evaluation, generation_id: &str, what: &str, dedup_key: String, expires_in: Option<u64>, tool_id: Option<String>) -> Gate {
    let version = e.guardrail_version.map_or_else(|| "null".to_owned(), |v| v.to_string());
    Gate {
        approval_id: approval_id(generation_id, what),
        approved: false,
        policy_version: Some(format!("{}@{version}", e.guardrail_id)),
        expires_in,
        tool_id,
        dedup_key,
        created_at: crate::clock::now_rfc3339(),
    }
}

/// The approval item's id for what generation `generation_id` holds at `what`.
pub fn approval_id(generation_id: &str, what: &str) -> String {
    let mut h = Sha256::new();
    h.update(generation_id.as_bytes());
    h.update([0]);
    h.update(what.as_bytes());
    let hex: String = h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("{}{hex}", crate::store::APPROVAL_PREFIX)
}

/// A call's dedup key: the agent, the tool and its arguments (approvals.md).
pub fn dedup_key(agent_id: &str, tool: &str, args: &Value) -> String {
    let mut h = Sha256::new();
    h.update(agent_id.as_bytes());
    h.update([0]);
    h.update(tool.as_bytes());
    h.update([0]);
    h.update(args.to_string().as_bytes());
    h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// What the guardrails decided for one tool call: its arguments redacted in place, its
/// result set when blocked, its gate when it goes to approval; a tripwire is the
/// generation's failure. The evaluations join `out`.
pub fn gate_call(guards: &[Applied], p: &mut PendingCall, tool_id: Option<&str>, s: &Subject<'_>, out: &mut Vec<Value>) -> Result<(), Failure> {
    let mut evaluations = Vec::new();
    for a in guards {
        let found = evaluate::scrub_args(a, &p.args, s);
        if let Some((_, args)) = &found {
            p.args = args.clone();
        }
        let mut e = evaluate::call(a, &p.args, s);
        if let Some((f, _)) = found {
            e.decision = e.decision.max(f.decision);
            e.identifiers = f.identifiers;
        }
        evaluations.push(e);
    }
    out.extend(evaluations.iter().map(record));
    let decision = evaluate::strictest(&evaluations);
    let Some(governing) = evaluations.iter().find(|e| e.decision == decision && decision != Decision::Execute) else { return Ok(()) };
    let version = governing.guardrail_version.map_or_else(|| "null".to_owned(), |v| v.to_string());
    let generation_id = s.generation_id.unwrap_or_default();
    match decision {
        Decision::Execute => {}
        Decision::Blocked => {
            p.result = Some(json!({
                "status": "blocked",
                "error": format!("The guardrail {} (version {version}) blocked this call; it did not run.", governing.guardrail_id),
                "guardrail_id": governing.guardrail_id,
                "guardrail_version": governing.guardrail_version,
            }));
            p.is_error = true;
            p.started = false;
        }
        Decision::Tripwire => return Err(stopped(governing, Code::GuardrailTripwire, "tripped: its guard failed for this call, which did not run")),
        Decision::RouteToApproval => {
            p.started = false;
            let key = dedup_key(s.agent_id.unwrap_or_default(), &p.tool_name, &p.args);
            let expires_in = evaluate::expires_in(&evaluations, guards);
            p.gate = Some(gate(governing, generation_id, &p.id, key, expires_in, tool_id.map(str::to_owned)));
        }
    }
    Ok(())
}

/// A tool's result, redacted by the rules that redact at the tool-call stage.
pub fn scrub_result(guards: &[Applied], result: Value, s: &Subject<'_>) -> Value {
    let mut v = result;
    for a in guards {
        if let Some((e, out)) = evaluate::scrub_args(a, &v, s) {
            if e.identifiers.as_ref().is_some_and(|f| f.action == "redact" || f.action == "block") {
                v = out;
            }
        }
    }
    v
}
