//! `/api/v1` keys (`key_…`, api-keys.yaml): a secret `sk_…` shown once, kept as its
//! prefix and SHA-256 like `/v1`'s `al_` keys. Bound to a project (`project_id`) a key
//! acts only there; unbound it spans the account's projects. A project-bound caller
//! makes, sees and changes only keys of its own project, and cannot make or leave an
//! unbound one (403 `API_KEY_PROJECT_SCOPE`). Deleting a key ends it on every shard
//! before the answer: the caller bumps the key epoch once this returns.

use super::patch::Patch;
use super::scope::Scope;
use super::SoatError;
use crate::auth::keys;
use crate::clock::now_rfc3339;
use crate::ids::random_base62;
use crate::plans::Plan;
use crate::store::owned::Change;
use crate::store::{ProjectKeyRecord, ProjectRecord, Records};

/// The id of an `/api/v1` key (`key_…`; its secret is the `sk_…`).
pub const KEY_ID_PREFIX: &str = "key_";

/// `POST /api/v1/api-keys`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    pub name: String,
    #[serde(default)]
    pub project_id: Patch<String>,
    #[serde(default)]
    pub policy_ids: Option<Vec<String>>,
}

/// `PUT /api/v1/api-keys/{id}`: each field optional.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyUpdate {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub project_id: Patch<String>,
    #[serde(default)]
    pub policy_ids: Option<Vec<String>>,
}

/// A key just made, with its secret (shown this once).
pub struct Created {
    pub record: ProjectKeyRecord,
    pub secret: String,
}

fn check_name(name: &str) -> Result<(), SoatError> {
    crate::names::check(name, 200).map_err(|problem| SoatError::invalid("name", problem.to_string()))
}

/// policies (issue 37): each id a policy of the account (400 `POLICY_NOT_FOUND`), and a
/// caller held to policies makes keys held to the same (`agents::policies::for_key`).
fn check_policies(records: &Records, scope: &Scope, ids: &Option<Vec<String>>) -> Result<Option<Vec<String>>, SoatError> {
    crate::agents::policies::for_key(records, scope, ids.as_deref())
}

/// The project a key is to be bound to, as the caller may ask: a project-bound caller
/// only its own (omitted: its own), anyone else one of the account's or none.
fn binding(records: &Records, scope: &Scope, asked: Patch<String>, current: Option<String>) -> Result<Option<String>, SoatError> {
    if scope.is_project_key() {
        return match asked {
            Patch::Absent => Ok(current.or_else(|| Some(scope.project_id.clone()))),
            Patch::Set(p) if p == scope.project_id => Ok(Some(p)),
            Patch::Set(p) => {
                Err(SoatError::ProjectScope(format!("This key acts only in project {}; it cannot bind a key to {p}.", scope.project_id)))
            }
            Patch::Null => Err(SoatError::ProjectScope("A project key cannot make an unscoped key; use an account key.".into())),
        };
    }
    match asked.apply(current) {
        Some(p) if records.get::<ProjectRecord>(&scope.account_id, &p)?.is_none() => {
            Err(SoatError::invalid("project_id", format!("no project {p} in this account.")))
        }
        bound => Ok(bound),
    }
}

/// Whether the scope sees key `k`: a project-bound scope only its own project's.
fn visible(scope: &Scope, k: &ProjectKeyRecord) -> bool {
    !scope.is_project_key() || k.project_id.as_deref() == Some(scope.project_id.as_str())
}

pub fn create(records: &Records, plan: &Plan, scope: &Scope, new: NewKey) -> Result<Created, SoatError> {
    check_name(&new.name)?;
    let policy_ids = check_policies(records, scope, &new.policy_ids)?.unwrap_or_default();
    let project_id = binding(records, scope, new.project_id, None)?;
    if let Some(max) = plan.max_keys {
        let active = records.list::<ProjectKeyRecord>(&scope.account_id)?.len() as u64;
        if active >= max {
            return Err(SoatError::KeyLimitReached { active, max });
        }
    }
    let now = now_rfc3339();
    let mut secret = String::new();
    let record = records.insert_project_key(&mut || {
        let k = keys::issue_project();
        secret = k.secret;
        ProjectKeyRecord {
            id: format!("{KEY_ID_PREFIX}{}", random_base62(16)),
            account_id: scope.account_id.clone(),
            project_id: project_id.clone(),
            name: new.name.trim().to_owned(),
            prefix: k.prefix,
            hash: k.hash,
            policy_ids: policy_ids.clone(),
            created_at: now.clone(),
            updated_at: now.clone(),
        }
    })?;
    Ok(Created { record, secret })
}

/// The keys the scope sees, oldest first.
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<ProjectKeyRecord>, SoatError> {
    let mut all: Vec<ProjectKeyRecord> = records.list::<ProjectKeyRecord>(&scope.account_id)?.into_iter().filter(|k| visible(scope, k)).collect();
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ProjectKeyRecord, SoatError> {
    records.get::<ProjectKeyRecord>(&scope.account_id, id)?.filter(|k| visible(scope, k)).ok_or_else(|| SoatError::not_found("API key", id))
}

/// Renames, rebinds or re-policies a key. A key moved to another project stops
/// acting in the old one at once: the caller bumps the key epoch.
pub fn update(records: &Records, scope: &Scope, id: &str, u: KeyUpdate) -> Result<ProjectKeyRecord, SoatError> {
    let current = get(records, scope, id)?;
    if let Some(n) = &u.name {
        check_name(n)?;
    }
    let policy_ids = if u.policy_ids.is_some() { check_policies(records, scope, &u.policy_ids)? } else { None };
    let project_id = binding(records, scope, u.project_id, current.project_id.clone())?;
    let now = now_rfc3339();
    let updated = records.update::<ProjectKeyRecord, ProjectKeyRecord>(&scope.account_id, id, |k| {
        if let Some(n) = u.name {
            k.name = n.trim().to_owned();
        }
        if let Some(p) = policy_ids {
            k.policy_ids = p;
        }
        k.project_id = project_id;
        k.updated_at = now;
        Change::Write(k.clone())
    })?;
    updated.ok_or_else(|| SoatError::not_found("API key", id))
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), SoatError> {
    get(records, scope, id)?;
    if !records.remove_project_key(&scope.account_id, id)? {
        return Err(SoatError::not_found("API key", id));
    }
    Ok(())
}
