//! Outbound HTTP for model calls, on two paths chosen by the provider's scheme:
//!
//! - `http://` — local and LAN model servers (vLLM, llama.cpp, Ollama), the path where
//!   gateway overhead shows: [`native`] runs on the calling shard itself, hyper's
//!   HTTP/1.1 client over glommio streams with a shard-local keep-alive [`pool`] and a
//!   [`dns`] cache fed from glommio's blocking pool. No thread hop, no channel.
//! - `https://` — hosted providers: [`remote`], hyper-util's pooled client on the
//!   process's one outbound tokio thread ([`crate::net::outbound`]), over rustls (ring) and HTTP/2 by ALPN. A hosted call costs tens of
//!   milliseconds of network; the hop to that thread costs microseconds, so TLS stays
//!   there rather than a second TLS stack on the shards.
//!
//! Both run the same attempt loop ([`attempts`]): send, classify a failure, retry per
//! policy with backoff, jitter and `Retry-After`. Dropping the caller's future cancels
//! the call: the attempt or body read in progress is dropped and its connection closed.
//!
//! A transport is made for one [`Trust`]: the operator's configured providers, or the
//! destinations tenants supply (`/api/v1` AI providers), which both paths check against
//! the egress policy at every connect, after resolution ([`pool`], [`guarded`]), and
//! never put on a connection made for the other.

mod body;
pub mod dns;
pub mod guarded;
mod native;
pub mod pool;
pub mod remote;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::{HeaderMap, Method, StatusCode, Uri};

pub use body::Body;
pub use remote::{check_roots, TransportError};

use super::classify::parse_retry_after;
use super::config::TlsRoots;
use super::error::{ErrorClass, ProviderError};
use super::manifest::Manifest;
use super::retry::{random, RetryPolicy};
use crate::net::egress::{Trust, REFUSED};

/// One call to make; borrowed from its provider for the native path.
pub struct Call<'a> {
    pub manifest: &'a Arc<Manifest>,
    pub retry: &'a RetryPolicy,
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Until the answer's head arrives (connect included).
    pub timeout: Duration,
}

/// A 2xx answer: its head, and its body as it arrives.
pub struct Upstream {
    pub headers: HeaderMap,
    pub body: Body,
    pub attempts: u32,
}

/// Why a call failed, after its retries.
#[derive(Debug)]
pub struct Failure {
    pub error: ProviderError,
    /// No HTTP answer at all (connect, TLS, reset, timeout before the head).
    pub unreachable: bool,
    /// Not attempted: the egress policy refuses the destination (its text is
    /// [`REFUSED`], never a connection's error).
    pub refused: bool,
    pub attempts: u32,
}

/// The most of an upstream's error text a failure keeps.
pub const MAX_ERROR_CHARS: usize = 300;

/// Header names that carry a credential, whatever the provider.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"];

/// The scrubber of what `call` sends as credentials: those headers' values (and any
/// header whose name says key, token or secret), and the values of query parameters
/// so named (Gemini's `?key=`).
fn credentials(call: &Call<'_>) -> crate::scrub::Scrubber {
    scrubber_of(&credential_values(call))
}

/// What `call` sends as credentials: (header values, query values).
fn credential_values(call: &Call<'_>) -> (Vec<String>, Vec<String>) {
    let named = |n: &str| CREDENTIAL_HEADERS.contains(&n) || ["key", "token", "secret"].iter().any(|w| n.contains(w));
    let headers = call.headers.iter().filter(|(n, _)| named(n.as_str())).filter_map(|(_, v)| v.to_str().ok()).map(str::to_owned).collect();
    let query = call
        .uri
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.split_once('='))
        .filter(|(n, _)| named(&n.to_ascii_lowercase()))
        .map(|(_, v)| v.to_owned())
        .collect();
    (headers, query)
}

fn scrubber_of((headers, query): &(Vec<String>, Vec<String>)) -> crate::scrub::Scrubber {
    crate::scrub::Scrubber::of_header_values(headers.iter().map(String::as_str)).with(&crate::scrub::Scrubber::new(query.iter().map(String::as_str)))
}

impl Failure {
    /// The failure with its texts scrubbed of `s`'s secrets and bounded.
    fn scrubbed(mut self, s: &crate::scrub::Scrubber) -> Failure {
        let clean = |t: &str| crate::scrub::excerpt(&s.scrub(t), MAX_ERROR_CHARS);
        self.error.message = clean(&self.error.message);
        for raw in [&mut self.error.raw_type, &mut self.error.raw_code, &mut self.error.raw_status].into_iter().flatten() {
            *raw = clean(raw);
        }
        self
    }

    fn unreachable(class: ErrorClass, message: String) -> Failure {
        Failure { error: ProviderError::new(class, message), unreachable: true, refused: false, attempts: 0 }
    }

    /// The destination is refused by the egress policy: not retried (permission denied),
    /// and it says only that.
    fn refused() -> Failure {
        Failure { error: ProviderError::new(ErrorClass::PermissionDenied, REFUSED), unreachable: true, refused: true, attempts: 0 }
    }

    /// A non-2xx answer, classified by the manifest.
    fn rejected(manifest: &Manifest, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Failure {
        let retry_after = headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        Failure { error: manifest.classification.classify(status.as_u16(), body, retry_after), unreachable: false, refused: false, attempts: 0 }
    }
}

/// Why [`Transport::send`] has no answer.
pub enum SendError {
    /// The outbound runtime is gone.
    Down,
    Failed(Failure),
}

pub struct Transport {
    /// Started only when a provider needs it (a scheme other than `http`).
    remote: Option<remote::Remote>,
    native: native::Settings,
    /// Whose destinations it calls: the operator's, or tenants' (judged at connect).
    trust: Trust,
}

impl Transport {
    pub fn start(
        roots: &TlsRoots,
        connect_timeout: Duration,
        read_timeout: Duration,
        remote: bool,
        trust: Trust,
    ) -> Result<Transport, TransportError> {
        let remote = remote.then(|| remote::Remote::start(roots, connect_timeout, read_timeout, trust.clone())).transpose()?;
        Ok(Transport { remote, native: native::Settings { connect_timeout, read_timeout }, trust })
    }

    /// Whether `uri` is served on the calling shard.
    pub fn is_native(uri: &Uri) -> bool {
        uri.scheme() == Some(&hyper::http::uri::Scheme::HTTP)
    }

    /// Makes the call, with its retries. Must run on a shard (a glommio executor). A
    /// failure's text (the upstream's error body, a connection error) is scrubbed of the
    /// call's credentials and bounded before anyone sees it: an upstream that echoes
    /// the request must not hand the operator's or a tenant's key to a caller.
    pub async fn send(&self, call: Call<'_>) -> Result<Upstream, SendError> {
        // The scrubber is built only for a failure: a call that answers pays nothing.
        if Transport::is_native(&call.uri) {
            return native::send(&self.native, &self.trust, &call).await.map_err(|f| SendError::Failed(f.scrubbed(&credentials(&call))));
        }
        let Some(remote) = &self.remote else { return Err(SendError::Down) };
        // The call moves to the outbound thread: its credentials are noted first (a few
        // header values, beside a hosted call's network time).
        let sent = credential_values(&call);
        remote.send(call).await.map_err(|e| match e {
            SendError::Failed(f) => SendError::Failed(f.scrubbed(&scrubber_of(&sent))),
            down => down,
        })
    }
}

/// The attempt loop: `once` until it answers or the policy stops retrying, waiting
/// with `sleep` (the caller's runtime's timer) in between. The answer comes with the
/// number of attempts it took.
async fn attempts<T, F, Fut, S, SFut>(provider: &str, retry: &RetryPolicy, mut once: F, sleep: S) -> Result<(T, u32), Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
    S: Fn(Duration) -> SFut,
    SFut: Future<Output = ()>,
{
    let mut attempt = 1;
    loop {
        let failure = match once().await {
            Ok(up) => return Ok((up, attempt)),
            Err(f) => f,
        };
        match retry.decide(&failure.error, attempt, random()) {
            Some(wait) => {
                tracing::debug!(provider, attempt, class = failure.error.class.as_str(), wait_ms = wait.as_millis() as u64, "retrying a model call");
                sleep(wait).await;
                attempt += 1;
            }
            None => return Err(Failure { attempts: attempt, ..failure }),
        }
    }
}

/// An error and its causes, on one line.
pub fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
