//! The `https://` path: hyper-util's pooled client (keep-alive, TCP_NODELAY, HTTP/2
//! where ALPN offers it) over rustls with the ring provider, on the process's one
//! outbound tokio runtime ([`crate::net::outbound`], which the agents' `https://` tools
//! share). glommio's streams are `!Send`, so a shard spawns its [`Job`] there and gets
//! the answer back over a channel; tokio's channels wake any executor. DNS runs on
//! tokio's blocking pool, never on a shard. The connector is [`Guarded`]: a client
//! made for tenants' destinations connects only where the egress policy allows, and
//! its pool holds only such connections.
//!
//! The job runs the whole attempt loop here, so a shard waits on one answer. A
//! dropped receiver (the caller went away) cancels the call: the attempt or the body
//! read in progress is dropped and its connection closed.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};

use super::guarded::{Guarded, Written};
use super::{attempts, describe, Body, Call, Failure, SendError, Upstream};
use crate::llm::config::TlsRoots;
use crate::llm::error::ErrorClass;
use crate::llm::manifest::Manifest;
use crate::llm::retry::RetryPolicy;
use crate::net::egress::{self, Trust};

pub type HttpsClient = Client<Written<hyper_rustls::HttpsConnector<Guarded>>, Full<Bytes>>;

/// One call to make, owned for the trip to the outbound runtime, and where to answer.
struct Job {
    call: Owned,
    reply: oneshot::Sender<Result<Answer, Failure>>,
}

/// A 2xx answer as it crosses back to the shard.
struct Answer {
    headers: HeaderMap,
    body: mpsc::Receiver<Result<Bytes, String>>,
    attempts: u32,
}

pub struct Remote {
    runtime: &'static Handle,
    client: HttpsClient,
    read_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("TLS roots: {0}")]
    Roots(String),
    #[error("cannot start the outbound runtime: {0}")]
    Runtime(std::io::Error),
}

impl Remote {
    /// A client with these roots and timeouts on the outbound runtime (started here if
    /// it is not yet), connecting where `trust` allows.
    pub fn start(roots: &TlsRoots, connect_timeout: Duration, read_timeout: Duration, trust: Trust) -> Result<Remote, TransportError> {
        let tls = tls_config(roots)?;
        let runtime = crate::net::outbound::runtime().map_err(TransportError::Runtime)?;
        Ok(Remote { runtime, client: client(runtime, tls, connect_timeout, trust), read_timeout })
    }

    /// Sends `call` to the outbound runtime and waits for its answer.
    pub async fn send(&self, call: Call<'_>) -> Result<Upstream, SendError> {
        let (tx, rx) = oneshot::channel();
        let job = Job {
            call: Owned {
                manifest: call.manifest.clone(),
                retry: call.retry.clone(),
                method: call.method,
                uri: call.uri,
                headers: call.headers,
                body: call.body,
                timeout: call.timeout,
            },
            reply: tx,
        };
        // A runtime whose thread is gone drops the task, and with it `reply`.
        self.runtime.spawn(run(self.client.clone(), job, self.read_timeout));
        match rx.await {
            Err(_) => Err(SendError::Down),
            Ok(Ok(a)) => Ok(Upstream { headers: a.headers, body: Body::Remote(a.body), attempts: a.attempts }),
            Ok(Err(f)) => Err(SendError::Failed(f)),
        }
    }
}

pub fn tls_config(roots: &TlsRoots) -> Result<rustls::ClientConfig, TransportError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut store = rustls::RootCertStore::empty();
    match roots {
        TlsRoots::Bundled => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        TlsRoots::Pem(bytes) => {
            for cert in CertificateDer::pem_slice_iter(bytes) {
                let cert = cert.map_err(|e| TransportError::Roots(e.to_string()))?;
                store.add(cert).map_err(|e| TransportError::Roots(e.to_string()))?;
            }
            if store.is_empty() {
                return Err(TransportError::Roots("the PEM bundle holds no certificate".into()));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Roots(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth())
}

/// A pooled https client whose connections live on `runtime` and go where `trust`
/// allows (its pool is its own: a tenant's client never reuses an operator's connection).
pub fn client(runtime: &Handle, tls: rustls::ClientConfig, connect_timeout: Duration, trust: Trust) -> HttpsClient {
    let _inside = runtime.enter();
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    http.set_keepalive(Some(Duration::from_secs(60)));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(Guarded::new(http, trust.clone()));
    Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(90)).pool_max_idle_per_host(1024).build(Written::new(https, trust))
}

async fn run(client: HttpsClient, job: Job, read_timeout: Duration) {
    let Job { call, mut reply } = job;
    let result = tokio::select! {
        r = attempts_here(&client, &call, read_timeout) => r,
        _ = reply.closed() => return,
    };
    let _ = reply.send(result);
}

/// A call with everything it needs, owned.
struct Owned {
    manifest: Arc<Manifest>,
    retry: RetryPolicy,
    method: hyper::Method,
    uri: hyper::Uri,
    headers: HeaderMap,
    body: Bytes,
    timeout: Duration,
}

async fn attempts_here(client: &HttpsClient, job: &Owned, read_timeout: Duration) -> Result<Answer, Failure> {
    let (answer, attempts) = attempts(&job.manifest.id, &job.retry, || once(client, job, read_timeout), tokio::time::sleep).await?;
    Ok(Answer { attempts, ..answer })
}

async fn once(client: &HttpsClient, job: &Owned, read_timeout: Duration) -> Result<Answer, Failure> {
    let mut req = Request::new(Full::new(job.body.clone()));
    *req.method_mut() = job.method.clone();
    *req.uri_mut() = job.uri.clone();
    *req.headers_mut() = job.headers.clone();
    let unreachable = Failure::unreachable;
    let resp = match tokio::time::timeout(job.timeout, client.request(req)).await {
        Err(_) => return Err(unreachable(ErrorClass::Timeout, format!("no answer within {:?}", job.timeout))),
        Ok(Err(e)) if egress::refusal_in(&e).is_some() => return Err(Failure::refused()),
        Ok(Err(e)) => return Err(unreachable(ErrorClass::ServerError, describe(&e))),
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    let (parts, mut body) = resp.into_parts();
    if !status.is_success() {
        let bytes = match tokio::time::timeout(read_timeout, body.collect()).await {
            Ok(Ok(c)) => c.to_bytes(),
            _ => Bytes::new(),
        };
        return Err(Failure::rejected(&job.manifest, status, &parts.headers, &bytes));
    }
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                n = tokio::time::timeout(read_timeout, body.frame()) => n,
                _ = tx.closed() => return,
            };
            let item = match next {
                Err(_) => Err(format!("no data for {read_timeout:?}")),
                Ok(None) => return,
                Ok(Some(Err(e))) => Err(e.to_string()),
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => Ok(data),
                    Err(_) => continue,
                },
            };
            let stop = item.is_err();
            if tx.send(item).await.is_err() || stop {
                return;
            }
        }
    });
    Ok(Answer { headers: parts.headers, body: rx, attempts: 0 })
}

/// Checks a PEM bundle of TLS roots (at start-up, from `config`).
pub fn check_roots(pem: &[u8]) -> Result<(), String> {
    tls_config(&TlsRoots::Pem(pem.to_vec())).map(|_| ()).map_err(|e| e.to_string())
}
