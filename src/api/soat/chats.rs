//! `/api/v1/chats` and `POST /api/v1/chat/completions` (chats.yaml): a chat's create,
//! list (default `limit` 50, newest first), get and delete; and a completion, answered
//! as OpenAI's `chat.completion` (with SOAT's `object`, `model` and `choices`), or
//! with `stream: true` as server-sent `chat.completion.chunk` events ending in
//! `data: [DONE]`. A streamed completion's status line is sent before the provider is
//! called (SOAT's rule): a provider's failure then arrives as a last frame
//! `data: {"error": message}`, with no `[DONE]`. The service is `agents::chats`, which
//! calls through `agents::providers` (and fails over along a default model route).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::StatusCode;
use serde::Serialize;
use serde_json::json;

use super::super::openai::response::{completion_id, finish_reason, now, WireUsage};
use super::{body, no_content, scope, scope_in_query, Page};
use crate::agents::chats::{self, CompletionIn, NewChat, Prepared};
use crate::agents::providers;
use crate::api::{blocking, Call};
use crate::error::{ApiError, ErrorCode};
use crate::http::response::{self, Reply};
use crate::llm::{ChatStream, Delta};
use crate::store::ChatRecord;

/// The spec's list default for this module.
const DEFAULT_LIMIT: u64 = 50;

#[derive(Serialize)]
struct ChatOut {
    id: String,
    project_id: String,
    ai_provider_id: Option<String>,
    name: Option<String>,
    instructions: Option<String>,
    model: Option<String>,
    created_at: String,
    updated_at: String,
}

impl From<ChatRecord> for ChatOut {
    fn from(c: ChatRecord) -> ChatOut {
        ChatOut {
            id: c.id,
            project_id: c.project_id,
            ai_provider_id: c.ai_provider_id,
            name: c.name,
            instructions: c.instructions,
            model: c.model,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewChat = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let chat = blocking(move || chats::create(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &ChatOut::from(chat)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<ChatOut> = chats::list(&call.app.records, &scope)?.into_iter().map(ChatOut::from).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, chat_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &ChatOut::from(chats::get(&call.app.records, &scope, &chat_id)?)))
}

pub async fn delete(call: Call<'_>, chat_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || chats::delete(&app.records, &scope, &chat_id)).await?;
    Ok(no_content())
}

pub async fn completions(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let req: CompletionIn = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let prepared = chats::prepare(&call.app.records, &scope, req)?;
    if prepared.stream {
        let body = events(call.app.agents.clone(), prepared);
        let mut r = response::stream(StatusCode::OK, HeaderValue::from_static("text/event-stream"), body);
        r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return Ok(r);
    }
    let (model, c) = chats::complete(&call.app.upstreams(), &prepared).await?;
    let answer = json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": now(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": c.output.text},
            "finish_reason": finish_reason(c.termination.reason),
        }],
        "usage": WireUsage::from(&c.output.usage),
    });
    Ok(response::json(StatusCode::OK, &answer))
}

/// Where a streamed completion is.
enum State {
    /// Headers sent; the provider not yet called.
    Start(Arc<crate::agents::Service>, Box<Prepared>),
    /// The chunks' head (its model the target that serves) and the provider's stream.
    Streaming(Box<(Head, ChatStream)>),
    Done,
}

/// What every chunk of one completion shares.
struct Head {
    id: String,
    created: u64,
    model: String,
}

impl Head {
    fn chunk(&self, out: &mut Vec<u8>, delta: serde_json::Value, finish: Option<&str>) {
        let c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        frame(out, &c);
    }
}

fn frame(out: &mut Vec<u8>, value: &serde_json::Value) {
    out.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *out, value).expect("a JSON value serialises");
    out.extend_from_slice(b"\n\n");
}

/// SOAT's terminal error frame: the message the non-streaming answer's 502 would carry.
fn error_frame(out: &mut Vec<u8>, e: &providers::CallError) {
    tracing::warn!(error = %e, "a chat completion's stream failed");
    frame(out, &json!({"error": e.message()}));
}

/// The SSE body of a streamed completion.
fn events(agents: Arc<crate::agents::Service>, prepared: Prepared) -> response::Streamed {
    let s = futures_lite::stream::unfold(State::Start(agents, Box::new(prepared)), |state| async move {
        let (bytes, next) = step(state).await?;
        Some((Ok::<_, Infallible>(Frame::data(bytes)), next))
    });
    http_body_util::StreamBody::new(Box::pin(s))
}

/// One body frame: the provider called (then the role's chunk), or the next text
/// delta, or the end (the finish chunk and `[DONE]`, or the error frame).
async fn step(state: State) -> Option<(Bytes, State)> {
    let mut out = Vec::new();
    match state {
        State::Done => None,
        State::Start(agents, p) => match chats::stream(&agents.upstreams(), &p).await {
            Ok((model, s)) => {
                let head = Head { id: completion_id(), created: now(), model };
                head.chunk(&mut out, json!({"role": "assistant", "content": ""}), None);
                Some((Bytes::from(out), State::Streaming(Box::new((head, s)))))
            }
            Err(e) => {
                error_frame(&mut out, &e);
                Some((Bytes::from(out), State::Done))
            }
        },
        State::Streaming(mut streaming) => loop {
            let (head, s) = &mut *streaming;
            match s.next().await {
                Some(Ok(Delta::Text(t))) if !t.is_empty() => {
                    head.chunk(&mut out, json!({"content": t}), None);
                    return Some((Bytes::from(out), State::Streaming(streaming)));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    error_frame(&mut out, &providers::CallError::Llm(e));
                    return Some((Bytes::from(out), State::Done));
                }
                None => {
                    let c = s.completion();
                    head.chunk(&mut out, json!({}), Some(finish_reason(c.termination.reason)));
                    out.extend_from_slice(b"data: [DONE]\n\n");
                    return Some((Bytes::from(out), State::Done));
                }
            }
        },
    }
}
