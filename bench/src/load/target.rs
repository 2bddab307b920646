//! Where the load goes. The generator only ever drives loopback servers: it is an instrument
//! for this machine's own processes, and refusing anything else keeps a typo from turning it
//! into a flood against a real host.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// A parsed, loopback-checked target: the socket address to connect to, the `Host` header to
/// send, and the path given in the URL (the default request path). The only way to build one
/// is [`Target::parse`], so holding a `Target` means the check was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    addr: SocketAddr,
    host_header: String,
    path: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("target {given:?}: only plain http:// is supported")]
    Scheme { given: String },
    #[error("target {given:?}: expected HOST:PORT or http://HOST:PORT/path")]
    Malformed { given: String },
    #[error("target {given:?}: cannot resolve host: {source}")]
    Resolve {
        given: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing target {given:?} ({addr}): quarry-load only drives loopback addresses \
         (127.0.0.0/8 or ::1)"
    )]
    NotLoopback { given: String, addr: IpAddr },
}

impl Target {
    /// Parses `http://HOST:PORT/path`, `HOST:PORT/path` or `HOST:PORT`. The port defaults to
    /// 80 after an explicit `http://`. Every address the host resolves to must be loopback.
    pub fn parse(given: &str) -> Result<Target, TargetError> {
        let rest = strip_scheme(given)?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = with_default_port(given, authority)?;
        let addr = resolve_loopback(given, &authority)?;
        Ok(Target { addr, host_header: authority, path: path.to_string() })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn host_header(&self) -> &str {
        &self.host_header
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.host_header, self.path)
    }
}

fn strip_scheme(given: &str) -> Result<&str, TargetError> {
    match given.split_once("://") {
        Some(("http", rest)) => Ok(rest),
        Some(_) => Err(TargetError::Scheme { given: given.to_string() }),
        None => Ok(given),
    }
}

fn with_default_port(given: &str, authority: &str) -> Result<String, TargetError> {
    let malformed = || TargetError::Malformed { given: given.to_string() };
    if authority.is_empty() {
        return Err(malformed());
    }
    let has_port = match authority.rfind(']') {
        Some(close) => authority[close..].contains(':'),
        None => authority.contains(':'),
    };
    if has_port {
        Ok(authority.to_string())
    } else if given.starts_with("http://") {
        Ok(format!("{authority}:80"))
    } else {
        Err(malformed())
    }
}

fn resolve_loopback(given: &str, authority: &str) -> Result<SocketAddr, TargetError> {
    let addrs: Vec<SocketAddr> = authority.to_socket_addrs().map_err(|source| TargetError::Resolve { given: given.to_string(), source })?.collect();
    if let Some(bad) = addrs.iter().find(|a| !is_loopback(a.ip())) {
        return Err(TargetError::NotLoopback { given: given.to_string(), addr: bad.ip() });
    }
    addrs.into_iter().next().ok_or_else(|| TargetError::Malformed { given: given.to_string() })
}

/// 127.0.0.0/8, ::1, and the IPv4-mapped form of 127.0.0.0/8.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_url_with_path() {
        let t = Target::parse("http://127.0.0.1:8080/v1/health").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/v1/health");
    }

    #[test]
    fn parses_bare_authority_and_ipv6() {
        assert_eq!(Target::parse("127.0.0.9:1").unwrap().path, "/");
        let t = Target::parse("http://[::1]:9000/x").unwrap();
        assert_eq!(t.addr, "[::1]:9000".parse::<SocketAddr>().unwrap());
        assert_eq!(Target::parse("http://127.0.0.1/").unwrap().addr.port(), 80);
    }

    #[test]
    fn refuses_non_loopback_targets() {
        for given in ["http://10.0.0.1:80/", "192.168.1.2:8080", "http://[2001:db8::1]:80/", "0.0.0.0:80"] {
            let err = Target::parse(given).unwrap_err();
            assert!(matches!(err, TargetError::NotLoopback { .. }), "{given}: {err}");
            assert!(err.to_string().contains("only drives loopback"), "{err}");
        }
    }

    #[test]
    fn refuses_other_schemes_and_missing_port() {
        assert!(matches!(Target::parse("https://127.0.0.1:443/"), Err(TargetError::Scheme { .. })));
        assert!(matches!(Target::parse("127.0.0.1"), Err(TargetError::Malformed { .. })));
    }

    #[test]
    fn mapped_loopback_is_loopback() {
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("::ffff:10.0.0.1".parse().unwrap()));
    }
}
