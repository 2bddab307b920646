//! `/api/v1/usage/receipt` (issue 37, SOAT v0.28's usage.yaml): a generation's receipt.
//! Quarry has no orchestration runs, so `orchestration_run_id` names none (404). The
//! service is `agents::usage`.

use hyper::StatusCode;

use super::{query, scope};
use crate::agents::{usage, SoatError};
use crate::api::Call;
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
