//! `https://` tool targets: the provider layer's own hyper-util client over rustls
//! (`llm::transport::remote::{client, tls_config}`: the same roots, the same TLS stack,
//! the same connector judging a tenant's destinations by the egress policy), built on
//! the first such call, on the process's one outbound tokio runtime
//! ([`crate::net::outbound`]). glommio's streams are `!Send`, so a shard spawns the
//! exchange there and waits on a oneshot; dropping the wait cancels the request.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Request;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::outbound::{Answer, Outbound, OutboundError, Timeouts, MAX_ANSWER_BYTES};
use crate::llm::config::TlsRoots;
use crate::llm::transport::describe;
use crate::llm::transport::remote::{client, tls_config, HttpsClient};
use crate::net::egress::{self, Trust};

struct Job {
    req: Outbound,
    timeouts: Timeouts,
    reply: oneshot::Sender<Result<Answer, OutboundError>>,
}

/// The https client, built on first use.
pub struct Remote {
    roots: TlsRoots,
    /// Tools' targets are tenants' destinations.
    trust: Trust,
    client: OnceLock<Result<(&'static Handle, HttpsClient), String>>,
}

impl Remote {
    pub fn new(roots: TlsRoots, trust: Trust) -> Remote {
        Remote { roots, trust, client: OnceLock::new() }
    }

    pub async fn send(&self, req: Outbound, timeouts: Timeouts) -> Result<Answer, OutboundError> {
        let target = req.uri.authority().map_or_else(String::new, |a| a.to_string());
        let down = |message: String| OutboundError::Connect { target: target.clone(), message };
        let (runtime, client) =
            self.client.get_or_init(|| start(&self.roots, timeouts.connect, &self.trust)).as_ref().map_err(|e| down(e.clone()))?;
        let (tx, rx) = oneshot::channel();
        // A runtime whose thread is gone drops the task, and with it `reply`.
        runtime.spawn(run(client.clone(), Job { req, timeouts, reply: tx }));
        rx.await.map_err(|_| down("the outbound thread is gone".into()))?
    }
}

fn start(roots: &TlsRoots, connect: Duration, trust: &Trust) -> Result<(&'static Handle, HttpsClient), String> {
    let tls = tls_config(roots).map_err(|e| e.to_string())?;
    let runtime = crate::net::outbound::runtime().map_err(|e| e.to_string())?;
    Ok((runtime, client(runtime, tls, connect, trust.clone())))
}

async fn run(client: HttpsClient, job: Job) {
    let Job { req, timeouts, mut reply } = job;
    let target = req.uri.authority().map_or_else(String::new, |a| a.to_string());
    let exchange = async {
        let mut r = Request::new(Full::new(req.body));
        *r.method_mut() = req.method;
        *r.uri_mut() = req.uri;
        *r.headers_mut() = req.headers;
        let resp = client.request(r).await.map_err(|e| match egress::refusal_in(&e) {
            Some(_) => OutboundError::Refused,
            None => OutboundError::Connect { target: target.clone(), message: describe(&e) },
        })?;
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
