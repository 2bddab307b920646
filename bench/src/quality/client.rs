//! A small blocking client for the AgentLex endpoints the quality harness needs: signup, account,
//! health, create a collection, evaluate. Plain HTTP/1.1 on loopback. (Documents go in through
//! `quarry ingest`'s code, `quarry::ingest_cli`: see `run::index`.)
//!
//! A `429 rate_limited` is waited out (the `retry-after` seconds) and retried, up to a total wait
//! per call; every other unexpected status is an error naming the endpoint, status and body.

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
    Transport { endpoint: String, source: Box<ureq::Error> },
    #[error("{endpoint}: HTTP {status}: {body}")]
    Status { endpoint: String, status: u16, body: String },
    #[error("{endpoint}: HTTP 429 rate_limited for {waited:?}, giving up: {body}")]
    RateLimited { endpoint: String, waited: Duration, body: String },
    #[error("{endpoint}: unexpected response body ({reason}): {body}")]
    Decode { endpoint: String, reason: String, body: String },
}

/// The search modes, as `POST /v1/collections/{id}/evaluate` names its variants.
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

/// The most questions one `POST /v1/collections/{id}/evaluate` may ask.
pub const MAX_QUESTIONS: usize = 1000;

/// `EvaluateRequest`: questions run in each variant at `k` (1..=50), every search with the
/// same `expand`.
#[derive(Debug, Clone, Serialize)]
pub struct EvaluateRequest<'a> {
    pub questions: Vec<EvalQuestion<'a>>,
    pub k: usize,
    pub variants: Vec<Mode>,
    /// Sent always: the endpoint's default is `true`.
    pub expand: bool,
}

/// `EvalQuestion`: a query and its relevant items, with one gain per item.
#[derive(Debug, Clone, Serialize)]
pub struct EvalQuestion<'a> {
    pub query: &'a str,
    pub relevant: Vec<RelevantDocument<'a>>,
    pub gains: Vec<f64>,
}

/// `RelevantItem` naming a whole document by its server id: it resolves when the document has
/// one page.
#[derive(Debug, Clone, Serialize)]
pub struct RelevantDocument<'a> {
    pub document: &'a str,
}

/// The fields of `EvaluateResponse` the harness reads; the server's own means are left out
/// (see [`super::answers`]).
#[derive(Debug, Clone, Deserialize)]
pub struct EvaluateResponse {
    pub n: usize,
    pub k: usize,
    #[serde(rename = "perQuestion")]
    pub per_question: Vec<PerQuestion>,
    pub notes: Vec<String>,
}

/// One question in one variant.
#[derive(Debug, Clone, Deserialize)]
pub struct PerQuestion {
    pub query: String,
    pub variant: String,
    /// nDCG@k over the resolved relevant pages, rounded to 4 decimals.
    pub ndcg: f64,
    #[serde(rename = "latencyMs")]
    pub latency_ms: f64,
    /// Citations in result order.
    pub ranked: Vec<String>,
    /// The relevant items found in the first k.
    pub hits: Vec<EvalHit>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EvalHit {
    /// How the item was named: for a document named without a page, its id.
    pub item: String,
    /// From 1.
    pub rank: usize,
    pub citation: String,
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
        let url_error = |reason| ClientError::Url { url: base.to_string(), reason };
        let rest = base.strip_prefix("http://").ok_or_else(|| url_error("expected http://HOST:PORT (plain HTTP)"))?;
        if rest.is_empty() || rest.contains('/') {
            return Err(url_error("expected http://HOST:PORT with no path"));
        }
        let config = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(300))).build();
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

    /// `http://HOST:PORT`, as given to [`Client::new`].
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn max_rate_wait(&self) -> Duration {
        self.max_rate_wait
    }

    /// How many `429 rate_limited` answers were waited out so far.
    pub fn rate_limited_count(&self) -> u64 {
        self.rate_limited.load(Ordering::Relaxed)
    }

    /// `GET /v1/collections/{id}`.
    pub fn collection(&self, id: &str) -> Result<Collection, ClientError> {
        self.call("GET", &format!("/v1/collections/{id}"), None, 200)
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

    pub fn evaluate(&self, collection: &str, request: &EvaluateRequest<'_>) -> Result<EvaluateResponse, ClientError> {
        let path = format!("/v1/collections/{collection}/evaluate");
        self.call("POST", &path, Some(json_body(request)), 200)
    }

    /// `body` present means POST, absent means GET.
    fn call<T: serde::de::DeserializeOwned>(&self, method: &'static str, path: &str, body: Option<Vec<u8>>, expected: u16) -> Result<T, ClientError> {
        let endpoint = format!("{method} {path}");
        let started = Instant::now();
        loop {
            let reply = self.send_once(path, body.as_deref(), &endpoint)?;
            if reply.status == expected {
                return serde_json::from_str(&reply.body).map_err(|e| ClientError::Decode { endpoint, reason: e.to_string(), body: reply.body });
            }
            let Some(wait) = reply.rate_limit_wait() else {
                return Err(ClientError::Status { endpoint, status: reply.status, body: reply.body });
            };
            if started.elapsed() + wait > self.max_rate_wait {
                return Err(ClientError::RateLimited { endpoint, waited: started.elapsed(), body: reply.body });
            }
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            thread::sleep(wait);
        }
    }

    fn send_once(&self, path: &str, body: Option<&[u8]>, endpoint: &str) -> Result<Reply, ClientError> {
        let url = format!("{}{path}", self.base);
        let auth = self.key.as_ref().map(|key| format!("Bearer {key}"));
        let result = match body {
            Some(bytes) => {
                let mut request = self.agent.post(&url).header("content-type", "application/json");
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
        let transport = |source| ClientError::Transport { endpoint: endpoint.to_string(), source: Box::new(source) };
        let mut response = result.map_err(transport)?;
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
        let body = response.body_mut().read_to_string().map_err(transport)?;
        Ok(Reply { status: response.status().as_u16(), retry_after, body })
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
    fn an_evaluate_answer_reads_as_the_spec_spells_it() {
        let body = r#"{"n":1,"k":50,"embedder":"e","reranker":null,
            "variants":{"hybrid":{"ndcg":1}},
            "perQuestion":[{"query":"q","variant":"hybrid","ndcg":0.6309,"firstHit":2,
                "latencyMs":7.5,"missing":[],"ranked":["AL-00000001","AL-00000002"],
                "hits":[{"item":"doc_2","rank":2,"citation":"AL-00000002"}]}],
            "notes":["Search warning: w"]}"#;
        let r: EvaluateResponse = serde_json::from_str(body).unwrap();
        assert_eq!((r.n, r.k, r.notes.len()), (1, 50, 1));
        let q = &r.per_question[0];
        assert_eq!((q.latency_ms, q.ranked.len()), (7.5, 2));
        assert_eq!((q.hits[0].item.as_str(), q.hits[0].rank), ("doc_2", 2));
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
        let request = EvaluateRequest {
            questions: vec![EvalQuestion { query: "q", relevant: vec![RelevantDocument { document: "doc_1" }], gains: vec![2.0] }],
            k: 50,
            variants: vec![Mode::Hybrid],
            expand: false,
        };
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"questions":[{"query":"q","relevant":[{"document":"doc_1"}],"gains":[2.0]}],"k":50,"variants":["hybrid"],"expand":false}"#
        );
    }
}
