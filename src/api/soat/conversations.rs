//! `/api/v1/conversations` (conversations.yaml): conversations, create, list (by
//! actor), get, PATCH, delete (with their messages); messages added, listed by
//! position and removed; a generated message (202 in the background, the reply with
//! `?wait=true`); tags. The service is `agents::conversation`.

use std::collections::BTreeMap;

use hyper::StatusCode;
use serde_json::{json, Value};

use super::generate::{host, settled};
use super::{body, query, scope, scope_in_query, Page};
use crate::agents::conversation::{self, ConversationPatch, GenerateIn, NewConversation, NewMessage, TagWrite, Turn};
use crate::agents::generation::Status;
use crate::api::{blocking, Call};
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::store::conversations::reply_id;

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewConversation = body::read(&mut call).await?;
    let scope = scope(&call, new.project_id.as_deref()).await?;
    let c = conversation::create(&call.app.records, &scope, new).await?;
    Ok(response::json(StatusCode::CREATED, &conversation::view(&c)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let actor = query::param(q, "actor_id");
    let all: Vec<Value> = conversation::list(&call.app.records, &scope, actor.as_deref())?.iter().map(conversation::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &conversation::view(&conversation::get(&call.app.records, &scope, &conversation_id)?)))
}

pub async fn update(mut call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let patch: ConversationPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let c = blocking(move || conversation::update(&app.records, &scope, &conversation_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &conversation::view(&c)))
}

pub async fn delete(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || conversation::delete(&app.records, &scope, &conversation_id)).await?;
    Ok(super::no_content())
}

pub async fn messages(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope(&call, None).await?;
    let all: Vec<Value> = conversation::messages(&call.app.records, &scope, &conversation_id)?.iter().map(conversation::message_view).collect();
    Ok(page.reply(&all))
}

pub async fn add_message(mut call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let new: NewMessage = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let m = conversation::add_message(&call.app.records, &scope, &conversation_id, new).await?;
    Ok(response::json(StatusCode::CREATED, &conversation::message_view(&m)))
}

pub async fn remove_message(call: Call<'_>, conversation_id: String, document_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    conversation::remove_message(&call.app.records, &scope, &conversation_id, &document_id).await?;
    Ok(super::no_content())
}

pub async fn generate(mut call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let wait = query::flag(call.parts.uri.query(), "wait", false)?;
    let body: GenerateIn = body::read(&mut call).await?;
    if body.stream == Some(true) {
        return Err(ApiError::new(Code::SoatValidation, "A conversation's generation does not stream; leave stream out (or false).").at("stream"));
    }
    let scope = scope(&call, None).await?;
    let c = conversation::get(&call.app.records, &scope, &conversation_id)?;
    let host = host(&call);
    let turn = Turn { agent_id: body.agent_id, session_id: None, tool_context: body.tool_context };
    let g = conversation::start_turn(host.clone(), &scope, &c, turn).await?;
    if !wait {
        return Ok(response::json(StatusCode::ACCEPTED, &json!({"status": "accepted", "conversation_id": c.id, "generation_id": g.id})));
    }
    let g = conversation::rested(&host, &g, 0).await?;
    match g.status() {
        Status::Failed => settled(&g),
        Status::RequiresAction => Ok(response::json(
            StatusCode::OK,
            &json!({"status": "requires_action", "generation_id": g.id, "trace_id": g.trace_id, "required_action": g.required_action()}),
        )),
        _ => {
            let m = call.app.records.get::<crate::store::ConversationMessageRecord>(&c.account_id, &reply_id(&g.id))?;
            let output = g.state.output.clone();
            let content = output.as_ref().map(|o| o.content.clone()).unwrap_or_default();
            let model = output.map(|o| o.model).unwrap_or_default();
            let message = m.as_ref().map(conversation::message_view).unwrap_or(Value::Null);
            Ok(response::json(
                StatusCode::OK,
                &json!({"status": "completed", "content": content, "message": message, "generation_id": g.id, "trace_id": g.trace_id, "model": model}),
            ))
        }
    }
}

pub async fn tags(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &conversation::get(&call.app.records, &scope, &conversation_id)?.tags))
}

async fn write_tags(mut call: Call<'_>, conversation_id: String, how: TagWrite) -> Result<Reply, ApiError> {
    let given: BTreeMap<String, String> = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let tags = blocking(move || conversation::write_tags(&app.records, &scope, &conversation_id, how, given)).await?;
    Ok(response::json(StatusCode::OK, &tags))
}

pub async fn replace_tags(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    write_tags(call, conversation_id, TagWrite::Replace).await
}

pub async fn merge_tags(call: Call<'_>, conversation_id: String) -> Result<Reply, ApiError> {
    write_tags(call, conversation_id, TagWrite::Merge).await
}
