//! `/api/v1/actors` (actors.yaml): actors, create (200 with the existing actor when
//! its `external_id` is taken in the project, else 201), list (by external id, agent,
//! chat, conversation), get, PATCH, delete, and tags. The service is `agents::actors`.

use std::collections::BTreeMap;

use hyper::StatusCode;
use serde_json::Value;

use super::{body, no_content, query, scope, scope_in_query, Page};
use crate::agents::actors::{self, ActorPatch, Created, Filter, NewActor};
use crate::agents::conversation::TagWrite;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewActor = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    Ok(match blocking(move || actors::create(&app.records, &scope, new)).await? {
        Created::New(a) => response::json(StatusCode::CREATED, &actors::view(&a)),
        Created::Existing(a) => response::json(StatusCode::OK, &actors::view(&a)),
    })
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let filter = Filter {
        external_id: query::param(q, "external_id"),
        agent_id: query::param(q, "agent_id"),
        chat_id: query::param(q, "chat_id"),
        conversation_id: query::param(q, "conversation_id"),
    };
    let all: Vec<Value> = actors::list(&call.app.records, &scope, &filter)?.iter().map(actors::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &actors::view(&actors::get(&call.app.records, &scope, &actor_id)?)))
}

pub async fn update(mut call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    let patch: ActorPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let a = blocking(move || actors::update(&app.records, &scope, &actor_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &actors::view(&a)))
}

pub async fn delete(call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || actors::delete(&app.records, &scope, &actor_id)).await?;
    Ok(no_content())
}

pub async fn tags(call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &actors::get(&call.app.records, &scope, &actor_id)?.tags))
}

async fn write_tags(mut call: Call<'_>, actor_id: String, how: TagWrite) -> Result<Reply, ApiError> {
    let given: BTreeMap<String, String> = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let tags = blocking(move || actors::write_tags(&app.records, &scope, &actor_id, how, given)).await?;
    Ok(response::json(StatusCode::OK, &tags))
}

pub async fn replace_tags(call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    write_tags(call, actor_id, TagWrite::Replace).await
}

pub async fn merge_tags(call: Call<'_>, actor_id: String) -> Result<Reply, ApiError> {
    write_tags(call, actor_id, TagWrite::Merge).await
}
