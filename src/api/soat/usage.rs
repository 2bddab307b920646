//! `/api/v1/usage` (issue 37, SOAT v0.28's usage.yaml): a generation's receipt, priced
//! from the account's price book, and the book itself (read with any key of the
//! account; changed only with a key that spans it). Quarry has no orchestration runs,
//! so `orchestration_run_id` names none (404). The service is `agents::usage`.

use hyper::StatusCode;

use super::{body, query, scope};
use crate::agents::usage::{self, NewPrices};
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
