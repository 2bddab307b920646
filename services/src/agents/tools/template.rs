//! The `{{…}}` tokens of a tool's URLs and headers, and literal credentials.
//!
//! Double braces are reserved for `{{secret:sec_…}}` (anywhere in `execute`/`mcp`) and
//! `{{context:<key>}}` (only in header values: a caller-supplied value must not steer
//! a URL); anything else is 400 `INVALID_TEMPLATE_TOKEN`. A credential written as
//! itself (an `Authorization: Bearer abc…` header, a password in a URL, an `api_key`
//! query parameter) is refused with 400 `LITERAL_CREDENTIAL`: tools are readable by
//! anyone who can list them, so a credential must be a secret reference. A stored one
//! (a record older than the rule) reads back as `{"no_echo": true}`.

use serde_json::{json, Value};

use super::def::ToolDef;
use super::ToolError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token<'a> {
    Text(&'a str),
    Secret(&'a str),
    Context(&'a str),
    Invalid(&'a str),
}

/// `text` split into literal text and `{{…}}` tokens.
pub fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("{{") {
        let Some(len) = rest[at..].find("}}") else { break };
        if at > 0 {
            out.push(Token::Text(&rest[..at]));
        }
        let inner = &rest[at + 2..at + len];
        out.push(match inner.split_once(':') {
            Some(("secret", id)) if id.starts_with(crate::agents::secrets::ID_PREFIX) && id.len() > 4 => Token::Secret(id),
            Some(("context", key)) if !key.is_empty() => Token::Context(key),
            _ => Token::Invalid(&rest[at..at + len + 2]),
        });
        rest = &rest[at + len + 2..];
    }
    if !rest.is_empty() {
        out.push(Token::Text(rest));
    }
    out
}

/// Every string of the definition that may hold tokens: (field, text, context allowed).
fn templated(d: &ToolDef) -> Vec<(String, &str, bool)> {
    let mut out = Vec::new();
    if let Some(e) = &d.execute {
        out.push(("execute.url".to_owned(), e.url.as_str(), false));
        for (k, v) in e.headers.iter().flatten() {
            out.push((format!("execute.headers.{k}"), v.as_str(), true));
        }
    }
    if let Some(m) = &d.mcp {
        out.push(("mcp.url".to_owned(), m.url.as_str(), false));
        for (k, v) in m.headers.iter().flatten() {
            out.push((format!("mcp.headers.{k}"), v.as_str(), true));
        }
    }
    out
}

pub fn check_tokens(d: &ToolDef) -> Result<(), ToolError> {
    for name in d.execute.iter().flat_map(|e| e.headers.iter().flatten()).chain(d.mcp.iter().flat_map(|m| m.headers.iter().flatten())).map(|h| h.0) {
        if !is_header_token(name) {
            return Err(ToolError::Invalid(format!("header name {name:?} is not a valid HTTP header name")));
        }
    }
    for (field, text, context_ok) in templated(d) {
        for t in tokens(text) {
            match t {
                Token::Invalid(raw) => {
                    return Err(ToolError::Template(format!(
                        "{field}: {raw} is not a {{{{secret:sec_…}}}} or {{{{context:<key>}}}} reference; use {{param}} for URL parameters"
                    )))
                }
                Token::Context(_) if !context_ok => {
                    return Err(ToolError::Template(format!("{field}: {{{{context:…}}}} is allowed only in header values")))
                }
                Token::Context(key) => check_context_key(key)?,
                _ => {}
            }
        }
    }
    Ok(())
}

/// Every `{{secret:…}}` the definition names (its pipeline's inline tools included).
pub fn secret_refs(d: &ToolDef) -> Vec<String> {
    let mut out: Vec<String> = templated(d)
        .into_iter()
        .flat_map(|(_, text, _)| tokens(text))
        .filter_map(|t| if let Token::Secret(id) = t { Some(id.to_owned()) } else { None })
        .collect();
    for s in d.pipeline.iter().flat_map(|p| &p.steps) {
        out.extend(s.tool.iter().flat_map(|t| secret_refs(t)));
    }
    out
}

/// A `tool_context` key: usable in a header name (RFC 9110 token characters).
pub fn check_context_key(key: &str) -> Result<(), ToolError> {
    if is_header_token(key) {
        return Ok(());
    }
    Err(ToolError::ContextKey(format!("{key:?} is not a valid tool_context key: use letters, digits and !#$%&'*+-.^_`|~")))
}

fn is_header_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether a header of this name carries a credential.
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(n.as_str(), "authorization" | "proxy-authorization" | "cookie")
        || ["token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "auth", "credential", "signature"].iter().any(|w| n.contains(w))
}

const SCHEMES: &[&str] = &["bearer", "basic", "token", "bot", "digest", "apikey", "api-key", "key", "sso-key"];

/// Whether a credential's value holds anything besides references and a scheme word.
pub fn is_literal(value: &str) -> bool {
    let plain: String = tokens(value).into_iter().map(|t| if let Token::Text(s) = t { s } else { " " }).collect();
    let mut words = plain.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '=').filter(|w| !w.is_empty());
    let first = words.clone().next();
    if first.is_some_and(|w| SCHEMES.contains(&w.to_ascii_lowercase().as_str())) {
        words.next();
    }
    words.next().is_some()
}

/// Whether a URL carries a credential as itself: a password in its userinfo, or a
/// credential-named query parameter with a literal value (`{param}` placeholders and
/// references are fine).
pub fn url_has_literal(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |x| x.1);
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        if userinfo.split_once(':').is_some_and(|(_, pw)| is_literal(pw)) {
            return true;
        }
    }
    let query = url.split_once('?').map_or("", |x| x.1);
    query.split('&').filter_map(|kv| kv.split_once('=')).any(|(k, v)| {
        let k = k.to_ascii_lowercase();
        let credential = is_credential_header(&k) || matches!(k.as_str(), "key" | "access_token" | "sig" | "code");
        let placeholder = v.starts_with('{') && v.ends_with('}') && !v.starts_with("{{");
        credential && !placeholder && is_literal(v)
    })
}

pub fn refuse_literal_credentials(d: &ToolDef) -> Result<(), ToolError> {
    let refused = |field: String| {
        Err(ToolError::LiteralCredential(format!("{field} holds a literal credential; store it as a secret and write {{{{secret:sec_…}}}}")))
    };
    for (field, text, _) in templated(d) {
        let header = field.split_once(".headers.").map(|x| x.1);
        match header {
            Some(name) if is_credential_header(name) && is_literal(text) => return refused(field),
            None if url_has_literal(text) => return refused(field),
            _ => {}
        }
    }
    Ok(())
}

/// `def` as a client reads it: each literal credential replaced by `{"no_echo": true}`
/// (references stay readable). For stored tools and inline tool bindings alike.
pub fn masked(def: &Value) -> Value {
    let mut out = def.clone();
    for section in ["execute", "mcp"] {
        let Some(s) = out.get_mut(section).and_then(Value::as_object_mut) else { continue };
        if s.get("url").and_then(Value::as_str).is_some_and(url_has_literal) {
            s.insert("url".into(), json!({"no_echo": true}));
        }
        if let Some(h) = s.get_mut("headers").and_then(Value::as_object_mut) {
            for (name, v) in h.iter_mut() {
                if is_credential_header(name) && v.as_str().is_some_and(is_literal) {
                    *v = json!({"no_echo": true});
                }
            }
        }
        if let Some(auth) = s.get_mut("auth").and_then(Value::as_object_mut) {
            for (k, v) in auth.iter_mut() {
                if k != "type" && k != "region" && k != "service" && k != "scopes" && v.as_str().is_some_and(is_literal) {
                    *v = json!({"no_echo": true});
                }
            }
        }
    }
    if let Some(steps) = out.get_mut("pipeline").and_then(|p| p.get_mut("steps")).and_then(Value::as_array_mut) {
        for s in steps {
            if let Some(t) = s.get_mut("tool") {
                *t = masked(t);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_split_and_named() {
        assert_eq!(
            tokens("Bearer {{secret:sec_abc}} {{context:user}}{{oops}}x"),
            vec![
                Token::Text("Bearer "),
                Token::Secret("sec_abc"),
                Token::Text(" "),
                Token::Context("user"),
                Token::Invalid("{{oops}}"),
                Token::Text("x")
            ]
        );
        assert_eq!(tokens("/users/{id}"), vec![Token::Text("/users/{id}")]);
        assert_eq!(tokens("{{secret:nope}}"), vec![Token::Invalid("{{secret:nope}}")]);
    }

    #[test]
    fn literal_credentials_are_told_from_references() {
        assert!(is_literal("Bearer abc123"));
        assert!(is_literal("abc123"));
        assert!(!is_literal("Bearer {{secret:sec_x}}"));
        assert!(!is_literal("{{context:tok}}"));
        assert!(!is_literal("Basic"));
        assert!(is_credential_header("Authorization") && is_credential_header("X-Api-Key") && !is_credential_header("Accept"));
        assert!(url_has_literal("https://u:pw@h/x"));
        assert!(!url_has_literal("https://u:{{secret:sec_p}}@h/x"));
        assert!(url_has_literal("https://h/x?api_key=abc&q=1"));
        assert!(!url_has_literal("https://h/x?api_key={{secret:sec_k}}&city={city}"));
        assert!(!url_has_literal("https://h/x?city=London"));
    }

    #[test]
    fn masking_hides_literals_and_keeps_references() {
        let def = json!({"name": "t", "execute": {"url": "https://h/?token=abc", "headers": {"Authorization": "Bearer abc", "X-Key": "{{secret:sec_k}}", "Accept": "x"}}});
        let m = masked(&def);
        assert_eq!(m["execute"]["url"], json!({"no_echo": true}));
        assert_eq!(m["execute"]["headers"]["Authorization"], json!({"no_echo": true}));
        assert_eq!(m["execute"]["headers"]["X-Key"], "{{secret:sec_k}}");
        assert_eq!(m["execute"]["headers"]["Accept"], "x");
    }
}
