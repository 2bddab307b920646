//! Host names to addresses without blocking a shard: the lookup (getaddrinfo) runs on
//! glommio's blocking pool, and each shard keeps what it learnt for [`TTL`] (the
//! system resolver does not say a record's TTL). IP literals skip all of it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long a shard trusts an answer.
pub const TTL: Duration = Duration::from_secs(30);
/// Names cached per shard before the cache starts over.
const CAPACITY: usize = 256;

/// A name's addresses and when they were learnt.
type Entry = (Rc<[IpAddr]>, Instant);

#[derive(Default)]
pub struct Resolver {
    cache: RefCell<HashMap<Box<str>, Entry>>,
}

impl Resolver {
    /// `host` (a name, an IPv4 literal, or a bracketed IPv6 literal as URIs write it)
    /// and `port` as the addresses to try, in the resolver's order.
    pub async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let ips = match literal(host) {
            Some(ip) => return Ok(vec![SocketAddr::new(ip, port)]),
            None => self.lookup(host).await?,
        };
        Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
    }

    async fn lookup(&self, host: &str) -> io::Result<Rc<[IpAddr]>> {
        if let Some((ips, at)) = self.cache.borrow().get(host) {
            if at.elapsed() < TTL {
                return Ok(ips.clone());
            }
        }
        let name = host.to_owned();
        let found =
            glommio::executor().spawn_blocking(move || (name.as_str(), 0).to_socket_addrs().map(|a| a.map(|a| a.ip()).collect::<Vec<_>>())).await;
        let ips: Rc<[IpAddr]> = found.map_err(|e| io::Error::new(e.kind(), format!("resolving {host}: {e}")))?.into();
        if ips.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("resolving {host}: no address")));
        }
        let mut cache = self.cache.borrow_mut();
        if cache.len() >= CAPACITY {
            cache.clear();
        }
        cache.insert(host.into(), (ips.clone(), Instant::now()));
        Ok(ips)
    }
}

fn literal(host: &str) -> Option<IpAddr> {
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_not_looked_up() {
        assert_eq!(literal("127.0.0.1"), Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(literal("localhost"), None);
    }
}
