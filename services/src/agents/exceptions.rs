//! Exceptions and the activity feed (issue 37, exceptions.yaml, activity.yaml). The
//! store files a `run_failed` exception with the failed transition of a generation
//! (`store::exceptions`); here they are listed, read, acknowledged ("someone is on
//! it": a no-op when already acknowledged) and resolved (with a note), a resolved one
//! being final (409 `EXCEPTION_ALREADY_RESOLVED`), each change one transaction. The
//! activity feed lists what the store appended (`exception_created` today), newest
//! first, by cursor.

use serde::Deserialize;
use serde_json::{json, Value};

use super::scope::Scope;
use super::SoatError;
use crate::error::{ApiError, Code};
use crate::store::audit::{sequence_of, ACTIVITY_PREFIX};
use crate::store::owned::Change;
use crate::store::{ActivityEntry, ExceptionRecord, Records};

super::scope::in_project!(ExceptionRecord);

/// `POST /exceptions/{id}/resolve`'s body (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolve {
    #[serde(default)]
    pub note: Option<String>,
}

/// `listExceptions`' filters.
#[derive(Debug, Default)]
pub struct Filter {
    /// `None`: every project the caller sees.
    pub project_id: Option<String>,
    pub status: Option<String>,
    pub severity: Option<String>,
    pub kind: Option<String>,
}

const STATUSES: [&str; 3] = ["open", "acknowledged", "resolved"];
const SEVERITIES: [&str; 3] = ["info", "warning", "critical"];
const KINDS: [&str; 5] = ["run_failed", "guardrail_tripwire", "approval_expired", "quota_unpriced", "manual"];
const ACTIVITY_KINDS: [&str; 4] = ["action_executed", "approval_resolved", "exception_created", "schedule_fired"];

/// A filter's value, one of `allowed` (400 naming `field` otherwise).
pub fn one_of(field: &str, v: Option<String>, allowed: &[&str]) -> Result<Option<String>, SoatError> {
    match v {
        Some(x) if !allowed.contains(&x.as_str()) => Err(SoatError::invalid(field, format!("{x:?} is not one of {}.", allowed.join(", ")))),
        other => Ok(other),
    }
}

impl Filter {
    pub fn new(project_id: Option<String>, status: Option<String>, severity: Option<String>, kind: Option<String>) -> Result<Filter, SoatError> {
        Ok(Filter {
            project_id,
            status: one_of("status", status, &STATUSES)?,
            severity: one_of("severity", severity, &SEVERITIES)?,
            kind: one_of("kind", kind, &KINDS)?,
        })
    }
}

fn seen_in(scope: &Scope, project: &Option<String>, record_project: &str) -> bool {
    scope.sees(record_project) && project.as_ref().is_none_or(|p| p == record_project)
}

/// The exceptions the caller sees that `f` holds, newest first.
pub fn list(records: &Records, scope: &Scope, f: &Filter) -> Result<Vec<ExceptionRecord>, SoatError> {
    let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    let mut all = records.list::<ExceptionRecord>(&scope.account_id)?;
    all.retain(|x| seen_in(scope, &f.project_id, &x.project_id) && is(&f.status, &x.status) && is(&f.severity, &x.severity) && is(&f.kind, &x.kind));
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ExceptionRecord, SoatError> {
    scope.find(records, "exception", id)
}

fn resolved(id: &str) -> ApiError {
    ApiError::new(Code::ExceptionAlreadyResolved, format!("Exception {id} is already resolved."))
}

fn change(records: &Records, scope: &Scope, id: &str, f: impl FnOnce(&mut ExceptionRecord) -> bool) -> Result<ExceptionRecord, ApiError> {
    get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    let out = records.update::<ExceptionRecord, Result<ExceptionRecord, ApiError>>(&scope.account_id, id, |x| {
        if x.status == "resolved" {
            return Change::Keep(Err(resolved(id)));
        }
        if !f(x) {
            return Change::Keep(Ok(x.clone()));
        }
        x.updated_at = now;
        Change::Write(Ok(x.clone()))
    })?;
    out.unwrap_or_else(|| Err(SoatError::not_found("exception", id).into()))
}

/// `acknowledgeException` by `by` (a principal id).
pub fn acknowledge(records: &Records, scope: &Scope, id: &str, by: String) -> Result<ExceptionRecord, ApiError> {
    change(records, scope, id, |x| {
        if x.status == "acknowledged" {
            return false;
        }
        x.status = "acknowledged".into();
        x.acknowledged_by = Some(by);
        true
    })
}

/// `resolveException` by `by`, with its note.
pub fn resolve(records: &Records, scope: &Scope, id: &str, by: String, r: Resolve) -> Result<ExceptionRecord, ApiError> {
    if r.note.as_ref().is_some_and(|n| n.chars().count() > 10_000) {
        return Err(SoatError::invalid("note", "at most 10000 characters.").into());
    }
    change(records, scope, id, |x| {
        x.status = "resolved".into();
        x.resolved_by = Some(by);
        x.resolution_note = r.note;
        true
    })
}

/// The API's shape of an exception.
pub fn view(x: &ExceptionRecord) -> Value {
    json!({
        "id": x.id, "project_id": x.project_id, "status": x.status, "severity": x.severity, "kind": x.kind,
        "title": x.title, "detail": x.detail, "occurrence_count": x.occurrence_count, "last_seen_at": x.last_seen_at,
        "orchestration_run_id": null, "node_id": null, "agent_id": x.agent_id, "guardrail_version": x.guardrail_version,
        "acknowledged_by": x.acknowledged_by, "resolved_by": x.resolved_by, "resolution_note": x.resolution_note,
        "created_at": x.created_at, "updated_at": x.updated_at,
    })
}

/// `listActivity`'s query.
#[derive(Debug, Default)]
pub struct ActivityQuery {
    pub project_id: Option<String>,
    pub kind: Option<String>,
    pub severity: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
}

/// A page of activity, newest first, and the cursor of the next (the last entry's id).
pub fn activity(records: &Records, scope: &Scope, q: ActivityQuery) -> Result<(Vec<ActivityEntry>, Option<String>), ApiError> {
    let kind = one_of("kind", q.kind, &ACTIVITY_KINDS)?;
    let severity = one_of("severity", q.severity, &SEVERITIES)?;
    let before = match &q.cursor {
        None => u64::MAX,
        Some(c) => sequence_of(ACTIVITY_PREFIX, c)
            .ok_or_else(|| ApiError::new(Code::ActivityInvalidCursor, format!("The cursor {c:?} is not one this server handed out.")).at("cursor"))?,
    };
    let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    let keep = |a: &ActivityEntry| seen_in(scope, &q.project_id, &a.project_id) && is(&kind, &a.kind) && is(&severity, &a.severity);
    // Filtered in the store's walk from the cursor back, which stops one past the page.
    let query = crate::store::LogQuery { keep: &keep, past: &|_| false, offset: 0, limit: q.limit.saturating_add(1), count_all: false };
    let mut all = records.activity_page(&scope.account_id, (before != u64::MAX).then_some(before), &query)?.entries;
    let more = all.len() > q.limit;
    all.truncate(q.limit);
    let next = if more { all.last().map(|a| a.id.clone()) } else { None };
    Ok((all, next))
}

/// The API's shape of an activity entry.
pub fn activity_view(a: &ActivityEntry) -> Value {
    json!({
        "id": a.id, "project_id": a.project_id, "kind": a.kind, "severity": a.severity, "summary": a.summary,
        "detail": a.detail, "orchestration_run_id": null, "agent_id": a.agent_id, "ref_id": a.ref_id, "created_at": a.created_at,
    })
}
