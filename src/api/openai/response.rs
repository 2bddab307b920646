//! A whole generation as OpenAI's `chat.completion` body, and the parts streamed
//! chunks share (ids, finish reasons, usage).

use serde::Serialize;

use crate::llm::{Completion, Reason, ToolCall, Usage};

/// OpenAI's finish reason for a standard one.
pub fn finish_reason(r: Reason) -> &'static str {
    match r {
        Reason::MaxTokens => "length",
        Reason::ToolUse => "tool_calls",
        Reason::Refusal => "content_filter",
        Reason::EndTurn | Reason::StopSequence | Reason::PauseTurn | Reason::Other => "stop",
    }
}

pub fn completion_id() -> String {
    crate::llm::ids::hex_id("chatcmpl-")
}

pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[derive(Serialize)]
pub struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

impl From<&Usage> for WireUsage {
    fn from(u: &Usage) -> WireUsage {
        WireUsage {
            prompt_tokens: u.input,
            completion_tokens: u.output,
            total_tokens: u.input + u.output,
            prompt_tokens_details: PromptDetails { cached_tokens: u.cached },
            completion_tokens_details: CompletionDetails { reasoning_tokens: u.reasoning },
        }
    }
}

#[derive(Serialize)]
pub struct WireToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction<'a>,
}

#[derive(Serialize)]
pub struct WireFunction<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

#[derive(Serialize)]
struct Body<'a> {
    id: String,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
    usage: WireUsage,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: Message<'a>,
    finish_reason: &'static str,
    logprobs: Option<()>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
}

fn wire_call(c: &ToolCall) -> WireToolCall<'_> {
    WireToolCall { id: &c.id, kind: "function", function: WireFunction { name: &c.name, arguments: &c.arguments } }
}

/// The `chat.completion` body.
pub fn body(c: &Completion, model: &str) -> Vec<u8> {
    let o = &c.output;
    let content = match (o.text.is_empty(), o.tool_calls.is_empty()) {
        (true, false) => None,
        _ => Some(o.text.as_str()),
    };
    let b = Body {
        id: completion_id(),
        object: "chat.completion",
        created: now(),
        model,
        choices: [Choice {
            index: 0,
            message: Message {
                role: "assistant",
                content,
                reasoning_content: (!o.reasoning.is_empty()).then_some(o.reasoning.as_str()),
                tool_calls: o.tool_calls.iter().map(wire_call).collect(),
            },
            finish_reason: finish_reason(c.termination.reason),
            logprobs: None,
        }],
        usage: WireUsage::from(&o.usage),
    };
    serde_json::to_vec(&b).expect("completions serialize")
}
