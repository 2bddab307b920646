//! Exceptions (issue 37, exceptions.yaml): what failed and needs a person, filed by the
//! write that commits the failure: a generation's `failed` transition files (or, while
//! one with the same agent and error is open, recurs on) a `run_failed` exception in
//! that transition's own transaction, beside the webhooks' outbox, with its
//! `exception_created` activity entry. So a failure is never committed without its
//! exception, nor an exception without its failure.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::audit::{append_activity_in, ActivityEntry};
use super::kv::WriteTx;
use super::owned::{insert_in, list_in, owned_record, put_in};
use super::webhooks::Raised;
use super::StoreError;

pub const EXCEPTION_PREFIX: &str = "exc_";

/// An exception item (`exc_…`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExceptionRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// `open`, `acknowledged`, `resolved`.
    pub status: String,
    pub severity: String,
    /// `run_failed`, `guardrail_tripwire`, `approval_expired`, `quota_unpriced`, `manual`.
    pub kind: String,
    pub title: String,
    pub detail: Option<Value>,
    /// What makes two failures "the same" while the item is open.
    pub dedup_key: Option<String>,
    pub occurrence_count: u64,
    pub last_seen_at: String,
    pub agent_id: Option<String>,
    pub guardrail_version: Option<String>,
    pub acknowledged_by: Option<String>,
    pub resolved_by: Option<String>,
    pub resolution_note: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ExceptionRecord, "soat_exceptions", "soat_exceptions_by_account");

/// Files a `run_failed` exception for each `agents.generation.failed` and
/// `eval_run.failed` event of `raised`, inside the transition's transaction.
pub(super) fn file_in(txn: &WriteTx, account_id: &str, project_id: &str, raised: &[Raised]) -> Result<(), StoreError> {
    for e in raised.iter().filter(|e| e.event_type == "agents.generation.failed") {
        let agent_id = e.data.get("agent_id").and_then(Value::as_str).map(str::to_owned);
        let code = e.data.pointer("/error/code").and_then(Value::as_str).unwrap_or("unknown");
        let message = e.data.pointer("/error/message").and_then(Value::as_str).unwrap_or("the generation failed");
        let dedup = format!("run_failed:{}:{code}", agent_id.as_deref().unwrap_or(""));
        let detail = json!({"generation_id": e.resource_id, "trace_id": e.data.get("trace_id"), "error": {"code": code, "message": message}});
        file_one(txn, account_id, project_id, agent_id, dedup, format!("Generation {} failed: {code}", e.resource_id), detail)?;
    }
    // evaluations (issue 37): a failed eval run, as a failed generation is.
    for e in raised.iter().filter(|e| e.event_type == "eval_run.failed") {
        let agent_id = e.data.get("agent_id").and_then(Value::as_str).map(str::to_owned);
        let eval_id = e.data.get("eval_id").and_then(Value::as_str).unwrap_or_default();
        let dedup = format!("eval_run_failed:{eval_id}");
        let detail = json!({"eval_id": eval_id, "eval_run_id": e.resource_id, "error": e.data.get("error")});
        file_one(txn, account_id, project_id, agent_id, dedup, format!("Eval run {} failed", e.resource_id), detail)?;
    }
    Ok(())
}

fn file_one(
    txn: &WriteTx,
    account_id: &str,
    project_id: &str,
    agent_id: Option<String>,
    dedup: String,
    title: String,
    detail: Value,
) -> Result<(), StoreError> {
    let now = crate::clock::now_rfc3339();
    let all: Vec<ExceptionRecord> = list_in(txn, account_id)?;
    if let Some(mut open) = all.into_iter().find(|x| x.project_id == project_id && x.status == "open" && x.dedup_key.as_deref() == Some(&dedup)) {
        open.occurrence_count += 1;
        open.last_seen_at = now.clone();
        open.updated_at = now;
        open.detail = Some(detail);
        return put_in(txn, &open);
    }
    let x = ExceptionRecord {
        id: format!("{EXCEPTION_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: account_id.to_owned(),
        project_id: project_id.to_owned(),
        status: "open".into(),
        severity: "critical".into(),
        kind: "run_failed".into(),
        title,
        detail: Some(detail),
        dedup_key: Some(dedup),
        occurrence_count: 1,
        last_seen_at: now.clone(),
        agent_id,
        guardrail_version: None,
        acknowledged_by: None,
        resolved_by: None,
        resolution_note: None,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    insert_in(txn, &x)?;
    let mut a = ActivityEntry {
        id: String::new(),
        account_id: account_id.to_owned(),
        project_id: project_id.to_owned(),
        kind: "exception_created".into(),
        severity: "warning".into(),
        summary: x.title.clone(),
        detail: Some(json!({"exception_id": x.id, "kind": x.kind})),
        agent_id: x.agent_id.clone(),
        ref_id: Some(x.id.clone()),
        created_at: now,
    };
    append_activity_in(txn, &mut a)
}
