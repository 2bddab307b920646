//! Turning a failed HTTP answer into a [`ProviderError`]: read the error envelope
//! (OpenAI's `{error:{message,type,code,param}}`, Anthropic's
//! `{type:"error",error:{type,message}}`, Google's `{error:{code,message,status,details}}`),
//! then classify, most specific first: the provider's error code or type, its
//! canonical status string, a message pattern (429 "quota" → quota_exhausted), the
//! HTTP status by the manifest, then the spec's defaults by status range.
//! `Retry-After` (seconds or an HTTP date is not used by providers; seconds only) and
//! Google's `RetryInfo.retryDelay` become the error's retry delay.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::error::{ErrorClass, ProviderError};

/// A manifest's classification tables, merged with the standard provider mappings of
/// error-codes.yaml.
#[derive(Debug, Clone, Default)]
pub struct Classification {
    pub by_status: BTreeMap<u16, ErrorClass>,
    pub by_error_status: BTreeMap<String, ErrorClass>,
    pub by_error_code: BTreeMap<String, ErrorClass>,
    pub by_message: Vec<(String, ErrorClass)>,
}

#[derive(Debug, Default, Deserialize)]
struct Envelope {
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum ErrorBody {
    Object(ErrorFields),
    Text(String),
    #[default]
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorFields {
    #[serde(default)]
    message: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default, deserialize_with = "present")]
    code: Option<Value>,
    #[serde(skip)]
    has_code: bool,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    details: Vec<Value>,
}

impl Classification {
    /// Classifies an HTTP error answer.
    pub fn classify(&self, status: u16, body: &[u8], retry_after: Option<Duration>) -> ProviderError {
        let envelope: Envelope = serde_json::from_slice(body).unwrap_or_default();
        let mut e = self.envelope_error(envelope.error.unwrap_or_default(), Some(status));
        if e.message.is_empty() {
            e.message = String::from_utf8_lossy(&body[..body.len().min(300)]).trim().to_owned();
        }
        e.retry_after = retry_after.or(e.retry_after);
        e
    }

    /// Classifies the `error` member of a stream's error event.
    pub fn classify_stream_error(&self, error: &Value) -> ProviderError {
        let body = ErrorBody::deserialize(error).unwrap_or_default();
        self.envelope_error(body, None)
    }

    fn envelope_error(&self, body: ErrorBody, status: Option<u16>) -> ProviderError {
        let f = match body {
            ErrorBody::Object(mut f) => {
                f.has_code = f.code.is_some();
                f
            }
            ErrorBody::Text(message) => ErrorFields { message: Some(message), ..ErrorFields::default() },
            ErrorBody::Other => ErrorFields::default(),
        };
        let code = match &f.code {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let status = status.or_else(|| code.as_deref().and_then(|c| c.parse().ok()));
        let message = f.message.clone().unwrap_or_default();
        // The envelope's code, or its type where it has no code at all (Anthropic);
        // OpenAI's `type` is generic and its `code` may be null.
        let key = if f.has_code { code.as_deref() } else { f.kind.as_deref() };
        let class = self.class(status, key, f.status.as_deref(), &message);
        ProviderError { class, status, message, raw_type: f.kind, raw_code: code, raw_status: f.status, retry_after: retry_delay(&f.details) }
    }

    fn class(&self, status: Option<u16>, code: Option<&str>, canonical: Option<&str>, message: &str) -> ErrorClass {
        let by_code = |k: Option<&str>| k.and_then(|k| self.by_error_code.get(k).copied());
        let by_canonical = canonical.and_then(|s| self.by_error_status.get(s).or_else(|| self.by_error_code.get(s)).copied());
        let lower = message.to_ascii_lowercase();
        let by_message =
            || (status == Some(429)).then(|| self.by_message.iter().find(|(p, _)| lower.contains(p.as_str())).map(|(_, c)| *c)).flatten();
        by_code(code)
            .or(by_canonical)
            .or_else(by_message)
            .or_else(|| status.and_then(|s| self.by_status.get(&s).copied()))
            .unwrap_or_else(|| status.map_or(ErrorClass::Other, default_class))
    }
}

/// A field that is present, even as `null`, is `Some(Value::Null)`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The spec's `runtime_behavior` defaults by HTTP status.
pub fn default_class(status: u16) -> ErrorClass {
    match status {
        400 | 422 => ErrorClass::InvalidRequest,
        401 => ErrorClass::Authentication,
        402 => ErrorClass::QuotaExhausted,
        403 => ErrorClass::PermissionDenied,
        404 => ErrorClass::NotFound,
        408 | 504 => ErrorClass::Timeout,
        409 => ErrorClass::Conflict,
        413 => ErrorClass::RequestTooLarge,
        429 => ErrorClass::RateLimited,
        499 => ErrorClass::Cancelled,
        503 | 529 => ErrorClass::Overloaded,
        500..=599 => ErrorClass::ServerError,
        _ => ErrorClass::Other,
    }
}

/// Google's `RetryInfo.retryDelay` ("34.4s").
fn retry_delay(details: &[Value]) -> Option<Duration> {
    details.iter().find_map(|d| {
        let text = d.get("retryDelay")?.as_str()?;
        let secs: f64 = text.strip_suffix('s')?.parse().ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
    })
}

/// `Retry-After` in seconds (providers send seconds, sometimes fractional).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_envelope_and_retry_info() {
        let body =
            std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/provider-transcripts/google/google-429-retry-info.json")).unwrap();
        let c = Classification { by_error_status: [("RESOURCE_EXHAUSTED".to_owned(), ErrorClass::RateLimited)].into(), ..Classification::default() };
        let e = c.classify(429, &body, None);
        assert_eq!(e.class, ErrorClass::RateLimited);
        assert_eq!(e.raw_status.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(e.retry_after, Some(Duration::from_millis(34_400)));
    }

    #[test]
    fn unknown_bodies_fall_back_to_the_status() {
        let c = Classification::default();
        assert_eq!(c.classify(502, b"<html>bad gateway</html>", None).class, ErrorClass::ServerError);
        assert_eq!(c.classify(529, b"", None).class, ErrorClass::Overloaded);
        assert_eq!(c.classify(418, b"", None).class, ErrorClass::Other);
        assert_eq!(c.classify(502, b"<html>bad gateway</html>", None).message, "<html>bad gateway</html>");
    }
}
