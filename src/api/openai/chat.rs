//! `POST /v1/chat/completions`: parse, call the provider layer, serialize.

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CACHE_CONTROL};
use hyper::StatusCode;

use super::request::ChatBody;
use super::{chunk, envelope, response};
use crate::api::Call;
use crate::error::{ApiError, Code};
use crate::http::response::{self as reply, Reply};
use crate::llm::LlmError;

pub async fn completions(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let Some(llm) = call.app.llm.as_ref() else { return Ok(envelope::llm(&LlmError::NotConfigured)) };
    let body: ChatBody = match call.json(Code::InvalidLlmRequest).await {
        Ok(b) => b,
        Err(e) => return Ok(envelope::api(&e)),
    };
    let (stream, include_usage, model) = (body.stream, body.include_usage(), body.model.clone());
    let req = match body.into_request() {
        Ok(r) => r,
        Err(e) => return Ok(envelope::llm(&e)),
    };
    let account = call.principal().account_id.clone();
    if !stream {
        return Ok(match llm.complete(&account, req).await {
            Ok(c) => with_rate_limits(reply::json_bytes(StatusCode::OK, Bytes::from(response::body(&c, &model))), &c.rate_limits),
            Err(e) => envelope::llm(&e),
        });
    }
    Ok(match llm.stream(&account, req).await {
        Ok(s) => {
            let limits = s.rate_limits.clone();
            let mut r = reply::stream(StatusCode::OK, HeaderValue::from_static("text/event-stream"), chunk::events(s, model, include_usage));
            r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            with_rate_limits(r, &limits)
        }
        Err(e) => envelope::llm(&e),
    })
}

/// The provider's rate-limit headers, passed on as `x-upstream-<name>`.
fn with_rate_limits(mut r: Reply, limits: &[(String, String)]) -> Reply {
    for (name, value) in limits {
        let name = format!("x-upstream-{}", name.replace('_', "-"));
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value.as_str())) {
            r.headers_mut().insert(n, v);
        }
    }
    r
}
