//! `/api/v1/ai-providers` (ai-providers.yaml): create, list (`project_id`, default
//! `limit` 25), get, PATCH, delete (409 while an agent uses it), and `/models`.

use hyper::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::providers::{self, NewProvider, ProviderPatch};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::store::AiProviderRecord;

/// The spec's list default for this module.
const DEFAULT_LIMIT: u64 = 25;

#[derive(Serialize)]
pub struct ProviderOut {
    id: String,
    project_id: String,
    name: String,
    provider: String,
    default_model: String,
    secret_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_url: Option<String>,
    config: Map<String, Value>,
    created_at: String,
    updated_at: String,
}

impl From<AiProviderRecord> for ProviderOut {
    fn from(r: AiProviderRecord) -> ProviderOut {
        ProviderOut {
            id: r.id,
            project_id: r.project_id,
            name: r.name,
            provider: r.provider,
            default_model: r.default_model,
            secret_id: r.secret_id,
            base_url: r.base_url,
            config: r.config,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Serialize)]
struct Models {
    provider: String,
    models: Vec<ModelOut>,
}

#[derive(Serialize)]
struct ModelOut {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewProvider = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let r = blocking(move || providers::create(&app.records, &app.egress, &app.config.agents.ollama_base_url, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &ProviderOut::from(r)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<ProviderOut> = providers::list(&call.app.records, &scope)?.into_iter().map(ProviderOut::from).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, ai_provider_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &ProviderOut::from(providers::get(&call.app.records, &scope, &ai_provider_id)?)))
}

pub async fn update(mut call: Call<'_>, ai_provider_id: String) -> Result<Reply, ApiError> {
    let patch: ProviderPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let r =
        blocking(move || providers::update(&app.records, &app.egress, &app.config.agents.ollama_base_url, &scope, &ai_provider_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &ProviderOut::from(r)))
}

pub async fn delete(call: Call<'_>, ai_provider_id: String) -> Result<Reply, ApiError> {
    // `force` removes soft dependents (prices, usage links), which Quarry does not keep.
    query::flag(call.parts.uri.query(), "force", false)?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || providers::delete(&app.records, &scope, &ai_provider_id)).await?;
    Ok(super::no_content())
}

pub async fn models(call: Call<'_>, ai_provider_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let r = providers::get(&call.app.records, &scope, &ai_provider_id)?;
    let listed = providers::models(&call.app.upstreams(), &scope, &r).await?;
    let models = listed.into_iter().map(|m| ModelOut { id: m.id, display_name: m.display_name }).collect();
    Ok(response::json(StatusCode::OK, &Models { provider: r.provider, models }))
}
