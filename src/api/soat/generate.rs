//! `POST /api/v1/agents/{agent_id}/generate`, `POST …/generate/{generation_id}/tool-outputs`
//! and `GET /api/v1/generations/{generation_id}/events`: parse, call
//! `agents::generation`, answer as the mode asks. Every generation runs as a task of
//! its own on this shard; a background request answers 202 once its record is
//! committed, a waiting one reads the run's events until it rests, and a streamed one
//! writes them as SSE frames, each with its `id`, so a client that lost the stream
//! reconnects to the events route with `Last-Event-ID` and misses nothing.

use std::convert::Infallible;
use std::rc::Rc;

use bytes::Bytes;
use futures_util::stream;
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{body, query, scope};
use crate::agents::generation::event::Event;
use crate::agents::generation::events::Reader;
use crate::agents::generation::record::GenerationRecord;
use crate::agents::generation::request::{self, GenerateBody};
use crate::agents::generation::run::Host;
use crate::agents::generation::service::{self, StartArgs, Started, ToolOutput};
use crate::agents::generation::Status;
use crate::api::Call;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};

pub(super) fn host(call: &Call<'_>) -> Rc<Host> {
    Rc::new(Host { agents: call.app.agents.clone(), embedders: call.embedders.clone() })
}

fn accepted(g: &GenerationRecord) -> Reply {
    response::json(StatusCode::ACCEPTED, &json!({"status": "accepted", "generation_id": g.id, "trace_id": g.trace_id}))
}

/// The codes a failed generation records, back to the ones the API answers with.
const FAILURE_CODES: &[Code] = &[
    Code::AiProviderError,
    Code::OutputSchemaValidationFailed,
    Code::TextEncodedToolCall,
    Code::ToolHttpError,
    Code::EgressRefused,
    Code::ToolNotFound,
    Code::GenerationInterrupted,
    Code::ApprovalExpired,
    // guardrails (issue 37)
    Code::GuardrailBlocked,
    Code::GuardrailTripwire,
    Code::AgentAiProviderNotFound,
    Code::AiProviderMisconfigured,
    Code::SecretNotFound,
    Code::SecretNotDecryptable,
    Code::MissingToolContextKey,
    Code::LlmNotConfigured,
    Code::SoatNotFound,
    Code::SoatValidation,
    Code::Internal,
    // quotas (issue 37): a model call refused before it was made.
    Code::QuotaExceeded,
    // usage (issue 37): a cost quota and a model the price book does not price.
    Code::QuotaUnpriced,
];

/// A rested generation as the waiting request's answer: 200 with the
/// `AgentGenerationResponse`, or the error it failed with (502 for a provider's, a
/// tool's or the output's; 403 for a destination the egress policy refuses), its meta
/// naming the generation and trace.
pub(super) fn settled(g: &GenerationRecord) -> Result<Reply, ApiError> {
    if g.status() != Status::Failed {
        return Ok(response::json(StatusCode::OK, &g.response()));
    }
    let e = g.error.clone().unwrap_or_else(|| crate::agents::generation::record::RecordedError {
        code: "AI_PROVIDER_ERROR".into(),
        message: "The generation failed.".into(),
        meta: Default::default(),
    });
    let code = FAILURE_CODES.iter().copied().find(|c| c.soat() == e.code).unwrap_or(Code::AiProviderError);
    let mut err = ApiError::new(code, e.message);
    for (k, v) in e.meta {
        err = err.with_meta(&k, v);
    }
    Err(err)
}

async fn rest(call: &Call<'_>, g: &GenerationRecord, after: u64) -> Result<Reply, ApiError> {
    let reader = Reader::new(call.app.records.clone(), &g.account_id, &g.id, after);
    let mut done =
        reader.rest().await?.ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("The generation {} was deleted while it ran.", g.id)))?;
    // trace_content_mode none: the content was never written; this process holds it.
    call.app.agents.content.restore(&mut done);
    settled(&done)
}

/// SSE frames of `g`'s events after `after`: `id: <n>` and `data: <event>` each,
/// until `[DONE]` or an error frame.
fn sse(call: &Call<'_>, g: &GenerationRecord, after: u64) -> Reply {
    let reader = Reader::new(call.app.records.clone(), &g.account_id, &g.id, after);
    let frames = stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.next().await {
            Ok(Some((seq, data))) => Some((Ok::<_, Infallible>(Frame::data(Bytes::from(format!("id: {seq}\ndata: {data}\n\n")))), Some(reader))),
            Ok(None) => None,
            Err(e) => {
                tracing::error!(error = %e, "reading a generation's events failed");
                let frame = Event::Error { message: "The server could not read the generation's events.", code: None };
                let frame = format!("data: {}\n\n", frame.data());
                Some((Ok(Frame::data(Bytes::from(frame))), None))
            }
        }
    });
    let mut r = response::stream(StatusCode::OK, HeaderValue::from_static("text/event-stream"), http_body_util::StreamBody::new(Box::pin(frames)));
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

pub async fn generate(mut call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let wait = query::flag(call.parts.uri.query(), "wait", false)?;
    let bytes = call.bytes().await?;
    let parsed: GenerateBody = body::strict(&bytes)?;
    let raw: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if wait && parsed.stream {
        return Err(ApiError::new(Code::SoatValidation, "wait and stream are mutually exclusive: a streamed generation already waits.").at("wait"));
    }
    let header = call
        .parts
        .headers
        .get("idempotency-key")
        .map(|v| v.to_str().map_err(|_| ApiError::new(Code::SoatValidation, "Idempotency-Key must be text.").at("Idempotency-Key")))
        .transpose()?;
    let key = request::idempotency_key(parsed.idempotency_key.as_deref(), header)?;
    let scope = scope(&call, None).await?;
    let stream = parsed.stream;
    let idempotency = key.map(|k| (k, service::fingerprint(&agent_id, &raw)));
    let args = StartArgs { scope, agent_id, body: parsed, idempotency, initiator: None, version: None };
    match service::start(host(&call), args).await? {
        Started::Replay(g) => Ok(accepted(&g)),
        Started::New { record, .. } if stream => {
            let mut r = sse(&call, &record, 0);
            // The ids a client needs to resume on the events route (and to poll).
            for (name, v) in [("x-generation-id", &record.id), ("x-trace-id", &record.trace_id)] {
                if let Ok(v) = HeaderValue::from_str(v) {
                    r.headers_mut().insert(name, v);
                }
            }
            Ok(r)
        }
        Started::New { record, .. } if wait => rest(&call, &record, 0).await,
        Started::New { record, .. } => Ok(accepted(&record)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputsIn {
    tool_outputs: Vec<ToolOutput>,
}

pub async fn tool_outputs(mut call: Call<'_>, agent_id: String, generation_id: String) -> Result<Reply, ApiError> {
    let body: OutputsIn = body::read(&mut call).await?;
    if body.tool_outputs.is_empty() {
        return Err(ApiError::new(Code::SoatValidation, "tool_outputs must hold at least one output.").at("tool_outputs"));
    }
    let scope = scope(&call, None).await?;
    let agent: crate::agents::agent::record::AgentRecord = scope.agent(&call.app.records, &agent_id)?;
    let scope = crate::agents::Scope { project_id: agent.project_id.clone(), ..scope };
    let (g, _log, after) = service::submit(host(&call), &scope, &agent_id, &generation_id, body.tool_outputs).await?;
    rest(&call, &g, after).await
}

/// `GET /api/v1/generations/{id}/events` (Quarry's): the generation's events after
/// `Last-Event-ID` (all without it), then live ones, as SSE.
pub async fn events(call: Call<'_>, generation_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let g: GenerationRecord = scope.find(&call.app.records, "generation", &generation_id)?;
    let after = match call.parts.headers.get("last-event-id") {
        None => 0,
        Some(v) => v.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()).ok_or_else(|| {
            ApiError::new(Code::SoatValidation, "Last-Event-ID must be the id of an event this stream sent (a whole number).").at("Last-Event-ID")
        })?,
    };
    Ok(sse(&call, &g, after))
}

/// `GET /api/v1/generations/{id}`: the record, as a poller reads it.
pub async fn get(call: Call<'_>, generation_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let g: GenerationRecord = scope.find(&call.app.records, "generation", &generation_id)?;
    Ok(response::json(StatusCode::OK, &g.view()))
}
