//! SOAT approvals (issue 37; v0.28's approvals.yaml, five operations): list,
//! recurrences, get, approve, reject; parse, call `agents::approvals`, answer. A
//! decision resumes the generation it holds, on this shard.

use hyper::StatusCode;

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::approvals::{self as a, ApproveBody, Decision, Filter, RejectBody};
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let q = call.parts.uri.query();
    let f = Filter { status: query::param(q, "status"), origin: query::param(q, "origin"), expires_before: query::param(q, "expires_before") };
    let all = a::list(&call.app.records, &scope, f)?;
    Ok(page.reply(&all.iter().map(a::view).collect::<Vec<_>>()))
}

pub async fn recurrences(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let q = call.parts.uri.query();
    let groups = a::recurrences(&call.app.records, &scope, query::param(q, "status"), query::param(q, "min_count"))?;
    Ok(page.reply(&groups))
}

pub async fn get(call: Call<'_>, approval_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &a::view(&a::get(&call.app.records, &scope, &approval_id)?)))
}

pub async fn approve(mut call: Call<'_>, approval_id: String) -> Result<Reply, ApiError> {
    let b: ApproveBody = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let v = a::decide(super::generate::host(&call), &scope, &approval_id, Decision::Approve(b.arguments)).await?;
    Ok(response::json(StatusCode::OK, &v))
}

pub async fn reject(mut call: Call<'_>, approval_id: String) -> Result<Reply, ApiError> {
    let b: RejectBody = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let v = a::decide(super::generate::host(&call), &scope, &approval_id, Decision::Reject(b.reason.unwrap_or_default())).await?;
    Ok(response::json(StatusCode::OK, &v))
}
