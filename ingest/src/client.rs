//! The few AgentLex calls `quarry ingest` makes (create a collection, list its documents' source
//! ids, add a document), blocking, over one keep-alive pool that every worker thread shares.
//!
//! `429 rate_limited` (and `too_many_concurrent`, and a `503` with `retry-after`) are waited
//! out by their `retry-after`, and every worker waits with the one that was told: the
//! [`Gate`] holds them all until then, and a reply that says the bucket is empty
//! (`x-ratelimit-remaining: 0`) closes it for `x-ratelimit-reset` seconds before anyone is
//! refused. A new account's plan allows a burst of 20 and then one call a second, so a
//! large run settles into that pace instead of a storm of refusals.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::error::IngestError;
use super::payload::SOURCE_ID;

/// What the server said about one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Created(Created),
    /// A status and the stable code and message of its `{error: {code, message}}` body.
    Refused {
        status: u16,
        code: String,
        message: String,
    },
}

/// The fields of `DocumentCreated` the summary counts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Created {
    pub id: String,
    #[serde(default)]
    pub pages: u64,
    #[serde(default)]
    pub chunks: u64,
    #[serde(default)]
    pub chars: u64,
}

/// Codes that every other document would get too: the run stops on them.
const FATAL: &[&str] = &["missing_key", "invalid_key", "collection_not_found", "not_found", "embedder_mismatch"];

pub struct Client {
    agent: ureq::Agent,
    base: String,
    auth: String,
    gate: Gate,
    max_wait: Duration,
    waited_out: AtomicU64,
}

impl Client {
    /// `base` is `http://HOST:PORT` or `https://HOST:PORT`, with no path.
    pub fn new(base: &str, key: &str, max_wait: Duration) -> Result<Client, IngestError> {
        let base = base.trim_end_matches('/');
        let error = |reason| IngestError::Url { url: base.to_owned(), reason };
        let rest = base.strip_prefix("http://").or_else(|| base.strip_prefix("https://")).ok_or_else(|| error("expected http://HOST:PORT"))?;
        if rest.is_empty() || rest.contains('/') {
            return Err(error("expected http://HOST:PORT with no path (the API lives at /v1)"));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            // A large document is chunked and embedded before its 201.
            .timeout_global(Some(Duration::from_secs(600)))
            .build();
        Ok(Client {
            agent: ureq::Agent::new_with_config(config),
            base: base.to_owned(),
            auth: format!("Bearer {key}"),
            gate: Gate::default(),
            max_wait,
            waited_out: AtomicU64::new(0),
        })
    }

    /// How many `429`s (or `503`s) were waited out so far.
    pub fn waited_out(&self) -> u64 {
        self.waited_out.load(Ordering::Relaxed)
    }

    /// `POST /v1/collections`; its id.
    pub fn create_collection(&self, name: &str, embedder: Option<&str>) -> Result<String, IngestError> {
        #[derive(Deserialize)]
        struct Collection {
            id: String,
        }
        let body = match embedder {
            Some(e) => serde_json::json!({ "name": name, "settings": { "embedder": e } }),
            None => serde_json::json!({ "name": name }),
        };
        let body = serde_json::to_vec(&body).expect("a name serializes");
        let reply = self.call("/v1/collections", Some(&body))?;
        Ok(reply.expect::<Collection>(201)?.id)
    }

    /// Every `metadata.source_id` the collection's documents hold, from one `GET …/documents`.
    pub fn source_ids(&self, collection: &str) -> Result<HashSet<String>, IngestError> {
        #[derive(Deserialize)]
        struct List {
            documents: Vec<Row>,
        }
        #[derive(Deserialize)]
        struct Row {
            #[serde(default)]
            metadata: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let reply = self.call(&format!("/v1/collections/{collection}/documents"), None)?;
        let list = reply.expect::<List>(200)?;
        let ids = list.documents.into_iter().filter_map(|row| match row.metadata?.remove(SOURCE_ID)? {
            serde_json::Value::String(id) => Some(id),
            _ => None,
        });
        Ok(ids.collect())
    }

    /// `POST /v1/collections/{collection}/documents` with a prepared body.
    pub fn add(&self, collection: &str, body: &[u8]) -> Result<Answer, IngestError> {
        let reply = self.call(&format!("/v1/collections/{collection}/documents"), Some(body))?;
        if reply.status == 201 {
            return reply.expect(201).map(Answer::Created);
        }
        let (code, message) = reply.error();
        if reply.status == 401 || FATAL.contains(&code.as_str()) {
            return Err(IngestError::Refused { endpoint: reply.endpoint, status: reply.status, code, message });
        }
        Ok(Answer::Refused { status: reply.status, code, message })
    }

    /// One call, repeated while the server says to wait and the waits stay under `max_wait`.
    /// `body` present means POST, absent GET.
    fn call(&self, path: &str, body: Option<&[u8]>) -> Result<Reply, IngestError> {
        let endpoint = format!("{} {path}", if body.is_some() { "POST" } else { "GET" });
        let started = Instant::now();
        loop {
            self.gate.wait();
            let reply = self.send(path, body, &endpoint)?;
            match (reply.empty_bucket, reply.wait()) {
                (Some(reset), _) => self.gate.hold(reset),
                (None, None) => self.gate.open(),
                (None, Some(_)) => {}
            }
            match reply.wait() {
                Some(wait) if started.elapsed() + wait <= self.max_wait => {
                    self.waited_out.fetch_add(1, Ordering::Relaxed);
                    self.gate.hold(wait);
                }
                _ => return Ok(reply),
            }
        }
    }

    fn send(&self, path: &str, body: Option<&[u8]>, endpoint: &str) -> Result<Reply, IngestError> {
        let url = format!("{}{path}", self.base);
        let result = match body {
            Some(bytes) => self.agent.post(&url).header("authorization", &self.auth).header("content-type", "application/json").send(bytes),
            None => self.agent.get(&url).header("authorization", &self.auth).call(),
        };
        let transport = |source| IngestError::Transport { endpoint: endpoint.to_owned(), source: Box::new(source) };
        let mut response = result.map_err(transport)?;
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
        let retry_after = header("retry-after");
        let empty_bucket = match (header("x-ratelimit-remaining"), header("x-ratelimit-reset")) {
            (Some(0), Some(reset)) if reset > 0 => Some(Duration::from_secs(reset)),
            _ => None,
        };
        let status = response.status().as_u16();
        // A listing of a large collection is larger than ureq's default 10 MB cap.
        let text = response.body_mut().with_config().limit(u64::MAX).read_to_string().map_err(transport)?;
        Ok(Reply { endpoint: endpoint.to_owned(), status, retry_after, empty_bucket, body: text })
    }
}

struct Reply {
    endpoint: String,
    status: u16,
    retry_after: Option<u64>,
    /// `x-ratelimit-reset` when `x-ratelimit-remaining` is 0.
    empty_bucket: Option<Duration>,
    body: String,
}

impl Reply {
    /// How long to wait before trying again, when waiting is what the answer asks for.
    fn wait(&self) -> Option<Duration> {
        let waitable = match self.status {
            429 => matches!(self.error().0.as_str(), "rate_limited" | "too_many_concurrent"),
            503 => self.retry_after.is_some(),
            _ => false,
        };
        // retry-after counts whole seconds; 0 still means "not yet".
        waitable.then(|| Duration::from_secs(self.retry_after.unwrap_or(1)).max(Duration::from_millis(100)))
    }

    /// The body's `error.code` and `error.message`, or `http_<status>` and the body itself.
    fn error(&self) -> (String, String) {
        #[derive(Deserialize)]
        struct Body {
            error: Detail,
        }
        #[derive(Deserialize)]
        struct Detail {
            code: String,
            #[serde(default)]
            message: String,
        }
        match serde_json::from_str::<Body>(&self.body) {
            Ok(b) => (b.error.code, b.error.message),
            Err(_) => (format!("http_{}", self.status), self.body.chars().take(300).collect()),
        }
    }

    fn expect<T: serde::de::DeserializeOwned>(self, status: u16) -> Result<T, IngestError> {
        if self.status != status {
            let (code, message) = self.error();
            return Err(IngestError::Refused { endpoint: self.endpoint, status: self.status, code, message });
        }
        serde_json::from_str(&self.body).map_err(|e| IngestError::Decode { endpoint: self.endpoint, reason: e.to_string(), body: self.body })
    }
}

/// When workers may send. After the server has said to wait (a refusal's `retry-after`, or
/// an empty bucket's `x-ratelimit-reset`), nobody sends before then, and then one worker at a
/// time, that wait apart, until a reply shows tokens to spare again: at a plan's sustained rate
/// the run takes each token as it comes instead of every worker racing for it.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    until: Option<Instant>,
    /// The spacing between sends while the bucket is spent.
    pace: Option<Duration>,
}

impl Gate {
    fn wait(&self) {
        loop {
            let left = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                match state.until.map(|t| t.saturating_duration_since(now)) {
                    Some(left) if !left.is_zero() => left,
                    _ => {
                        state.until = state.pace.map(|pace| now + pace);
                        return;
                    }
                }
            };
            thread::sleep(left);
        }
    }

    fn hold(&self, wait: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let then = Instant::now() + wait;
        state.until = Some(state.until.map_or(then, |t| t.max(then)));
        state.pace = Some(wait);
    }

    /// The bucket has tokens again: everyone may send.
    fn open(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.pace.take().is_some() {
            state.until = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, retry_after: Option<u64>, body: &str) -> Reply {
        Reply { endpoint: "POST /x".into(), status, retry_after, empty_bucket: None, body: body.into() }
    }

    #[test]
    fn only_a_rate_refusal_or_an_overload_is_waited_out() {
        let rate = r#"{"error":{"code":"rate_limited","message":"m"}}"#;
        assert_eq!(reply(429, Some(3), rate).wait(), Some(Duration::from_secs(3)));
        assert_eq!(reply(429, Some(0), rate).wait(), Some(Duration::from_millis(100)));
        assert_eq!(reply(429, None, r#"{"error":{"code":"storage_exceeded","message":"m"}}"#).wait(), None);
        assert_eq!(reply(503, Some(1), "{}").wait(), Some(Duration::from_secs(1)));
        assert_eq!(reply(503, None, "{}").wait(), None);
        assert_eq!(reply(400, Some(1), rate).wait(), None);
    }

    #[test]
    fn an_error_body_reads_as_code_and_message_or_the_status() {
        assert_eq!(
            reply(413, None, r#"{"error":{"code":"document_too_large","message":"big"}}"#).error(),
            ("document_too_large".into(), "big".into())
        );
        assert_eq!(reply(502, None, "bad gateway").error(), ("http_502".into(), "bad gateway".into()));
    }

    #[test]
    fn the_gate_holds_until_the_latest_wait_then_lets_one_through_per_wait() {
        let gate = Gate::default();
        let start = Instant::now();
        gate.wait();
        gate.wait();
        assert!(start.elapsed() < Duration::from_millis(50), "an open gate does not wait");
        gate.hold(Duration::from_millis(150));
        gate.hold(Duration::from_millis(100));
        gate.wait();
        assert!(start.elapsed() >= Duration::from_millis(150), "the latest moment wins");
        gate.wait();
        assert!(start.elapsed() >= Duration::from_millis(250), "then one send per wait");
        gate.open();
        let opened = Instant::now();
        gate.wait();
        gate.wait();
        assert!(opened.elapsed() < Duration::from_millis(50), "tokens again: no pacing");
    }

    #[test]
    fn urls_are_a_scheme_host_and_port() {
        let new = |url| Client::new(url, "k", Duration::ZERO).map(|_| ());
        assert!(new("http://127.0.0.1:4400").is_ok());
        assert!(new("https://quarry.example:443/").is_ok());
        assert!(new("127.0.0.1:4400").is_err());
        assert!(new("http://127.0.0.1:4400/v1").is_err());
    }
}
