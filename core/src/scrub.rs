//! Secrets out of text that came from outside: an upstream's error body, a tool's
//! answer, a connection error. A [`Scrubber`] is built from the secrets a request put on
//! the wire and replaces each with `[secret]` in every spelling a JSON or HTTP answer can
//! give it: as is; with any of its characters JSON-escaped (`\"`, `\\`, `\/`, `\n`…, or
//! `\uXXXX` in either case, surrogate pairs for characters past the BMP), in any mix;
//! percent-encoded; and, for a credential sent as HTTP Basic, the `user:secret` blob in
//! base64 as well as the password in it. Every length counts: a one-character secret
//! scrubs every occurrence of that character, which is the price of not leaking it.

use base64::Engine as _;
use regex::Regex;

/// What replaces a secret.
pub const MASK: &str = "[secret]";

/// Matches any of a set of secrets, in any spelling (see the module's doc).
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    pattern: Option<Regex>,
}

impl Scrubber {
    /// Scrubs these secrets (empty ones are skipped).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Scrubber {
        let mut forms: Vec<String> = Vec::new();
        for s in secrets.into_iter().filter(|s| !s.is_empty()) {
            forms.push(s.to_owned());
            let encoded = percent_encode(s);
            if encoded != s {
                forms.push(encoded);
            }
        }
        Scrubber::of_forms(forms)
    }

    /// Scrubs the credentials in header values as a request sent them: the value whole,
    /// the token after an auth scheme (`Bearer x`), and for `Basic` the base64 blob and
    /// the password it decodes to.
    pub fn of_header_values<'a>(values: impl IntoIterator<Item = &'a str>) -> Scrubber {
        let mut secrets: Vec<String> = Vec::new();
        for v in values {
            let v = v.trim();
            secrets.push(v.to_owned());
            if let Some((scheme, token)) = v.split_once(' ') {
                let token = token.trim();
                secrets.push(token.to_owned());
                if scheme.eq_ignore_ascii_case("basic") {
                    if let Some(password) = base64::engine::general_purpose::STANDARD
                        .decode(token)
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok())
                        .and_then(|up| up.split_once(':').map(|(_, p)| p.to_owned()))
                    {
                        secrets.push(password);
                    }
                }
            }
        }
        Scrubber::new(secrets.iter().map(String::as_str))
    }

    /// This scrubber and `other`'s secrets together.
    pub fn with(self, other: &Scrubber) -> Scrubber {
        match (self.pattern, &other.pattern) {
            (None, p) => Scrubber { pattern: p.clone() },
            (p, None) => Scrubber { pattern: p },
            (Some(a), Some(b)) => Scrubber { pattern: Regex::new(&format!("{}|{}", a.as_str(), b.as_str())).ok() },
        }
    }

    fn of_forms(mut forms: Vec<String>) -> Scrubber {
        if forms.is_empty() {
            return Scrubber::default();
        }
        // Longest first: leftmost-first alternation then masks the whole of a secret
        // that holds a shorter one.
        forms.sort_by_key(|f| std::cmp::Reverse(f.chars().count()));
        forms.dedup();
        let alternatives: Vec<String> = forms.iter().map(|f| f.chars().map(char_pattern).collect()).collect();
        let pattern = Regex::new(&alternatives.join("|")).expect("escaped alternatives are a valid pattern");
        Scrubber { pattern: Some(pattern) }
    }

    /// Whether there is anything to scrub.
    pub fn is_empty(&self) -> bool {
        self.pattern.is_none()
    }

    /// `text` with every secret replaced by [`MASK`].
    pub fn scrub(&self, text: &str) -> String {
        match &self.pattern {
            Some(p) => p.replace_all(text, MASK).into_owned(),
            None => text.to_owned(),
        }
    }

    /// Every string of `value` (object keys included) scrubbed, for JSON that was
    /// already decoded.
    pub fn scrub_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => *s = self.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.scrub_value(&mut v);
                    map.insert(self.scrub(&k), v);
                }
            }
            _ => {}
        }
    }
}

/// At most `max` characters of `text` (cut at a character boundary, "…" marking a cut),
/// with white space runs as one space: an outside answer quoted in one of ours.
pub fn excerpt(text: &str, max: usize) -> String {
    let squeezed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match squeezed.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &squeezed[..cut]),
        None => squeezed,
    }
}

/// The pattern of one character of a secret: itself, `\uXXXX` (any case; a surrogate
/// pair past the BMP), or its JSON short escape.
fn char_pattern(c: char) -> String {
    let mut units = [0u16; 2];
    let escaped_units: String = c.encode_utf16(&mut units).iter().map(|u| format!(r"\\u{}", hex_any_case(*u))).collect();
    let short = match c {
        '"' => Some(r#"\\""#),
        '\\' => Some(r"\\\\"),
        '/' => Some(r"\\/"),
        '\n' => Some(r"\\n"),
        '\r' => Some(r"\\r"),
        '\t' => Some(r"\\t"),
        '\u{8}' => Some(r"\\b"),
        '\u{c}' => Some(r"\\f"),
        _ => None,
    };
    let mut alts = vec![regex::escape(&c.to_string()), escaped_units];
    alts.extend(short.map(str::to_owned));
    format!("(?:{})", alts.join("|"))
}

/// `u` as four hex digits, each letter matching either case.
fn hex_any_case(u: u16) -> String {
    format!("{u:04x}").chars().map(|d| if d.is_ascii_alphabetic() { format!("[{}{}]", d, d.to_ascii_uppercase()) } else { d.to_string() }).collect()
}

/// `s` percent-encoded as a URL's query would carry it (unreserved characters kept).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_secret_is_masked() {
        let s = Scrubber::new(["sk-live\"q\\7"]);
        for (text, want) in [
            ("bad key sk-live\"q\\7 here", "bad key [secret] here"),
            (r#"{"message":"bad key sk-live\"q\\7"}"#, r#"{"message":"bad key [secret]"}"#),
            (r#"{"m":"\u0073\u006B-live\u0022q\u005c7"}"#, r#"{"m":"[secret]"}"#),
            (r#"{"m":"\u0073\u006b-LIVE"}"#, r#"{"m":"\u0073\u006b-LIVE"}"#),
            ("url ?key=sk-live%22q%5C7&x", "url ?key=[secret]&x"),
        ] {
            assert_eq!(s.scrub(text), want, "{text}");
        }
        let astral = Scrubber::new(["k🔑y"]);
        assert_eq!(astral.scrub(r"x \ud83d\uDD11 k\ud83d\udd11y"), r"x \ud83d\uDD11 [secret]");
        let tiny = Scrubber::new(["ab"]);
        assert_eq!(tiny.scrub("cab"), "c[secret]", "short secrets are masked too");
        assert_eq!(Scrubber::new([""]).scrub("anything"), "anything");
    }

    #[test]
    fn header_values_give_the_token_and_basics_password() {
        let blob = base64::engine::general_purpose::STANDARD.encode("user:pa55word");
        let s = Scrubber::of_header_values(["Bearer tok-123", &format!("Basic {blob}")]);
        assert_eq!(s.scrub("echo: Bearer tok-123"), "echo: [secret]");
        assert_eq!(s.scrub("the token tok-123 is bad"), "the token [secret] is bad");
        assert_eq!(s.scrub(&format!("got {blob} for pa55word")), "got [secret] for [secret]");
        let mut v = serde_json::json!({"error": {"tok-123": ["pa55word", 1]}});
        s.scrub_value(&mut v);
        assert_eq!(v, serde_json::json!({"error": {"[secret]": ["[secret]", 1]}}));
    }

    #[test]
    fn an_excerpt_is_bounded_at_a_character() {
        assert_eq!(excerpt("a  b\n\nc", 10), "a b c");
        assert_eq!(excerpt("ééééé", 3), "ééé…");
    }
}
