//! `/api/v1` request bodies: strict JSON. A body type derives `Deserialize` with
//! `#[serde(deny_unknown_fields)]` (every SOAT body is `additionalProperties: false`),
//! and [`read`] parses it: syntax errors with their line and column, a wrong type or a
//! missing field naming the field, an unknown field named in the message and in
//! `error.meta.field` — all 400 `VALIDATION_FAILED`. Fields a PATCH may clear are
//! [`crate::agents::Patch`]es (absent, `null`, a value). Every body is first held to
//! the bounds of [`super::bounds`] (texts, keys, arrays, free-form objects).

use serde::de::DeserializeOwned;

use crate::error::{ApiError, Code};
use crate::http::body;
use crate::http::call::Call;

/// The body, parsed strictly into `T`.
pub async fn read<T: DeserializeOwned>(call: &mut Call<'_>) -> Result<T, ApiError> {
    let bytes = call.bytes().await?;
    let parsed = call.body_value.take();
    strict_parsed(&bytes, parsed)
}

/// As [`read`], with `T::default()` for an empty body (restore's optional body).
pub async fn read_or_default<T: DeserializeOwned + Default>(call: &mut Call<'_>) -> Result<T, ApiError> {
    let bytes = call.bytes().await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    strict(&bytes)
}

/// Parses `bytes` strictly into `T` (see the module's note).
pub fn strict<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    strict_parsed(bytes, None)
}

/// As [`strict`], with the body already parsed as JSON when the dispatch did (`parsed`).
fn strict_parsed<T: DeserializeOwned>(bytes: &[u8], parsed: Option<serde_json::Value>) -> Result<T, ApiError> {
    // Bounds first, so a body past one is refused as such whatever else is wrong with
    // it; a body that is not JSON gets the typed parse's error, with line and column.
    if let Some(value) = parsed.or_else(|| serde_json::from_slice::<serde_json::Value>(bytes).ok()) {
        super::bounds::check(&value)?;
    }
    body::json(bytes, Code::SoatValidation).map_err(|mut e| {
        if e.code == Code::InvalidJson {
            e.code = Code::SoatValidation;
        }
        name_unknown_field(e)
    })
}

/// serde says "unknown field `x`, expected …", and the path it is at ends in `x`
/// (`bindings[0].x`); at the top level there may be no path, and the field is `x`.
fn name_unknown_field(e: ApiError) -> ApiError {
    if e.field.is_some() {
        return e;
    }
    let Some(start) = e.message.find("unknown field `") else { return e };
    let name = e.message[start + "unknown field `".len()..].split('`').next().unwrap_or_default().to_owned();
    e.at(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, Default)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        tool_id: Option<String>,
    }

    #[derive(serde::Deserialize, Debug, Default)]
    #[serde(deny_unknown_fields)]
    struct Body {
        #[allow(dead_code)]
        name: String,
        #[serde(default)]
        #[allow(dead_code)]
        bindings: Vec<Inner>,
    }

    #[test]
    fn unknown_fields_are_refused_and_named() {
        let e = strict::<Body>(br#"{"name": "a", "nmae": "b"}"#).unwrap_err();
        assert_eq!(e.code, Code::SoatValidation);
        assert!(e.message.contains("unknown field `nmae`"), "{}", e.message);
        assert_eq!(e.field.as_deref(), Some("nmae"));
        let e = strict::<Body>(br#"{"name": "a", "bindings": [{"tool_id": "t", "x": 1}]}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("bindings[0].x"), "{}", e.message);
    }

    #[test]
    fn wrong_types_and_bad_syntax_are_validation_failures() {
        let e = strict::<Body>(br#"{"name": 5}"#).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (Code::SoatValidation, Some("name")));
        assert_eq!(strict::<Body>(b"{\"name\":").unwrap_err().code, Code::SoatValidation);
        assert_eq!(strict::<Body>(b"[]").unwrap_err().code, Code::SoatValidation);
        assert!(strict::<Body>(br#"{"name": "a"}"#).is_ok());
    }
}
