//! A shard's keep-alive connections to plain-HTTP upstreams, by authority
//! (`host:port`). `!Send` by design: each shard owns its pool, reached through a
//! thread-local because a shard is one thread. A connection is hyper's HTTP/1.1
//! client over a glommio stream (TCP_NODELAY), its connection task spawned on the
//! shard; it comes back to the pool only when its answer was read to the end and
//! hyper says it can take another request, and it is closed when its [`Lease`] is
//! dropped instead (a cancelled call, a body not read to the end).
//!
//! A target carries its [`Trust`]. A tenant's is checked against the egress policy on
//! the addresses its host resolves to, before any is connected to; its connections are
//! kept apart from the operator's (a kept-alive connection to the same `host:port` made
//! for an operator's provider was never judged, and is never lent to a tenant's call),
//! so a reused connection needs no check: the policy does not change while it lives.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::net::TcpStream;
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HeaderValue;

use super::dns::Resolver;
use crate::net::egress::{Refused, Trust};
use crate::net::io::{GlommioIo, Untracked};

/// An idle connection older than this is closed rather than reused.
const IDLE_LIMIT: Duration = Duration::from_secs(90);
/// Idle connections kept per authority; past it the oldest is closed.
const MAX_IDLE: usize = 1024;

pub type Sender = SendRequest<Full<Bytes>>;

/// Where a call goes: the URI's authority, split, and whose destination it is.
pub struct Target<'a> {
    /// `host:port` as written (without any userinfo): the pool's key.
    pub authority: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub trust: &'a Trust,
}

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The egress policy refuses every address the host stands for: none was tried.
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Io(#[from] io::Error),
}

pub struct Pool {
    /// By authority, the operator's connections (`[0]`) apart from tenants' (`[1]`).
    hosts: [RefCell<HashMap<Rc<str>, Host>>; 2],
    dns: Resolver,
    connect_timeout: Duration,
}

struct Host {
    idle: VecDeque<Idle>,
    /// The `Host` header for requests to it.
    header: HeaderValue,
}

struct Idle {
    sender: Sender,
    since: Instant,
}

/// A connection in use by one call.
pub struct Lease {
    pool: Rc<Pool>,
    key: Rc<str>,
    /// Which of the pool's maps it returns to.
    tenant: bool,
    pub sender: Sender,
    pub host: HeaderValue,
    /// Taken from the idle list (the upstream may have closed it meanwhile).
    pub reused: bool,
}

thread_local! {
    static POOL: OnceCell<Rc<Pool>> = const { OnceCell::new() };
}

impl Pool {
    /// This shard's pool (made on first use).
    pub fn local(connect_timeout: Duration) -> Rc<Pool> {
        POOL.with(|p| p.get_or_init(|| Rc::new(Pool { hosts: Default::default(), dns: Resolver::default(), connect_timeout })).clone())
    }

    fn hosts(&self, tenant: bool) -> &RefCell<HashMap<Rc<str>, Host>> {
        &self.hosts[usize::from(tenant)]
    }

    /// The key and `Host` header for `t`, made on first use.
    fn host(&self, t: &Target<'_>) -> io::Result<(Rc<str>, HeaderValue)> {
        let mut hosts = self.hosts(t.trust.is_tenant()).borrow_mut();
        if let Some((key, host)) = hosts.get_key_value(t.authority) {
            return Ok((key.clone(), host.header.clone()));
        }
        let header = HeaderValue::try_from(t.authority).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the host is not a valid header"))?;
        let key: Rc<str> = t.authority.into();
        hosts.insert(key.clone(), Host { idle: VecDeque::new(), header: header.clone() });
        Ok((key, header))
    }

    /// An idle connection to `t` if one is ready, else a new one.
    pub async fn checkout(self: &Rc<Self>, t: &Target<'_>) -> Result<Lease, ConnectError> {
        let (key, host) = self.host(t)?;
        let tenant = t.trust.is_tenant();
        if let Some(sender) = self.idle(tenant, &key) {
            return Ok(Lease { pool: self.clone(), key, tenant, sender, host, reused: true });
        }
        self.connect(t).await
    }

    /// The most recently used idle connection that is still ready; the others go.
    fn idle(&self, tenant: bool, key: &str) -> Option<Sender> {
        let mut hosts = self.hosts(tenant).borrow_mut();
        let idle = &mut hosts.get_mut(key)?.idle;
        while let Some(c) = idle.pop_back() {
            if c.since.elapsed() > IDLE_LIMIT {
                // The rest are older still.
                idle.clear();
                return None;
            }
            if c.sender.is_ready() {
                return Some(c.sender);
            }
        }
        None
    }

    /// A new connection to `t`: resolve, keep the addresses its trust allows, connect
    /// (trying each), handshake, and spawn its connection task on this shard.
    pub async fn connect(self: &Rc<Self>, t: &Target<'_>) -> Result<Lease, ConnectError> {
        let (key, host) = self.host(t)?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        let mut stream = None;
        for addr in t.trust.allowed(self.dns.resolve(t.host, t.port).await?)? {
            match TcpStream::connect_timeout(addr, self.connect_timeout).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = io::Error::from(e),
            }
        }
        let stream = stream.ok_or(last)?;
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set on an upstream connection");
        }
        let (sender, conn) = http1::Builder::new().handshake(GlommioIo::new(stream, Untracked)).await.map_err(io::Error::other)?;
        glommio::spawn_local(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "an upstream connection ended with an error");
            }
        })
        .detach();
        Ok(Lease { pool: self.clone(), key, tenant: t.trust.is_tenant(), sender, host, reused: false })
    }

    /// Closes the idle connections to `t` (one of them turned out closed by the
    /// upstream; the others likely are too).
    pub fn forget(&self, t: &Target<'_>) {
        if let Some(h) = self.hosts(t.trust.is_tenant()).borrow_mut().get_mut(t.authority) {
            h.idle.clear();
        }
    }

    fn put(&self, tenant: bool, key: &str, sender: Sender) {
        let mut hosts = self.hosts(tenant).borrow_mut();
        let Some(h) = hosts.get_mut(key) else { return };
        if h.idle.len() >= MAX_IDLE {
            h.idle.pop_front();
        }
        h.idle.push_back(Idle { sender, since: Instant::now() });
    }

    /// Idle connections to `authority` made for the operator (`tenant`: for tenants),
    /// for tests.
    #[cfg(test)]
    pub fn idle_count(&self, tenant: bool, authority: &str) -> usize {
        self.hosts(tenant).borrow().get(authority).map_or(0, |h| h.idle.len())
    }
}

impl Lease {
    /// The answer was read to the end: back to the pool once hyper says the
    /// connection can take another request (at once, nearly always).
    pub fn release(self) {
        let Lease { pool, key, tenant, mut sender, .. } = self;
        if sender.is_ready() {
            pool.put(tenant, &key, sender);
        } else if !sender.is_closed() {
            glommio::spawn_local(async move {
                if sender.ready().await.is_ok() {
                    pool.put(tenant, &key, sender);
                }
            })
            .detach();
        }
    }
}
