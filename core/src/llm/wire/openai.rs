//! OpenAI chat-completions bodies (also every OpenAI-compatible server).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{place, set};
use crate::llm::error::LlmError;
use crate::llm::manifest::Manifest;
use crate::llm::request::{Block, ChatRequest, ResponseFormat, Role, ToolChoice};
use crate::llm::stream::assemble::{Output, ToolCall};
use crate::llm::usage::UsageReport;

pub fn encode(m: &Manifest, req: &ChatRequest, stream: bool) -> Result<Value, LlmError> {
    let mut messages = Vec::new();
    if let Some(s) = &req.system {
        messages.push(json!({"role": "system", "content": s}));
    }
    for msg in &req.messages {
        messages.extend(message(msg.role, &msg.content));
    }
    let mut body = json!({"model": req.model, "messages": messages});
    if stream {
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        set(&mut body, place(m, "tools").unwrap_or("tools"), Value::from(tools));
    }
    if let Some(c) = &req.tool_choice {
        let v = match c {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Specific(name) => json!({"type": "function", "function": {"name": name}}),
        };
        set(&mut body, place(m, "tool_choice").unwrap_or("tool_choice"), v);
    }
    if let Some(f) = &req.response_format {
        let v = match f {
            ResponseFormat::Text => json!({"type": "text"}),
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { name, schema, strict } => {
                json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}})
            }
        };
        set(&mut body, place(m, "response_format").unwrap_or("response_format"), v);
    }
    if let (Some(e), Some(at)) = (req.reasoning_effort, place(m, "reasoning_effort")) {
        set(&mut body, at, Value::from(e.as_str()));
    }
    Ok(body)
}

fn message(role: Role, blocks: &[Block]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b {
            Block::Text(t) => text.push_str(t),
            Block::ToolUse { id, name, input } => {
                calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}))
            }
            Block::ToolResult { tool_use_id, content, .. } => out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content})),
        }
    }
    let role = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    if !text.is_empty() || !calls.is_empty() || out.is_empty() {
        let mut m = Map::new();
        m.insert("role".into(), role.into());
        m.insert("content".into(), if text.is_empty() && !calls.is_empty() { Value::Null } else { text.into() });
        if !calls.is_empty() {
            m.insert("tool_calls".into(), calls.into());
        }
        out.insert(0, Value::Object(m));
    }
    out
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: AnswerMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct AnswerMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<AnswerCall>,
}

#[derive(Deserialize)]
struct AnswerCall {
    id: String,
    function: AnswerFunction,
}

#[derive(Deserialize)]
struct AnswerFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

pub fn decode(body: &[u8]) -> Result<Output, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let choice = a.choices.into_iter().next().ok_or("no choices")?;
    let mut out = Output {
        text: choice.message.content.unwrap_or_default(),
        reasoning: choice.message.reasoning_content.unwrap_or_default(),
        tool_calls: choice
            .message
            .tool_calls
            .into_iter()
            .map(|c| ToolCall { id: c.id, name: c.function.name, arguments: c.function.arguments })
            .collect(),
        raw_reason: choice.finish_reason,
        ..Output::default()
    };
    if let Some(r) = a.usage.as_ref().and_then(UsageReport::parse) {
        out.usage.merge(r);
    }
    Ok(out)
}
