//! `GET /v1/models`: the configured providers' models and the aliases.

use hyper::StatusCode;
use serde::Serialize;

use super::envelope;
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::llm::LlmError;

#[derive(Serialize)]
struct List<'a> {
    object: &'static str,
    data: Vec<Model<'a>>,
}

#[derive(Serialize)]
struct Model<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    owned_by: &'a str,
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let Some(llm) = call.app.llm.as_ref() else { return Ok(envelope::llm(&LlmError::NotConfigured)) };
    let models = llm.models();
    let data = models.iter().map(|m| Model { id: &m.id, object: "model", created: 0, owned_by: &m.provider }).collect();
    Ok(response::json(StatusCode::OK, &List { object: "list", data }))
}
