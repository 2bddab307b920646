//! The `https://` path's connector: hyper-util's [`HttpConnector`] behind the egress
//! policy ([`crate::net::egress`]). For the operator's destinations it is that
//! connector and nothing more. For a tenant's, it resolves the host once (a literal as
//! written; a name on tokio's blocking pool, as hyper-util's own resolver does), keeps
//! the addresses the policy allows, and has the inner connector open each in turn by
//! its literal address. So the address judged is the address connected to (no second
//! lookup a rebinding name could answer otherwise), a refused one is never offered a
//! connection, and TLS still names the host: the TLS connector above this one reads
//! the URI as the caller wrote it.
//!
//! hyper-util's connector cannot do this alone: it parses IP literals itself and asks
//! its resolver only for names, and its resolver is not told the port.
//!
//! [`Written`] goes above the TLS connector: a host the policy can judge as written
//! (`127.1`, `2130706433`, `localhost`) is refused there, with the policy's one
//! message, before the TLS connector turns down a numeric spelling as "invalid dns
//! name" (it would connect nowhere either, but say something else).

use std::future::Future;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

use crate::net::egress::Trust;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// [`HttpConnector`] that connects only where its [`Trust`] allows.
#[derive(Clone)]
pub struct Guarded {
    inner: HttpConnector,
    trust: Trust,
}

impl Guarded {
    pub fn new(inner: HttpConnector, trust: Trust) -> Guarded {
        Guarded { inner, trust }
    }
}

impl Service<Uri> for Guarded {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        // A clone per call, as hyper-util's client does with its connector (an Arc'd config).
        let mut inner = self.inner.clone();
        let trust = self.trust.clone();
        if !trust.is_tenant() {
            return Box::pin(async move { inner.call(dst).await.map_err(Into::into) });
        }
        Box::pin(async move {
            let mut last: Option<BoxError> = None;
            for to in trust.allowed(resolve(&dst).await?)? {
                // HttpConnector is always ready (its poll_ready is `Ready(Ok)`).
                match inner.call(literal(to)?).await {
                    Ok(io) => return Ok(io),
                    Err(e) => last = Some(e.into()),
                }
            }
            Err(last.unwrap_or_else(|| "the host has no address".into()))
        })
    }
}

/// A connector that refuses a tenant's URL whose host, as written, the policy refuses.
#[derive(Clone)]
pub struct Written<C> {
    inner: C,
    trust: Trust,
}

impl<C> Written<C> {
    pub fn new(inner: C, trust: Trust) -> Written<C> {
        Written { inner, trust }
    }
}

impl<C> Service<Uri> for Written<C>
where
    C: Service<Uri>,
    C::Error: Into<BoxError>,
    C::Future: Send + 'static,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        if let Err(refused) = self.trust.check_url(&dst) {
            return Box::pin(async move { Err(refused.into()) });
        }
        let connecting = self.inner.call(dst);
        Box::pin(async move { connecting.await.map_err(Into::into) })
    }
}

/// The addresses `dst`'s host stands for, with its port.
async fn resolve(dst: &Uri) -> Result<Vec<SocketAddr>, BoxError> {
    let host = dst.host().ok_or("the URL has no host")?;
    let port = dst.port_u16().unwrap_or(if dst.scheme_str() == Some("http") { 80 } else { 443 });
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let name = bare.to_owned();
    let found = tokio::task::spawn_blocking(move || (name.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>)).await??;
    Ok(found)
}

/// A URI the inner connector reads as exactly this address (no lookup).
fn literal(to: SocketAddr) -> Result<Uri, BoxError> {
    Ok(Uri::try_from(format!("http://{to}/"))?)
}
