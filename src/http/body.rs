//! Reading request bodies: capped by `http.max_body_bytes` (413 `body_too_large`,
//! refused from `Content-Length` before a byte is read when it can be), bounded in
//! time by `http.body_read_timeout`, and parsed as JSON into typed structs at the
//! edge, with errors that say where and what.
//!
//! A body no handler read (an early 401, 413 or 429, a 404, a route that takes none)
//! is [`Slot::settle`]d before its answer goes: one of up to [`DRAIN_MAX`] bytes is
//! read and dropped, so the connection stays usable for the client's next request;
//! a larger one, or one cut short, makes the answer say `connection: close` and the
//! connection linger until the client has sent it (`protocol_error::ServedIo`).
//! hyper alone would answer, then read once what had already arrived and, short of
//! the whole body, close without `connection: close`: a keep-alive client's next
//! request (Python's `http.client` retrying a 429) met a broken pipe.

use std::cell::Cell;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH};
use hyper::HeaderMap;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Code};

#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub max_bytes: usize,
    pub timeout: Duration,
}

fn too_large(max: usize) -> ApiError {
    ApiError::new(Code::BodyTooLarge, format!("The request body is larger than {max} bytes."))
}

/// The largest unread body drained so that its connection stays open: 64 KiB is
/// what a client has usually sent whole before it reads the answer (it fits twice in
/// Linux's default 128 KiB socket receive buffer), read in microseconds, while a
/// bulk load's batches and anything larger are not worth reading only to drop.
pub const DRAIN_MAX: usize = 64 * 1024;

/// A request's body until a handler reads it.
pub struct Slot {
    body: Cell<Option<Incoming>>,
    /// A read gave up part-way (too large, too slow, broken): the rest is unread.
    cut: Cell<bool>,
}

impl Slot {
    pub fn new(body: Incoming) -> Slot {
        Slot { body: Cell::new(Some(body)), cut: Cell::new(false) }
    }

    /// Whether the answer leaves part of the body unread: a body no handler read
    /// that holds more than nothing, or a read given up part-way.
    #[inline]
    pub fn unsettled(&self) -> bool {
        let left = self.body.take();
        let unread = left.as_ref().is_some_and(|b| !b.is_end_stream());
        self.body.set(left);
        unread || self.cut.get()
    }

    /// Drains an unread body of up to [`DRAIN_MAX`] bytes within `timeout`, so the
    /// connection serves the client's next request; otherwise `reply` says
    /// `connection: close`. Returns whether the connection closes after `reply`.
    pub async fn settle(&self, reply: &mut super::response::Reply, timeout: Duration) -> bool {
        let drained = match self.body.take() {
            Some(body) if !self.cut.get() => drain(body, timeout).await,
            _ => false,
        };
        if !drained {
            reply.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        }
        !drained
    }
}

/// Reads and drops `body` when it is no longer than [`DRAIN_MAX`] and arrives within
/// `timeout`; whether it did.
async fn drain(mut body: Incoming, timeout: Duration) -> bool {
    if body.size_hint().lower() > DRAIN_MAX as u64 {
        return false;
    }
    let read = async {
        let mut seen = 0;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            seen += frame.data_ref().map_or(0, Bytes::len);
            if seen > DRAIN_MAX {
                return false;
            }
        }
        true
    };
    let late = async {
        glommio::timer::sleep(timeout).await;
        false
    };
    futures_lite::future::or(read, late).await
}

/// The whole body, within the limits. A body refused for its declared length stays
/// in `slot` for [`Slot::settle`]; one given up part-way marks it cut.
pub async fn read(headers: &HeaderMap, slot: &Slot, limits: BodyLimits) -> Result<Bytes, ApiError> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_bytes as u64) {
        return Err(too_large(limits.max_bytes));
    }
    let body = slot.body.take().ok_or_else(ApiError::internal)?;
    let read = collect(body, limits).await;
    slot.cut.set(read.is_err());
    read
}

async fn collect(body: Incoming, limits: BodyLimits) -> Result<Bytes, ApiError> {
    let collect = async { Limited::new(body, limits.max_bytes).collect().await };
    let timeout = async {
        glommio::timer::sleep(limits.timeout).await;
        Err::<http_body_util::Collected<Bytes>, _>(None)
    };
    match futures_lite::future::or(async { collect.await.map_err(Some) }, timeout).await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(None) => {
            Err(ApiError::new(Code::BodyTimeout, format!("The request body did not arrive within {}.", humantime::format_duration(limits.timeout))))
        }
        Err(Some(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(limits.max_bytes)),
        Err(Some(e)) => Err(ApiError::new(Code::InvalidJson, format!("The request body could not be read: {e}"))),
    }
}

/// Parses a JSON object into `T`. Syntax errors are `invalid_json` with the line and
/// column; a value of the wrong type or a missing field is `field_code`, naming the field;
/// a [`refuse`]d value has its own message after the field's path (and its own code, for
/// [`refuse_as`]).
pub fn json<T: DeserializeOwned>(bytes: &[u8], field_code: Code) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(Code::InvalidJson, "The request body is empty; send a JSON object."));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first != Some(b'{') {
        // Checked up front: serde would also take a struct from an array.
        return match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(e) => Err(syntax(&e)),
            Ok(_) => {
                let kind = match first {
                    Some(b'[') => "an array",
                    Some(b'"') => "a string",
                    Some(b't' | b'f') => "a boolean",
                    Some(b'n') => "null",
                    _ => "a number",
                };
                Err(ApiError::new(Code::InvalidJson, format!("The body must be a JSON object, not {kind}.")))
            }
        };
    }
    json_any(bytes, field_code)
}

/// As [`json`], for a body that may be any JSON value (a document may be a bare
/// string): `T` says which it takes.
pub fn json_any<T: DeserializeOwned>(bytes: &[u8], field_code: Code) -> Result<T, ApiError> {
    // The plain parse first: tracking the path to every value costs on each request,
    // and it is only needed to name the field of an error. Parsing is deterministic, so
    // the second, tracked parse meets the same error.
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Ok(v);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| (e.path().to_string(), e.into_inner()))
        .and_then(|v| de.end().map(|()| v).map_err(|e| (".".to_owned(), e)));
    value.map_err(|(path, inner)| {
        use serde_json::error::Category;
        match inner.classify() {
            Category::Syntax | Category::Eof | Category::Io => syntax(&inner),
            Category::Data => data(&path, &strip_position(&inner), field_code),
        }
    })
}

/// Separates a refusal's code from its message.
const MARK: char = '\u{1f}';

/// A value refused by a field's own check, in the body's field code. `message` follows
/// the field's path: "must be an integer from 1 to 50." at `k` reads "k must be an
/// integer from 1 to 50."; one that starts with `.`, `[` or `:` is joined to the path
/// without a space (".text is required." at `pages[0]`), and at the top level the
/// message stands alone.
pub fn refuse<E: serde::de::Error>(message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{MARK}{MARK}{message}"))
}

/// As [`refuse`], with a code of its own.
pub fn refuse_as<E: serde::de::Error>(code: Code, message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{MARK}{}{MARK}{message}", code.as_str()))
}

/// A data error at `path` ("." is the top level) as the client reads it.
fn data(path: &str, text: &str, field_code: Code) -> ApiError {
    let Some((code, message)) = text.strip_prefix(MARK).and_then(|t| t.split_once(MARK)) else {
        return match path {
            "." => ApiError::new(field_code, text),
            _ => ApiError::new(field_code, format!("{path}: {text}")).at(path.to_owned()),
        };
    };
    let code = Code::ALL.iter().copied().find(|c| c.as_str() == code).unwrap_or(field_code);
    let joined = match path {
        "." => message.trim_start_matches('.').to_owned(),
        _ if message.starts_with(['.', '[', ':']) => format!("{path}{message}"),
        _ => format!("{path} {message}"),
    };
    let starts_with_field = path != "." || message.starts_with('.');
    let field = starts_with_field.then(|| joined.split([' ', ':']).next().unwrap_or_default().to_owned());
    let e = ApiError::new(code, joined);
    match field {
        Some(f) if !f.is_empty() => e.at(f),
        _ => e,
    }
}

/// The body as any JSON value (some bodies may be a bare string); a syntax error is
/// 400 `invalid_json` with its position.
pub fn value(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::new(Code::InvalidJson, format!("The body is not valid JSON: {e}.")))
}

fn syntax(e: &serde_json::Error) -> ApiError {
    ApiError::new(Code::InvalidJson, format!("The body is not valid JSON: {} at line {} column {}.", strip_position(e), e.line(), e.column()))
}

/// serde_json's message without its trailing " at line L column C".
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    struct Body {
        #[allow(dead_code)]
        email: String,
    }

    #[test]
    fn syntax_errors_give_position() {
        let e = json::<Body>(b"{\"email\": ", Code::InvalidEmail).unwrap_err();
        assert_eq!(e.code, Code::InvalidJson);
        assert!(e.message.contains("line 1 column 10"), "{}", e.message);
        let e = json::<Body>(b"{\"email\": \"a\"} x", Code::InvalidEmail).unwrap_err();
        assert_eq!(e.code, Code::InvalidJson);
    }

    #[test]
    fn type_errors_name_the_field() {
        let e = json::<Body>(b"{\"email\": 5}", Code::InvalidEmail).unwrap_err();
        assert_eq!(e.code, Code::InvalidEmail);
        assert!(e.message.starts_with("email: invalid type"), "{}", e.message);
        let e = json::<Body>(b"{}", Code::InvalidEmail).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidEmail, "missing field `email`"));
    }

    #[test]
    fn non_objects_and_empty_bodies_are_invalid_json() {
        assert_eq!(json::<Body>(b"[1]", Code::InvalidEmail).unwrap_err().code, Code::InvalidJson);
        assert_eq!(json::<Body>(b"  ", Code::InvalidEmail).unwrap_err().code, Code::InvalidJson);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert!(json::<Body>(b"{\"email\": \"a\", \"extra\": [1]}", Code::InvalidEmail).is_ok());
    }
}
