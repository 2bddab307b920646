//! Google service-account keys: the OAuth 2.0 JWT-bearer grant (RFC 7523) that turns
//! a key file into an access token for Vertex AI. The assertion is an RS256 JWT
//! signed with the key's private half (ring's RSA PKCS#1 v1.5 SHA-256), posted to the
//! key's own `token_uri`; the token it answers is kept ([`TokenCache`]) until shortly
//! before it expires, so a generation's many calls cost one exchange.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use serde::Deserialize;
use serde_json::json;

use crate::llm::secret::Secret;

/// What Vertex calls are authorised for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Where a key that names no `token_uri` exchanges its assertions.
pub const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// How long an assertion is valid (Google's maximum).
const ASSERTION_LIFETIME: Duration = Duration::from_secs(3600);
/// A cached token is not used within this much of its expiry.
const EARLY: Duration = Duration::from_secs(60);
/// The most tokens kept; past it, expired ones go, then all.
const MAX_CACHED: usize = 4096;

/// A service-account key file (`"type": "service_account"`), as Google writes it.
#[derive(Clone, Deserialize)]
pub struct ServiceAccount {
    pub client_email: String,
    private_key: String,
    #[serde(default)]
    pub private_key_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub token_uri: Option<String>,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount").field("client_email", &self.client_email).field("private_key", &"***").finish_non_exhaustive()
    }
}

/// Why a key cannot be used. Never carries any of the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the service-account key's private_key is not a PEM PKCS#8 RSA key")]
    PrivateKey,
    #[error("the service-account key's token_uri is not an http:// or https:// URL")]
    TokenUri,
    #[error("the assertion could not be signed")]
    Sign,
}

impl ServiceAccount {
    /// A key file's JSON, when it is one (`client_email` and `private_key` present).
    pub fn parse(text: &str) -> Option<ServiceAccount> {
        let key: ServiceAccount = serde_json::from_str(text).ok()?;
        (!key.client_email.is_empty() && !key.private_key.is_empty()).then_some(key)
    }

    pub fn token_uri(&self) -> &str {
        self.token_uri.as_deref().unwrap_or(TOKEN_URI)
    }

    /// The key's checks: a usable private key and token URI.
    pub fn check(&self) -> Result<(), KeyError> {
        let uri: hyper::Uri = self.token_uri().parse().map_err(|_| KeyError::TokenUri)?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
            return Err(KeyError::TokenUri);
        }
        self.pair().map(|_| ())
    }

    fn pair(&self) -> Result<RsaKeyPair, KeyError> {
        let body: String = self.private_key.lines().filter(|l| !l.starts_with("-----")).flat_map(|l| l.split_whitespace()).collect();
        let der = STANDARD.decode(body).map_err(|_| KeyError::PrivateKey)?;
        RsaKeyPair::from_pkcs8(&der).map_err(|_| KeyError::PrivateKey)
    }

    /// The signed JWT asserting this account, for `scope`, to its token URI, issued at `now`.
    pub fn assertion(&self, now: SystemTime) -> Result<String, KeyError> {
        let iat = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.private_key_id {
            header["kid"] = kid.clone().into();
        }
        let claims = json!({
            "iss": self.client_email,
            "scope": SCOPE,
            "aud": self.token_uri(),
            "iat": iat,
            "exp": iat + ASSERTION_LIFETIME.as_secs(),
        });
        let signing_input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let pair = self.pair()?;
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(&RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), signing_input.as_bytes(), &mut signature).map_err(|_| KeyError::Sign)?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }

    /// The token request's form body.
    pub fn token_request(&self, now: SystemTime) -> Result<String, KeyError> {
        Ok(format!("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={}", self.assertion(now)?))
    }

    /// What the cache knows this key by: a digest of the account, its key and token URI.
    fn cache_key(&self) -> [u8; 32] {
        let mut d = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [self.client_email.as_str(), self.token_uri(), self.private_key.as_str()] {
            d.update(part.as_bytes());
            d.update(&[0]);
        }
        d.finish().as_ref().try_into().expect("32 bytes")
    }
}

/// A token endpoint's answer: `{"access_token", "expires_in", "token_type"}`.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// The access token in a token endpoint's answer, and how long it lasts.
pub fn read_token(body: &[u8]) -> Option<(Secret, Duration)> {
    let a: TokenAnswer = serde_json::from_slice(body).ok()?;
    (!a.access_token.is_empty()).then(|| (Secret::new(a.access_token), Duration::from_secs(a.expires_in.unwrap_or(3600))))
}

/// Access tokens by key, until shortly before they expire. Shared by every shard (a
/// lock held only to look up or insert, never across a call): one exchange serves the
/// whole server.
#[derive(Default)]
pub struct TokenCache {
    tokens: Mutex<HashMap<[u8; 32], (Secret, Instant)>>,
}

impl TokenCache {
    pub fn get(&self, key: &ServiceAccount) -> Option<Secret> {
        let tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens.get(&key.cache_key()).filter(|(_, until)| Instant::now() < *until).map(|(t, _)| t.clone())
    }

    pub fn forget(&self, key: &ServiceAccount) {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).remove(&key.cache_key());
    }

    pub fn put(&self, key: &ServiceAccount, token: Secret, lasts: Duration) {
        let until = Instant::now() + lasts.saturating_sub(EARLY);
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if tokens.len() >= MAX_CACHED {
            let now = Instant::now();
            tokens.retain(|_, (_, u)| *u > now);
            if tokens.len() >= MAX_CACHED {
                tokens.clear();
            }
        }
        tokens.insert(key.cache_key(), (token, until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_no_rsa_key_is_refused_without_echoing_it() {
        let key =
            ServiceAccount::parse(r#"{"client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"}"#)
                .expect("a key file's shape");
        assert_eq!(key.check(), Err(KeyError::PrivateKey));
        assert!(!format!("{key:?}").contains("bm90"));
        assert!(ServiceAccount::parse(r#"{"apiKey":"x"}"#).is_none());
        assert!(ServiceAccount::parse("plain").is_none());
    }

    #[test]
    fn tokens_are_kept_until_shortly_before_they_expire() {
        let key = ServiceAccount::parse(r#"{"client_email":"a@b","private_key":"k"}"#).unwrap();
        let cache = TokenCache::default();
        assert!(cache.get(&key).is_none());
        cache.put(&key, Secret::new("t"), Duration::from_secs(3600));
        assert_eq!(cache.get(&key).unwrap().expose(), "t");
        cache.put(&key, Secret::new("t"), Duration::from_secs(30));
        assert!(cache.get(&key).is_none(), "within a minute of expiry: fetched again");
        cache.put(&key, Secret::new("t"), Duration::from_secs(3600));
        cache.forget(&key);
        assert!(cache.get(&key).is_none());
        assert_eq!(read_token(br#"{"access_token":"ya29","expires_in":3599,"token_type":"Bearer"}"#).unwrap().1, Duration::from_secs(3599));
        assert!(read_token(b"{}").is_none());
    }
}
