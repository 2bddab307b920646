//! `/api/v1/usage` (issue 37, SOAT v0.28's usage.yaml): the usage events (one per
//! generation that spent anything), their rollup, a generation's receipt, priced
//! from the account's price book, and the book itself (read with any key of the
//! account; changed only with a key that spans it). Quarry has no orchestration runs,
//! so `orchestration_run_id` names none (404). The service is `agents::usage`; the
//! usage thresholds' is `agents::usage_thresholds`.

use hyper::StatusCode;

use super::{body, no_content, query, scope, scope_in_query, Page};
use crate::agents::usage::{self, MeterFilter, NewPrices, Rollup};
use crate::agents::usage_thresholds::{self, NewThreshold};
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

/// `listUsageThresholds`: the thresholds the key sees (of `project_id`, if named),
/// newest first, a page of them.
pub async fn list_thresholds(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let named = query::param(q, "project_id");
    let scope = scope_in_query(&call).await?;
    let all = usage_thresholds::list(&call.app.records, &scope, named.as_deref())?;
    Ok(page.reply(&all.iter().map(usage_thresholds::view).collect::<Vec<_>>()))
}

/// `createUsageThreshold`: a threshold on the named project (or the key's).
pub async fn create_threshold(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewThreshold = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let t = blocking(move || usage_thresholds::create(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &usage_thresholds::view(&t)))
}

/// `deleteUsageThreshold`: 204, its fire state gone with it.
pub async fn delete_threshold(call: Call<'_>, threshold_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || usage_thresholds::delete(&app.records, &scope, &threshold_id)).await?;
    Ok(no_content())
}
