//! `/api/v1/exceptions` (exceptions.yaml): list, get, acknowledge, resolve; and
//! `/api/v1/activity` (activity.yaml), the feed by cursor. The service is
//! `agents::exceptions`; exceptions are filed by the store with a failed generation.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::audit::principal_of;
use crate::agents::exceptions::{self, ActivityQuery, Filter, Resolve};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let p = |n: &str| query::param(q, n);
    let f = Filter::new(p("project_id"), p("status"), p("severity"), p("kind"))?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = exceptions::list(&call.app.records, &scope, &f)?.iter().map(exceptions::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, exception_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &exceptions::view(&exceptions::get(&call.app.records, &scope, &exception_id)?)))
}

pub async fn acknowledge(call: Call<'_>, exception_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let by = principal_of(call.principal()).1;
    let x = blocking(move || exceptions::acknowledge(&app.records, &scope, &exception_id, by)).await?;
    Ok(response::json(StatusCode::OK, &exceptions::view(&x)))
}

pub async fn resolve(mut call: Call<'_>, exception_id: String) -> Result<Reply, ApiError> {
    let r: Resolve = body::read_or_default(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let by = principal_of(call.principal()).1;
    let x = blocking(move || exceptions::resolve(&app.records, &scope, &exception_id, by, r)).await?;
    Ok(response::json(StatusCode::OK, &exceptions::view(&x)))
}

pub async fn activity(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    // The feed pages by cursor: limit as everywhere, no offset.
    let limit = Page::from_query(q, super::list::DEFAULT_LIMIT)?.limit as usize;
    let p = |n: &str| query::param(q, n);
    let aq = ActivityQuery { project_id: p("project_id"), kind: p("kind"), severity: p("severity"), cursor: p("cursor"), limit };
    let scope = scope_in_query(&call).await?;
    let (page, next) = exceptions::activity(&call.app.records, &scope, aq)?;
    let data: Vec<Value> = page.iter().map(exceptions::activity_view).collect();
    Ok(response::json(StatusCode::OK, &json!({"data": data, "next_cursor": next})))
}
