//! Amazon Bedrock Runtime's Converse bodies (`POST /model/{modelId}/converse`): one
//! shape for every model Bedrock serves. Messages alternate user and assistant
//! (consecutive turns of one role are merged, tool results ride in a user turn), the
//! system prompt is a list of blocks, tools are `toolConfig.tools[].toolSpec`.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{place, set};
use crate::llm::error::LlmError;
use crate::llm::manifest::Manifest;
use crate::llm::request::{Block, ChatRequest, ResponseFormat, Role, ToolChoice};
use crate::llm::stream::assemble::{Output, ToolCall};
use crate::llm::usage::UsageReport;

pub fn encode(m: &Manifest, req: &ChatRequest) -> Result<Value, LlmError> {
    let mut messages: Vec<(Role, Vec<Value>)> = Vec::new();
    for msg in &req.messages {
        let blocks = msg.content.iter().map(block);
        match messages.last_mut() {
            Some((role, content)) if *role == msg.role => content.extend(blocks),
            _ => messages.push((msg.role, blocks.collect())),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": if role == Role::User { "user" } else { "assistant" }, "content": content}))
        .collect();
    let mut body = json!({"messages": messages});
    let mut system = req.system.iter().map(|s| json!({"text": s})).collect::<Vec<_>>();
    if let Some(ResponseFormat::JsonObject | ResponseFormat::JsonSchema { .. }) = &req.response_format {
        // Converse has no JSON mode: the instruction is the one way to ask for it.
        let schema = match &req.response_format {
            Some(ResponseFormat::JsonSchema { schema, .. }) => format!(" matching this JSON Schema: {schema}"),
            _ => String::new(),
        };
        system.push(json!({"text": format!("Answer with one JSON value{schema}, and nothing else.")}));
    }
    if !system.is_empty() {
        set(&mut body, place(m, "system_message").unwrap_or("system"), Value::Array(system));
    }
    let history_has_tools = req.messages.iter().flat_map(|m| &m.content).any(|b| !matches!(b, Block::Text(_)));
    let offered = !req.tools.is_empty() && (req.tool_choice != Some(ToolChoice::None) || history_has_tools);
    if offered {
        let specs: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut spec = json!({"name": t.name, "inputSchema": {"json": t.parameters}});
                if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
                    spec["description"] = d.into();
                }
                json!({"toolSpec": spec})
            })
            .collect();
        let mut config = Map::new();
        config.insert("tools".into(), Value::Array(specs));
        let choice = match &req.tool_choice {
            Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
            Some(ToolChoice::Required) => Some(json!({"any": {}})),
            Some(ToolChoice::Specific(name)) => Some(json!({"tool": {"name": name}})),
            Some(ToolChoice::None) | None => None,
        };
        if let Some(c) = choice {
            config.insert("toolChoice".into(), c);
        }
        set(&mut body, place(m, "tools").unwrap_or("toolConfig"), Value::Object(config));
    }
    if let (Some(e), Some(at)) = (req.reasoning_effort, place(m, "reasoning_effort")) {
        set(&mut body, at, json!({"thinking": {"type": "enabled", "budget_tokens": e.budget_tokens()}}));
    }
    Ok(body)
}

fn block(b: &Block) -> Value {
    match b {
        Block::Text(t) => json!({"text": t}),
        Block::ToolUse { id, name, input } => json!({"toolUse": {"toolUseId": id, "name": name, "input": input}}),
        Block::ToolResult { tool_use_id, content, is_error } => json!({"toolResult": {
            "toolUseId": tool_use_id,
            "content": [{"text": content}],
            "status": if *is_error { "error" } else { "success" },
        }}),
    }
}

#[derive(Deserialize)]
struct Answer {
    output: AnswerOutput,
    #[serde(default, rename = "stopReason")]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct AnswerOutput {
    message: AnswerMessage,
}

#[derive(Deserialize)]
struct AnswerMessage {
    #[serde(default)]
    content: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_write_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum Part {
    Text(String),
    ToolUse {
        #[serde(rename = "toolUseId")]
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ReasoningContent {
        #[serde(default, rename = "reasoningText")]
        text: Option<ReasoningText>,
    },
}

#[derive(Deserialize)]
struct ReasoningText {
    #[serde(default)]
    text: String,
}

pub fn decode(body: &[u8]) -> Result<Output, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut out = Output { raw_reason: a.stop_reason, ..Output::default() };
    // Blocks of kinds this server does not read (images, citations, guard content) are skipped.
    for c in a.output.message.content.iter().filter_map(|c| Part::deserialize(c).ok()) {
        match c {
            Part::Text(t) => out.text.push_str(&t),
            Part::ReasoningContent { text } => out.reasoning.push_str(&text.map(|t| t.text).unwrap_or_default()),
            Part::ToolUse { id, name, input } => {
                let arguments = if input.is_null() { "{}".to_owned() } else { input.to_string() };
                out.tool_calls.push(ToolCall { id, name, arguments });
            }
        }
    }
    if let Some(u) = a.usage {
        let cached = u.cache_read_input_tokens;
        let write = u.cache_write_input_tokens;
        out.usage.merge(UsageReport {
            input: u.input_tokens.map(|i| i + cached.unwrap_or(0) + write.unwrap_or(0)),
            output: u.output_tokens,
            cached,
            cache_write: write,
            reasoning: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::{Message, Tool};

    fn bedrock() -> Manifest {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../providers/bedrock.yaml")).unwrap();
        Manifest::parse("bedrock", &text).unwrap()
    }

    #[test]
    fn a_request_maps_onto_converse() {
        let req = ChatRequest {
            model: "anthropic.claude-3-haiku-20240307-v1:0".into(),
            system: Some("Be brief.".into()),
            messages: vec![
                Message { role: Role::User, content: vec![Block::Text("Weather in Paris?".into())] },
                Message {
                    role: Role::Assistant,
                    content: vec![Block::ToolUse { id: "t1".into(), name: "weather".into(), input: json!({"city": "Paris"}) }],
                },
                Message { role: Role::User, content: vec![Block::ToolResult { tool_use_id: "t1".into(), content: "18C".into(), is_error: false }] },
                Message { role: Role::User, content: vec![Block::Text("And tomorrow?".into())] },
            ],
            tools: vec![Tool { name: "weather".into(), description: Some("Weather".into()), parameters: json!({"type": "object"}) }],
            tool_choice: Some(ToolChoice::Auto),
            params: crate::llm::request::Params { temperature: Some(0.5), max_tokens: Some(100), ..Default::default() },
            ..ChatRequest::default()
        };
        let body = crate::llm::wire::encode(&bedrock(), &req, false).unwrap();
        assert_eq!(body["system"], json!([{"text": "Be brief."}]));
        assert_eq!(body["messages"].as_array().unwrap().len(), 3, "the two user turns are one: {body}");
        assert_eq!(body["messages"][1]["content"][0]["toolUse"]["input"]["city"], "Paris");
        assert_eq!(body["messages"][2]["content"][0]["toolResult"]["content"][0]["text"], "18C");
        assert_eq!(body["messages"][2]["content"][1]["text"], "And tomorrow?");
        assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"], "object");
        assert_eq!(body["toolConfig"]["toolChoice"], json!({"auto": {}}));
        assert_eq!(body["inferenceConfig"]["maxTokens"], 100);
        assert_eq!(body["inferenceConfig"]["temperature"], 0.5);
    }

    #[test]
    fn an_answer_maps_from_converse() {
        let out = decode(
            br#"{"output":{"message":{"role":"assistant","content":[
                {"text":"Let me check."},
                {"toolUse":{"toolUseId":"tooluse_1","name":"weather","input":{"city":"Paris"}}},
                {"image":{"format":"png"}}]}},
              "stopReason":"tool_use","usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":5}}"#,
        )
        .unwrap();
        assert_eq!(out.text, "Let me check.");
        assert_eq!(out.tool_calls, vec![ToolCall { id: "tooluse_1".into(), name: "weather".into(), arguments: r#"{"city":"Paris"}"#.into() }]);
        assert_eq!((out.usage.input, out.usage.output), (12, 7));
        assert_eq!(out.raw_reason.as_deref(), Some("tool_use"));
    }
}
