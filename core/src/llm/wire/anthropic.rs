//! Anthropic messages bodies.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{place, set};
use crate::llm::error::LlmError;
use crate::llm::manifest::Manifest;
use crate::llm::request::{invalid, Block, ChatRequest, ResponseFormat, Role, ToolChoice};
use crate::llm::stream::assemble::{Output, ToolCall};
use crate::llm::usage::UsageReport;

pub fn encode(m: &Manifest, req: &ChatRequest, stream: bool) -> Result<Value, LlmError> {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|msg| {
            let role = if msg.role == Role::User { "user" } else { "assistant" };
            json!({"role": role, "content": msg.content.iter().map(block).collect::<Vec<_>>()})
        })
        .collect();
    let mut messages = messages;
    let cache = req.cache_breakpoints && m.capabilities.prompt_caching;
    if cache {
        if let Some(last) = messages.last_mut().and_then(|msg| msg["content"].as_array_mut()).and_then(|c| c.last_mut()) {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    let mut body = json!({"model": req.model, "messages": messages});
    if stream {
        body["stream"] = Value::Bool(true);
    }
    if let Some(s) = &req.system {
        // As a block when caching: the breakpoint covers the tools before it too.
        let system = if cache { json!([{"type": "text", "text": s, "cache_control": {"type": "ephemeral"}}]) } else { Value::from(s.as_str()) };
        set(&mut body, place(m, "system_message").unwrap_or("system"), system);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> =
            req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters})).collect();
        set(&mut body, place(m, "tools").unwrap_or("tools"), Value::from(tools));
    }
    if let Some(c) = &req.tool_choice {
        let v = match c {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Specific(name) => json!({"type": "tool", "name": name}),
        };
        set(&mut body, place(m, "tool_choice").unwrap_or("tool_choice"), v);
    }
    match &req.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => {
            return Err(invalid("response_format", &format!("json_object is not supported by {}; send a json_schema", m.id)))
        }
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            set(&mut body, place(m, "response_format").unwrap_or("output_format"), json!({"type": "json_schema", "schema": schema}))
        }
    }
    if let (Some(e), Some(at)) = (req.reasoning_effort, place(m, "reasoning_effort")) {
        set(&mut body, at, json!({"type": "enabled", "budget_tokens": e.budget_tokens()}));
    }
    Ok(body)
}

fn block(b: &Block) -> Value {
    match b {
        Block::Text(t) => json!({"type": "text", "text": t}),
        Block::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        Block::ToolResult { tool_use_id, content, is_error } => {
            json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error})
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    Text { text: String },
    Thinking { thinking: String },
    ToolUse { id: String, name: String, input: Value },
}

pub fn decode(body: &[u8]) -> Result<Output, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut out = Output { raw_reason: a.stop_reason, ..Output::default() };
    // Server-side tool blocks (web search, code execution, …) are not the caller's.
    for c in a.content.iter().filter_map(|c| Content::deserialize(c).ok()) {
        match c {
            Content::Text { text } => out.text.push_str(&text),
            Content::Thinking { thinking } => out.reasoning.push_str(&thinking),
            Content::ToolUse { id, name, input } => out.tool_calls.push(ToolCall { id, name, arguments: input.to_string() }),
        }
    }
    if let Some(r) = a.usage.as_ref().and_then(UsageReport::parse) {
        out.usage.merge(r);
    }
    Ok(out)
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use crate::llm::request::Message;

    fn anthropic() -> Manifest {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../providers/anthropic.yaml")).unwrap();
        Manifest::parse("anthropic", &text).unwrap()
    }

    #[test]
    fn cache_breakpoints_mark_the_system_block_and_the_last_message() {
        let m = anthropic();
        assert!(m.capabilities.prompt_caching);
        let mut req = ChatRequest {
            model: "claude".into(),
            system: Some("Be brief.".into()),
            messages: vec![Message { role: Role::User, content: vec![Block::Text("a".into()), Block::Text("b".into())] }],
            ..ChatRequest::default()
        };
        let plain = encode(&m, &req, false).unwrap();
        assert_eq!(plain["system"], "Be brief.");
        assert!(plain.to_string().find("cache_control").is_none());
        req.cache_breakpoints = true;
        let cached = encode(&m, &req, false).unwrap();
        assert_eq!(cached["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(cached["system"][0]["text"], "Be brief.");
        assert!(cached["messages"][0]["content"][0].get("cache_control").is_none());
        assert_eq!(cached["messages"][0]["content"][1]["cache_control"]["type"], "ephemeral");
    }
}
