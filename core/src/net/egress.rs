//! Where a tenant's requests may go: the one destination policy for every connection
//! whose address a tenant supplied (an http or MCP tool's URL, an `/api/v1` AI
//! provider's `base_url`, the `ollama` kind's default `http://localhost:11434`).
//!
//! Closed by default: loopback, private (RFC 1918, IPv6 ULA), link-local, shared
//! (CGNAT), multicast, broadcast, unspecified, cloud metadata, documentation and
//! reserved addresses are refused; an IPv6 address that carries an IPv4 one
//! (IPv4-mapped, -compatible, -translated, NAT64's `64:ff9b::/96`, 6to4) is judged as
//! that IPv4 address, so no spelling gets around it; Teredo sits in a reserved range.
//! The operator opens what tenants need with `[egress] allow` ([`Rule`]: an address,
//! a CIDR range, either with a port). The bundled local model's port and the server's
//! own port are never a tenant's destination on this host, whatever `allow` says: the
//! local model is reached through its own provider (`local`) only.
//!
//! The check runs on the address a connection is about to open, after resolution
//! ([`Policy::check`]): a name that resolves to 127.0.0.1 (`localhost`, DNS
//! rebinding) is refused like the literal, and nothing is sent to a refused address,
//! not even a SYN. No client here follows redirects (a 3xx is an answer like any
//! other), so each request is exactly one destination; one that followed them would
//! have to check every hop here.
//!
//! Destinations the operator wrote in the configuration file (`[llm]` providers,
//! rerank APIs, the supervised local model) are the operator's own and are not
//! judged: [`Trust`] says which a connection is, as a type, never by its address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

/// What every refusal says, whatever the address and however it was spelt: never a
/// connection error's text (no "Connection refused" port-scan signal), never the
/// target's answer (nothing was sent).
pub const REFUSED: &str =
    "refused by egress policy: the destination is a loopback, private or reserved address this server does not reach for tenants (the operator opens destinations with [egress] allow)";

/// The special ranges the policy refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    Loopback,
    /// RFC 1918, IPv6 unique local (fc00::/7) and site-local, local-use NAT64.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// Cloud instance metadata: 169.254.169.254, fd00:ec2::254, 100.100.100.200.
    Metadata,
    /// 100.64/10, carrier-grade NAT.
    Shared,
    Multicast,
    Broadcast,
    /// 0.0.0.0/8, `::`: "this host" to a connect.
    Unspecified,
    /// TEST-NET-1/2/3, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// Everything else IANA sets apart: 192.0.0/24, 198.18/15, 240/4, 2001::/23
    /// (Teredo among them), 100::/64, IPv6 outside 2000::/3.
    Reserved,
}

impl Range {
    pub fn as_str(self) -> &'static str {
        match self {
            Range::Loopback => "loopback",
            Range::Private => "private",
            Range::LinkLocal => "link-local",
            Range::Metadata => "metadata",
            Range::Shared => "shared (CGNAT)",
            Range::Multicast => "multicast",
            Range::Broadcast => "broadcast",
            Range::Unspecified => "unspecified",
            Range::Documentation => "documentation",
            Range::Reserved => "reserved",
        }
    }
}

/// An address as the policy judges it: an IPv6 address that carries an IPv4 one is
/// that IPv4 address (`::ffff:127.0.0.1` is 127.0.0.1).
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    let s = v6.segments();
    let embedded = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => ip,
        // IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d).
        [0, 0, 0, 0, 0, 0 | 0xffff, _, _] => IpAddr::V4(embedded()),
        // IPv4-translated (::ffff:0:a.b.c.d).
        [0, 0, 0, 0, 0xffff, 0, _, _] => IpAddr::V4(embedded()),
        // NAT64's well-known prefix (64:ff9b::/96).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => IpAddr::V4(embedded()),
        // 6to4 (2002:aabb:ccdd::/48 carries a.b.c.d).
        [0x2002, hi, lo, ..] => IpAddr::V4(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => ip,
    }
}

/// The special range `ip` falls into, judged as [`canonical`]; `None`: the public
/// internet.
pub fn range(ip: IpAddr) -> Option<Range> {
    match canonical(ip) {
        IpAddr::V4(v4) => range_v4(v4),
        IpAddr::V6(v6) => range_v6(v6),
    }
}

fn range_v4(ip: Ipv4Addr) -> Option<Range> {
    let o = ip.octets();
    let within = |net: [u8; 4], len: u32| prefix_v4(u32::from(ip), u32::from_be_bytes(net), len);
    Some(match o {
        [169, 254, 169, 254] | [100, 100, 100, 200] => Range::Metadata,
        [255, 255, 255, 255] => Range::Broadcast,
        [0, ..] => Range::Unspecified,
        [127, ..] => Range::Loopback,
        [10, ..] | [192, 168, ..] => Range::Private,
        _ if within([172, 16, 0, 0], 12) => Range::Private,
        [169, 254, ..] => Range::LinkLocal,
        _ if within([100, 64, 0, 0], 10) => Range::Shared,
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => Range::Documentation,
        [192, 0, 0, _] | [192, 88, 99, _] => Range::Reserved,
        _ if within([198, 18, 0, 0], 15) => Range::Reserved,
        [224..=239, ..] => Range::Multicast,
        [240..=255, ..] => Range::Reserved,
        _ => return None,
    })
}

fn range_v6(ip: Ipv6Addr) -> Option<Range> {
    let s = ip.segments();
    let within = |net: Ipv6Addr, len: u32| prefix_v6(u128::from(ip), u128::from(net), len);
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => Range::Unspecified,
        [0, 0, 0, 0, 0, 0, 0, 1] => Range::Loopback,
        [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254] => Range::Metadata,
        [0x0064, 0xff9b, 0x0001, ..] => Range::Private,
        _ if within(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7) => Range::Private,
        _ if within(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10) => Range::Private,
        _ if within(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10) => Range::LinkLocal,
        [0xff00..=0xffff, ..] => Range::Multicast,
        [0x2001, 0x0db8, ..] => Range::Documentation,
        _ if within(Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20) => Range::Documentation,
        _ if within(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23) => Range::Reserved,
        // Global unicast is 2000::/3; everything outside it is no internet host.
        _ if !within(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) => Range::Reserved,
        _ => return None,
    })
}

fn prefix_v4(ip: u32, net: u32, len: u32) -> bool {
    len == 0 || (ip ^ net) >> (32 - len) == 0
}

fn prefix_v6(ip: u128, net: u128, len: u32) -> bool {
    len == 0 || (ip ^ net) >> (128 - len) == 0
}

/// Whether a connect to `ip` (canonical) lands on this host whatever its port serves.
fn this_host(ip: IpAddr) -> bool {
    matches!(range(ip), Some(Range::Loopback | Range::Unspecified))
}

/// One `[egress] allow` entry: an address or CIDR range, IPv4 or IPv6, with a port
/// or for every port. Written `10.0.0.5`, `10.0.0.0/8`, `10.0.0.5:8000`,
/// `10.0.0.0/24:8000`, `fd00::/8`, `[fd00::5]:8000`, `[fd00::/64]:8000`. Names are
/// not rules: the policy judges the address a connection goes to, and a name's
/// addresses are whatever its DNS says today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Canonical, masked to `len`.
    net: IpAddr,
    len: u32,
    port: Option<u16>,
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        let (net, port) = split_port(t).ok_or_else(|| format!("`{text}` is not an address, a CIDR range, or either with :port"))?;
        let (addr, len) = match net.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (net, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| {
            format!("`{text}`: `{addr}` is not an IP address (names are not accepted: write the address, e.g. 10.0.0.5:8000, or a range)")
        })?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(l) => l.parse::<u32>().ok().filter(|l| *l <= max).ok_or_else(|| format!("`{text}`: the prefix length must be 0 to {max}"))?,
        };
        // A range of IPv4-mapped addresses is the IPv4 range it maps (::ffff:10.0.0.0/104
        // is 10.0.0.0/8), as the addresses it is matched with are judged.
        let mapped = match ip {
            IpAddr::V6(v6) if len >= 96 => v6.to_ipv4_mapped(),
            _ => None,
        };
        let (ip, len) = mapped.map_or((ip, len), |v4| (IpAddr::V4(v4), len - 96));
        Ok(Rule { net: mask(ip, len), len, port })
    }

    fn matches(&self, ip: IpAddr, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (self.net, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_v4(u32::from(ip), u32::from(net), self.len),
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_v6(u128::from(ip), u128::from(net), self.len),
            _ => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.net, self.port) {
            (IpAddr::V6(ip), Some(p)) => write!(f, "[{ip}/{}]:{p}", self.len),
            (ip, Some(p)) => write!(f, "{ip}/{}:{p}", self.len),
            (ip, None) => write!(f, "{ip}/{}", self.len),
        }
    }
}

/// `text` as (address or range, port): `[v6…]:port`, `v4…:port`, or no port.
fn split_port(t: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = t.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        return match after {
            "" => Some((inside, None)),
            p => Some((inside, Some(port(p.strip_prefix(':')?)?))),
        };
    }
    match t.matches(':').count() {
        0 => Some((t, None)),
        1 => t.split_once(':').and_then(|(a, p)| Some((a, Some(port(p)?)))),
        // A bare IPv6 address or range: no port (brackets give it one).
        _ => Some((t, None)),
    }
}

fn port(p: &str) -> Option<u16> {
    p.parse().ok().filter(|p| *p != 0)
}

fn mask(ip: IpAddr, len: u32) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4) & u32::MAX.checked_shl(32 - len).unwrap_or(0))),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & u128::MAX.checked_shl(128 - len).unwrap_or(0))),
    }
}

/// Why a destination was refused (for the operator's log; a client reads [`REFUSED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Range(Range),
    /// The local model's or the server's own port on this host.
    OwnPort,
}

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Range(r) => r.as_str(),
            Why::OwnPort => "this server's own port",
        }
    }
}

/// A destination the policy refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{REFUSED}")]
pub struct Refused {
    pub to: SocketAddr,
    pub why: Why,
}

/// The tenants' destination policy: the special ranges refused, the operator's
/// `allow` rules, the ports of this host that are never a tenant's.
#[derive(Debug)]
pub struct Policy {
    allow: Vec<Rule>,
    /// The local model's port, when this server supervises one.
    local_model: Option<u16>,
    /// The port the server listens on, once bound (0 before).
    server: AtomicU16,
}

impl Policy {
    pub fn new(allow: Vec<Rule>) -> Policy {
        Policy { allow, local_model: None, server: AtomicU16::new(0) }
    }

    /// The same policy, with the supervised local model's port kept from tenants.
    pub fn with_local_model(self, port: Option<u16>) -> Policy {
        Policy { local_model: port, ..self }
    }

    /// The server's own port, once its listeners are bound (kept from tenants too).
    pub fn serving_on(&self, port: u16) {
        self.server.store(port, Ordering::Relaxed);
    }

    /// Whether a connection to `to` may be opened for a tenant: a few comparisons.
    pub fn check(&self, to: SocketAddr) -> Result<(), Refused> {
        let (ip, port) = (canonical(to.ip()), to.port());
        if this_host(ip) && (self.local_model == Some(port) || self.server.load(Ordering::Relaxed) == port) {
            return Err(Refused { to, why: Why::OwnPort });
        }
        let Some(range) = range(ip) else { return Ok(()) };
        if self.allow.iter().any(|r| r.matches(ip, port)) {
            return Ok(());
        }
        Err(Refused { to, why: Why::Range(range) })
    }

    /// What can be judged of a URL before any lookup, when it is written: a host
    /// that is an address in any spelling `inet_aton` reads (`127.1`, `2130706433`,
    /// `0x7f.1`, `[::ffff:127.0.0.1]`), or a `localhost` name (RFC 6761: always
    /// loopback). Any other name passes here and is judged at connect time, after
    /// resolution. A URL with no host or an unknown scheme passes too (its own checks
    /// refuse it).
    pub fn check_url(&self, uri: &hyper::Uri) -> Result<(), Refused> {
        let Some(host) = uri.host() else { return Ok(()) };
        let port = match (uri.port_u16(), uri.scheme_str()) {
            (Some(p), _) => p,
            (None, Some("https")) => 443,
            (None, _) => 80,
        };
        match written_address(host) {
            Some(ip) => self.check(SocketAddr::new(ip, port)),
            None => Ok(()),
        }
    }
}

/// The address a URL's host stands for without a lookup.
fn written_address(host: &str) -> Option<IpAddr> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(ip);
    }
    let name = bare.strip_suffix('.').unwrap_or(bare).to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    inet_aton(&name).map(IpAddr::V4)
}

/// The IPv4 address `text` is to `inet_aton(3)` (and so to getaddrinfo): one to four
/// parts, each decimal, octal (leading 0) or hex (0x), the last filling the rest.
fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = text.split('.').map(number).collect::<Option<_>>()?;
    let (last, head) = parts.split_last()?;
    if head.len() > 3 || head.iter().any(|p| *p > 255) || *last >= 1 << (8 * (4 - head.len())) {
        return None;
    }
    let high = head.iter().enumerate().fold(0u64, |acc, (i, p)| acc | p << (24 - 8 * i));
    Some(Ipv4Addr::from((high | last) as u32))
}

fn number(p: &str) -> Option<u64> {
    let (digits, radix) = match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None if p.len() > 1 && p.starts_with('0') => (&p[1..], 8),
        None => (p, 10),
    };
    if digits.is_empty() && radix != 16 {
        return None;
    }
    // `0x` alone is 0 to inet_aton.
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, radix).ok().filter(|n| *n <= u64::from(u32::MAX))
}

/// Whose destination a connection goes to, and so whether the policy judges it.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Written by the operator in the configuration file: not judged.
    Operator,
    /// Supplied by a tenant through the API: judged by the policy at every connect.
    Tenant(Arc<Policy>),
}

impl Trust {
    pub fn check(&self, to: SocketAddr) -> Result<(), Refused> {
        match self {
            Trust::Operator => Ok(()),
            Trust::Tenant(p) => p.check(to).inspect_err(log),
        }
    }

    /// [`Policy::check_url`] for a tenant: what the URL's host says as written.
    pub fn check_url(&self, uri: &hyper::Uri) -> Result<(), Refused> {
        match self {
            Trust::Operator => Ok(()),
            Trust::Tenant(p) => p.check_url(uri).inspect_err(log),
        }
    }

    /// The addresses of `addrs` a connection may go to, in their order; the first
    /// refusal when none may.
    pub fn allowed(&self, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refused> {
        if matches!(self, Trust::Operator) {
            return Ok(addrs);
        }
        let mut refused = None;
        let mut kept = Vec::with_capacity(addrs.len());
        for a in addrs {
            match self.check(a) {
                Ok(()) => kept.push(a),
                Err(r) => {
                    refused.get_or_insert(r);
                }
            }
        }
        match (kept.is_empty(), refused) {
            (true, Some(r)) => Err(r),
            _ => Ok(kept),
        }
    }

    pub fn is_tenant(&self) -> bool {
        matches!(self, Trust::Tenant(_))
    }
}

fn log(r: &Refused) {
    tracing::info!(to = %r.to, why = r.why.as_str(), "a tenant's destination refused by egress policy");
}

/// The refusal in `e` or its causes (an error the connector raised, carried up
/// through hyper's and the TLS connector's boxes).
pub fn refusal_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Refused>() {
            return Some(r);
        }
        if let Some(r) = c.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).and_then(|i| i.downcast_ref::<Refused>()) {
            return Some(r);
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests;
