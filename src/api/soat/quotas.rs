//! `/api/v1/quotas` (issue 37, SOAT v0.28's quotas.yaml): create (409 `QUOTA_CONFLICT`
//! for a second quota of the same scope, ref, metric and window), list, get (with its
//! current window's count), PATCH (limit, mode) and delete. The service, and where
//! quotas are enforced, is `agents::quotas`.

use hyper::StatusCode;
use serde_json::Value;

use super::{body, no_content, scope, scope_in_query, Page};
use crate::agents::quotas::{self, NewQuota, QuotaPatch};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewQuota = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let q = blocking(move || quotas::create(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &quotas::view(&call.app.records, &q, true)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let records = &call.app.records;
    let all: Vec<Value> = quotas::list(records, &scope)?.iter().map(|q| quotas::view(records, q, false)).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, quota_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let q = quotas::get(&call.app.records, &scope, &quota_id)?;
    Ok(response::json(StatusCode::OK, &quotas::view(&call.app.records, &q, true)))
}

pub async fn update(mut call: Call<'_>, quota_id: String) -> Result<Reply, ApiError> {
    let patch: QuotaPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let q = blocking(move || quotas::update(&app.records, &scope, &quota_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &quotas::view(&call.app.records, &q, true)))
}

pub async fn delete(call: Call<'_>, quota_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || quotas::delete(&app.records, &scope, &quota_id)).await?;
    Ok(no_content())
}
