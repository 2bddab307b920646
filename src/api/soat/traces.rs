//! `/api/v1/traces` (traces.yaml): list, get, the tree, and the cascading content
//! purge; services in `agents::generation::reads`.

use hyper::StatusCode;
use serde_json::Value;

use super::{query, scope, scope_in_query, Page};
use crate::agents::generation::reads;
use crate::agents::generation::TraceRecord;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// `GET /traces?project_id`, newest first.
pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = reads::list_traces(&call.app.records, &scope)?.iter().map(TraceRecord::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, trace_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &reads::get_trace(&call.app.records, &scope, &trace_id)?.view()))
}

/// `GET /traces/{id}/tree?include=generations`: `include` is a comma-separated list of
/// which only `generations` means anything (other names are ignored: the spec
/// declares no 400 here).
pub async fn tree(call: Call<'_>, trace_id: String) -> Result<Reply, ApiError> {
    let include = query::param(call.parts.uri.query(), "include").unwrap_or_default();
    let with_generations = include.split(',').any(|s| s.trim() == "generations");
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &reads::tree(&call.app.records, &scope, &trace_id, with_generations)?))
}

/// `DELETE /traces/{id}/content`: 200 with the purged trace (idempotent), its
/// descendants and all their generations purged with it.
pub async fn purge(call: Call<'_>, trace_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let t = blocking(move || reads::purge_trace(&app.records, &scope, &trace_id)).await?;
    Ok(response::json(StatusCode::OK, &t.view()))
}
