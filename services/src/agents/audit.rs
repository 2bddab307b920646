//! The audit log (issue 37, audit-log.yaml): every write on `/api/v1`, and `/v1`'s key
//! changes, recorded by the dispatch (`http::handler`) once the answer is known: who
//! (the user, the key), the action (`module:Operation`, as policies name it), the
//! resource (its SRN and id), when, and the status, a policy's denial included. Never
//! a request body or a secret's value. Append-only (`store::audit`): no route changes
//! or removes an entry; the retention sweep ([`retain`], `[agents] audit_retention_days`)
//! removes entries past their days. Read by list (filters of the spec, newest first,
//! paged in the store's walk), get, and an NDJSON export.

use serde_json::{json, Value};

use super::scope::{KeyRef, Scope};
use super::SoatError;
use crate::auth::Principal;
use crate::store::{AuditEntry, LogQuery, Records, StoreError};

/// SOAT's principal type and id for a caller: `user` with its `user_…` id; `api_key`
/// with its `key_…` id, or an account key's prefix.
pub fn principal_of(p: &Principal) -> (&'static str, String) {
    match (&p.user, &p.project_key) {
        (Some(u), _) => ("user", u.id.clone()),
        (None, Some(k)) => ("api_key", k.id.clone()),
        (None, None) => ("api_key", p.prefix.clone()),
    }
}

/// Appends `e`; a store failure is logged, never the request's (auditing does not fail
/// what it describes, as SOAT's).
pub fn record(records: &Records, mut e: AuditEntry) {
    if let Err(err) = records.append_audit(&mut e) {
        tracing::error!(action = %e.action, error = %err, "audit entry not written");
    }
}

/// `listAuditEntries`' and `exportAuditEntries`' filters.
#[derive(Debug, Default)]
pub struct Filter {
    pub project_id: Option<String>,
    pub action: Option<String>,
    pub principal_id: Option<String>,
    pub resource_public_id: Option<String>,
    pub resource_srn: Option<String>,
    pub from: Option<std::time::SystemTime>,
    pub to: Option<std::time::SystemTime>,
}

/// An RFC 3339 time of a filter (400 naming `field` otherwise).
pub fn time(field: &str, v: &str) -> Result<std::time::SystemTime, SoatError> {
    humantime::parse_rfc3339_weak(v.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(v))
        .map_err(|_| SoatError::invalid(field, format!("{v:?} is not an RFC 3339 date-time.")))
}

fn holds(f: &Filter, e: &AuditEntry) -> bool {
    let is = |want: &Option<String>, have: &Option<String>| want.as_ref().is_none_or(|w| have.as_ref() == Some(w));
    is(&f.project_id, &e.project_id)
        && f.action.as_ref().is_none_or(|a| *a == e.action)
        && is(&f.principal_id, &e.principal_id)
        && is(&f.resource_public_id, &e.resource_public_id)
        && is(&f.resource_srn, &e.resource_srn)
        && f.to.is_none_or(|to| at(e).is_some_and(|at| at <= to))
}

fn at(e: &AuditEntry) -> Option<std::time::SystemTime> {
    humantime::parse_rfc3339(&e.created_at).ok()
}

/// Whether the caller sees `e`: a project key only its project's entries.
fn visible(scope: &Scope, e: &AuditEntry) -> bool {
    match scope.key {
        KeyRef::Project { .. } => e.project_id.as_deref() == Some(scope.project_id.as_str()),
        _ => true,
    }
}

/// The entries the caller sees that `f` holds, newest first: `limit` of them after
/// `offset`, and how many there are. Filtered in the store's walk of the account's
/// log, which a `from` ends early.
pub fn list(records: &Records, scope: &Scope, f: &Filter, offset: usize, limit: usize) -> Result<(Vec<AuditEntry>, usize), StoreError> {
    let keep = |e: &AuditEntry| visible(scope, e) && holds(f, e);
    let past = |e: &AuditEntry| f.from.is_some_and(|from| at(e).is_some_and(|at| at < from));
    let page = records.audit_page(&scope.account_id, &LogQuery { keep: &keep, past: &past, offset, limit, count_all: true })?;
    Ok((page.entries, page.total))
}

/// Every entry the caller sees that `f` holds, newest first (the export).
pub fn all(records: &Records, scope: &Scope, f: &Filter) -> Result<Vec<AuditEntry>, StoreError> {
    Ok(list(records, scope, f, 0, usize::MAX)?.0)
}

/// Removes the entries older than `days` days, every account's (the retention sweep).
pub fn sweep(records: &Records, days: u64) -> Result<usize, StoreError> {
    let cutoff = std::time::SystemTime::now() - std::time::Duration::from_secs(days.saturating_mul(86_400));
    records.sweep_audit(&|e| at(e).is_some_and(|at| at < cutoff))
}

/// Sweeps the audit log every `every` while the server runs (shard 0), keeping `days`.
pub async fn retain(records: std::sync::Arc<Records>, days: u64, every: std::time::Duration) {
    loop {
        let r = records.clone();
        match crate::runtime::blocking(move || sweep(&r, days)).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, days, "audit entries past their retention removed"),
            Err(e) => tracing::warn!(error = %e, "the audit retention sweep failed"),
        }
        glommio::timer::sleep(every).await;
    }
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<AuditEntry, SoatError> {
    records.audit_entry(&scope.account_id, id)?.filter(|e| visible(scope, e)).ok_or_else(|| SoatError::not_found("audit entry", id))
}

/// The API's shape of an entry.
pub fn view(e: &AuditEntry) -> Value {
    json!({
        "id": e.id, "project_id": e.project_id, "principal_type": e.principal_type, "principal_id": e.principal_id,
        "action": e.action, "resource_srn": e.resource_srn, "resource_public_id": e.resource_public_id,
        "status": e.status, "request_id": e.request_id, "ip": e.ip, "user_agent": e.user_agent,
        "detail": e.detail, "created_at": e.created_at,
    })
}

/// The entries as NDJSON: one JSON object a line, oldest first.
pub fn ndjson(entries: &[AuditEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries.iter().rev() {
        serde_json::to_writer(&mut out, &view(e)).expect("entries serialize");
        out.push(b'\n');
    }
    out
}
