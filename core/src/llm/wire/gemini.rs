//! Gemini generateContent bodies.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{place, set};
use crate::llm::error::LlmError;
use crate::llm::manifest::Manifest;
use crate::llm::request::{Block, ChatRequest, ResponseFormat, Role, ToolChoice};
use crate::llm::stream::assemble::{Output, ToolCall};
use crate::llm::stream::map::generate_id;
use crate::llm::usage::UsageReport;

pub fn encode(m: &Manifest, req: &ChatRequest) -> Result<Value, LlmError> {
    // functionResponse names the function, not the call id: find it from the call.
    let names: HashMap<&str, &str> = req
        .messages
        .iter()
        .flat_map(|msg| &msg.content)
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let contents: Vec<Value> = req
        .messages
        .iter()
        .map(|msg| {
            let role = if msg.role == Role::User { "user" } else { "model" };
            let parts: Vec<Value> = msg.content.iter().map(|b| part(b, &names)).collect();
            json!({"role": role, "parts": parts})
        })
        .collect();
    let mut body = json!({"contents": contents});
    if let Some(s) = &req.system {
        set(&mut body, place(m, "system_message").unwrap_or("systemInstruction"), json!({"parts": [{"text": s}]}));
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters})).collect();
        set(&mut body, place(m, "tools").unwrap_or("tools"), json!([{"functionDeclarations": decls}]));
    }
    if let Some(c) = &req.tool_choice {
        let config = match c {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Specific(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        set(&mut body, place(m, "tool_choice").unwrap_or("toolConfig"), json!({"functionCallingConfig": config}));
    }
    let at = place(m, "response_format").unwrap_or("generationConfig");
    match &req.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => set(&mut body, at, json!({"responseMimeType": "application/json"})),
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            set(&mut body, at, json!({"responseMimeType": "application/json", "responseJsonSchema": schema}))
        }
    }
    if let (Some(e), Some(at)) = (req.reasoning_effort, place(m, "reasoning_effort")) {
        set(&mut body, at, json!({"thinkingBudget": e.budget_tokens(), "includeThoughts": true}));
    }
    Ok(body)
}

fn part(b: &Block, names: &HashMap<&str, &str>) -> Value {
    match b {
        Block::Text(t) => json!({"text": t}),
        Block::ToolUse { name, input, .. } => json!({"functionCall": {"name": name, "args": input}}),
        Block::ToolResult { tool_use_id, content, is_error } => {
            let name = names.get(tool_use_id.as_str()).copied().unwrap_or(tool_use_id.as_str());
            let key = if *is_error { "error" } else { "output" };
            json!({"functionResponse": {"name": name, "response": {key: content}}})
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default, rename = "usageMetadata")]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default, rename = "finishReason")]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default, rename = "functionCall")]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    id: Option<String>,
}

pub fn decode(body: &[u8]) -> Result<Output, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let c = a.candidates.into_iter().next().ok_or("no candidates")?;
    let mut out = Output { raw_reason: c.finish_reason, ..Output::default() };
    for p in c.content.map(|c| c.parts).unwrap_or_default() {
        match (p.text, p.function_call) {
            (Some(t), _) if p.thought => out.reasoning.push_str(&t),
            (Some(t), _) => out.text.push_str(&t),
            (None, Some(f)) => out.tool_calls.push(ToolCall {
                id: f.id.unwrap_or_else(generate_id),
                name: f.name,
                arguments: f.args.unwrap_or_else(|| json!({})).to_string(),
            }),
            (None, None) => {}
        }
    }
    if let Some(r) = a.usage.as_ref().and_then(UsageReport::parse) {
        out.usage.merge(r);
    }
    Ok(out)
}
