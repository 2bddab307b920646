//! `/api/v1/projects` (projects.yaml): create, list, get, PATCH, delete (`?force`).

use hyper::StatusCode;
use serde::Serialize;

use super::{body, query, scope, Page};
use crate::agents::projects::{self, NewProject, ProjectPatch};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::store::ProjectRecord;

/// ProjectRecord as the spec writes it.
#[derive(Serialize)]
pub struct ProjectOut {
    id: String,
    name: String,
    guardrail_ids: Option<Vec<String>>,
    max_concurrent_runs: Option<u64>,
    default_model_route_id: Option<String>,
    audit_reads_enabled: bool,
    trace_content_retention_days: Option<u64>,
    trace_content_mode: String,
    /// Ours: the account's default project, where a key that names none acts.
    is_default: bool,
    created_at: String,
    updated_at: String,
}

impl From<ProjectRecord> for ProjectOut {
    fn from(p: ProjectRecord) -> ProjectOut {
        ProjectOut {
            id: p.id,
            name: p.name,
            guardrail_ids: p.guardrail_ids,
            max_concurrent_runs: p.max_concurrent_runs,
            default_model_route_id: p.default_model_route_id,
            audit_reads_enabled: p.audit_reads_enabled,
            trace_content_retention_days: p.trace_content_retention_days,
            trace_content_mode: p.trace_content_mode,
            is_default: p.is_default,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewProject = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let p = blocking(move || projects::create(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &ProjectOut::from(p)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope(&call, None).await?;
    let all: Vec<ProjectOut> = projects::list(&call.app.records, &scope)?.into_iter().map(ProjectOut::from).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, project_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let p = projects::get(&call.app.records, &scope, &project_id)?;
    Ok(response::json(StatusCode::OK, &ProjectOut::from(p)))
}

pub async fn update(mut call: Call<'_>, project_id: String) -> Result<Reply, ApiError> {
    let patch: ProjectPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let p = blocking(move || projects::update(&app.records, &scope, &project_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &ProjectOut::from(p)))
}

pub async fn delete(call: Call<'_>, project_id: String) -> Result<Reply, ApiError> {
    let force = query::flag(call.parts.uri.query(), "force", false)?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let account = scope.account_id.clone();
    blocking(move || {
        let done = projects::delete(&app.records, &app.config.data, &scope, &project_id, force);
        // Its keys and the default project every shard remembers are gone.
        app.bump_key_epoch();
        done
    })
    .await?;
    crate::agents::memory::sweep(&super::memories::env(&call), &account).await?; // its stores' and documents' collections
    Ok(super::no_content())
}
