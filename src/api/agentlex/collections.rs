//! `/v1/collections` and `/v1/collections/{id}`.

use hyper::StatusCode;
use serde::Serialize;

use super::super::Call;
use super::input::settings;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::search::{Owned, SearchError};
use crate::store::CollectionSettings;

#[derive(Serialize)]
pub struct CollectionOut {
    id: String,
    account_id: String,
    name: String,
    embedder: String,
    /// The language its embedder was chosen for (given or read from its first document);
    /// absent when the model was named or is the server's only one.
    #[serde(skip_serializing_if = "Option::is_none")]
    language: Option<String>,
    created_at: String,
    settings: CollectionSettings,
    documents: u64,
    pages: u64,
    chunks: u64,
    domain: Option<&'static str>,
    /// What the request asked that was ignored (unknown settings keys); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

fn out(owned: Owned) -> CollectionOut {
    let counts = owned.snapshot().counts();
    let record = owned.record;
    CollectionOut {
        id: record.id,
        account_id: record.account_id,
        name: record.name,
        embedder: record.embedder,
        language: record.language,
        created_at: record.created_at,
        settings: record.settings,
        documents: counts.documents,
        pages: counts.pages,
        chunks: counts.chunks,
        domain: counts.main_chunker().map(|c| c.as_str()),
        warnings: Vec::new(),
    }
}

#[derive(Serialize)]
struct List {
    collections: Vec<CollectionOut>,
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let collections = call.app.search.collections(&call.principal().account_id).await?.into_iter().map(out).collect();
    Ok(response::json(StatusCode::OK, &List { collections }))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let mut body = settings::parse(&call.bytes().await?)?;
    let name = body.name(true)?.expect("required");
    let (settings, warnings) = body.merge(&CollectionSettings::default());
    let account = &call.principal().account_id;
    let owned = call.app.search.create_collection(account, name, settings, body.embedder(), body.language()).await.map_err(at_embedder)?;
    Ok(response::json(StatusCode::CREATED, &CollectionOut { warnings, ..out(owned) }))
}

pub async fn get(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    Ok(response::json(StatusCode::OK, &out(owned)))
}

pub async fn update(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    let mut body = settings::parse(&call.bytes().await?)?;
    let name = body.name(false)?;
    let (settings, mut warnings) = body.merge(&owned.record.settings);
    let changed = call.app.search.change_collection(owned, name, settings, body.embedder(), body.language()).await.map_err(at_embedder)?;
    warnings.extend(changed.warnings);
    Ok(response::json(StatusCode::OK, &CollectionOut { warnings, ..out(changed.owned) }))
}

/// An embedder refused is the fault of `settings.embedder`.
fn at_embedder(e: SearchError) -> ApiError {
    let embedder = matches!(e, SearchError::UnknownEmbedder { .. } | SearchError::EmbedderLocked { .. });
    let e = ApiError::from(e);
    if embedder {
        e.at("settings.embedder")
    } else {
        e
    }
}

#[derive(Serialize)]
pub struct Deleted {
    pub deleted: String,
}

pub async fn delete(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    call.app.search.remove(owned).await?;
    Ok(response::json(StatusCode::OK, &Deleted { deleted: id }))
}
