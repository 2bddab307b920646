//! A generation's events, typed, and the one place they become the SSE `data:` a
//! reader gets (live or as the store keeps them). Every frame but `[DONE]` is a JSON
//! object with a `type`; the error frame keeps `error` first and carries `code`, as
//! SOAT's streams end on `{"error": "..."}` (the digest's §2.2).

use serde_json::{json, Value};

use super::record::{GenerationRecord, RecordedError, Runner};

/// The `data:` of the frame that ends a turn that completed or paused.
pub const DONE: &str = "[DONE]";

pub enum Event<'a> {
    /// Text the model wrote.
    Delta { text: &'a str },
    /// A tool call the model made, and who runs it.
    ToolCall { id: &'a str, tool_name: &'a str, args: &'a Value, runner: Runner },
    /// A server-run call's result.
    ToolResult { tool_call_id: &'a str, tool_name: &'a str, output: &'a Value, is_error: bool },
    /// The turn paused: the generation as `?wait=true` answers it (`requires_action`).
    Paused(&'a GenerationRecord),
    /// The turn failed (the stream ends here, without `[DONE]`); `code` is SOAT's.
    Error { message: &'a str, code: Option<&'a str> },
    /// The turn completed or paused.
    Done,
}

impl<'a> Event<'a> {
    /// The error frame of a failed generation's recorded error.
    pub fn failed(e: &'a RecordedError) -> Event<'a> {
        Event::Error { message: &e.message, code: Some(&e.code) }
    }

    /// The frame's `data:`.
    pub fn data(&self) -> String {
        match self {
            Event::Delta { text } => json!({"type": "delta", "text": text}).to_string(),
            Event::ToolCall { id, tool_name, args, runner } => {
                json!({"type": "tool_call", "id": id, "tool_name": tool_name, "args": args, "runner": runner}).to_string()
            }
            Event::ToolResult { tool_call_id, tool_name, output, is_error } => {
                json!({"type": "tool_result", "tool_call_id": tool_call_id, "tool_name": tool_name, "output": output, "is_error": is_error})
                    .to_string()
            }
            Event::Paused(g) => g.response().to_string(),
            Event::Error { message, code } => {
                let code = code.map(|c| format!(",\"code\":{}", Value::from(c))).unwrap_or_default();
                format!("{{\"error\":{}{code},\"type\":\"error\"}}", Value::from(*message))
            }
            Event::Done => DONE.to_owned(),
        }
    }

    /// Whether the stream ends with this frame.
    pub fn ends_stream(&self) -> bool {
        matches!(self, Event::Error { .. } | Event::Done)
    }
}

/// Whether `data` (a frame as sent or as stored, by this version or an older one)
/// ends its stream: `[DONE]` or an error frame.
pub fn ends_stream(data: &str) -> bool {
    data == DONE || data.starts_with("{\"error\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_written_as_readers_expect_them() {
        assert_eq!(Event::Delta { text: "Hi" }.data(), r#"{"text":"Hi","type":"delta"}"#);
        let args = json!({"q": 1});
        let call = Event::ToolCall { id: "c1", tool_name: "t", args: &args, runner: Runner::Client };
        assert_eq!(call.data(), r#"{"args":{"q":1},"id":"c1","runner":"client","tool_name":"t","type":"tool_call"}"#);
        let out = json!("ok");
        let result = Event::ToolResult { tool_call_id: "c1", tool_name: "t", output: &out, is_error: false };
        assert_eq!(result.data(), r#"{"is_error":false,"output":"ok","tool_call_id":"c1","tool_name":"t","type":"tool_result"}"#);
        let e = Event::Error { message: "Provider \"x\" failed", code: Some("AI_PROVIDER_ERROR") };
        assert_eq!(e.data(), r#"{"error":"Provider \"x\" failed","code":"AI_PROVIDER_ERROR","type":"error"}"#);
        assert_eq!(Event::Error { message: "m", code: None }.data(), r#"{"error":"m","type":"error"}"#);
        assert_eq!(Event::Done.data(), "[DONE]");
    }

    #[test]
    fn the_frames_that_end_a_stream_are_known_as_sent_and_as_stored() {
        for e in [Event::Done, Event::Error { message: "m", code: Some("X") }, Event::Delta { text: "t" }] {
            assert_eq!(e.ends_stream(), ends_stream(&e.data()), "{}", e.data());
        }
        // An error frame an older version stored (no `type`).
        assert!(ends_stream(r#"{"error":"m","code":"GENERATION_INTERRUPTED"}"#));
    }
}
