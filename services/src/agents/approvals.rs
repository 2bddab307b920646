//! SOAT approvals (issue 37; v0.28's approvals.yaml): the items a guardrail files when
//! it routes a tool call to a human (`origin: tool_call`). The generation pauses at
//! `requires_action` (the pause clients already know, with its expiry), the item filed
//! by the pause's own transaction (`store::approvals`); approving or rejecting writes
//! the item and the generation in one transaction, then resumes the run: an approved
//! call runs (with the edited arguments, if any), a rejected one answers the model with
//! the decision output (`{"decision": "rejected", "reason", ...}`). A pending item past
//! its `expires_at` reads `expired` and can never be approved; the sweeper ([`sweep`])
//! then settles it `expired` in the store with its `approvals.expired` event, and its
//! generation goes on told so (the decision output `expired`). A second proposal of a
//! pending item (same `dedup_key`) waits on it rather than filing another. Each change
//! raises its event in its own transaction: `approvals.created` (filed),
//! `.approved`, `.rejected`, `.expired`.

use std::rc::Rc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::agents::generation::record::{GenerationRecord, Runner, Status, Transition};
use crate::agents::generation::run::{self, Host};
use crate::agents::Scope;
use crate::error::{ApiError, Code};
use crate::runtime::blocking;
use crate::store::owned::Change;
use crate::store::webhooks::Raised;
use crate::store::{ApprovalRecord, Records, StoreError};

const STATUSES: &[&str] = &["pending", "approved", "rejected", "expired"];
const ORIGINS: &[&str] = &["node", "tool_call", "task_transition"];

fn store_err(e: StoreError) -> ApiError {
    tracing::error!(error = %e, "an approval's store access failed");
    ApiError::internal()
}

/// The status a reader sees: a pending item past its expiry is `expired`.
pub fn status_now(a: &ApprovalRecord) -> &str {
    if a.status == "pending" && crate::clock::is_past(&a.expires_at) {
        "expired"
    } else {
        &a.status
    }
}

pub fn view(a: &ApprovalRecord) -> Value {
    json!({
        "id": a.id,
        "project_id": a.project_id,
        "origin": a.origin,
        "status": status_now(a),
        "proposed_action": a.proposed_action,
        "reasoning": a.reasoning,
        "evidence": a.evidence,
        "predicted_impact": a.predicted_impact,
        "expires_at": a.expires_at,
        "dedup_key": a.dedup_key,
        "orchestration_run_id": null,
        "node_id": null,
        "generation_id": a.generation_id,
        "session_id": a.session_id,
        "agent_id": a.agent_id,
        "task_id": null,
        "task_transition": null,
        "policy_version": a.policy_version,
        "previous_item_id": a.previous_item_id,
        "resolved_by": a.resolved_by,
        "resolution_reason": a.resolution_reason,
        "edited_arguments": a.edited_arguments,
        "created_at": a.created_at,
        "updated_at": a.updated_at,
    })
}

fn one_of(field: &str, v: Option<String>, allowed: &[&str]) -> Result<Option<String>, ApiError> {
    match v {
        Some(s) if !allowed.contains(&s.as_str()) => {
            Err(ApiError::new(Code::SoatValidation, format!("{field} must be one of {}, not {s:?}.", allowed.join(", "))).at(field.to_owned()))
        }
        v => Ok(v),
    }
}

/// listApprovals' filters.
pub struct Filter {
    pub status: Option<String>,
    pub origin: Option<String>,
    pub expires_before: Option<String>,
}

/// The project's items, newest first, filtered.
pub fn list(records: &Records, p: &Scope, f: Filter) -> Result<Vec<ApprovalRecord>, ApiError> {
    let status = one_of("status", f.status, STATUSES)?;
    let origin = one_of("origin", f.origin, ORIGINS)?;
    let before =
        match f.expires_before {
            Some(t) => Some(humantime::parse_rfc3339_weak(&t).ok().ok_or_else(|| {
                ApiError::new(Code::SoatValidation, format!("expires_before must be a date-time, not {t:?}.")).at("expires_before")
            })?),
            None => None,
        };
    let mut all: Vec<ApprovalRecord> = p.list(records).map_err(store_err)?;
    all.retain(|a| status.as_deref().is_none_or(|s| status_now(a) == s));
    all.retain(|a| origin.as_deref().is_none_or(|o| a.origin == o));
    if let Some(b) = before {
        all.retain(|a| humantime::parse_rfc3339_weak(&a.expires_at).ok().is_some_and(|t| t <= b));
    }
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(all)
}

/// listApprovalRecurrences: items of `status` (default `rejected`) grouped by
/// `dedup_key`, groups of at least `min_count`, most recurrent first.
pub fn recurrences(records: &Records, p: &Scope, status: Option<String>, min_count: Option<String>) -> Result<Vec<Value>, ApiError> {
    let status = one_of("status", status, STATUSES)?.unwrap_or_else(|| "rejected".into());
    let min = match min_count {
        None => 2,
        Some(m) => m.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            ApiError::new(Code::SoatValidation, format!("min_count must be a whole number of at least 1, not {m:?}.")).at("min_count")
        })?,
    };
    let mut all: Vec<ApprovalRecord> = p.list(records).map_err(store_err)?;
    all.retain(|a| a.dedup_key.is_some() && status_now(a) == status);
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    let mut groups: Vec<(String, Vec<ApprovalRecord>)> = Vec::new();
    for a in all {
        let key = a.dedup_key.clone().unwrap_or_default();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, items)) => items.push(a),
            None => groups.push((key, vec![a])),
        }
    }
    groups.retain(|(_, items)| items.len() as u64 >= min);
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    Ok(groups
        .into_iter()
        .map(|(key, items)| {
            let first = &items[0];
            json!({
                "dedup_key": key,
                "agent_id": first.agent_id,
                "tool_id": first.proposed_action.as_ref().and_then(|a| a.get("tool_id")).cloned(),
                "count": items.len(),
                "chain": items.iter().map(|a| json!({"id": a.id, "status": status_now(a), "resolution_reason": a.resolution_reason, "created_at": a.created_at})).collect::<Vec<_>>(),
                "reasons": items.iter().filter_map(|a| a.resolution_reason.clone()).filter(|r| !r.is_empty()).collect::<Vec<_>>(),
            })
        })
        .collect())
}

pub fn get(records: &Records, p: &Scope, id: &str) -> Result<ApprovalRecord, ApiError> {
    p.get::<ApprovalRecord>(records, id).map_err(store_err)?.ok_or_else(|| not_found(id))
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(Code::SoatNotFound, format!("There is no approval item {id}."))
}

/// approveApproval's body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// rejectApproval's body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    #[serde(default)]
    pub reason: Option<String>,
}

/// A decision: approve (with edited arguments, or not) or reject (with its reason).
pub enum Decision {
    Approve(Option<Value>),
    Reject(String),
}

/// Whether the paused generation still waits for something: a gated call not yet
/// decided, or a client call not yet answered.
fn still_waiting(g: &GenerationRecord) -> bool {
    g.state.pending.iter().any(|c| c.result.is_none() && (c.gate.as_ref().is_some_and(|x| !x.approved) || c.runner == Runner::Client))
        || g.state.held.as_ref().is_some_and(|h| !h.gate.approved)
}

/// Decides item `id` and the generations it holds, in one transaction, then resumes
/// each of them that waits for nothing else on this shard.
pub async fn decide(host: Rc<Host>, p: &Scope, id: &str, decision: Decision) -> Result<Value, ApiError> {
    if let Decision::Approve(Some(args)) = &decision {
        if !args.is_object() {
            return Err(ApiError::new(Code::ApprovalInvalidEdit, "arguments must be a JSON object.").at("arguments"));
        }
    }
    if let Decision::Reject(r) = &decision {
        if r.trim().is_empty() {
            return Err(ApiError::new(Code::ApprovalReasonRequired, "A rejection states its reason.").at("reason"));
        }
    }
    let (r, s, i) = (host.agents.records.clone(), p.clone(), id.to_owned());
    let who = p.principal_id().to_owned();
    let out = blocking(move || {
        let decided = |a: &mut ApprovalRecord, gs: &mut [GenerationRecord]| {
            if !s.sees(&a.project_id) {
                return Change::Keep(Err(not_found(&a.id)));
            }
            match status_now(a) {
                "pending" => {}
                "expired" => {
                    return Change::Keep(Err(ApiError::new(
                        Code::ApprovalExpired,
                        format!("The approval item {} expired at {}.", a.id, a.expires_at),
                    )))
                }
                other => {
                    return Change::Keep(Err(ApiError::new(Code::ApprovalAlreadyResolved, format!("The approval item {} is already {other}.", a.id))))
                }
            }
            a.resolved_by = Some(who);
            a.updated_at = crate::clock::now_rfc3339();
            match decision {
                Decision::Approve(args) => {
                    a.status = "approved".into();
                    a.edited_arguments = args;
                }
                Decision::Reject(reason) => {
                    a.status = "rejected".into();
                    a.resolution_reason = Some(reason);
                }
            }
            Change::Write(Ok((a.clone(), settle(a, gs))))
        };
        r.resolve_approval::<GenerationRecord, Result<(ApprovalRecord, Vec<GenerationRecord>), ApiError>>(&s.account_id, &i, decided, raised)
    })
    .await
    .map_err(store_err)?;
    let (a, resumed) = out.ok_or_else(|| not_found(id))??;
    resume(&host, resumed).await;
    Ok(view(&a))
}

/// The event an item's change raises (approvals.md: `approvals.approved`, `.rejected`,
/// `.expired`), with the item as a reader sees it.
fn raised(a: &ApprovalRecord) -> Vec<Raised> {
    vec![Raised {
        event_type: format!("approvals.{}", a.status),
        resource_type: "approval",
        resource_id: a.id.clone(),
        data: json!({"approval": view(a)}),
    }]
}

/// What deciding `a` does to the generations it holds: each gated call or held text
/// answered as decided; the generations that now wait for nothing else resume (and
/// are returned, to be run).
fn settle(a: &ApprovalRecord, gs: &mut [GenerationRecord]) -> Vec<GenerationRecord> {
    let mut resumed = Vec::new();
    for g in gs.iter_mut().filter(|g| g.status() == Status::RequiresAction && g.content_redacted_at.is_none()) {
        for c in g.state.pending.iter_mut().filter(|c| c.result.is_none() && c.gate.as_ref().is_some_and(|x| x.approval_id == a.id && !x.approved)) {
            if let Some(gate) = &mut c.gate {
                gate.approved = true;
            }
            match a.status.as_str() {
                "approved" => {
                    if let Some(edited) = &a.edited_arguments {
                        c.args = edited.clone();
                    }
                }
                _ => {
                    c.result = Some(decision_output(a));
                    c.is_error = true;
                }
            }
        }
        // A held answer or input: released once approved, refused otherwise.
        if let Some(h) = g.state.held.as_mut().filter(|h| h.gate.approval_id == a.id && !h.gate.approved) {
            h.gate.approved = true;
            if a.status != "approved" {
                h.refusal = Some(a.resolution_reason.clone().unwrap_or_default());
                h.expired = a.status == "expired";
            }
        }
        if !still_waiting(g) {
            g.apply(Transition::Resume);
            resumed.push(g.clone());
        }
    }
    resumed
}

/// Runs each resumed generation on this shard (one whose content was kept in memory
/// only, and is gone, ends interrupted).
async fn resume(host: &Rc<Host>, resumed: Vec<GenerationRecord>) {
    for mut g in resumed {
        if host.agents.content.restore(&mut g) {
            run::spawn(host.clone(), g, None);
        } else {
            let log = crate::agents::generation::live::open(&g.id);
            crate::agents::generation::recover::interrupt(
                host,
                g.clone(),
                "its content was kept in memory only (trace_content_mode none) and the server restarted",
            )
            .await;
            crate::agents::generation::live::finish(&g.id, &log);
        }
    }
}

/// Settles item `id` of `account_id` `expired` when it is pending and past its
/// `expires_at`: the item, the generations it holds (each gated call answered with the
/// decision output `expired`, as SOAT's continuation tells the agent; a held text
/// refused) and the `approvals.expired` event in one transaction; then the generations
/// that wait for nothing else resume.
pub async fn expire(host: &Rc<Host>, account_id: &str, id: &str) {
    let (r, a, i) = (host.agents.records.clone(), account_id.to_owned(), id.to_owned());
    let out = blocking(move || {
        let due = |a: &mut ApprovalRecord, gs: &mut [GenerationRecord]| {
            if status_now(a) != "expired" || a.status != "pending" {
                return Change::Keep(Vec::new());
            }
            a.status = "expired".into();
            a.updated_at = crate::clock::now_rfc3339();
            Change::Write(settle(a, gs))
        };
        r.resolve_approval::<GenerationRecord, Vec<GenerationRecord>>(&a, &i, due, raised)
    })
    .await;
    match out {
        Ok(Some(resumed)) => resume(host, resumed).await,
        Ok(None) => {}
        Err(e) => tracing::error!(approval = id, error = %e, "expiring an approval item failed"),
    }
}

/// How often the sweeper looks for items past their expiry.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The expiry sweeper of this shard (started at shard start, so it runs again after a
/// restart): settles this shard's share of the pending items past `expires_at`.
pub fn sweep(host: Rc<Host>, shard: usize, shards: usize) {
    glommio::spawn_local(async move {
        loop {
            let r = host.agents.records.clone();
            match blocking(move || r.pending_approvals()).await {
                Ok(items) => {
                    let due = items.into_iter().filter(|a| crate::clock::is_past(&a.expires_at));
                    for a in due.filter(|a| crate::agents::generation::recover::mine(&a.id, shard, shards)) {
                        expire(&host, &a.account_id, &a.id).await;
                    }
                }
                Err(e) => tracing::error!(error = %e, "reading the pending approval items failed"),
            }
            glommio::timer::sleep(SWEEP_EVERY).await;
        }
    })
    .detach();
}

/// The decision output a refused or expired call answers the model with (approvals.md,
/// "Decision output").
fn decision_output(a: &ApprovalRecord) -> Value {
    let reason = match a.status.as_str() {
        "expired" => Some("It expired before a human decided, so nothing was executed. Do not silently retry; report the staleness.".to_owned()),
        _ => a.resolution_reason.clone(),
    };
    json!({"decision": a.status, "approval_id": a.id, "resolved_by": a.resolved_by, "edited_args": null, "reason": reason, "result": null})
}
crate::agents::scope::in_project!(ApprovalRecord);
