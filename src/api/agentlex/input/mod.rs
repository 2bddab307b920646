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

/// A whole number given as an integer or as an integer-valued float (`2`, `2.0`,
/// `2e0`: JSON does not tell them apart, and neither does the spec).
pub fn whole(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 9.0e15).map(|f| f as u64))
}
