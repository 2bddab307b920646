//! Request bodies of the collection, document, search and evaluate endpoints, checked field by
//! field into typed values. Each error names the field and uses the spec's code.

pub mod document;
pub mod evaluate;
pub mod search;
pub mod settings;

use serde_json::Value;

use crate::error::{ApiError, Code};

/// The JSON type of a value, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn err(code: Code, msg: impl Into<String>) -> ApiError {
    ApiError::new(code, msg)
}

/// A string or null (absent = null).
pub fn opt_string(v: Option<&Value>, field: &str, code: Code) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(err(code, format!("{field} must be a string or null, not {}.", kind(other)))),
    }
}

/// The body parsed as JSON (any value: some endpoints take a bare string).
pub fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    crate::http::body::value(bytes)
}
