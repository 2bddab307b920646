//! The spec's standard streaming events, typed: what [`super::map`] emits, read
//! into the fields each event carries.

use serde_json::Value;

use super::map::{EventKind, RawEvent};
use crate::llm::classify::Classification;
use crate::llm::error::ProviderError;
use crate::llm::usage::UsageReport;

#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    ContentDelta(String),
    ThinkingDelta(String),
    ToolCallStarted { index: Option<u64>, id: Option<String>, name: String },
    PartialToolCall { index: Option<u64>, args: ArgsDelta },
    ToolCallEnded { index: Option<u64> },
    Metadata { usage: Option<UsageReport>, stop_reason: Option<String> },
    FinalCandidate { finish_reason: String },
    StreamEnd { finish_reason: Option<String> },
    StreamError(ProviderError),
}

/// A piece of a tool call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgsDelta {
    /// A fragment of the JSON text (OpenAI, Anthropic).
    Text(String),
    /// The whole arguments object at once (Gemini).
    Whole(Value),
    /// Assignments by JSON path (Gemini's streamed `partialArgs`).
    Partial(Vec<Value>),
}

impl StreamEvent {
    /// Reads a mapped event; `None` when it lacks the field that makes it mean anything.
    pub fn from_raw(e: RawEvent, classes: &Classification) -> Vec<StreamEvent> {
        let f = &e;
        let text = |k: &str| f.get(k).and_then(Value::as_str).map(str::to_owned);
        let index = f.get("index").and_then(Value::as_u64);
        let one = match e.kind {
            EventKind::PartialContentDelta => text("content").map(StreamEvent::ContentDelta),
            EventKind::ThinkingDelta => text("thinking").map(StreamEvent::ThinkingDelta),
            EventKind::ToolCallStarted => text("tool_name").map(|name| StreamEvent::ToolCallStarted { index, id: text("tool_call_id"), name }),
            EventKind::PartialToolCall => return partial_tool_call(f, index),
            EventKind::ToolCallEnded => Some(StreamEvent::ToolCallEnded { index }),
            EventKind::Metadata => Some(StreamEvent::Metadata {
                usage: f.get("usage").and_then(UsageReport::parse),
                stop_reason: text("stop_reason").or_else(|| text("finish_reason")),
            }),
            EventKind::FinalCandidate => text("finish_reason").map(|r| StreamEvent::FinalCandidate { finish_reason: r }),
            EventKind::StreamEnd => Some(StreamEvent::StreamEnd { finish_reason: text("finish_reason") }),
            EventKind::StreamError => f.get("error").map(|err| StreamEvent::StreamError(classes.classify_stream_error(err))),
        };
        one.into_iter().collect()
    }
}

fn partial_tool_call(f: &RawEvent, index: Option<u64>) -> Vec<StreamEvent> {
    if let Some(Value::Array(calls)) = f.get("tool_calls") {
        // OpenAI's whole `tool_calls` delta array as one field.
        return calls.iter().flat_map(openai_tool_delta).collect();
    }
    let args = match f.get("arguments").or_else(|| f.get("partial_json")) {
        Some(Value::String(s)) => ArgsDelta::Text(s.clone()),
        Some(v @ Value::Object(_)) => ArgsDelta::Whole(v.clone()),
        _ => match f.get("partial_args") {
            Some(Value::Array(a)) => ArgsDelta::Partial(a.clone()),
            _ => return Vec::new(),
        },
    };
    vec![StreamEvent::PartialToolCall { index, args }]
}

fn openai_tool_delta(call: &Value) -> Vec<StreamEvent> {
    let index = call.get("index").and_then(Value::as_u64);
    let mut out = Vec::new();
    if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
        let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
        out.push(StreamEvent::ToolCallStarted { index, id, name: name.to_owned() });
    }
    if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
        out.push(StreamEvent::PartialToolCall { index, args: ArgsDelta::Text(args.to_owned()) });
    }
    out
}
