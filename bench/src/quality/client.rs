//! A small blocking client for the AgentLex endpoints the quality harness needs: signup, account,
//! health, create a collection, add a document, search. Plain HTTP/1.1 on loopback.
//!
//! A `429 rate_limited` is waited out (the `retry-after` seconds) and retried, up to a total wait
//! per call; every other unexpected status is an error naming the endpoint, status and body.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("server URL {url:?}: {reason}")]
    Url { url: String, reason: &'static str },
    #[error("{endpoint}: {source}")]
    Transport {
        endpoint: String,
        source: Box<ureq::Error>,
    },
    #[error("{endpoint}: HTTP {status}: {body}")]
    Status {
        endpoint: String,
        status: u16,
        body: String,
    },
    #[error("{endpoint}: HTTP 429 rate_limited for {waited:?}, giving up: {body}")]
    RateLimited {
        endpoint: String,
        waited: Duration,
        body: String,
    },
    #[error("{endpoint}: unexpected response body ({reason}): {body}")]
    Decode {
        endpoint: String,
        reason: String,
        body: String,
    },
}

/// The search modes of `POST /v1/collections/{id}/search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Keyword => "keyword",
            Mode::Semantic => "semantic",
            Mode::Hybrid => "hybrid",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(text: &str) -> Result<Mode, String> {
        match text.trim() {
            "keyword" => Ok(Mode::Keyword),
            "semantic" => Ok(Mode::Semantic),
            "hybrid" => Ok(Mode::Hybrid),
            other => Err(format!("{other:?}: expected keyword, semantic or hybrid")),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Health {
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub embedder: Option<String>,
}

/// `account` of a signup, and the fields of `GET /v1/account` the harness reports.
#[derive(Debug, Clone, Deserialize)]
pub struct Account {
    pub id: String,
    #[serde(default)]
    pub email: Option<String>,
    pub plan: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Signup {
    pub account: Account,
    #[serde(alias = "key")]
    pub api_key: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Collection {
    pub id: String,
    #[serde(default)]
    pub embedder: Option<String>,
}

/// A text document; an absent title is left out of the request.
#[derive(Debug, Clone, Serialize)]
pub struct NewDocument<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    pub text: &'a str,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DocumentCreated {
    pub id: String,
    #[serde(default)]
    pub pages: u64,
    #[serde(default)]
    pub chunks: u64,
    #[serde(default)]
    pub chars: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchRequest<'a> {
    pub query: &'a str,
    pub mode: Mode,
    /// Pages to return, 1..=50.
    pub k: usize,
    pub expand: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SearchResponse {
    pub results: Vec<SearchHit>,
    #[serde(default)]
    pub timings: HashMap<String, f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SearchHit {
    pub rank: u32,
    pub document: DocumentRef,
    pub page: PageRef,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DocumentRef {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PageRef {
    pub n: u32,
}

impl SearchResponse {
    /// Server document ids in rank order, each at its first (best) page: pages roll up to
    /// documents.
    pub fn document_ids(&self) -> Vec<&str> {
        let mut hits: Vec<&SearchHit> = self.results.iter().collect();
        hits.sort_by_key(|hit| hit.rank);
        let mut seen = HashSet::new();
        hits.into_iter()
            .map(|hit| hit.document.id.as_str())
            .filter(|id| seen.insert(*id))
            .collect()
    }

    /// The server's own `timings.totalMs`.
    pub fn total_ms(&self) -> Option<f64> {
        self.timings.get("totalMs").copied()
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    code: String,
}

pub struct Client {
    agent: ureq::Agent,
    base: String,
    key: Option<String>,
    max_rate_wait: Duration,
    rate_limited: AtomicU64,
}

/// The longest a single call keeps waiting out `429 rate_limited` before it fails.
const DEFAULT_MAX_RATE_WAIT: Duration = Duration::from_secs(15 * 60);

impl Client {
    /// `base` is `http://HOST:PORT` (a trailing slash or path is refused: the API lives at `/v1`).
    pub fn new(base: &str) -> Result<Client, ClientError> {
        let base = base.trim_end_matches('/');
        let url_error = |reason| ClientError::Url {
            url: base.to_string(),
            reason,
        };
        let rest = base
            .strip_prefix("http://")
            .ok_or_else(|| url_error("expected http://HOST:PORT (plain HTTP)"))?;
        if rest.is_empty() || rest.contains('/') {
            return Err(url_error("expected http://HOST:PORT with no path"));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build();
        Ok(Client {
            agent: ureq::Agent::new_with_config(config),
            base: base.to_string(),
            key: None,
            max_rate_wait: DEFAULT_MAX_RATE_WAIT,
            rate_limited: AtomicU64::new(0),
        })
    }

    /// Authenticates every later call with `Authorization: Bearer {key}`.
    pub fn with_key(mut self, key: impl Into<String>) -> Client {
        self.key = Some(key.into());
        self
    }

    /// How long one call may keep waiting out `429 rate_limited` in total.
    pub fn with_max_rate_wait(mut self, wait: Duration) -> Client {
        self.max_rate_wait = wait;
        self
    }

    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// How many `429 rate_limited` answers were waited out so far.
    pub fn rate_limited_count(&self) -> u64 {
        self.rate_limited.load(Ordering::Relaxed)
    }

    pub fn health(&self) -> Result<Health, ClientError> {
        self.call("GET", "/v1/health", None, 200)
    }

    /// `POST /v1/signup`; the returned key is not installed: see [`Client::with_key`].
    pub fn signup(&self, email: &str) -> Result<Signup, ClientError> {
        let body = json_body(&serde_json::json!({ "email": email }));
        self.call("POST", "/v1/signup", Some(body), 201)
    }

    pub fn account(&self) -> Result<Account, ClientError> {
        self.call("GET", "/v1/account", None, 200)
    }

    pub fn create_collection(&self, name: &str) -> Result<Collection, ClientError> {
        let body = json_body(&serde_json::json!({ "name": name }));
        self.call("POST", "/v1/collections", Some(body), 201)
    }

    pub fn add_document(
        &self,
        collection: &str,
        doc: &NewDocument<'_>,
    ) -> Result<DocumentCreated, ClientError> {
        let path = format!("/v1/collections/{collection}/documents");
        self.call("POST", &path, Some(json_body(doc)), 201)
    }

    pub fn search(
        &self,
        collection: &str,
        request: &SearchRequest<'_>,
    ) -> Result<SearchResponse, ClientError> {
        let path = format!("/v1/collections/{collection}/search");
        self.call("POST", &path, Some(json_body(request)), 200)
    }

    /// `body` present means POST, absent means GET.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        path: &str,
        body: Option<Vec<u8>>,
        expected: u16,
    ) -> Result<T, ClientError> {
        let endpoint = format!("{method} {path}");
        let started = Instant::now();
        loop {
            let reply = self.send_once(path, body.as_deref(), &endpoint)?;
            if reply.status == expected {
                return serde_json::from_str(&reply.body).map_err(|e| ClientError::Decode {
                    endpoint,
                    reason: e.to_string(),
                    body: reply.body,
                });
            }
            let Some(wait) = reply.rate_limit_wait() else {
                return Err(ClientError::Status {
                    endpoint,
                    status: reply.status,
                    body: reply.body,
                });
            };
            if started.elapsed() + wait > self.max_rate_wait {
                return Err(ClientError::RateLimited {
                    endpoint,
                    waited: started.elapsed(),
                    body: reply.body,
                });
            }
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            thread::sleep(wait);
        }
    }

    fn send_once(
        &self,
        path: &str,
        body: Option<&[u8]>,
        endpoint: &str,
    ) -> Result<Reply, ClientError> {
        let url = format!("{}{path}", self.base);
        let auth = self.key.as_ref().map(|key| format!("Bearer {key}"));
        let result = match body {
            Some(bytes) => {
                let mut request = self
                    .agent
                    .post(&url)
                    .header("content-type", "application/json");
                if let Some(auth) = &auth {
                    request = request.header("authorization", auth);
                }
                request.send(bytes)
            }
            None => {
                let mut request = self.agent.get(&url);
                if let Some(auth) = &auth {
                    request = request.header("authorization", auth);
                }
                request.call()
            }
        };
        let transport = |source| ClientError::Transport {
            endpoint: endpoint.to_string(),
            source: Box::new(source),
        };
        let mut response = result.map_err(transport)?;
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = response.body_mut().read_to_string().map_err(transport)?;
        Ok(Reply {
            status: response.status().as_u16(),
            retry_after,
            body,
        })
    }
}

struct Reply {
    status: u16,
    retry_after: Option<u64>,
    body: String,
}

impl Reply {
    /// How long to wait before retrying, when this is a `429 rate_limited` (and not, say,
    /// `allowance_exceeded`, which waiting does not cure).
    fn rate_limit_wait(&self) -> Option<Duration> {
        if self.status != 429 {
            return None;
        }
        let error: ErrorBody = serde_json::from_str(&self.body).ok()?;
        if error.error.code != "rate_limited" {
            return None;
        }
        let seconds = self.retry_after.unwrap_or(1);
        Some(Duration::from_secs(seconds).max(Duration::from_millis(100)))
    }
}

/// Serialized once, before the retry loop.
fn json_body(value: &impl Serialize) -> Vec<u8> {
    // These bodies are plain structs of strings, numbers and a unit enum: they cannot fail.
    serde_json::to_vec(value).expect("request bodies serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_roll_up_to_their_first_document_occurrence() {
        let body = r#"{"results":[
            {"rank":2,"document":{"id":"d2"},"page":{"n":0}},
            {"rank":1,"document":{"id":"d1"},"page":{"n":3}},
            {"rank":3,"document":{"id":"d1"},"page":{"n":0}},
            {"rank":4,"document":{"id":"d3"},"page":{"n":1}}],
            "timings":{"totalMs":7.5}}"#;
        let response: SearchResponse = serde_json::from_str(body).unwrap();
        assert_eq!(response.document_ids(), ["d1", "d2", "d3"]);
        assert_eq!(response.total_ms(), Some(7.5));
    }

    #[test]
    fn only_http_urls_without_a_path() {
        assert!(Client::new("http://127.0.0.1:7700").is_ok());
        assert!(Client::new("http://127.0.0.1:7700/").is_ok());
        assert!(Client::new("https://127.0.0.1:7700").is_err());
        assert!(Client::new("http://127.0.0.1:7700/v1").is_err());
    }

    #[test]
    fn modes_parse_and_serialize_as_the_api_spells_them() {
        assert_eq!("semantic".parse::<Mode>(), Ok(Mode::Semantic));
        assert!("bm25".parse::<Mode>().is_err());
        let request = SearchRequest {
            query: "q",
            mode: Mode::Hybrid,
            k: 10,
            expand: false,
        };
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"query":"q","mode":"hybrid","k":10,"expand":false}"#
        );
    }
}
