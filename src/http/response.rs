//! Building responses: JSON bodies, the error shape, rate-limit headers.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;

use crate::limits::Decision;

pub type Reply = Response<ReplyBody>;

/// A whole body, or one that streams (server-sent events); dropping a streamed
/// body (the client went away) drops its source.
pub type ReplyBody = http_body_util::Either<Full<Bytes>, Streamed>;
pub type Streamed =
    http_body_util::StreamBody<std::pin::Pin<Box<dyn futures_lite::Stream<Item = Result<hyper::body::Frame<Bytes>, std::convert::Infallible>>>>>;

pub static X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub static X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub static X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub static X_QUARRY_SHARD: HeaderName = HeaderName::from_static("x-quarry-shard");
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// How many headers a reply is sized for.
const REPLY_HEADERS: usize = 12;

pub fn bytes(status: StatusCode, content_type: HeaderValue, body: Bytes) -> Reply {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(body)));
    *r.status_mut() = status;
    // Room for every header a reply gets (type, shard, request id, date, rate limits)
    // so that none of the inserts grows the map.
    *r.headers_mut() = hyper::HeaderMap::with_capacity(REPLY_HEADERS);
    r.headers_mut().insert(CONTENT_TYPE, content_type);
    r
}

pub fn json_bytes(status: StatusCode, body: Bytes) -> Reply {
    bytes(status, JSON, body)
}

pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    json_bytes(status, Bytes::from(serde_json::to_vec(value).expect("responses serialize")))
}

/// A streamed reply.
pub fn stream(status: StatusCode, content_type: HeaderValue, body: Streamed) -> Reply {
    let mut r = Response::new(http_body_util::Either::Right(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, content_type);
    r
}

pub fn rate_headers(r: &mut Reply, d: &Decision) {
    let h = r.headers_mut();
    h.insert(X_RATELIMIT_LIMIT.clone(), HeaderValue::from(d.limit));
    h.insert(X_RATELIMIT_REMAINING.clone(), HeaderValue::from(d.remaining));
    h.insert(X_RATELIMIT_RESET.clone(), HeaderValue::from(d.reset_secs));
}
