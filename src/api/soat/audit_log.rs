//! `/api/v1/audit-log` (audit-log.yaml): list (the spec's filters, newest first),
//! export (NDJSON) and get. What is recorded, and where, is `agents::audit`; no route
//! changes or removes an entry.

use hyper::header::HeaderValue;
use hyper::StatusCode;
use serde_json::Value;

use super::{query, scope_in_query, Page};
use crate::agents::audit::{self, Filter};
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};

fn filter(q: Option<&str>) -> Result<Filter, ApiError> {
    let time = |field: &str| query::param(q, field).map(|v| audit::time(field, &v)).transpose();
    Ok(Filter {
        project_id: query::param(q, "project_id"),
        action: query::param(q, "action"),
        principal_id: query::param(q, "principal_id"),
        resource_public_id: query::param(q, "resource_public_id"),
        resource_srn: query::param(q, "resource_srn"),
        from: time("from")?,
        to: time("to")?,
    })
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, 25)?;
    let f = filter(q)?;
    let scope = scope_in_query(&call).await?;
    let offset = usize::try_from(page.offset).unwrap_or(usize::MAX);
    let (entries, total) = audit::list(&call.app.records, &scope, &f, offset, page.limit as usize)?;
    let data: Vec<Value> = entries.iter().map(audit::view).collect();
    Ok(page.reply_counted(&data, total))
}

pub async fn export(call: Call<'_>) -> Result<Reply, ApiError> {
    let f = filter(call.parts.uri.query())?;
    let scope = scope_in_query(&call).await?;
    let entries = audit::all(&call.app.records, &scope, &f)?;
    Ok(response::bytes(StatusCode::OK, HeaderValue::from_static("application/x-ndjson"), audit::ndjson(&entries).into()))
}

pub async fn get(call: Call<'_>, entry_id: String) -> Result<Reply, ApiError> {
    let scope = super::scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &audit::view(&audit::get(&call.app.records, &scope, &entry_id)?)))
}
