//! `/api/v1/memory-entries` (memoryEntries.yaml): create (201, or 200 `skipped` for a
//! near-duplicate), list by `memory_id`, get, PUT, delete. The service is
//! `agents::memory::entries`; every write is indexed before it is answered.

use hyper::StatusCode;

use super::memories::env;
use super::{body, query, scope, scope_in_query, Page};
use crate::agents::memory::entries::{self, Action, EntryPatch, NewEntry};
use crate::agents::SoatError;
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewEntry = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let (entry, action) = entries::create(&env(&call), &scope, new).await?;
    let status = if action == Action::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(response::json(status, &entries::write_view(&entry, action)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    query::flag(q, "include_invalidated", false)?;
    let memory_id = query::param(q, "memory_id").ok_or_else(|| SoatError::invalid("memory_id", "is required."))?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<serde_json::Value> = entries::list(&call.app.records, &scope, &memory_id)?.iter().map(entries::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, entry_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &entries::view(&entries::get(&call.app.records, &scope, &entry_id)?)))
}

pub async fn update(mut call: Call<'_>, entry_id: String) -> Result<Reply, ApiError> {
    let patch: EntryPatch = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let entry = entries::update(&env(&call), &scope, &entry_id, patch).await?;
    Ok(response::json(StatusCode::OK, &entries::view(&entry)))
}

pub async fn delete(call: Call<'_>, entry_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    entries::delete(&env(&call), &scope, &entry_id).await?;
    Ok(super::no_content())
}
