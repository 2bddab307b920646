//! The model's view of a generation: the system prompt (the agent's instructions, then
//! the knowledge found before the first step) and the transcript as the provider
//! layer's messages, cut to `max_context_messages` without splitting a tool call
//! from its result.

use super::record::{Block, Message, Role};
use crate::agents::agent::config::AgentConfig;
use crate::llm::request::{Block as LlmBlock, Message as LlmMessage, Role as LlmRole};

pub fn system(config: &AgentConfig, context: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [config.instructions.as_deref(), context].into_iter().flatten().filter(|s| !s.trim().is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

pub fn messages(all: &[Message], max: Option<i64>) -> Vec<LlmMessage> {
    let mut start = match max {
        Some(n) if n >= 0 && (n as usize) < all.len() => all.len() - n as usize,
        _ => 0,
    };
    // Tool results whose call was cut away would be refused by every provider.
    while start < all.len() && all[start].role == Role::Tool {
        start += 1;
    }
    all[start..].iter().map(to_llm).collect()
}

fn to_llm(m: &Message) -> LlmMessage {
    let role = match m.role {
        Role::Assistant => LlmRole::Assistant,
        Role::User | Role::Tool => LlmRole::User,
    };
    let content = m
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => LlmBlock::Text(text.clone()),
            Block::ToolCall { id, tool_name, args } => LlmBlock::ToolUse { id: id.clone(), name: tool_name.clone(), input: args.clone() },
            Block::ToolResult { tool_call_id, output, is_error, .. } => LlmBlock::ToolResult {
                tool_use_id: tool_call_id.clone(),
                content: match output {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
                is_error: *is_error,
            },
        })
        .collect();
    LlmMessage { role, content }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_window_never_starts_on_a_tool_result() {
        let all = vec![
            Message::text(Role::User, "q"),
            Message { role: Role::Assistant, content: vec![Block::ToolCall { id: "c".into(), tool_name: "t".into(), args: json!({}) }] },
            Message {
                role: Role::Tool,
                content: vec![Block::ToolResult { tool_call_id: "c".into(), tool_name: "t".into(), output: json!(1), is_error: false }],
            },
            Message::text(Role::Assistant, "a"),
        ];
        assert_eq!(messages(&all, None).len(), 4);
        assert_eq!(messages(&all, Some(2)).len(), 1, "the cut result is dropped with its call");
        assert_eq!(messages(&all, Some(3)).len(), 3);
        assert_eq!(messages(&all, Some(0)).len(), 0);
    }
}
