//! One request, start to end: match the route table, authenticate and spend from the
//! key's bucket, call the row's handler, and decorate the response (shard, request id,
//! rate headers). Every error is rendered in the route's surface shape. A panic
//! inside a handler becomes a 500 `internal` for that request alone. A body the
//! answer leaves unread is settled before the answer goes (see `body`).

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::Instant;

use futures_util::FutureExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION};
use hyper::Request;

use super::body::Slot;
use super::call::Call;
use super::conn::ConnState;
use super::oversight;
use super::response::{self, Reply, X_QUARRY_SHARD, X_REQUEST_ID};
use super::router::{Handler, Matched, Route};
use super::server::Shard;
use super::surface::Surface;
use crate::error::{ApiError, Code};

pub async fn handle(shard: Rc<Shard>, conn: Rc<ConnState>, req: Request<Incoming>) -> Result<Reply, Infallible> {
    let started = Instant::now();
    conn.request_started();
    let metrics = shard.metrics();
    metrics.request_began();
    let request_id = shard.request_id(req.headers().get(&X_REQUEST_ID));
    let (parts, body) = req.into_parts();
    let body = Slot::new(body);
    let routes = shard.router.routes();
    let (mut reply, row) = match shard.router.route(&parts.method, parts.uri.path()) {
        Err((surface, e)) => (surface.error(&e), routes.len()),
        Ok(Matched { index, route, .. }) if matches!(route.handler, Handler::Immediate(_)) => {
            let Handler::Immediate(f) = route.handler else { unreachable!() };
            (f(&shard.app), index)
        }
        // Boxed, so the future every request builds and hyper moves stays small.
        Ok(matched) => {
            let index = matched.index;
            (Box::pin(guarded(&shard, &conn, matched, parts, &body, &request_id)).await, index)
        }
    };
    if body.unsettled() && Box::pin(body.settle(&mut reply, shard.body_limits.timeout)).await {
        conn.linger();
    }
    let status = reply.status();
    let headers = reply.headers_mut();
    headers.insert(X_QUARRY_SHARD.clone(), shard.shard_header.clone());
    headers.insert(X_REQUEST_ID.clone(), request_id);
    headers.insert(hyper::header::DATE, shard.date.borrow().clone());
    let took = started.elapsed();
    metrics.record(row, status.as_u16(), took);
    metrics.request_ended();
    tracing::debug!(route = routes.get(row).map_or("unmatched", |r| r.name), status = status.as_u16(), micros = took.as_micros() as u64, "request");
    Ok(hold_until_sent(reply, conn))
}

/// A whole reply ends its request now; a streamed one when its body has been sent (or
/// dropped: the client went away). Until then the connection counts as busy, so the
/// sweep does not take a stream that is silent for a while (a model thinking) for a
/// connection waiting for its next request head.
fn hold_until_sent(reply: Reply, conn: Rc<ConnState>) -> Reply {
    use http_body_util::{BodyStream, Either, StreamBody};
    if matches!(reply.body(), Either::Left(_)) {
        conn.request_finished();
        return reply;
    }
    reply.map(|body| match body {
        Either::Right(streamed) => {
            type Frames = std::pin::Pin<Box<dyn futures_lite::Stream<Item = Result<hyper::body::Frame<bytes::Bytes>, Infallible>>>>;
            let held: Frames = Box::pin(Held { inner: BodyStream::new(streamed), conn });
            Either::Right(StreamBody::new(held))
        }
        whole => whole,
    })
}

/// A streamed body that ends its request when it is dropped.
struct Held<S> {
    inner: S,
    conn: Rc<ConnState>,
}

impl<S> Drop for Held<S> {
    fn drop(&mut self) {
        self.conn.request_finished();
    }
}

impl<S: futures_lite::Stream + Unpin> futures_lite::Stream for Held<S> {
    type Item = S::Item;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<S::Item>> {
        std::pin::Pin::new(&mut self.inner).poll_next(cx)
    }
}

/// Serves a request that may read a body, call the store or a model: a panic in it
/// becomes a 500 for this request alone, and server errors are logged with the path.
async fn guarded(
    shard: &Shard,
    conn: &ConnState,
    matched: Matched,
    parts: hyper::http::request::Parts,
    body: &Slot,
    request_id: &HeaderValue,
) -> Reply {
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    let surface = matched.route.surface;
    let served = AssertUnwindSafe(serve(shard, conn, matched, parts, body, request_id)).catch_unwind().await;
    let reply = served.unwrap_or_else(|panic| {
        tracing::error!(request_id = ?request_id, %method, %uri, panic = panic_message(panic.as_ref()), "handler panicked");
        surface.error(&ApiError::internal())
    });
    if reply.status().is_server_error() {
        tracing::warn!(request_id = ?request_id, %method, %uri, status = reply.status().as_u16(), "request failed");
    }
    reply
}

/// What a caught panic said, when it said it as text.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("?")
}

async fn serve(
    shard: &Shard,
    conn: &ConnState,
    matched: Matched,
    parts: hyper::http::request::Parts,
    body: &Slot,
    request_id: &HeaderValue,
) -> Reply {
    let Matched { route, params, .. } = matched;
    let Handler::Call(handler) = route.handler else { unreachable!("immediate routes are served before") };
    let surface: Surface = route.surface;
    let mut call = Call {
        app: &shard.app,
        parts,
        body,
        principal: None,
        limits: shard.body_limits,
        embedders: &shard.embedders,
        rerankers: &shard.rerankers,
        params,
        surface,
        peer: conn.peer,
        prefetched: None,
        body_value: None,
    };
    if !route.auth {
        if !oversight::audits_public(route) {
            return handler(call).await.unwrap_or_else(|e| surface.error(&e));
        }
        // policies (issue 37): login and bootstrap are audited on the user they name.
        let request = audit_request(&call, route, request_id, conn);
        let read = call.bytes().await;
        let username = match &read {
            Ok(bytes) => {
                let (parsed, username) = oversight::username_in(bytes);
                call.body_value = parsed;
                username
            }
            Err(_) => None,
        };
        call.prefetched = Some(read);
        let reply = handler(call).await.unwrap_or_else(|e| surface.error(&e));
        return oversight::record_public(&shard.app, route, request, username, reply).await;
    }
    let principal = match shard.auth.authenticate(call.parts.headers.get(AUTHORIZATION).map(HeaderValue::as_bytes)) {
        Ok(p) => p,
        // No rate headers on a 401.
        Err(e) => return surface.error(&ApiError::from(e)),
    };
    // An /api/v1 key acts on /api/v1 alone: no /v1 data (crate::access), no gateway.
    if principal.reach() != crate::access::Reach::Account && surface != Surface::Soat {
        return surface.error(&ApiError::new(
            Code::ApiKeyProjectScope,
            "An /api/v1 key (sk_...) or login token acts only on /api/v1; use an account key (al_...) here.",
        ));
    }
    let decision = principal.bucket.spend(route.cost);
    let mut reply = if decision.allowed {
        // quotas (issue 37): every /api/v1 request counts in its project's requests quotas.
        if let Err(e) = oversight::take_request(&shard.app, route, &call.parts, &principal).await {
            return with_rate(surface.error(&e), &decision);
        }
        // policies (issue 37): the one policy check and audit record of every route.
        let gate = oversight::gate(&shard.app, route, &call.params, &call.parts, &principal);
        let Some(mut gate) = gate else {
            call.principal = Some(principal);
            return with_rate(handler(call).await.unwrap_or_else(|e| surface.error(&e)), &decision);
        };
        let request = audit_request(&call, route, request_id, conn);
        if gate.reads_body(&call.parts.method) {
            let read = call.bytes().await;
            if let Ok(bytes) = &read {
                call.body_value = gate.body_names(bytes);
            }
            call.prefetched = Some(read);
        }
        let denied = gate.check(&shard.app, &principal, &request).err();
        let reply = match &denied {
            Some(d) => surface.error(&d.error()),
            None => {
                call.principal = Some(principal.clone());
                handler(call).await.unwrap_or_else(|e| surface.error(&e))
            }
        };
        gate.record(&shard.app, &principal, request, denied.as_ref(), reply).await
    } else {
        let plan = &shard.app.plan(&principal.plan).name;
        surface.error(&ApiError {
            retry_after: Some(decision.retry_after_secs),
            ..ApiError::new(Code::RateLimited, format!("Rate limit reached for the {plan} plan; retry in {} s.", decision.retry_after_secs))
        })
    };
    response::rate_headers(&mut reply, &decision);
    reply
}

/// What an audit entry says of the request itself (never its body).
fn audit_request(call: &Call<'_>, route: &Route, request_id: &HeaderValue, conn: &ConnState) -> oversight::Request {
    oversight::Request {
        method: call.parts.method.to_string(),
        route: route.path,
        request_id: request_id.to_str().ok().map(str::to_owned),
        ip: conn.peer.map(|a| a.ip().to_string()),
        user_agent: call.parts.headers.get(hyper::header::USER_AGENT).and_then(|v| v.to_str().ok()).map(|s| s.chars().take(512).collect()),
    }
}

fn with_rate(mut reply: Reply, decision: &crate::limits::Decision) -> Reply {
    response::rate_headers(&mut reply, decision);
    reply
}
