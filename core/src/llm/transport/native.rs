//! The `http://` path, on the calling shard: the attempt loop over the shard's
//! [`Pool`], glommio timers for the head and read timeouts, and the answer's body
//! read straight from hyper's connection task with no hop in between.

use std::future::Future;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper::header::HOST;
use hyper::{Request, Response, Uri};

use super::pool::{ConnectError, Lease, Pool, Target};
use super::{attempts, describe, Body, Call, Failure, Upstream};
use crate::llm::error::ErrorClass;
use crate::net::egress::Trust;

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub connect_timeout: Duration,
    /// The longest silence between two pieces of a body.
    pub read_timeout: Duration,
}

/// Makes `call` with its retries on this shard's pool, connecting where `trust` allows.
pub async fn send(s: &Settings, trust: &Trust, call: &Call<'_>) -> Result<Upstream, Failure> {
    let (target, path) =
        split(&call.uri, trust).ok_or_else(|| Failure::unreachable(ErrorClass::InvalidRequest, "the provider URL has no host".into()))?;
    let pool = Pool::local(s.connect_timeout);
    let once = || once(&pool, s, call, &target, &path);
    let (up, attempts) = attempts(&call.manifest.id, call.retry, once, glommio::timer::sleep).await?;
    Ok(Upstream { attempts, ..up })
}

/// The target and the origin-form URI (`/path?query`) an HTTP/1.1 request carries.
fn split<'a>(uri: &'a Uri, trust: &'a Trust) -> Option<(Target<'a>, Uri)> {
    let authority = uri.authority()?.as_str();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let target = Target { authority, host: uri.host()?, port: uri.port_u16().unwrap_or(80), trust };
    let path = uri.path_and_query().cloned().map_or_else(|| Uri::from_static("/"), Uri::from);
    Some((target, path))
}

/// Races `f` against a glommio timer: `None` when `d` passed first.
async fn within<F: Future>(d: Duration, f: F) -> Option<F::Output> {
    futures_lite::future::or(async { Some(f.await) }, async {
        glommio::timer::Timer::new(d).await;
        None
    })
    .await
}

async fn once(pool: &Rc<Pool>, s: &Settings, call: &Call<'_>, target: &Target<'_>, path: &Uri) -> Result<Upstream, Failure> {
    let timed_out = || Failure::unreachable(ErrorClass::Timeout, format!("no answer within {:?}", call.timeout));
    let (lease, resp) = within(call.timeout, exchange(pool, call, target, path)).await.ok_or_else(timed_out)??;
    let (parts, incoming) = resp.into_parts();
    let mut body = NativeBody { incoming: Some(incoming), lease: Some(lease), read_timeout: s.read_timeout };
    if !parts.status.is_success() {
        let bytes = body.collect().await;
        return Err(Failure::rejected(call.manifest, parts.status, &parts.headers, &bytes));
    }
    Ok(Upstream { headers: parts.headers, body: Body::Native(body), attempts: 0 })
}

/// Sends the request and waits for the answer's head. A kept-alive connection the
/// upstream closed meanwhile (the request never went, or the connection ended before
/// any answer) costs a fresh connection, not the call.
async fn exchange(pool: &Rc<Pool>, call: &Call<'_>, target: &Target<'_>, path: &Uri) -> Result<(Lease, Response<Incoming>), Failure> {
    let unreachable = |e: ConnectError| match e {
        ConnectError::Refused(_) => Failure::refused(),
        ConnectError::Io(e) => Failure::unreachable(ErrorClass::ServerError, format!("connecting to {}: {e}", target.authority)),
    };
    let mut lease = pool.checkout(target).await.map_err(unreachable)?;
    loop {
        match lease.sender.try_send_request(request(call, path, &lease)).await {
            Ok(resp) => return Ok((lease, resp)),
            Err(e) if lease.reused && (e.message().is_some() || stale(e.error())) => {
                tracing::debug!(upstream = target.authority, error = %e.error(), "a kept-alive upstream connection was closed; retrying on a new one");
                pool.forget(target);
                lease = pool.connect(target).await.map_err(unreachable)?;
            }
            Err(e) => return Err(Failure::unreachable(ErrorClass::ServerError, describe(&e.into_error()))),
        }
    }
}

fn request(call: &Call<'_>, path: &Uri, lease: &Lease) -> Request<Full<Bytes>> {
    let mut req = Request::new(Full::new(call.body.clone()));
    *req.method_mut() = call.method.clone();
    *req.uri_mut() = path.clone();
    *req.headers_mut() = call.headers.clone();
    req.headers_mut().insert(HOST, lease.host.clone());
    req
}

/// The connection ended under the request: closed, reset, or gone before any answer.
fn stale(e: &hyper::Error) -> bool {
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<io::Error>() {
            use io::ErrorKind::*;
            return matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof);
        }
        cause = c.source();
    }
    false
}

/// An answer's body read on the shard. Read to the end, its connection goes back to
/// the pool; dropped or closed before, the connection is closed.
pub struct NativeBody {
    incoming: Option<Incoming>,
    lease: Option<Lease>,
    read_timeout: Duration,
}

impl NativeBody {
    pub async fn next(&mut self) -> Option<Result<Bytes, String>> {
        loop {
            let incoming = self.incoming.as_mut()?;
            // A piece already here needs no timer.
            let frame = match futures_lite::future::poll_once(incoming.frame()).await {
                Some(f) => Some(f),
                None => within(self.read_timeout, incoming.frame()).await,
            };
            let item = match frame {
                None => Err(format!("no data for {:?}", self.read_timeout)),
                Some(None) => {
                    self.finish();
                    return None;
                }
                Some(Some(Err(e))) => Err(e.to_string()),
                Some(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        if incoming.is_end_stream() {
                            self.finish();
                        }
                        return Some(Ok(data));
                    }
                    Err(_) => continue,
                },
            };
            self.close();
            return Some(item);
        }
    }

    /// The rest of the body (empty if it fails or stalls).
    async fn collect(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(piece) = self.next().await {
            match piece {
                Ok(b) => out.extend_from_slice(&b),
                Err(_) => return Vec::new(),
            }
        }
        out
    }

    /// The body ended cleanly: its connection may serve another call.
    fn finish(&mut self) {
        self.incoming = None;
        if let Some(lease) = self.lease.take() {
            lease.release();
        }
    }

    /// Not wanted any more: the connection is closed.
    pub fn close(&mut self) {
        self.incoming = None;
        self.lease = None;
    }
}
