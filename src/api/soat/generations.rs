//! `/api/v1/generations` (generations.yaml): list, the metadata PATCH, the content purge
//! and the transcript; services in `agents::generation::reads`. The runner's routes
//! (generate, tool-outputs, get, events) are in `generate`.

use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::generation::reads::{self, Filter};
use crate::agents::generation::{GenerationRecord, Status};
use crate::agents::SoatError;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// `GET /generations?agent_id&trace_id&initiator_generation_id&status`, newest first.
pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let status = match query::param(q, "status") {
        None => None,
        Some(s) => Some(
            Status::parse(&s)
                .ok_or_else(|| SoatError::invalid("status", format!("must be in_progress, requires_action, completed or failed, not \"{s}\".")))?,
        ),
    };
    let filter = Filter {
        agent_id: query::param(q, "agent_id"),
        trace_id: query::param(q, "trace_id"),
        initiator_generation_id: query::param(q, "initiator_generation_id"),
        status,
    };
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = reads::list_generations(&call.app.records, &scope, &filter)?.iter().map(GenerationRecord::view).collect();
    Ok(page.reply(&all))
}

/// `UpdateGenerationRequest`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateIn {
    metadata: Map<String, Value>,
}

pub async fn update(mut call: Call<'_>, generation_id: String) -> Result<Reply, ApiError> {
    let req: UpdateIn = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let g = blocking(move || reads::update_metadata(&app.records, &scope, &generation_id, req.metadata)).await?;
    Ok(response::json(StatusCode::OK, &g.view()))
}

/// `DELETE /generations/{id}/content`: 200 with the purged skeleton (idempotent).
pub async fn purge(call: Call<'_>, generation_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let g = blocking(move || reads::purge_generation(&app.records, &scope, &generation_id)).await?;
    Ok(response::json(StatusCode::OK, &g.view()))
}

pub async fn transcript(call: Call<'_>, generation_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let g = reads::get_generation(&call.app.records, &scope, &generation_id)?;
    Ok(response::json(StatusCode::OK, &reads::transcript(&g)))
}
