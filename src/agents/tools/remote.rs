//! `https://` tool targets: one thread, started on the first such call, running a
//! current-thread tokio runtime with the provider layer's own hyper-util client over
//! rustls (`llm::transport::remote::{client, tls_config}`: the same roots, the same
//! TLS stack). glommio's streams are `!Send`, so a shard hands the thread a job and
//! waits on a oneshot; dropping the wait cancels the request.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Request;
use tokio::sync::{mpsc, oneshot};

use super::outbound::{Answer, Outbound, OutboundError, Timeouts, MAX_ANSWER_BYTES};
use crate::llm::config::TlsRoots;
use crate::llm::transport::describe;
use crate::llm::transport::remote::{client, tls_config, HttpsClient};

struct Job {
    req: Outbound,
    timeouts: Timeouts,
    reply: oneshot::Sender<Result<Answer, OutboundError>>,
}

/// The https client, started on first use.
pub struct Remote {
    roots: TlsRoots,
    jobs: OnceLock<Result<mpsc::UnboundedSender<Job>, String>>,
}

impl Remote {
    pub fn new(roots: TlsRoots) -> Remote {
        Remote { roots, jobs: OnceLock::new() }
    }

    pub async fn send(&self, req: Outbound, timeouts: Timeouts) -> Result<Answer, OutboundError> {
        let target = req.uri.authority().map_or_else(String::new, |a| a.to_string());
        let down = |message: String| OutboundError::Connect { target: target.clone(), message };
        let jobs = self.jobs.get_or_init(|| start(&self.roots, timeouts.connect)).as_ref().map_err(|e| down(e.clone()))?;
        let (tx, rx) = oneshot::channel();
        jobs.send(Job { req, timeouts, reply: tx }).map_err(|_| down("the outbound thread is gone".into()))?;
        rx.await.map_err(|_| down("the outbound thread is gone".into()))?
    }
}

fn start(roots: &TlsRoots, connect: Duration) -> Result<mpsc::UnboundedSender<Job>, String> {
    let tls = tls_config(roots).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name("quarry-tools-out".into())
        .spawn(move || {
            rt.block_on(async move {
                let client = client(tls, connect);
                while let Some(job) = rx.recv().await {
                    tokio::spawn(run(client.clone(), job));
                }
            })
        })
        .map_err(|e| e.to_string())?;
    Ok(tx)
}

async fn run(client: HttpsClient, job: Job) {
    let Job { req, timeouts, mut reply } = job;
    let target = req.uri.authority().map_or_else(String::new, |a| a.to_string());
    let exchange = async {
        let mut r = Request::new(Full::new(req.body));
        *r.method_mut() = req.method;
        *r.uri_mut() = req.uri;
        *r.headers_mut() = req.headers;
        let resp = client.request(r).await.map_err(|e| OutboundError::Connect { target: target.clone(), message: describe(&e) })?;
        let (parts, body) = resp.into_parts();
        let body: Bytes = Limited::new(body, MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| OutboundError::Answer { target: target.clone(), message: e.to_string() })?
            .to_bytes();
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    };
    let result = tokio::select! {
        r = tokio::time::timeout(timeouts.answer, exchange) => r.unwrap_or_else(|_| Err(OutboundError::Timeout(target.clone(), timeouts.answer))),
        _ = reply.closed() => return,
    };
    let _ = reply.send(result);
}
