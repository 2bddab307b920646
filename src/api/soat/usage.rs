//! `/api/v1/usage` (issue 37, SOAT v0.28's usage.yaml): the usage events (one per
//! generation that spent anything), their rollup, a generation's receipt, priced
//! from the account's price book, and the book itself (read with any key of the
//! account; changed only with a key that spans it). Quarry has no orchestration runs,
//! so `orchestration_run_id` names none (404). The service is `agents::usage`.

use hyper::StatusCode;

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::usage::{self, MeterFilter, NewPrices, Rollup};
use crate::agents::SoatError;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn receipt(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let (generation, run) = (query::param(q, "generation_id"), query::param(q, "orchestration_run_id"));
    let scope = scope(&call, None).await?;
    match (generation, run) {
        (Some(g), None) => Ok(response::json(StatusCode::OK, &usage::receipt(&call.app.records, &scope, &g)?)),
        (None, Some(r)) => Err(SoatError::not_found("orchestration run", r).into()),
        _ => Err(SoatError::invalid("generation_id", "name exactly one of generation_id and orchestration_run_id.").into()),
    }
}

pub async fn prices(call: Call<'_>) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &usage::price_book(&call.app.records, &scope)?))
}

pub async fn upsert_prices(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewPrices = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let book = blocking(move || usage::upsert_prices(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::OK, &book))
}

/// `listUsageMeters`: the project's usage events (the default project's, or
/// `project_id`'s), filtered, most recent first, a page of them.
pub async fn meters(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let p = |name: &str| query::param(q, name);
    let filter = MeterFilter {
        agent_id: p("agent_id"),
        generation_id: p("generation_id"),
        trace_id: p("trace_id"),
        actor_id: p("actor_id"),
        session_id: p("session_id"),
        trigger_id: p("trigger_id"),
        action_id: p("action_id"),
        meter_type: p("meter_type"),
        source: p("source"),
    };
    let (scope, app) = (scope_in_query(&call).await?, call.app.clone());
    let all = blocking(move || usage::meters(&app.records, &scope, &filter)).await?;
    Ok(page.reply(&all))
}

/// `getUsage`: the project's usage summed by one dimension over a window.
pub async fn rollup(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let project = query::param(q, "project_id").ok_or_else(|| SoatError::invalid("project_id", "name the project to sum the usage of."))?;
    let p = |name: &str| query::param(q, name);
    let r = Rollup { group_by: p("group_by"), from: p("from"), to: p("to"), meter_type: p("meter_type") };
    let (scope, app) = (scope(&call, Some(&project)).await?, call.app.clone());
    let body = blocking(move || usage::rollup(&app.records, &scope, r)).await?;
    Ok(response::json(StatusCode::OK, &body))
}
