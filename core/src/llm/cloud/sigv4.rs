//! AWS Signature Version 4 (header form) over ring's HMAC-SHA256 and SHA-256: what a
//! Bedrock Runtime call carries instead of an API key. `aws-sigv4` (awslabs) would do
//! it too, but brings the smithy runtime's tree (two `http` majors, its own types) for
//! one function; this is that function, checked against AWS's published test-suite
//! vectors (`tests` below: get-vanilla, post-vanilla, get-vanilla-query-order-key-case).
//!
//! Paths are encoded as the AWS SDKs do for every service but S3: the request path
//! is already percent-encoded (a Bedrock model id's `:` is `%3A`), and the canonical
//! URI encodes it again (`%253A`).

use std::time::SystemTime;

use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::{HeaderMap, Method, Uri};
use ring::{digest, hmac};

use crate::llm::secret::Secret;

/// An IAM credential: access key id, secret key, and the session token temporary
/// credentials come with.
#[derive(Debug, Clone)]
pub struct AwsKey {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
}

/// Where a signature is valid: the region and the service's signing name
/// (`bedrock` for Bedrock Runtime).
#[derive(Debug, Clone)]
pub struct AwsScope {
    pub region: String,
    pub service: String,
}

/// Signs a request: adds `x-amz-date`, `x-amz-security-token` (with a session token)
/// and `authorization` to `headers`. Every header already in `headers`, and `host`
/// (the URI's authority, as both transports send it), is signed. `Err` names what
/// cannot go in a header.
pub fn sign(
    key: &AwsKey,
    scope: &AwsScope,
    method: &Method,
    uri: &Uri,
    headers: &mut HeaderMap,
    body: &[u8],
    at: SystemTime,
) -> Result<(), &'static str> {
    let amz_date = amz_date(at);
    headers.insert(HeaderName::from_static("x-amz-date"), HeaderValue::try_from(amz_date.as_str()).map_err(|_| "the date")?);
    if let Some(token) = &key.session_token {
        let mut v = HeaderValue::try_from(token.expose()).map_err(|_| "the session token")?;
        v.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-amz-security-token"), v);
    }
    let host = uri.authority().map(|a| a.as_str().rsplit('@').next().unwrap_or_default().to_owned()).ok_or("the URL's host")?;
    let (canonical_headers, signed) = canonical_headers(headers, &host);
    let request = canonical_request(method, uri, &canonical_headers, &signed, &hex(digest::digest(&digest::SHA256, body).as_ref()));
    let date = &amz_date[..8];
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}", hex(digest::digest(&digest::SHA256, request.as_bytes()).as_ref()));
    let signature = hex(&mac(&signing_key(key.secret_access_key.expose(), date, scope), to_sign.as_bytes()));
    let value = format!("AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}", key.access_key_id);
    let mut v = HeaderValue::try_from(value).map_err(|_| "the access key id")?;
    v.set_sensitive(true);
    headers.insert(AUTHORIZATION, v);
    Ok(())
}

/// `YYYYMMDDTHHMMSSZ`.
fn amz_date(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string().chars().filter(|c| *c != '-' && *c != ':').collect()
}

/// The headers' canonical lines (`name:value\n`, names lowercase and sorted, values
/// trimmed with inner runs of spaces folded, repeated names joined by `,`) and the
/// signed-headers list.
fn canonical_headers(headers: &HeaderMap, host: &str) -> (String, String) {
    let mut lines: Vec<(String, String)> = vec![("host".into(), host.to_owned())];
    for name in headers.keys().filter(|n| *n != AUTHORIZATION && n.as_str() != "host") {
        let values: Vec<String> = headers.get_all(name).iter().map(|v| fold(&String::from_utf8_lossy(v.as_bytes()))).collect();
        lines.push((name.as_str().to_owned(), values.join(",")));
    }
    lines.sort();
    let canonical = lines.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let signed = lines.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(";");
    (canonical, signed)
}

fn fold(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn canonical_request(method: &Method, uri: &Uri, headers: &str, signed: &str, payload_hash: &str) -> String {
    let path = if uri.path().is_empty() { "/" } else { uri.path() };
    let path: Vec<String> = path.split('/').map(uri_encode).collect();
    let mut query: Vec<&str> = uri.query().unwrap_or_default().split('&').filter(|p| !p.is_empty()).collect();
    query.sort_unstable();
    let query: Vec<String> = query.iter().map(|p| if p.contains('=') { (*p).to_owned() } else { format!("{p}=") }).collect();
    format!("{method}\n{}\n{}\n{headers}\n{signed}\n{payload_hash}", path.join("/"), query.join("&"))
}

/// RFC 3986 encoding as SigV4 wants it: every byte but `A-Za-z0-9-._~` as `%XX`.
pub fn uri_encode(s: &str) -> String {
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

fn signing_key(secret: &str, date: &str, scope: &AwsScope) -> Vec<u8> {
    let k = mac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = mac(&k, scope.region.as_bytes());
    let k = mac(&k, scope.service.as_bytes());
    mac(&k, b"aws4_request")
}

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data).as_ref().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test suite's credential, scope and instant (2015-08-30T12:36:00Z).
    fn suite() -> (AwsKey, AwsScope, SystemTime) {
        let key = AwsKey {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: None,
        };
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160);
        (key, AwsScope { region: "us-east-1".into(), service: "service".into() }, at)
    }

    fn signed(method: Method, url: &str) -> String {
        let (key, scope, at) = suite();
        let mut h = HeaderMap::new();
        sign(&key, &scope, &method, &url.parse().unwrap(), &mut h, b"", at).unwrap();
        assert_eq!(h["x-amz-date"], "20150830T123600Z");
        h[AUTHORIZATION].to_str().unwrap().to_owned()
    }

    const PREFIX: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=";

    #[test]
    fn the_aws_test_suite_vectors_sign_as_published() {
        let cases = [
            (Method::GET, "https://example.amazonaws.com/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
            (Method::POST, "https://example.amazonaws.com/", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
            (
                Method::GET,
                "https://example.amazonaws.com/?Param2=value2&Param1=value1",
                "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
            ),
        ];
        for (method, url, signature) in cases {
            assert_eq!(signed(method, url), format!("{PREFIX}{signature}"), "{url}");
        }
    }

    #[test]
    fn a_session_token_is_signed_and_a_model_ids_colon_is_encoded_twice() {
        let (mut key, scope, at) = suite();
        key.session_token = Some(Secret::new("token-value"));
        let mut h = HeaderMap::new();
        let uri: Uri = "http://127.0.0.1:9/model/anthropic.claude-v2%3A1/converse".parse().unwrap();
        sign(&key, &scope, &Method::POST, &uri, &mut h, b"{}", at).unwrap();
        assert_eq!(h["x-amz-security-token"], "token-value");
        assert!(h[AUTHORIZATION].to_str().unwrap().contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"));
        let (lines, _) = canonical_headers(&h, "127.0.0.1:9");
        let request = canonical_request(&Method::POST, &uri, &lines, "", "");
        assert!(request.starts_with("POST\n/model/anthropic.claude-v2%253A1/converse\n\n"), "{request}");
    }
}
