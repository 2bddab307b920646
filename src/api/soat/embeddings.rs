//! `POST /api/v1/embeddings` (embeddings.yaml): `input` → `embedding`, `inputs` →
//! `embeddings` (both when both), with the `model` that made them. The service is
//! `agents::embeddings`, on this shard's own sessions of the loaded embedders.

use hyper::StatusCode;
use serde::Serialize;

use super::body;
use crate::agents::embeddings::{self, EmbedIn};
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};

#[derive(Serialize)]
struct EmbeddingsOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    embedding: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    embeddings: Option<Vec<Vec<f32>>>,
    model: String,
    dimensions: usize,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let req: EmbedIn = body::read(&mut call).await?;
    // Any key of the account may embed: the request reads no record.
    super::scope(&call, None).await?;
    let e = embeddings::embed(req, call.app.search.embedders(), call.embedders).await?;
    let out = EmbeddingsOut { embedding: e.embedding, embeddings: e.embeddings, model: e.model, dimensions: e.dimensions };
    Ok(response::json(StatusCode::OK, &out))
}
