//! OpenAI's error envelope, `{"error":{"message","type","param","code"}}`, for every
//! error the gateway answers, so SDKs raise their typed errors. Provider failures add
//! `provider_error` with the AI-Protocol class and standard code. The `type` for a
//! status is `http::surface::openai_type`'s, the one table every OpenAI-shaped error uses.

use bytes::Bytes;
use hyper::header::{HeaderValue, RETRY_AFTER};
use serde::Serialize;

use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::http::surface::openai_type;
use crate::llm::LlmError;

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_error: Option<ProviderDetail<'a>>,
}

#[derive(Serialize)]
struct ProviderDetail<'a> {
    provider: &'a str,
    class: &'a str,
    standard_code: &'a str,
    retryable: bool,
    fallbackable: bool,
    status: Option<u16>,
    attempts: u32,
}

fn body(code: Code, message: &str, param: Option<&str>, detail: Option<ProviderDetail<'_>>) -> Bytes {
    let body = Body { error: Inner { message, kind: openai_type(code.status()), param, code: code.as_str(), provider_error: detail } };
    Bytes::from(serde_json::to_vec(&body).expect("errors serialize"))
}

fn reply(code: Code, bytes: Bytes, retry_after: Option<u64>) -> Reply {
    let mut r = response::json_bytes(code.status(), bytes);
    if let Some(secs) = retry_after {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// A Quarry error in OpenAI's envelope.
pub fn api(e: &ApiError) -> Reply {
    reply(e.code, body(e.code, &e.message, e.field.as_deref(), None), e.retry_after)
}

/// A provider-layer error in OpenAI's envelope.
pub fn llm(e: &LlmError) -> Reply {
    let (code, bytes, retry_after) = parts(e);
    reply(code, bytes, retry_after)
}

/// The `data:` event of an error that ends a stream already under way.
pub fn stream_event(e: &LlmError) -> Bytes {
    let (_, bytes, _) = parts(e);
    Bytes::from([b"data: ".as_slice(), &bytes, b"\n\n"].concat())
}

fn parts(e: &LlmError) -> (Code, Bytes, Option<u64>) {
    use crate::llm::ErrorClass as C;
    let message = e.to_string();
    let plain = |code: Code, param: Option<&str>| (code, body(code, &message, param, None), None);
    match e {
        LlmError::NotConfigured => plain(Code::LlmNotConfigured, None),
        LlmError::UnknownModel(_) => plain(Code::ModelNotFound, Some("model")),
        LlmError::InvalidRequest { field, .. } => plain(Code::InvalidLlmRequest, Some(field)),
        LlmError::Unreachable { .. } | LlmError::TransportDown => plain(Code::LlmUnreachable, None),
        // The gateway's providers are the operator's, which the egress policy does not
        // judge: never refused. Were one, it is as good as unreachable.
        LlmError::Refused { .. } => plain(Code::LlmUnreachable, None),
        LlmError::Stream { .. } => plain(Code::LlmError, None),
        LlmError::Provider { provider, error, attempts } => {
            let code = match error.class {
                C::InvalidRequest | C::RequestTooLarge => Code::LlmRejected,
                C::NotFound => Code::ModelNotFound,
                C::RateLimited | C::QuotaExhausted => Code::LlmRateLimited,
                C::Timeout => Code::LlmTimeout,
                C::Overloaded => Code::LlmBusy,
                _ => Code::LlmError,
            };
            let detail = ProviderDetail {
                provider,
                class: error.class.as_str(),
                standard_code: error.class.code(),
                retryable: error.class.retryable(),
                fallbackable: error.class.fallbackable(),
                status: error.status,
                attempts: *attempts,
            };
            let retry_after = error.retry_after.map(|d| d.as_secs_f64().ceil() as u64);
            (code, body(code, &message, None, Some(detail)), retry_after)
        }
    }
}
