//! SOAT guardrails (issue 37; v0.28's guardrails.yaml, nine operations): CRUD, the
//! archived versions, a restore, and `evaluateGuardrail`'s dry run; parse, call
//! `agents::guardrails`, answer. The seed's `{name}` create still makes one (class A).

use hyper::StatusCode;
use serde_json::Value;

use super::{body, scope, scope_in_query, Page};
use crate::agents::agent::record::GuardrailRecord;
use crate::agents::guardrails::{self as g, EvaluateBody, NewGuardrail, RestoreBody, UpdateGuardrail};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

async fn run<T: Send + 'static>(
    call: &Call<'_>,
    f: impl FnOnce(&crate::store::Records) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let records = call.app.records.clone();
    blocking(move || f(&records)).await
}

fn ok(v: &Value) -> Reply {
    response::json(StatusCode::OK, v)
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewGuardrail = body::read(&mut call).await?;
    let scope = scope(&call, new.project_id.as_deref()).await?;
    let r = run(&call, move |rec| g::create(rec, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &g::view(&r)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let mut all: Vec<GuardrailRecord> = scope.list(&call.app.records).map_err(ApiError::from)?;
    all.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(page.reply(&all.iter().map(g::view).collect::<Vec<_>>()))
}

pub async fn get(call: Call<'_>, guardrail_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(ok(&g::view(&g::found(&call.app.records, &scope, &guardrail_id)?)))
}

pub async fn update(mut call: Call<'_>, guardrail_id: String) -> Result<Reply, ApiError> {
    let patch: UpdateGuardrail = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let r = run(&call, move |rec| g::update(rec, &scope, &guardrail_id, patch)).await?;
    Ok(ok(&g::view(&r)))
}

pub async fn delete(call: Call<'_>, guardrail_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    run(&call, move |rec| g::delete(rec, &scope, &guardrail_id)).await?;
    Ok(super::no_content())
}

pub async fn versions(call: Call<'_>, guardrail_id: String) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope(&call, None).await?;
    let all = g::versions(&call.app.records, &scope, &guardrail_id)?;
    Ok(page.reply(&all.iter().map(g::version_view).collect::<Vec<_>>()))
}

pub async fn version(call: Call<'_>, guardrail_id: String, version: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(ok(&g::version_view(&g::version(&call.app.records, &scope, &guardrail_id, &version)?)))
}

pub async fn restore(mut call: Call<'_>, guardrail_id: String, version: String) -> Result<Reply, ApiError> {
    let b: RestoreBody = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let r = run(&call, move |rec| g::restore(rec, &scope, &guardrail_id, &version, b)).await?;
    Ok(ok(&g::view(&r)))
}

pub async fn evaluate(mut call: Call<'_>, guardrail_id: String) -> Result<Reply, ApiError> {
    let b: EvaluateBody = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let v = run(&call, move |rec| g::dry_run(rec, &scope, &guardrail_id, b)).await?;
    Ok(ok(&v))
}
