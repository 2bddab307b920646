//! The API surfaces. Handlers parse, call a service, serialize; nothing else.

pub mod agentlex;
pub mod openai;

use std::rc::Rc;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::http::request::Parts;

use crate::app::App;
use crate::auth::Principal;
use crate::http::body::{self, BodyLimits};
use crate::http::error::{ApiError, Code};
use crate::http::response::Reply;
use crate::http::router::Route;

/// One request as a handler sees it.
/// `app` is borrowed, not an `Arc` clone: a refcount shared by every shard would
/// bounce its cache line between cores on every request.
pub struct Call<'a> {
    pub app: &'a Arc<App>,
    pub parts: Parts,
    /// The peer address of the connection the request came on (the client, or the
    /// proxy in front of it).
    pub remote: std::net::SocketAddr,
    /// Taken by the first read.
    pub body: Option<Incoming>,
    /// Set on authenticated routes.
    pub principal: Option<Rc<Principal>>,
    pub limits: BodyLimits,
    /// This shard's embedder sessions (the configured embedder first).
    pub embedders: &'a std::cell::RefCell<Vec<quarry_index::embed::Embedder>>,
}

impl Call<'_> {
    pub fn principal(&self) -> &Principal {
        self.principal.as_deref().expect("authenticated routes carry a principal")
    }

    /// The body parsed as JSON into `T`; `field_code` for a wrong or missing field.
    pub async fn json<T: serde::de::DeserializeOwned>(&mut self, field_code: Code) -> Result<T, ApiError> {
        let body = self.body.take().ok_or_else(ApiError::internal)?;
        let bytes = body::read(&self.parts.headers, body, self.limits).await?;
        body::json(&bytes, field_code)
    }

    /// The body as any JSON value (some bodies may be a bare string); a syntax error
    /// is 400 `invalid_json` with its position.
    pub async fn json_value(&mut self) -> Result<serde_json::Value, ApiError> {
        let body = self.body.take().ok_or_else(ApiError::internal)?;
        let bytes = body::read(&self.parts.headers, body, self.limits).await?;
        agentlex::input::parse_json(&bytes)
    }
}

/// Runs a blocking call (the records store) off the shard's thread.
pub async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    glommio::executor().spawn_blocking(f).await
}

/// The reply of a route that needs no body, no key and no waiting (health, plans,
/// metrics): served without building the rest of the request's machinery.
pub fn immediate(route: &Route, app: &App) -> Option<Reply> {
    use agentlex::health;
    match route {
        Route::Health => Some(health::health(app)),
        Route::Plans => Some(health::plans(app)),
        Route::Metrics => Some(health::metrics(app)),
        _ => None,
    }
}

pub async fn dispatch(route: Route, call: Call<'_>) -> Result<Reply, ApiError> {
    use agentlex::{account, collections, documents, evaluate, keys, search, signup};
    match route {
        r @ (Route::Health | Route::Plans | Route::Metrics) => Ok(immediate(&r, call.app).expect("an immediate route")),
        Route::Panic => panic!("GET /v1/_panic (debug.panic_route is on)"),
        Route::Signup => signup::signup(call).await,
        Route::Account => account::account(call).await,
        Route::CreateKey => keys::create(call).await,
        Route::ListKeys => keys::list(call).await,
        Route::RevokeKey(prefix) => keys::revoke(call, prefix).await,
        Route::ChatCompletions => openai::chat::completions(call).await,
        Route::Models => openai::models::list(call).await,
        Route::ListCollections => collections::list(call).await,
        Route::CreateCollection => collections::create(call).await,
        Route::GetCollection(id) => collections::get(call, id).await,
        Route::UpdateCollection(id) => collections::update(call, id).await,
        Route::DeleteCollection(id) => collections::delete(call, id).await,
        Route::AddDocument(id) => documents::add(call, id).await,
        Route::ListDocuments(id) => documents::list(call, id).await,
        Route::GetDocument(id, doc) => documents::get(call, id, doc).await,
        Route::DeleteDocument(id, doc) => documents::delete(call, id, doc).await,
        Route::GetPage(id, doc, n) => documents::page(call, id, doc, n).await,
        Route::Search(id) => search::search(call, id).await,
        Route::Evaluate(id) => evaluate::evaluate(call, id).await,
    }
}
