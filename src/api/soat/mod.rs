//! The SOAT Agents API (`/api/v1`): one file per resource (parse → call a service in
//! `crate::agents` → serialize), and what they all share:
//!
//! - [`scope`] / [`scope_in_query`]: who calls and in which project it acts (see
//!   `agents::scope`): an account key (`al_…`) in its account's default project
//!   (made on first use) unless the request names another of its projects (naming
//!   one it has not: 403 `FORBIDDEN`); an
//!   `/api/v1` key (`sk_…`) bound to a project only there (naming another: 403
//!   `API_KEY_PROJECT_SCOPE`); an unbound one like an account key.
//! - [`Page`]: `limit`/`offset` with the spec's clamping and 400s, and the
//!   `{data, total, limit, offset}` answer.
//! - [`body::read`]: strict bodies (unknown fields refused, and named).
//! - [`query::param`] / [`query::flag`]: query parameters, decoded.
//!
//! Rate limits and plans are `/v1`'s: the route table spends each row's cost from the
//! key's bucket before the handler runs.

// The services' errors (`ToolError`, `MemoryError`) come back through `blocking` closures
// on a record write: a cold path, where a larger `Result` costs nothing worth a box.
#![allow(clippy::result_large_err)]

// SOAT actors (issue 36, actors).
pub mod actors;
pub mod agent_records;
pub mod agents;
pub mod ai_providers;
pub mod api_keys;
pub mod body;
pub mod bounds;
// sessions
pub mod conversations;
// SOAT documents (issue 36, knowledge).
pub mod documents;
pub mod generate;
pub mod generations;
pub mod knowledge;
pub mod list;
pub mod memories;
pub mod memory_entries;
pub mod projects;
pub mod query;
// quotas and usage (issue 37)
pub mod quotas;
pub mod secrets;
pub mod usage;
// sessions
pub mod sessions;
pub mod tools;
pub mod traces;
// SOAT users and login (issue 36, users).
pub mod users;
// SOAT files (issue 36, files).
pub mod files;
// webhooks (issue 36)
pub mod webhooks;
// chats and embeddings (issue 36)
pub mod chats;
pub mod embeddings;
// evaluations (issue 37)
pub mod evaluations;
// guardrails and approvals (issue 37)
pub mod approvals;
pub mod guardrails;
// policies, audit log, activity, exceptions (issue 37, policies)
pub mod audit_log;
pub mod exceptions;
pub mod policies;

pub use list::Page;

use crate::agents::{projects as project_service, KeyRef, Scope, SoatError};
use crate::auth::{Principal, ProjectKey};
use crate::error::ApiError;
use crate::http::call::Call;
use crate::runtime::blocking;
use crate::store::ProjectRecord;

/// The scope of this request, acting in `project_id` when the request names one (a
/// body's `project_id`), else in the key's own project or the account's default.
pub async fn scope(call: &Call<'_>, project_id: Option<&str>) -> Result<Scope, ApiError> {
    let p = call.principal();
    let account_id = p.account_id.clone();
    let key = match &p.project_key {
        Some(ProjectKey { id, project_id: Some(own) }) => {
            if let Some(named) = project_id.filter(|named| named != own) {
                return Err(SoatError::ProjectScope(format!("This key acts only in project {own}; the request names {named}.")).into());
            }
            return Ok(Scope { account_id, project_id: own.clone(), key: KeyRef::Project { id: id.clone() } });
        }
        Some(ProjectKey { id, project_id: None }) => KeyRef::Unscoped { id: id.clone() },
        None => KeyRef::Account { prefix: p.prefix.clone() },
    };
    let project_id = match project_id {
        Some(named) => {
            // The specs declare 403, not 404, for a project the caller cannot act in;
            // the same answer whether it is another account's or none at all.
            if call.app.records.get::<ProjectRecord>(&account_id, named)?.is_none() {
                return Err(SoatError::Forbidden(format!("No project {named} this key can act in.")).into());
            }
            named.to_owned()
        }
        None => default_project(call, p).await?,
    };
    Ok(Scope { account_id, project_id, key })
}

/// [`scope`] with the project the query's `project_id` names (lists).
pub async fn scope_in_query(call: &Call<'_>) -> Result<Scope, ApiError> {
    let named = query::param(call.parts.uri.query(), "project_id");
    scope(call, named.as_deref()).await
}

/// The account's default project id: remembered on the cached principal, else read,
/// else made (once, on the blocking pool: it is a write).
async fn default_project(call: &Call<'_>, p: &Principal) -> Result<String, ApiError> {
    if let Some(id) = p.default_project.get() {
        return Ok(id.clone());
    }
    let id = match call.app.records.default_project_id(&p.account_id)? {
        Some(id) => id,
        None => {
            let (app, account) = (call.app.clone(), p.account_id.clone());
            blocking(move || project_service::default_project(&app.records, &account)).await?.id
        }
    };
    let _ = p.default_project.set(id.clone());
    Ok(id)
}

/// 204, no body.
pub fn no_content() -> crate::http::response::Reply {
    let mut r = crate::http::response::json_bytes(hyper::StatusCode::NO_CONTENT, bytes::Bytes::new());
    r.headers_mut().remove(hyper::header::CONTENT_TYPE);
    r
}
