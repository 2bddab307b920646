//! The OpenAI chat-completions request as SDKs send it, read into the provider
//! layer's [`ChatRequest`]. `system`/`developer` messages become the system prompt,
//! assistant `tool_calls` become tool_use blocks, and consecutive `tool` messages one
//! user turn of tool_result blocks.

use serde::Deserialize;
use serde_json::Value;

use crate::llm::request::{invalid, Block, ChatRequest, Effort, Message, Params, ResponseFormat, Role, Tool, ToolChoice};
use crate::llm::LlmError;

#[derive(Debug, Deserialize)]
pub struct ChatBody {
    pub model: String,
    pub messages: Vec<InMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stop: Option<Stop>,
    seed: Option<i64>,
    frequency_penalty: Option<f64>,
    presence_penalty: Option<f64>,
    #[serde(default)]
    tools: Vec<InTool>,
    tool_choice: Option<InToolChoice>,
    response_format: Option<InResponseFormat>,
    reasoning_effort: Option<String>,
    n: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
pub struct InMessage {
    role: String,
    #[serde(default)]
    content: Option<InContent>,
    #[serde(default)]
    tool_calls: Vec<InToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum InContent {
    Text(String),
    Parts(Vec<InPart>),
}

#[derive(Debug, Deserialize)]
struct InPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct InToolCall {
    id: String,
    function: InFunctionCall,
}

#[derive(Debug, Deserialize)]
struct InFunctionCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Debug, Deserialize)]
struct InTool {
    function: InFunction,
}

#[derive(Debug, Deserialize)]
struct InFunction {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum InToolChoice {
    Word(String),
    Named { function: NamedFunction },
}

#[derive(Debug, Deserialize)]
struct NamedFunction {
    name: String,
}

#[derive(Debug, Deserialize)]
struct InResponseFormat {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    json_schema: Option<InJsonSchema>,
}

#[derive(Debug, Deserialize)]
struct InJsonSchema {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
}

impl ChatBody {
    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().is_some_and(|o| o.include_usage)
    }

    pub fn into_request(self) -> Result<ChatRequest, LlmError> {
        if self.n.is_some_and(|n| n != 1) {
            return Err(invalid("n", "only n = 1 is served"));
        }
        if self.messages.is_empty() {
            return Err(invalid("messages", "at least one message is required"));
        }
        let mut system = Vec::new();
        let mut messages: Vec<Message> = Vec::new();
        for (i, m) in self.messages.into_iter().enumerate() {
            let text = m.content.map(text).unwrap_or_default();
            let (role, blocks) = match m.role.as_str() {
                "system" | "developer" => {
                    system.push(text);
                    continue;
                }
                "user" => (Role::User, vec![Block::Text(text)]),
                "assistant" => (Role::Assistant, assistant(text, m.tool_calls)),
                "tool" => {
                    let id = m.tool_call_id.ok_or_else(|| invalid(&format!("messages[{i}].tool_call_id"), "is required"))?;
                    (Role::User, vec![Block::ToolResult { tool_use_id: id, content: text, is_error: false }])
                }
                other => return Err(invalid(&format!("messages[{i}].role"), &format!("`{other}` is not system, user, assistant or tool"))),
            };
            match messages.last_mut() {
                // Tool results that follow one another answer one assistant turn.
                Some(last) if role == Role::User && is_results(&blocks) && is_results(&last.content) => last.content.extend(blocks),
                _ => messages.push(Message { role, content: blocks }),
            }
        }
        Ok(ChatRequest {
            model: self.model,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages,
            tools: self
                .tools
                .into_iter()
                .map(|t| Tool {
                    name: t.function.name,
                    description: t.function.description,
                    parameters: t.function.parameters.unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
                })
                .collect(),
            tool_choice: self.tool_choice.map(tool_choice).transpose()?,
            params: Params {
                temperature: self.temperature,
                top_p: self.top_p,
                top_k: None,
                max_tokens: self.max_completion_tokens.or(self.max_tokens),
                stop: match self.stop {
                    None => Vec::new(),
                    Some(Stop::One(s)) => vec![s],
                    Some(Stop::Many(v)) => v,
                },
                seed: self.seed,
                frequency_penalty: self.frequency_penalty,
                presence_penalty: self.presence_penalty,
            },
            response_format: self.response_format.map(response_format).transpose()?,
            reasoning_effort: self.reasoning_effort.as_deref().map(effort).transpose()?.flatten(),
            cache_breakpoints: false,
        })
    }
}

fn text(c: InContent) -> String {
    match c {
        InContent::Text(t) => t,
        InContent::Parts(parts) => parts.into_iter().filter(|p| p.kind == "text").filter_map(|p| p.text).collect::<Vec<_>>().join(""),
    }
}

fn assistant(text: String, calls: Vec<InToolCall>) -> Vec<Block> {
    let mut blocks: Vec<Block> = (!text.is_empty()).then_some(Block::Text(text)).into_iter().collect();
    blocks.extend(calls.into_iter().map(|c| Block::ToolUse {
        id: c.id,
        name: c.function.name,
        input: crate::llm::wire::arguments_object(&c.function.arguments),
    }));
    blocks
}

fn is_results(blocks: &[Block]) -> bool {
    !blocks.is_empty() && blocks.iter().all(|b| matches!(b, Block::ToolResult { .. }))
}

fn tool_choice(c: InToolChoice) -> Result<ToolChoice, LlmError> {
    match c {
        InToolChoice::Word(w) => match w.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            other => Err(invalid("tool_choice", &format!("`{other}` is not auto, none, required or a function"))),
        },
        InToolChoice::Named { function } => Ok(ToolChoice::Specific(function.name)),
    }
}

fn response_format(f: InResponseFormat) -> Result<ResponseFormat, LlmError> {
    match f.kind.as_str() {
        "text" => Ok(ResponseFormat::Text),
        "json_object" => Ok(ResponseFormat::JsonObject),
        "json_schema" => {
            let s = f.json_schema.ok_or_else(|| invalid("response_format.json_schema", "is required"))?;
            Ok(ResponseFormat::JsonSchema {
                name: s.name.unwrap_or_else(|| "response".into()),
                schema: s.schema.unwrap_or_else(|| serde_json::json!({})),
                strict: s.strict.unwrap_or(false),
            })
        }
        other => Err(invalid("response_format.type", &format!("`{other}` is not text, json_object or json_schema"))),
    }
}

fn effort(e: &str) -> Result<Option<Effort>, LlmError> {
    match e {
        "minimal" | "low" => Ok(Some(Effort::Low)),
        "medium" => Ok(Some(Effort::Medium)),
        "high" => Ok(Some(Effort::High)),
        "auto" | "none" => Ok(None),
        other => Err(invalid("reasoning_effort", &format!("`{other}` is not low, medium or high"))),
    }
}
