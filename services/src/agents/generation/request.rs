//! `CreateAgentGenerationRequest`, parsed strictly: every field the spec names and no
//! other, messages of `user` or `assistant` only (a `system` one is 400
//! `SYSTEM_MESSAGE_NOT_ALLOWED`: the agent's `instructions` are its system prompt),
//! `tool_context` keys a header can carry, an `idempotency_key` of 1 to 255
//! characters, and a knowledge override without a write store.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::record::{InContent, InMessage, Role};
use crate::agents::agent::config::KnowledgeConfig;
use crate::error::{ApiError, Code};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateBody {
    pub messages: Vec<RawMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub trace_id: Option<String>,
    #[serde(default)]
    pub parent_trace_id: Option<String>,
    #[serde(default)]
    pub root_trace_id: Option<String>,
    #[serde(default)]
    pub max_call_depth: Option<u32>,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub action_id: Option<String>,
    #[serde(default)]
    pub guardrail_context: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub knowledge_config: Option<KnowledgeConfig>,
    /// sessions: the session and conversation this generation answers in (never
    /// from a body: set by `agents::session` and `agents::conversation`).
    #[serde(skip)]
    pub session_id: Option<String>,
    #[serde(skip)]
    pub conversation_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    pub role: String,
    pub content: InContent,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field.to_owned())
}

impl GenerateBody {
    /// The checks serde cannot make; the messages as the record keeps them.
    pub fn check(&self) -> Result<Vec<InMessage>, ApiError> {
        if self.messages.is_empty() {
            return Err(invalid("messages", "messages must hold at least one message."));
        }
        let mut out = Vec::with_capacity(self.messages.len());
        for (i, m) in self.messages.iter().enumerate() {
            let role = match m.role.as_str() {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "system" => {
                    return Err(ApiError::new(
                        Code::SystemMessageNotAllowed,
                        format!("messages[{i}] is a system message; an agent's system prompt is its instructions."),
                    )
                    .at(format!("messages[{i}].role")))
                }
                other => return Err(invalid(&format!("messages[{i}].role"), format!("role must be user or assistant, not {other:?}."))),
            };
            out.push(InMessage { role, content: m.content.clone() });
        }
        if let Some(m) = &self.metadata {
            if !m.is_object() && !m.is_null() {
                return Err(invalid("metadata", "metadata must be an object or null."));
            }
        }
        if let Some(ctx) = &self.tool_context {
            crate::agents::tools::call::check_context(ctx).map_err(|e| {
                use crate::error::ErrorCode;
                ApiError::new(e.code(), e.message()).at("tool_context")
            })?;
        }
        if let Some(k) = &self.knowledge_config {
            if k.write_memory_store_id.is_some() {
                return Err(invalid(
                    "knowledge_config.write_memory_store_id",
                    "A generation's knowledge_config cannot name a write store; set it on the agent.",
                ));
            }
        }
        Ok(out)
    }
}

/// The key from the body and the `Idempotency-Key` header: 1 to 255 characters, the
/// same in both when both are sent.
pub fn idempotency_key(body: Option<&str>, header: Option<&str>) -> Result<Option<String>, ApiError> {
    let check = |k: &str, field: &str| {
        if k.is_empty() || k.chars().count() > 255 {
            return Err(invalid(field, "idempotency_key must be a non-empty string of at most 255 characters."));
        }
        Ok(())
    };
    if let Some(k) = body {
        check(k, "idempotency_key")?;
    }
    if let Some(h) = header {
        check(h, "Idempotency-Key")?;
    }
    match (body, header) {
        (Some(b), Some(h)) if b != h => Err(invalid("Idempotency-Key", "The Idempotency-Key header and the body's idempotency_key differ.")),
        (Some(k), _) | (None, Some(k)) => Ok(Some(k.to_owned())),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: serde_json::Value) -> Result<GenerateBody, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn messages_are_checked() {
        let b = body(serde_json::json!({"messages": [{"role": "system", "content": "x"}]})).unwrap();
        assert_eq!(b.check().unwrap_err().code, Code::SystemMessageNotAllowed);
        let b = body(serde_json::json!({"messages": []})).unwrap();
        assert_eq!(b.check().unwrap_err().code, Code::SoatValidation);
        let b = body(serde_json::json!({"messages": [{"role": "user", "content": {"type": "tool_output", "tool_id": "tool_x"}}]})).unwrap();
        assert!(b.check().is_ok());
        assert!(body(serde_json::json!({"messages": [{"role": "user", "content": {"type": "document"}}]})).is_err());
        assert!(body(serde_json::json!({"messages": [{"role": "user", "content": "x"}], "nope": 1})).is_err());
    }

    #[test]
    fn keys_are_checked_and_must_agree() {
        assert_eq!(idempotency_key(Some("a"), None).unwrap().as_deref(), Some("a"));
        assert_eq!(idempotency_key(None, Some("a")).unwrap().as_deref(), Some("a"));
        assert!(idempotency_key(Some(""), None).is_err());
        assert!(idempotency_key(Some(&"k".repeat(256)), None).is_err());
        assert!(idempotency_key(Some("a"), Some("b")).is_err());
        assert_eq!(idempotency_key(None, None).unwrap(), None);
    }
}
