//! `/api/v1/sessions` (sessions.yaml): sessions, create, list (by agent, actor,
//! status), get, PATCH, delete (with their conversation); a user message (which
//! auto-generates when the session says so), a generation (202 in the background,
//! the reply with `?wait=true`), tool outputs, forks and tags. The service is
//! `agents::session`.

use std::collections::BTreeMap;

use hyper::StatusCode;
use serde_json::{json, Value};

use super::generate::{host, settled};
use super::{body, query, scope, scope_in_query, Page};
use crate::agents::conversation::TagWrite;
use crate::agents::generation::{GenerationRecord, Status};
use crate::agents::session::{self, Filter, ForkIn, GenerateIn, NewMessage, NewSession, OutputsIn, Sent, SessionPatch};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// A rested generation as `GenerateSessionResponse`, or the error it failed with.
fn rested(g: &GenerationRecord, status: StatusCode) -> Result<Reply, ApiError> {
    if g.status() == Status::Failed {
        return settled(g);
    }
    Ok(response::json(status, &session::response(g)))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewSession = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let s = session::create(&call.app.records, &scope, new).await?;
    Ok(response::json(StatusCode::CREATED, &session::view(&call.app.records, &s)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let filter = Filter { agent_id: query::param(q, "agent_id"), actor_id: query::param(q, "actor_id"), status: query::param(q, "status") };
    let records = &call.app.records;
    let all: Vec<Value> = session::list(records, &scope, &filter)?.iter().map(|s| session::view(records, s)).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let s = session::get(&call.app.records, &scope, &session_id)?;
    Ok(response::json(StatusCode::OK, &session::view(&call.app.records, &s)))
}

pub async fn update(mut call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let patch: SessionPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let s = blocking(move || session::update(&app.records, &scope, &session_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &session::view(&call.app.records, &s)))
}

pub async fn delete(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || session::delete(&app.records, &scope, &session_id)).await?;
    Ok(super::no_content())
}

pub async fn add_message(mut call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let new: NewMessage = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    match session::add_message(host(&call), &scope, &session_id, new).await? {
        Sent::Saved(m, again) => {
            let status = if again { StatusCode::OK } else { StatusCode::CREATED };
            Ok(response::json(status, &json!({"role": m.role, "content": m.content, "document_id": m.id})))
        }
        Sent::Generated(g) => rested(&g, StatusCode::CREATED),
    }
}

pub async fn generate(mut call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let wait = query::flag(call.parts.uri.query(), "wait", false)?;
    let body: GenerateIn = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let g = session::generate(host(&call), &scope, &session_id, body, wait).await?;
    if !wait {
        return Ok(response::json(StatusCode::ACCEPTED, &json!({"status": "accepted", "session_id": session_id, "generation_id": g.id})));
    }
    rested(&g, StatusCode::OK)
}

pub async fn tool_outputs(mut call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let body: OutputsIn = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let g = session::tool_outputs(host(&call), &scope, &session_id, body).await?;
    rested(&g, StatusCode::OK)
}

pub async fn fork(mut call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let body: ForkIn = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let s = session::fork(&call.app.records, &scope, &session_id, body).await?;
    Ok(response::json(StatusCode::CREATED, &session::view(&call.app.records, &s)))
}

pub async fn forks(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope(&call, None).await?;
    let records = &call.app.records;
    let all: Vec<Value> = session::forks(records, &scope, &session_id)?.iter().map(|s| session::view(records, s)).collect();
    Ok(page.reply(&all))
}

pub async fn tags(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &session::get(&call.app.records, &scope, &session_id)?.tags))
}

async fn write_tags(mut call: Call<'_>, session_id: String, how: TagWrite) -> Result<Reply, ApiError> {
    let given: BTreeMap<String, String> = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let tags = blocking(move || session::write_tags(&app.records, &scope, &session_id, how, given)).await?;
    Ok(response::json(StatusCode::OK, &tags))
}

pub async fn replace_tags(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    write_tags(call, session_id, TagWrite::Replace).await
}

pub async fn merge_tags(call: Call<'_>, session_id: String) -> Result<Reply, ApiError> {
    write_tags(call, session_id, TagWrite::Merge).await
}
