//! Bounds on every `/api/v1` body, whatever its resource, so no free-text or free-form
//! field a record keeps is unbounded (issue 34, finding 7): the SOAT spec bounds few
//! of them, and a bound written once here also holds for a field added later. Fields
//! with a bound of their own keep it (names, an agent's instructions and whole
//! configuration, a tool's definition, a memory entry); what a generation sends its
//! model (`messages`, `tool_outputs`) is bounded by the body limit alone, and counted
//! in the account's stored characters like everything a record keeps.
//!
//! - a text (a string value: a description, a label, a secret's value, a tag's value):
//!   at most [`MAX_TEXT_CHARS`] characters;
//! - an object key (a metadata key, a tag's or `tool_context`'s name): at most
//!   [`MAX_KEY_CHARS`] characters;
//! - an array: at most [`MAX_ITEMS`] items;
//! - a free-form object a record keeps as given (`metadata`, `tags`, `tool_context`,
//!   `guardrail_context`, an AI provider's `config`): at most [`MAX_FREE_FORM_BYTES`]
//!   of JSON.
//!
//! A body past one is `400 VALIDATION_FAILED` naming the field, and nothing is made.

use serde_json::Value;

use crate::error::{ApiError, Code};

/// The most characters of a text in a body (as many as an agent's instructions hold).
pub const MAX_TEXT_CHARS: usize = 100_000;
/// The most characters of an object's key.
pub const MAX_KEY_CHARS: usize = 256;
/// The most items of an array.
pub const MAX_ITEMS: usize = 1_000;
pub use crate::agents::MAX_FREE_FORM_BYTES;

/// Free-form fields, at any depth.
const FREE_FORM: [&str; 4] = ["metadata", "tags", "tool_context", "guardrail_context"];
/// Free-form fields at the top of a body (an AI provider's `config`; an agent's
/// configuration is bounded whole by the agents service).
const FREE_FORM_TOP: [&str; 1] = ["config"];
/// Top-level fields bounded by the body limit alone: what a generation sends its model.
const LONG: [&str; 2] = ["messages", "tool_outputs"];

/// Checks `body` against every bound; the first field past one is the error.
pub fn check(body: &Value) -> Result<(), ApiError> {
    let Value::Object(top) = body else { return walk(body, &mut Vec::new()) };
    let mut path = Vec::new();
    for (key, value) in top {
        if LONG.contains(&key.as_str()) {
            continue;
        }
        path.push(Step::Key(key));
        if FREE_FORM_TOP.contains(&key.as_str()) {
            free_form(value, &path)?;
        }
        visit(key, value, &mut path)?;
        path.pop();
    }
    Ok(())
}

/// One step of the path to a field, for the error.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn at(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn refuse(path: &[Step<'_>], message: String) -> ApiError {
    let field = at(path);
    let field = if field.is_empty() { "body".to_owned() } else { field };
    ApiError::new(Code::SoatValidation, format!("{field} {message}")).at(field)
}

/// A field whose key is `key`: a free-form one is bounded whole, then everything in it.
fn visit<'a>(key: &str, value: &'a Value, path: &mut Vec<Step<'a>>) -> Result<(), ApiError> {
    if FREE_FORM.contains(&key) {
        free_form(value, path)?;
    }
    walk(value, path)
}

fn free_form(value: &Value, path: &[Step<'_>]) -> Result<(), ApiError> {
    let bytes = serde_json::to_vec(value).map_or(0, |b| b.len());
    match bytes > MAX_FREE_FORM_BYTES {
        true => Err(refuse(path, format!("is {bytes} bytes of JSON; at most {MAX_FREE_FORM_BYTES}."))),
        false => Ok(()),
    }
}

fn walk<'a>(value: &'a Value, path: &mut Vec<Step<'a>>) -> Result<(), ApiError> {
    match value {
        Value::String(s) => {
            // Characters are at least a quarter of the bytes: count only what may be long.
            if s.len() > MAX_TEXT_CHARS && s.chars().count() > MAX_TEXT_CHARS {
                return Err(refuse(path, format!("holds {} characters; a text holds at most {MAX_TEXT_CHARS}.", s.chars().count())));
            }
        }
        Value::Array(items) => {
            if items.len() > MAX_ITEMS {
                return Err(refuse(path, format!("holds {} items; at most {MAX_ITEMS}.", items.len())));
            }
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                walk(item, path)?;
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (key, value) in fields {
                if key.len() > MAX_KEY_CHARS && key.chars().count() > MAX_KEY_CHARS {
                    return Err(refuse(path, format!("has a key of {} characters; a key holds at most {MAX_KEY_CHARS}.", key.chars().count())));
                }
                path.push(Step::Key(key));
                visit(key, value, path)?;
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(body: Value) -> (String, String) {
        let e = check(&body).unwrap_err();
        assert_eq!(e.code, Code::SoatValidation);
        (e.field.unwrap().into_owned(), e.message)
    }

    #[test]
    fn every_text_key_array_and_free_form_object_is_bounded_and_named() {
        assert!(check(&json!({"name": "a", "description": "d".repeat(MAX_TEXT_CHARS)})).is_ok());
        let (field, message) = refused(json!({"description": "d".repeat(MAX_TEXT_CHARS + 1)}));
        assert_eq!(field, "description");
        assert!(message.contains("100001 characters"), "{message}");
        assert_eq!(
            refused(json!({"tool_bindings": [{}, {"tool": {"execute": {"url": "u".repeat(MAX_TEXT_CHARS + 1)}}}]})).0,
            "tool_bindings[1].tool.execute.url"
        );
        assert_eq!(refused(json!({"targets": vec![json!({}); MAX_ITEMS + 1]})).0, "targets");
        assert_eq!(refused(json!({"tags": {"k".repeat(MAX_KEY_CHARS + 1): "v"}})).0, "tags");
        let blob = "b".repeat(MAX_FREE_FORM_BYTES);
        for body in [json!({"metadata": {"blob": blob}}), json!({"knowledge_config": {"tags": {"t": blob}}}), json!({"config": {"x": blob}})] {
            let (field, message) = refused(body);
            assert!(["metadata", "knowledge_config.tags", "config"].contains(&field.as_str()), "{field}");
            assert!(message.contains("bytes of JSON"), "{message}");
        }
    }

    #[test]
    fn what_a_generation_sends_its_model_is_left_to_the_body_limit() {
        let long = "m".repeat(MAX_TEXT_CHARS * 2);
        assert!(check(&json!({"messages": [{"role": "user", "content": long}]})).is_ok());
        assert!(check(&json!({"tool_outputs": [{"tool_call_id": "c", "output": long}]})).is_ok());
        assert_eq!(refused(json!({"messages": [], "metadata": {"m": long}})).0, "metadata");
    }

    #[test]
    fn a_multibyte_text_is_counted_in_characters() {
        assert!(check(&json!({"description": "é".repeat(MAX_TEXT_CHARS)})).is_ok(), "200,000 bytes, 100,000 characters");
    }
}
