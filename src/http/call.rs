//! One request as a handler sees it: the shared state, the head, the body (read on
//! demand, within the limits), the caller's key, the path parameters and the client's
//! address.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use hyper::http::request::Parts;
use serde::de::DeserializeOwned;

use super::body::{self, BodyLimits};
use super::router::Params;
use super::surface::Surface;
use crate::app::App;
use crate::auth::Principal;
use crate::error::{ApiError, Code};

/// `app` is borrowed, not an `Arc` clone: a refcount shared by every shard would
/// bounce its cache line between cores on every request.
pub struct Call<'a> {
    pub app: &'a Arc<App>,
    pub parts: Parts,
    /// Taken by the first read; what is left unread is settled after the answer.
    pub body: &'a body::Slot,
    /// Set on authenticated routes.
    pub principal: Option<Rc<Principal>>,
    pub limits: BodyLimits,
    /// This shard's embedder sessions (the configured embedder first).
    pub embedders: &'a std::rc::Rc<std::cell::RefCell<Vec<quarry_index::embed::Embedder>>>,
    /// This shard's reranker sessions.
    pub rerankers: &'a crate::search::rerank::Sessions,
    pub params: Params,
    /// The surface of the route, whose error shape a handler answering its own errors uses.
    pub surface: Surface,
    pub peer: Option<SocketAddr>,
    /// The body as the dispatch already read it (policies: a create naming its project
    /// in the body), handed out by the first [`Call::bytes`].
    pub prefetched: Option<Result<bytes::Bytes, ApiError>>,
    /// That body parsed as JSON, for the strict body reader to use instead of parsing it again.
    pub body_value: Option<serde_json::Value>,
}

impl Call<'_> {
    pub fn principal(&self) -> &Principal {
        self.principal.as_deref().expect("authenticated routes carry a principal")
    }

    /// Spends `extra` more rate tokens from the caller's bucket, for a request whose cost
    /// grows with what it asks (a batch of queries costs one token a query, as the same
    /// queries sent one by one would); past the bucket's burst it could never be served
    /// and is a 400 at `field` saying how many fit, else a refusal is the usual 429.
    pub fn charge(&self, extra: u64, field: &'static str, code: Code) -> Result<(), ApiError> {
        if extra == 0 {
            return Ok(());
        }
        let bucket = &self.principal().bucket;
        if extra + 1 > bucket.burst() {
            let plan = &self.app.plan(&self.principal().plan).name;
            return Err(ApiError::new(
                code,
                format!(
                    "{field}: {} items cost {} rate tokens; the {plan} plan holds {} at once, so send at most {} per request.",
                    extra + 1,
                    extra + 1,
                    bucket.burst(),
                    bucket.burst()
                ),
            )
            .at(field));
        }
        let d = bucket.spend(extra);
        if !d.allowed {
            let plan = &self.app.plan(&self.principal().plan).name;
            return Err(ApiError {
                retry_after: Some(d.retry_after_secs),
                ..ApiError::new(
                    Code::RateLimited,
                    format!("Rate limit reached for the {plan} plan: this batch costs {} tokens; retry in {} s.", extra + 1, d.retry_after_secs),
                )
            });
        }
        Ok(())
    }

    /// The path parameter `name` (the route's pattern names it).
    pub fn param(&self, name: &str) -> &str {
        self.params.get(name)
    }

    /// The whole body, within the limits.
    pub async fn bytes(&mut self) -> Result<bytes::Bytes, ApiError> {
        if let Some(read) = self.prefetched.take() {
            return read;
        }
        body::read(&self.parts.headers, self.body, self.limits).await
    }

    /// The body parsed as a JSON object into `T`; `field_code` for a wrong or missing field.
    pub async fn json<T: DeserializeOwned>(&mut self, field_code: Code) -> Result<T, ApiError> {
        let bytes = self.bytes().await?;
        body::json(&bytes, field_code)
    }

    /// The body as any JSON value (some bodies may be a bare string); a syntax error
    /// is 400 `invalid_json` with its position.
    pub async fn json_value(&mut self) -> Result<serde_json::Value, ApiError> {
        let bytes = self.bytes().await?;
        body::value(&bytes)
    }
}
