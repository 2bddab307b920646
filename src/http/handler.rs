//! One request, start to end: route, authenticate and spend from the key's bucket,
//! call the API, and decorate the response (shard, request id, rate headers). A panic
//! inside a handler becomes a 500 `internal` for that request alone.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::Instant;

use futures_util::FutureExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION};
use hyper::Request;

use super::conn::ConnState;
use super::error::{ApiError, Code};
use super::response::{self, Reply, X_QUARRY_SHARD, X_REQUEST_ID};
use super::router::{self, Route, RouteName};
use super::server::Shard;
use crate::api::{self, Call};

pub async fn handle(shard: Rc<Shard>, conn: Rc<ConnState>, remote: SocketAddr, req: Request<Incoming>) -> Result<Reply, Infallible> {
    conn.request_started();
    let metrics = shard.metrics();
    metrics.request_began();
    let request_id = shard.request_id(req.headers().get(&X_REQUEST_ID));
    let (parts, body) = req.into_parts();
    let route = router::route(&parts.method, parts.uri.path(), shard.app.config.panic_route);
    let name = route.as_ref().map_or(RouteName::Unmatched, Route::name);
    // Immediate routes take about a microsecond: they are counted in the histogram's
    // lowest bucket without reading the clock twice (each read costs ~40 ns on a VM).
    let (mut reply, took) = match route.as_ref().ok().and_then(|r| api::immediate(r, &shard.app)) {
        Some(reply) => (reply, None),
        // Boxed, so the future every request builds and hyper moves stays small.
        None => {
            let started = Instant::now();
            let reply = Box::pin(guarded(&shard, route, parts, body, remote, &request_id)).await;
            (reply, Some(started.elapsed()))
        }
    };
    let status = reply.status();
    let headers = reply.headers_mut();
    headers.insert(X_QUARRY_SHARD.clone(), shard.shard_header.clone());
    headers.insert(X_REQUEST_ID.clone(), request_id);
    headers.insert(hyper::header::DATE, shard.date.borrow().clone());
    let took = took.unwrap_or_default();
    metrics.record(name, status.as_u16(), took);
    metrics.request_ended();
    tracing::debug!(route = name.as_str(), status = status.as_u16(), micros = took.as_micros() as u64, "request");
    conn.request_finished();
    Ok(reply)
}

/// Serves a request that may read a body, call the store or a model: a panic in it
/// becomes a 500 for this request alone, and server errors are logged with the path.
async fn guarded(
    shard: &Shard,
    route: Result<Route, ApiError>,
    parts: hyper::http::request::Parts,
    body: Incoming,
    remote: SocketAddr,
    request_id: &HeaderValue,
) -> Reply {
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    let served = AssertUnwindSafe(serve(shard, route, parts, body, remote)).catch_unwind().await;
    let reply = served.unwrap_or_else(|panic| {
        let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
        tracing::error!(request_id = ?request_id, %method, %uri, panic = what.as_deref().unwrap_or("?"), "handler panicked");
        response::error(&ApiError::internal())
    });
    if reply.status().is_server_error() {
        tracing::warn!(request_id = ?request_id, %method, %uri, status = reply.status().as_u16(), "request failed");
    }
    reply
}

async fn serve(
    shard: &Shard,
    route: Result<Route, ApiError>,
    parts: hyper::http::request::Parts,
    body: Incoming,
    remote: SocketAddr,
) -> Reply {
    let route = match route {
        Ok(r) => r,
        Err(e) => return response::error(&e),
    };
    let mut call = Call { app: &shard.app, parts, remote, body: Some(body), principal: None, limits: shard.body_limits, embedders: &shard.embedders };
    if !route.authenticated() {
        return api::dispatch(route, call).await.unwrap_or_else(|e| response::error(&e));
    }
    let principal = match shard.auth.authenticate(call.parts.headers.get(AUTHORIZATION).map(HeaderValue::as_bytes)) {
        Ok(p) => p,
        // No rate headers on a 401.
        Err(e) => return response::error(&ApiError::from(e)),
    };
    let decision = principal.bucket.spend(route.cost());
    let mut reply = if decision.allowed {
        call.principal = Some(principal);
        api::dispatch(route, call).await.unwrap_or_else(|e| response::error(&e))
    } else {
        let plan = &shard.app.plan(&principal.plan).name;
        response::error(&ApiError {
            retry_after: Some(decision.retry_after_secs),
            ..ApiError::new(
                Code::RateLimited,
                format!("Rate limit reached for the {plan} plan; retry in {} s.", decision.retry_after_secs),
            )
        })
    };
    response::rate_headers(&mut reply, &decision);
    reply
}
