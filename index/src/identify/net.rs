//! Email addresses, IP addresses and URLs. IPs are parsed by the standard library
//! (`Ipv4Addr`, `Ipv6Addr`), so octets above 255, times (`12:34:56`), MAC addresses,
//! ratios and `std::cout` are not addresses; a dotted run of five or more numbers is an
//! OID or a version, not an IPv4 address with a tail. URLs need a scheme, `www.`, or a
//! host under a common top-level domain; the sentence's punctuation after them is not
//! theirs.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

use super::context::{before, compile, free, free_left, overlaps};
use super::{IdentifierKind as K, Span};

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}")
});

static IPV4: LazyLock<Regex> = LazyLock::new(|| compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?:/\d{1,3})?"));
static IPV6: LazyLock<Regex> = LazyLock::new(|| compile(r"(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f.]*(?:%[A-Za-z0-9]+)?(?:/\d{1,4})?"));
static VERSION_CUE: LazyLock<Regex> = LazyLock::new(|| compile(r"(?i)\b(?:v|ver|version|release|build|rev|firmware)\.?\s?$"));

const TLDS: &str = "com|org|net|edu|gov|mil|int|io|co|us|uk|ca|au|de|fr|es|it|nl|ch|se|no|dk|fi|ie|il|in|jp|cn|kr|br|mx|ru|eu|info|biz|site|online|app|dev|ai|me|tv|ly|health|law|legal";

static URL: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r#"(?i:(?:https?|ftp)://[^\s<>"'`]+|www\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?:[/?#][^\s<>"'`]*)?|(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+(?:{TLDS})\b(?:/[^\s<>"'`]*)?)"#
    ))
});

/// Each pattern's pass only over a text that holds what every match of it holds: three
/// dotted runs of digits for an IPv4 address, `h:h` twice close together (or `::`) for
/// an IPv6 address. Emails and URLs hold no whitespace, so their patterns run only over
/// the whitespace-free pieces of text ([`net_tokens`]) that hold an `@`, a `://`, a
/// `www.` or a dot before a top-level domain: one pass over the text finds those.
pub fn find(text: &str, excluded: &[(usize, usize)], out: &mut Vec<Span>) {
    let b = text.as_bytes();
    if dotted_digits(b) {
        ipv4s(text, excluded, out);
    }
    if memchr::memchr_iter(b':', b).any(|i| b.get(i + 1).is_some_and(|&c| c == b':' || c.is_ascii_hexdigit())) {
        ipv6s(text, excluded, out);
    }
    for (s, e) in net_tokens(b) {
        if memchr::memchr(b'@', &b[s..e]).is_some() {
            emails(text, s, e, out);
        }
        urls(text, s, e, out);
    }
}

/// The bytes the identifier patterns' `\s` matches ([`compile`]): no email or URL holds one.
fn space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// The whitespace-free pieces of `b` (start, end) that may hold an email or a URL: an
/// `@` (every email), a `://` or a `www.` (URLs with a scheme or without), or a dot
/// followed by a top-level domain of [`TLDS`] and then no word character (a bare host,
/// as the URL pattern's `\b` after the domain asks); in order, none twice.
fn net_tokens(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for i in memchr::memchr3_iter(b'@', b'.', b':', b) {
        if out.last().is_some_and(|&(_, e)| i < e) {
            continue;
        }
        let hit = match b[i] {
            b'@' => true,
            b':' => b[i + 1..].starts_with(b"//"),
            _ => i >= 3 && b[i - 3..i].eq_ignore_ascii_case(b"www") || tld_after(&b[i + 1..]),
        };
        if hit {
            let s = b[..i].iter().rposition(|&c| space(c)).map_or(0, |p| p + 1);
            let e = b[i..].iter().position(|&c| space(c)).map_or(b.len(), |p| i + p);
            out.push((s, e));
        }
    }
    out
}

/// Whether `b` opens with a top-level domain of [`TLDS`] (any case) ending its word.
fn tld_after(b: &[u8]) -> bool {
    let n = b.iter().position(|c| !(c.is_ascii_alphanumeric() || *c == b'_')).unwrap_or(b.len());
    (2..=6).contains(&n) && TLDS.split('|').any(|t| t.as_bytes().eq_ignore_ascii_case(&b[..n]))
}

/// Whether `b` holds three runs of digits joined by dots ("10.0.0"), as every IPv4
/// address does.
fn dotted_digits(b: &[u8]) -> bool {
    let mut runs = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            runs = 0;
            i += 1;
            continue;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        runs += 1;
        if runs == 3 {
            return true;
        }
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
        } else {
            runs = 0;
        }
    }
    false
}

/// The emails in `text[from..to]`.
fn emails(text: &str, from: usize, to: usize, out: &mut Vec<Span>) {
    for m in EMAIL.find_iter(&text[from..to]) {
        let (s, e) = (from + m.start(), from + m.end());
        let local = &m.as_str()[..m.as_str().find('@').expect("an email has @")];
        let clean = !local.starts_with('.') && !local.ends_with('.') && !local.contains("..");
        let right = text.as_bytes().get(e).is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'-' || c == b'@'));
        if clean && right {
            out.push(Span { kind: K::Email, start: s, end: e, counted: true });
        }
    }
}

fn ipv4s(text: &str, excluded: &[(usize, usize)], out: &mut Vec<Span>) {
    for m in IPV4.find_iter(text) {
        let (s, addr, e, cut) = prefix_length(m, 32);
        let b = text.as_bytes();
        let left_ok = s == 0 || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'.');
        let right_ok = cut || free(text, s, e) || b.get(e) == Some(&b':');
        if left_ok && right_ok && addr.parse::<Ipv4Addr>().is_ok() && !overlaps(excluded, s, e) && !VERSION_CUE.is_match(before(text, s, 12)) {
            out.push(Span { kind: K::Ip, start: s, end: e, counted: true });
        }
    }
}

fn ipv6s(text: &str, excluded: &[(usize, usize)], out: &mut Vec<Span>) {
    for m in IPV6.find_iter(text) {
        let (s, addr, e, cut) = prefix_length(m, 128);
        // A sentence's full stop after a bare address is not part of it.
        let dots = if m.as_str().contains('/') { 0 } else { addr.len() - addr.trim_end_matches('.').len() };
        let (addr, e) = (&addr[..addr.len() - dots], e - dots);
        let addr = addr.split('%').next().expect("split yields one");
        let b = text.as_bytes();
        let left_ok = s == 0 || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b':');
        let right_ok = cut || b.get(e).is_none_or(|c| !c.is_ascii_alphanumeric());
        if addr != "::" && left_ok && right_ok && addr.parse::<Ipv6Addr>().is_ok() && !overlaps(excluded, s, e) {
            out.push(Span { kind: K::Ip, start: s, end: e, counted: true });
        }
    }
}

/// An address match split from its `/bits`: (start, the address, the span's end, whether
/// a `/bits` over `max` was left out of the span).
fn prefix_length(m: regex::Match<'_>, max: u8) -> (usize, &str, usize, bool) {
    let t = m.as_str();
    match t.split_once('/') {
        Some((addr, bits)) if bits.parse::<u8>().is_ok_and(|b| b <= max) => (m.start(), addr, m.end(), false),
        Some((addr, _)) => (m.start(), addr, m.start() + addr.len(), true),
        None => (m.start(), t, m.end(), false),
    }
}

/// The URLs in `text[from..to]`.
fn urls(text: &str, from: usize, to: usize, out: &mut Vec<Span>) {
    for m in URL.find_iter(&text[from..to]) {
        let s = from + m.start();
        let t = trim_url(m.as_str());
        let e = s + t.len();
        let b = text.as_bytes();
        let scheme = t.contains("://");
        if !scheme && (s > 0 && matches!(b[s - 1], b'@' | b'.' | b'-' | b'_' | b'/') || !free_left(text, s)) {
            continue;
        }
        let host = t.split("://").nth(if scheme { 1 } else { 0 }).unwrap_or("");
        let host = host.split(['/', '?', '#', ':']).next().unwrap_or("");
        if !host.contains('.') && !host.starts_with('[') {
            continue;
        }
        if b.get(e).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'@') {
            continue;
        }
        out.push(Span { kind: K::Url, start: s, end: e, counted: true });
    }
}

/// A URL without the sentence's punctuation after it; a closing bracket stays when the
/// URL opened one (`…/Foo_(bar)`).
fn trim_url(mut t: &str) -> &str {
    loop {
        let Some(last) = t.chars().last() else { return t };
        let unbalanced = |open: char, close: char| t.matches(open).count() < t.matches(close).count();
        let cut = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '"' => true,
            ')' => unbalanced('(', ')'),
            ']' => unbalanced('[', ']'),
            '}' => unbalanced('{', '}'),
            _ => false,
        };
        if !cut {
            return t;
        }
        t = &t[..t.len() - last.len_utf8()];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<(K, &str)> {
        let mut out = Vec::new();
        find(t, &super::super::exclude::zones(t), &mut out);
        out.sort_by_key(|s| (s.start, s.kind));
        out.iter().map(|s| (s.kind, &t[s.start..s.end])).collect()
    }

    #[test]
    fn ips_are_what_the_standard_library_parses() {
        assert_eq!(found("from 192.168.0.1, then"), [(K::Ip, "192.168.0.1")]);
        assert_eq!(found("gw fe80::1%eth0 up"), [(K::Ip, "fe80::1%eth0")]);
        assert_eq!(found("net 10.0.0.0/8."), [(K::Ip, "10.0.0.0/8")]);
        for no in ["256.1.1.1", "Time 12:34:56", "MAC aa:bb:cc:dd:ee:ff", "std::cout", "Version 1.2.3.4", "1.2.3.4.5", "::"] {
            assert!(found(no).iter().all(|(k, _)| *k != K::Ip), "{no}: {:?}", found(no));
        }
    }

    #[test]
    fn urls_lose_the_sentences_punctuation() {
        assert_eq!(found("see https://example.org/a_(b)."), [(K::Url, "https://example.org/a_(b)")]);
        assert_eq!(found("(www.example.com)"), [(K::Url, "www.example.com")]);
        assert!(found("www.microsoft and http://microsoft").is_empty());
        // No dot before a letter anywhere: a scheme is enough to look.
        assert!(found("base http://127.0.0.1:9/v1 set").contains(&(K::Url, "http://127.0.0.1:9/v1")));
    }

    #[test]
    fn emails_need_a_domain() {
        assert_eq!(found("mail info@presidio.site now"), [(K::Email, "info@presidio.site")]);
        assert!(found("my email is info@presidio.").is_empty());
    }
}
