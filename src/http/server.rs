//! One shard's server: its listener (SO_REUSEPORT, so every shard accepts on the same
//! port and the kernel spreads connections), the per-client and per-shard connection
//! caps, each connection served by hyper's HTTP/1.1 with keep-alive, the timeout sweep,
//! and graceful shutdown.

use std::cell::Cell;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_lite::{AsyncWriteExt, FutureExt as _};
use glommio::net::{TcpListener, TcpStream};
use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use hyper::service::service_fn;

use super::body::BodyLimits;
use super::conn::{Close, Connections, TICK};
use super::handler::handle;
use super::protocol_error::ServedIo;
use super::router::Router;
use crate::app::App;
use crate::auth::ShardAuth;
use crate::config::HttpConfig;
use crate::error::{ApiError, Code};
use crate::metrics::ShardMetrics;
use crate::net::io::GlommioIo;

/// hyper's built-in request header limit.
const HYPER_MAX_HEADERS: usize = 100;

/// What one shard owns: its id, its key cache, its connections.
pub struct Shard {
    pub id: usize,
    pub app: Arc<App>,
    /// The route table, the same for every shard.
    pub router: &'static Router,
    pub auth: ShardAuth,
    pub conns: Connections,
    pub body_limits: BodyLimits,
    pub shard_header: HeaderValue,
    /// This shard's embedder sessions (the configured embedder first); never shared.
    /// Shared (`Rc`) with the streamed research bodies that outlive their handler.
    pub embedders: std::rc::Rc<std::cell::RefCell<Vec<quarry_index::embed::Embedder>>>,
    /// This shard's reranker sessions (set once the shard opens them); never shared.
    pub rerankers: crate::search::rerank::Sessions,
    /// The `date` header, formatted by the sweep every tick rather than per response.
    pub date: std::cell::RefCell<HeaderValue>,
    http: HttpConfig,
    request_prefix: String,
    request_seq: Cell<u64>,
}

impl Shard {
    pub fn new(id: usize, app: Arc<App>, router: &'static Router, embedders: Vec<quarry_index::embed::Embedder>) -> Shard {
        let http = app.config.http.clone();
        let boot = crate::ids::random_base62(6);
        Shard {
            id,
            router,
            auth: ShardAuth::new(app.keyring.clone()),
            conns: Connections::new(),
            body_limits: BodyLimits { max_bytes: http.max_body_bytes, timeout: http.body_read_timeout },
            shard_header: HeaderValue::from_static(Box::leak(id.to_string().into_boxed_str())),
            http,
            request_prefix: format!("{boot}-{id}-"),
            request_seq: Cell::new(0),
            embedders: std::rc::Rc::new(std::cell::RefCell::new(embedders)),
            rerankers: Default::default(),
            date: std::cell::RefCell::new(http_date()),
            app,
        }
    }

    pub fn metrics(&self) -> &ShardMetrics {
        &self.app.metrics[self.id]
    }

    /// The caller's `x-request-id` when it is sane (1–128 visible ASCII characters),
    /// else a new one unique to this process run.
    pub fn request_id(&self, given: Option<&HeaderValue>) -> HeaderValue {
        if let Some(v) = given {
            let b = v.as_bytes();
            if !b.is_empty() && b.len() <= 128 && b.iter().all(|c| c.is_ascii_graphic()) {
                return v.clone();
            }
        }
        let n = self.request_seq.get() + 1;
        self.request_seq.set(n);
        // prefix + the counter in hex, written without the formatting machinery.
        let mut buf = [0u8; 64];
        let p = self.request_prefix.as_bytes();
        buf[..p.len()].copy_from_slice(p);
        let digits = (64 - n.leading_zeros()).div_ceil(4).max(1) as usize;
        for i in 0..digits {
            buf[p.len() + digits - 1 - i] = b"0123456789abcdef"[((n >> (4 * i)) & 0xf) as usize];
        }
        HeaderValue::from_bytes(&buf[..p.len() + digits]).expect("request ids are ASCII")
    }
}

/// Serves on `listener` until `stop` is set, then drains within `http.shutdown_grace`.
pub async fn serve_shard(shard: Rc<Shard>, listener: TcpListener, stop: Arc<AtomicBool>) {
    let sweeper = glommio::spawn_local(sweep(shard.clone(), stop.clone()));
    let stopped = async {
        while !stop.load(Ordering::Acquire) {
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        None
    };
    let accepting = async {
        loop {
            match listener.accept().await {
                Ok(stream) => accept(&shard, stream),
                Err(e) => {
                    tracing::warn!(shard = shard.id, error = %e, "accept failed");
                    glommio::timer::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    };
    let _: Option<()> = accepting.or(stopped).await;
    drop(listener);
    drain(&shard).await;
    sweeper.cancel().await;
}

fn accept(shard: &Rc<Shard>, stream: TcpStream) {
    let metrics = shard.metrics();
    // The client's own cap first: a client holding its share is told so, and is not
    // the reason anyone else meets the shard's cap.
    let slot = match stream.peer_addr().map(|peer| shard.app.connections.open(peer.ip())) {
        Ok(Ok(slot)) => slot,
        Ok(Err(held)) => {
            metrics.refused_connections.fetch_add(1, Ordering::Relaxed);
            let message = format!(
                "This client already holds {} open connections, the most one address may; reuse them (keep-alive) or close some, then retry.",
                held.max
            );
            glommio::spawn_local(refuse(stream, shard.id, ApiError::new(Code::TooManyConcurrent, message))).detach();
            return;
        }
        // No peer address (the socket is already gone): nothing to count it against.
        Err(_) => None,
    };
    if shard.conns.open() >= shard.http.max_connections_per_shard {
        metrics.refused_connections.fetch_add(1, Ordering::Relaxed);
        let busy = ApiError::new(Code::Overloaded, "This server is at its connection limit; retry shortly.");
        glommio::spawn_local(refuse(stream, shard.id, busy)).detach();
        return;
    }
    glommio::spawn_local(alone(shard.clone(), stream, slot)).detach();
}

/// A connection's task, a bulkhead around it: a panic anywhere in the connection ends
/// that connection alone (its socket closes, so a streamed body is seen cut short, not
/// complete). Handlers are guarded already (a panic is that request's 500); this catches
/// what runs after a handler returned, such as a streamed body polled as it is sent.
/// Uncaught, the panic would unwind out of the shard's executor and end the shard, and
/// every connection on it, while its listener kept taking connections nobody serves.
async fn alone(shard: Rc<Shard>, stream: TcpStream, slot: Option<crate::limits::ClientSlot>) {
    let id = shard.id;
    if let Err(panic) = AssertUnwindSafe(connection(shard, stream, slot)).catch_unwind().await {
        tracing::error!(
            shard = id,
            panic = super::handler::panic_message(panic.as_ref()),
            "a connection panicked; it is closed and the shard serves on"
        );
    }
}

/// One connection over a cap: the error (503 `overloaded` at the shard's cap, 429
/// `too_many_concurrent` at the client's), then close, without reading a request.
async fn refuse(mut stream: TcpStream, shard: usize, error: ApiError) {
    let body = super::surface::agentlex(&error);
    let status = error.status();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nx-quarry-shard: {shard}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&body).await;
    let _ = stream.close().await;
}

/// Serves one connection; `_slot` keeps it counted against its client until it ends.
async fn connection(shard: Rc<Shard>, stream: TcpStream, _slot: Option<crate::limits::ClientSlot>) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY not set");
    }
    let (state, _open) = shard.conns.add(stream.peer_addr().ok());
    ShardMetrics::set(&shard.metrics().open_connections, shard.conns.open() as u64);
    // hyper's own answers to requests it cannot parse get our error body there.
    let io = ServedIo::new(GlommioIo::new(stream, state.clone()), state.clone(), shard.id, shard.http.max_header_bytes);
    let svc_shard = shard.clone();
    let svc_state = state.clone();
    let service = service_fn(move |req| handle(svc_shard.clone(), svc_state.clone(), req));
    let mut conn = pin!(builder(&shard.http).serve_connection(io, service));
    let mut draining = false;
    let result = poll_fn(|cx| {
        match state.close_requested() {
            Some(Close::Kill) => return Poll::Ready(Ok(())),
            Some(Close::Drain) if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            _ => {}
        }
        state.register(cx.waker());
        std::future::Future::poll(conn.as_mut(), cx)
    })
    .await;
    if let Err(e) = result {
        tracing::debug!(shard = shard.id, error = %e, "connection ended with an error");
    }
    drop(_open);
    ShardMetrics::set(&shard.metrics().open_connections, shard.conns.open() as u64);
}

/// hyper's HTTP/1.1 server as every shard connection is served (and the gateway bench's
/// `proxy-floor`, which measures this stack).
pub fn builder(http: &HttpConfig) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        // The header-read timeout is the sweep's (see `conn`), not hyper's timer.
        .header_read_timeout(None)
        .max_header_size(http.max_header_bytes)
        .keep_alive(true)
        .auto_date_header(false)
        .writev(false);
    // hyper's own limit is 100 headers on an uninitialised stack array; naming any limit
    // makes it initialise a vector of that size per request (a few % of throughput).
    if http.max_headers != HYPER_MAX_HEADERS {
        builder.max_headers(http.max_headers);
    }
    builder
}

fn http_date() -> HeaderValue {
    HeaderValue::try_from(httpdate::fmt_http_date(std::time::SystemTime::now())).expect("HTTP dates are ASCII")
}

/// The timeout sweep; see `conn`.
async fn sweep(shard: Rc<Shard>, stop: Arc<AtomicBool>) {
    loop {
        glommio::timer::sleep(TICK).await;
        *shard.date.borrow_mut() = http_date();
        shard.conns.sweep(shard.http.header_read_timeout, shard.http.idle_timeout);
        if stop.load(Ordering::Acquire) && shard.conns.open() == 0 {
            return;
        }
    }
}

/// Lets in-flight requests finish, closing idle keep-alive connections at once; what
/// is still open after the grace period is closed.
async fn drain(shard: &Shard) {
    shard.conns.drain();
    let deadline = Instant::now() + shard.http.shutdown_grace;
    while shard.conns.open() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
    if shard.conns.open() > 0 {
        tracing::warn!(shard = shard.id, open = shard.conns.open(), "closing connections still open after the shutdown grace");
        shard.conns.kill();
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
}
