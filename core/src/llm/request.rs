//! One normalised chat request, whatever the provider: messages of text, tool_use and
//! tool_result blocks, a system prompt, tools with JSON-schema parameters, tool
//! choice, sampling parameters, response format and reasoning effort.
//!
//! The range rule, one for every provider: a value outside the AI-Protocol standard
//! range (`temperature` 0–2, `top_p` 0–1, penalties −2–2, `max_tokens` ≥ 1, `top_k`
//! ≥ 1, at most 4 stop sequences) is **rejected** before anything is sent; a value
//! inside it but outside the narrower range a manifest declares (`parameters`, e.g.
//! Anthropic's temperature 0–1) is **clamped** to the provider's bound.

use serde_json::{Map, Value};

use super::error::LlmError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The model as the provider names it (after routing).
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<Tool>,
    pub tool_choice: Option<ToolChoice>,
    pub params: Params,
    pub response_format: Option<ResponseFormat>,
    pub reasoning_effort: Option<Effort>,
    /// Mark cache breakpoints (an agent's `prompt_caching`): the end of the system
    /// block (tools and instructions) and the last message. Sent only to providers
    /// whose manifest declares the `prompt_caching` capability with explicit
    /// breakpoints (Anthropic's `cache_control`); others cache on their own or not.
    pub cache_breakpoints: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse { id: String, name: String, input: Value },
    ToolResult { tool_use_id: String, content: String, is_error: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Specific(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { name: String, schema: Value, strict: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Low,
    Medium,
    High,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// A thinking budget for providers that take tokens instead of a level.
    pub fn budget_tokens(self) -> u64 {
        match self {
            Effort::Low => 1024,
            Effort::Medium => 4096,
            Effort::High => 16384,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u64>,
    pub max_tokens: Option<u64>,
    pub stop: Vec<String>,
    pub seed: Option<i64>,
    pub frequency_penalty: Option<f64>,
    pub presence_penalty: Option<f64>,
}

impl Params {
    /// Checks the standard ranges (see the module docs).
    pub fn validate(&self) -> Result<(), LlmError> {
        let range = |name: &str, v: Option<f64>, lo: f64, hi: f64| match v {
            Some(x) if !(lo..=hi).contains(&x) => Err(invalid(name, &format!("must be between {lo} and {hi}; got {x}"))),
            _ => Ok(()),
        };
        range("temperature", self.temperature, 0.0, 2.0)?;
        range("top_p", self.top_p, 0.0, 1.0)?;
        range("frequency_penalty", self.frequency_penalty, -2.0, 2.0)?;
        range("presence_penalty", self.presence_penalty, -2.0, 2.0)?;
        if self.max_tokens == Some(0) {
            return Err(invalid("max_tokens", "must be at least 1"));
        }
        if self.top_k == Some(0) {
            return Err(invalid("top_k", "must be at least 1"));
        }
        if self.stop.len() > 4 {
            return Err(invalid("stop", "at most 4 stop sequences"));
        }
        Ok(())
    }

    /// The parameters by their standard names, as the manifest's mapping reads them.
    pub fn standard(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        };
        put("temperature", self.temperature.map(Value::from));
        put("top_p", self.top_p.map(Value::from));
        put("top_k", self.top_k.map(Value::from));
        put("max_tokens", self.max_tokens.map(Value::from));
        put("stop_sequences", (!self.stop.is_empty()).then(|| Value::from(self.stop.clone())));
        put("seed", self.seed.map(Value::from));
        put("frequency_penalty", self.frequency_penalty.map(Value::from));
        put("presence_penalty", self.presence_penalty.map(Value::from));
        m
    }
}

pub fn invalid(field: &str, message: &str) -> LlmError {
    LlmError::InvalidRequest { field: field.to_owned(), message: message.to_owned() }
}
