//! AWS Signature Version 4 (header form): what a Bedrock Runtime call carries instead
//! of an API key, signed by awslabs' `aws-sigv4` (the signer the AWS SDKs use), held
//! here by AWS's published test-suite vectors (`tests` below: get-vanilla,
//! post-vanilla, get-vanilla-query-order-key-case).
//!
//! Paths are encoded as the AWS SDKs do for every service but S3: the request path
//! is already percent-encoded (a Bedrock model id's `:` is `%3A`), and the canonical
//! URI encodes it again (`%253A`: the crate's default, `PercentEncodingMode::Double`).

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::{HeaderMap, Method, Uri};

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
/// and `authorization` to `headers`. The headers already in `headers` but the ones
/// proxies change (user-agent, transfer-encoding), and `host` (the URI's authority, as
/// both transports send it), are signed. `Err` names what cannot be signed.
pub fn sign(
    key: &AwsKey,
    scope: &AwsScope,
    method: &Method,
    uri: &Uri,
    headers: &mut HeaderMap,
    body: &[u8],
    at: SystemTime,
) -> Result<(), &'static str> {
    let identity = Credentials::new(
        key.access_key_id.clone(),
        key.secret_access_key.expose().to_owned(),
        key.session_token.as_ref().map(|t| t.expose().to_owned()),
        None,
        "quarry-ai-provider",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&scope.region)
        .name(&scope.service)
        .time(at)
        .settings(SigningSettings::default())
        .build()
        .map_err(|_| "the signing parameters")?
        .into();
    let mut given = Vec::with_capacity(headers.len());
    for (name, value) in headers.iter() {
        given.push((name.as_str(), value.to_str().map_err(|_| "a header that is not text")?));
    }
    let url = uri.to_string();
    let request = SignableRequest::new(method.as_str(), url.as_str(), given.into_iter(), SignableBody::Bytes(body)).map_err(|_| "the URL")?;
    let (instructions, _) = aws_sigv4::http_request::sign(request, &params).map_err(|_| "the request")?.into_parts();
    let (added, _) = instructions.into_parts();
    for header in added {
        let name = HeaderName::from_bytes(header.name().as_bytes()).map_err(|_| "a signing header's name")?;
        let mut value = HeaderValue::try_from(header.value()).map_err(|_| "a signing header's value")?;
        value.set_sensitive(header.sensitive() || name == AUTHORIZATION);
        headers.insert(name, value);
    }
    Ok(())
}

/// RFC 3986 encoding as SigV4 wants it: every byte but `A-Za-z0-9-._~` as `%XX` (how
/// a Bedrock model id goes into its URL's path).
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
        let auth = h[AUTHORIZATION].to_str().unwrap().to_owned();
        assert!(auth.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"), "{auth}");
        // The canonical request AWS would compute, with the path encoded twice.
        let canonical = "POST\n/model/anthropic.claude-v2%253A1/converse\n\nhost:127.0.0.1:9\nx-amz-date:20150830T123600Z\nx-amz-security-token:token-value\n\nhost;x-amz-date;x-amz-security-token\n44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        let digest = hex(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()).as_ref());
        let to_sign = format!("AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n{digest}");
        let mut k = mac(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", b"20150830");
        for part in [&b"us-east-1"[..], b"service", b"aws4_request"] {
            k = mac(&k, part);
        }
        assert!(auth.ends_with(&format!("Signature={}", hex(&mac(&k, to_sign.as_bytes())))), "{auth}");
    }

    fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
        ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key), data).as_ref().to_vec()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
