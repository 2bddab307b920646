//! `/api/v1/documents` (documents.yaml): a project's documents, create, list
//! (`path_prefix`, a directory boundary), get (with its content), PATCH, delete,
//! status, re-ingest, tags (get, replace, merge), and the two operations that need a
//! files module or an asynchronous converter this server does not have (`ingest`:
//! 400 naming the file; `ingestion-callback`: 401, no attempt awaits). The service is
//! `agents::documents`; every write is indexed before it is answered.

use std::collections::BTreeMap;

use hyper::StatusCode;

use super::memories::env;
use super::{body, query, scope, scope_in_query, Page};
use crate::agents::documents::{self, DocPatch, IngestFile, NewDoc, Reingest};
use crate::api::Call;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewDoc = body::read(&mut call).await?;
    let scope = scope(&call, new.project_id.as_deref()).await?;
    let d = documents::create(&env(&call), &scope, new).await?;
    Ok(response::json(StatusCode::CREATED, &documents::view(&d, false)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, 50)?;
    let prefix = query::param(q, "path_prefix");
    let scope = scope_in_query(&call).await?;
    let all: Vec<serde_json::Value> = documents::list(&env(&call), &scope, prefix.as_deref())?.iter().map(|d| documents::view(d, false)).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &documents::view(&documents::get(&env(&call), &scope, &document_id)?, true)))
}

pub async fn update(mut call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let patch: DocPatch = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let d = documents::update(&env(&call), &scope, &document_id, patch).await?;
    Ok(response::json(StatusCode::OK, &documents::view(&d, false)))
}

pub async fn delete(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    documents::delete(&env(&call), &scope, &document_id).await?;
    Ok(super::no_content())
}

pub async fn status(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &documents::status_view(&documents::get(&env(&call), &scope, &document_id)?)))
}

/// `?wait=true` answers 201, else 202; either way the document is ready (ingestion
/// here is synchronous).
fn ingested_status(call: &Call<'_>) -> Result<StatusCode, ApiError> {
    let wait = query::flag(call.parts.uri.query(), "wait", false)?;
    Ok(if wait { StatusCode::CREATED } else { StatusCode::ACCEPTED })
}

pub async fn reingest(mut call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let status = ingested_status(&call)?;
    let with: Reingest = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let d = documents::reingest(&env(&call), &scope, &document_id, with).await?;
    Ok(response::json(status, &documents::ingested_view(&d)))
}

pub async fn ingest(mut call: Call<'_>) -> Result<Reply, ApiError> {
    ingested_status(&call)?;
    let file: IngestFile = body::read(&mut call).await?;
    scope(&call, file.project_id.as_deref()).await?;
    Err(documents::ingest_file(&file).into())
}

pub async fn ingestion_callback(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    documents::get(&env(&call), &scope, &document_id)?;
    Err(ApiError::new(Code::InvalidKey, "No conversion of this document awaits a callback: the token does not match it."))
}

pub async fn get_tags(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &documents::get(&env(&call), &scope, &document_id)?.tags))
}

pub async fn replace_tags(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    set_tags(call, document_id, false).await
}

pub async fn merge_tags(call: Call<'_>, document_id: String) -> Result<Reply, ApiError> {
    set_tags(call, document_id, true).await
}

async fn set_tags(mut call: Call<'_>, document_id: String, merge: bool) -> Result<Reply, ApiError> {
    let tags: BTreeMap<String, String> = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let tags = documents::set_tags(&env(&call), &scope, &document_id, tags, merge).await?;
    Ok(response::json(StatusCode::OK, &tags))
}
