//! A tool's outbound HTTP request. `http://` targets are called on the calling shard,
//! through the shard's keep-alive pool that model calls use (`llm::transport::pool`:
//! hyper's HTTP/1.1 client over glommio streams), with glommio timers for the answer
//! and the body, the body capped; `https://` ones through [`super::remote`]. One attempt: a tool call is not retried behind the caller's
//! back (it may not be idempotent), except on a kept-alive connection the target had
//! already closed, where the request never left. A tool's target is a tenant's
//! destination: both paths connect only where the egress policy allows
//! ([`crate::net::egress`]), judged after resolution; a refusal is
//! [`OutboundError::Refused`], which says nothing of the target. No redirect is
//! followed (a 3xx is the tool's answer), so a call is one destination.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::HOST;
use hyper::{HeaderMap, Method, Request, StatusCode, Uri};

use crate::llm::transport::pool::{ConnectError, Pool, Target};
use crate::net::egress::Trust;

/// The most of a target's answer read.
pub const MAX_ANSWER_BYTES: usize = 4 << 20;

pub struct Outbound {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    /// From sending to the whole answer read.
    pub answer: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts { connect: Duration::from_secs(10), answer: Duration::from_secs(30) }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("{0} targets are not supported (http:// and https:// are)")]
    Scheme(String),
    #[error("the target URL has no host")]
    NoHost,
    #[error("connecting to {target}: {message}")]
    Connect { target: String, message: String },
    #[error("no answer from {0} within {1:?}")]
    Timeout(String, Duration),
    #[error("the answer from {target} failed: {message}")]
    Answer { target: String, message: String },
    /// The egress policy refuses the destination: nothing was sent.
    #[error("{}", crate::net::egress::REFUSED)]
    Refused,
}

/// Sends `req` and reads the whole answer, connecting where `trust` allows. Must run
/// on a shard (a glommio executor).
pub async fn send(req: Outbound, t: Timeouts, remote: &super::remote::Remote, trust: &Trust) -> Result<Answer, OutboundError> {
    match req.uri.scheme_str().unwrap_or("") {
        "http" => native(req, t, trust).await,
        "https" => remote.send(req, t).await,
        other => Err(OutboundError::Scheme(format!("{other}://"))),
    }
}

async fn native(req: Outbound, t: Timeouts, trust: &Trust) -> Result<Answer, OutboundError> {
    let authority = req.uri.authority().ok_or(OutboundError::NoHost)?.as_str();
    let authority = authority.rsplit('@').next().unwrap_or(authority).to_owned();
    let host = req.uri.host().ok_or(OutboundError::NoHost)?;
    let target = Target { authority: &authority, host, port: req.uri.port_u16().unwrap_or(80), trust };
    let path = req.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    within(t.answer, exchange(&req, &target, &path, t)).await.ok_or_else(|| OutboundError::Timeout(authority.clone(), t.answer))?
}

async fn within<F: Future>(d: Duration, f: F) -> Option<F::Output> {
    futures_lite::future::or(async { Some(f.await) }, async {
        glommio::timer::Timer::new(d).await;
        None
    })
    .await
}

async fn exchange(req: &Outbound, target: &Target<'_>, path: &str, t: Timeouts) -> Result<Answer, OutboundError> {
    let connect_err = |e: ConnectError| match e {
        ConnectError::Refused(_) => OutboundError::Refused,
        ConnectError::Io(e) => OutboundError::Connect { target: target.authority.to_owned(), message: e.to_string() },
    };
    let answer_err = |e: String| OutboundError::Answer { target: target.authority.to_owned(), message: e };
    let pool = Pool::local(t.connect);
    let mut lease = pool.checkout(target).await.map_err(connect_err)?;
    let resp = loop {
        let mut r = Request::new(Full::new(req.body.clone()));
        *r.method_mut() = req.method.clone();
        *r.uri_mut() = path.parse().map_err(|_| answer_err("the path is not a valid URI".into()))?;
        *r.headers_mut() = req.headers.clone();
        r.headers_mut().insert(HOST, lease.host.clone());
        match lease.sender.try_send_request(r).await {
            Ok(resp) => break resp,
            // The target closed a kept-alive connection before the request went out.
            Err(e) if lease.reused && e.message().is_some() => {
                pool.forget(target);
                lease = pool.connect(target).await.map_err(connect_err)?;
            }
            Err(e) => return Err(answer_err(e.into_error().to_string())),
        }
    };
    let (parts, incoming) = resp.into_parts();
    let body = Limited::new(incoming, MAX_ANSWER_BYTES).collect().await.map_err(|e| answer_err(e.to_string()))?.to_bytes();
    lease.release();
    Ok(Answer { status: parts.status, headers: parts.headers, body })
}
