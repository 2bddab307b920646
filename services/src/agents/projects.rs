//! Projects (`proj_…`, projects.yaml): an account holds them, every `/api/v1` record
//! belongs to one. Each account has a default project, made on its first `/api/v1`
//! request; deleting it is allowed, and the next request makes another. A project
//! key sees only its own project and may not create or delete any.

use std::path::Path;

use super::patch::Patch;
use super::refs;
use super::scope::Scope;
use super::SoatError;
use crate::clock::now_rfc3339;
use crate::ids::random_base62;
use crate::store::owned::Change;
use crate::store::{FileRecord, ProjectRecord, Records};

pub const DEFAULT_NAME: &str = "Default";

/// `POST /api/v1/projects`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewProject {
    pub name: String,
}

/// `PATCH /api/v1/projects/{id}`: at least one field.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatch {
    #[serde(default)]
    pub name: Patch<String>,
    #[serde(default)]
    pub guardrail_ids: Patch<Vec<String>>,
    #[serde(default)]
    pub max_concurrent_runs: Patch<i64>,
    #[serde(default)]
    pub default_model_route_id: Patch<String>,
    #[serde(default)]
    pub audit_reads_enabled: Patch<bool>,
    #[serde(default)]
    pub trace_content_retention_days: Patch<i64>,
    #[serde(default)]
    pub trace_content_mode: Patch<String>,
}

pub fn new_id() -> String {
    format!("proj_{}", random_base62(16))
}

fn record(account_id: &str, name: &str, is_default: bool) -> ProjectRecord {
    let now = now_rfc3339();
    ProjectRecord {
        id: new_id(),
        account_id: account_id.to_owned(),
        name: name.to_owned(),
        guardrail_ids: None,
        max_concurrent_runs: None,
        default_model_route_id: None,
        audit_reads_enabled: false,
        trace_content_retention_days: None,
        trace_content_mode: "full".into(),
        is_default,
        created_at: now.clone(),
        updated_at: now,
    }
}

/// The account's default project, made when it has none (blocking: a write).
pub fn default_project(records: &Records, account_id: &str) -> Result<ProjectRecord, SoatError> {
    Ok(records.default_project(account_id, || record(account_id, DEFAULT_NAME, true))?)
}

/// The project the scope acts in (its `trace_content_mode`, `default_model_route_id`,
/// `guardrail_ids` for the modules that apply them).
pub fn current(records: &Records, scope: &Scope) -> Result<ProjectRecord, SoatError> {
    records.get::<ProjectRecord>(&scope.account_id, &scope.project_id)?.ok_or_else(|| SoatError::not_found("project", &scope.project_id))
}

fn check_name(name: &str) -> Result<(), SoatError> {
    crate::names::check(name, 200).map_err(|problem| SoatError::invalid("name", problem.to_string()))
}

/// A project key may not make or remove projects.
fn account_wide(scope: &Scope, what: &str) -> Result<(), SoatError> {
    if scope.is_project_key() {
        return Err(SoatError::Forbidden(format!("A project key cannot {what} projects; use an account key or an unscoped key.")));
    }
    Ok(())
}

pub fn create(records: &Records, scope: &Scope, new: NewProject) -> Result<ProjectRecord, SoatError> {
    account_wide(scope, "create")?;
    check_name(&new.name)?;
    let p = record(&scope.account_id, new.name.trim(), false);
    records.insert(&p)?;
    Ok(p)
}

/// The projects the scope sees, oldest first.
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<ProjectRecord>, SoatError> {
    let mut all: Vec<ProjectRecord> = records.list::<ProjectRecord>(&scope.account_id)?.into_iter().filter(|p| scope.sees(&p.id)).collect();
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

/// A project the path names: another project than a project key's own is 403 (the
/// same answer whether it exists or not), another account's is 404.
fn named(scope: &Scope, id: &str) -> Result<(), SoatError> {
    if !scope.sees(id) {
        return Err(SoatError::ProjectScope(format!("This key acts only in project {}; the request names {id}.", scope.project_id)));
    }
    Ok(())
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ProjectRecord, SoatError> {
    named(scope, id)?;
    records.get::<ProjectRecord>(&scope.account_id, id)?.ok_or_else(|| SoatError::not_found("project", id))
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: ProjectPatch) -> Result<ProjectRecord, SoatError> {
    named(scope, id)?;
    let checked = check_patch(records, scope, id, &patch)?;
    let now = now_rfc3339();
    let updated = records.update::<ProjectRecord, ProjectRecord>(&scope.account_id, id, |p| {
        apply(p, patch, checked);
        p.updated_at = now;
        Change::Write(p.clone())
    })?;
    updated.ok_or_else(|| SoatError::not_found("project", id))
}

/// Values checked before the write transaction.
struct Checked {
    max_concurrent_runs: Option<u64>,
    retention_days: Option<u64>,
}

fn check_patch(records: &Records, scope: &Scope, id: &str, p: &ProjectPatch) -> Result<Checked, SoatError> {
    let ProjectPatch {
        name,
        guardrail_ids,
        max_concurrent_runs,
        default_model_route_id,
        audit_reads_enabled,
        trace_content_retention_days,
        trace_content_mode,
    } = p;
    let all_absent = name.is_absent()
        && guardrail_ids.is_absent()
        && max_concurrent_runs.is_absent()
        && default_model_route_id.is_absent()
        && audit_reads_enabled.is_absent()
        && trace_content_retention_days.is_absent()
        && trace_content_mode.is_absent();
    if all_absent {
        return Err(SoatError::invalid("(body)", "name at least one field to change."));
    }
    match name {
        Patch::Set(n) => check_name(n)?,
        Patch::Null => return Err(SoatError::invalid("name", "cannot be null.")),
        Patch::Absent => {}
    }
    if matches!(audit_reads_enabled, Patch::Null) {
        return Err(SoatError::invalid("audit_reads_enabled", "must be true or false, not null."));
    }
    match trace_content_mode {
        Patch::Set(m) if m != "full" && m != "none" => return Err(SoatError::invalid("trace_content_mode", "must be \"full\" or \"none\".")),
        Patch::Null => return Err(SoatError::invalid("trace_content_mode", "must be \"full\" or \"none\", not null.")),
        _ => {}
    }
    if let Patch::Set(ids) = guardrail_ids {
        for g in ids {
            if !refs::guardrail_in_project(records, &scope.account_id, id, g)? {
                return Err(SoatError::Reference {
                    code: crate::error::Code::GuardrailNotFound,
                    kind: "guardrail",
                    field: "guardrail_ids",
                    id: g.clone(),
                });
            }
        }
    }
    if let Patch::Set(route) = default_model_route_id {
        if !refs::model_route_in_project(records, &scope.account_id, id, route)? {
            return Err(SoatError::Reference {
                code: crate::error::Code::ModelRouteNotFound,
                kind: "model route",
                field: "default_model_route_id",
                id: route.clone(),
            });
        }
    }
    let positive = |field: &str, v: &Patch<i64>| match v {
        Patch::Set(n) if *n < 1 => Err(SoatError::invalid(field, "must be an integer of at least 1, or null.")),
        Patch::Set(n) => Ok(Some(*n as u64)),
        _ => Ok(None),
    };
    Ok(Checked {
        max_concurrent_runs: positive("max_concurrent_runs", max_concurrent_runs)?,
        retention_days: positive("trace_content_retention_days", trace_content_retention_days)?,
    })
}

fn apply(p: &mut ProjectRecord, patch: ProjectPatch, checked: Checked) {
    if let Patch::Set(n) = patch.name {
        p.name = n.trim().to_owned();
    }
    p.guardrail_ids = patch.guardrail_ids.apply(p.guardrail_ids.take());
    if !patch.max_concurrent_runs.is_absent() {
        p.max_concurrent_runs = checked.max_concurrent_runs;
    }
    p.default_model_route_id = patch.default_model_route_id.apply(p.default_model_route_id.take());
    if let Patch::Set(b) = patch.audit_reads_enabled {
        p.audit_reads_enabled = b;
    }
    if !patch.trace_content_retention_days.is_absent() {
        p.trace_content_retention_days = checked.retention_days;
    }
    if let Patch::Set(m) = patch.trace_content_mode {
        p.trace_content_mode = m;
    }
}

/// `DELETE /api/v1/projects/{id}`: 409 while it holds records unless `force`, which
/// deletes them with it. Its keys are deleted with it (no longer valid on any shard
/// once this returns: the caller bumps the key epoch). Its files' bytes under `data`
/// go after their records (a crash between leaves bytes that `files::sweep` removes at
/// the next start); its hidden collections are the caller's (`memory::sweep`).
pub fn delete(records: &Records, data: &Path, scope: &Scope, id: &str, force: bool) -> Result<(), SoatError> {
    account_wide(scope, "delete")?;
    get(records, scope, id)?;
    let counts: Vec<(&'static str, usize)> = refs::project_dependents(records, &scope.account_id, id)?.into_iter().filter(|(_, n)| *n > 0).collect();
    if !counts.is_empty() && !force {
        return Err(SoatError::ProjectHasDependents { id: id.to_owned(), counts });
    }
    let files: Vec<FileRecord> = records.list::<FileRecord>(&scope.account_id)?.into_iter().filter(|f| f.project_id == id).collect();
    refs::remove_project_records(records, &scope.account_id, id)?;
    for f in files {
        let _ = std::fs::remove_file(super::files::dir(data).join(&f.id));
    }
    if !records.remove_project(&scope.account_id, id)? {
        return Err(SoatError::not_found("project", id));
    }
    Ok(())
}
