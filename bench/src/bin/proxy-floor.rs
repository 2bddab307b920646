//! `proxy-floor`: Quarry's own HTTP stack as a plain reverse proxy — the floor under the
//! gateway, measured beside it and beside nginx in `bench/gateway/run.sh`.
//!
//! One glommio executor set up as a Quarry shard is (the server's runtime defaults,
//! io_uring rings with COOP_TASKRUN), serving HTTP/1.1 with hyper over the server's own
//! stream adapter and builder settings, and forwarding each request's body, verbatim,
//! through the provider layer's transport (the shard's keep-alive pool: hyper's
//! HTTP/1.1 client on the same executor) to one upstream; it answers with the
//! upstream's content type and body. No key, no rate limit, no JSON, no translation:
//! what it costs is what hyper on both sides and the pool cost, which Quarry's gateway
//! pays before it reads a byte of the request. nginx's figure over this one is the
//! most a gateway built on this stack could reach.
//!
//! ```text
//! taskset -c 0 proxy-floor --listen 127.0.0.1:8082 --upstream http://127.0.0.1:8081
//! ```

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use glommio::net::TcpListener;
use glommio::{LocalExecutorBuilder, Placement};
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use quarry::llm::manifest::{Catalog, Manifest};
use quarry::llm::retry::RetryPolicy;
use quarry::llm::transport::{Call, Transport};
use quarry::llm::TlsRoots;
use quarry::net::io::{GlommioIo, Untracked};

#[derive(Parser, Debug)]
#[command(name = "proxy-floor", version, about = "Quarry's HTTP stack as a plain reverse proxy: the gateway's floor")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8082")]
    listen: SocketAddr,
    /// The upstream's base URL (plain `http://`); each request's path and query are
    /// appended to it, as nginx's `proxy_pass` does.
    #[arg(long)]
    upstream: String,
}

struct Proxy {
    transport: Transport,
    manifest: Arc<Manifest>,
    retry: RetryPolicy,
    upstream: String,
}

fn main() -> Result<()> {
    let a = Args::parse();
    anyhow::ensure!(a.upstream.starts_with("http://"), "--upstream must be a plain http:// URL (the shard's own pool)");
    let defaults = quarry::config::Config::defaults();
    let rt = defaults.runtime;
    let handle = LocalExecutorBuilder::new(Placement::Unbound)
        .name("proxy-floor")
        .spin_before_park(rt.spin_before_park)
        .io_memory(rt.io_memory)
        .ring_depth(rt.ring_depth)
        .preempt_timer(rt.preempt_timer)
        .spawn(move || async move { serve(a, defaults.http).await })
        .map_err(|e| anyhow::anyhow!("starting the executor: {e}"))?;
    handle.join().map_err(|e| anyhow::anyhow!("the executor failed: {e}"))?
}

async fn serve(a: Args, http: quarry::config::HttpConfig) -> Result<()> {
    // The upstream is the operator's, as the gateway's configured providers are: not judged.
    let transport =
        Transport::start(&TlsRoots::Bundled, Duration::from_secs(5), Duration::from_secs(60), false, quarry::net::egress::Trust::Operator)?;
    let manifest = Catalog::load(None)?.get("openai").cloned().context("the shipped openai manifest")?;
    let proxy = Rc::new(Proxy { transport, manifest, retry: RetryPolicy::default(), upstream: a.upstream.trim_end_matches('/').to_owned() });
    let listener = TcpListener::bind(a.listen).map_err(|e| anyhow::anyhow!("binding {}: {e}", a.listen))?;
    let local = listener.local_addr().map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("proxy-floor listening on http://{local}, forwarding to {}", proxy.upstream);
    loop {
        let stream = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("proxy-floor: accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let proxy = proxy.clone();
        // The server's own connection settings.
        let builder = quarry::http::server::builder(&http);
        glommio::spawn_local(async move {
            let _ = stream.set_nodelay(true);
            let service = service_fn(move |req| forward(proxy.clone(), req));
            let _ = builder.serve_connection(GlommioIo::new(stream, Untracked), service).await;
        })
        .detach();
    }
}

async fn forward(proxy: Rc<Proxy>, req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!("{}{path}", proxy.upstream).parse() else { return Ok(status(StatusCode::BAD_REQUEST)) };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, parts.headers.get(CONTENT_TYPE).cloned().unwrap_or(HeaderValue::from_static("application/json")));
    headers.insert(ACCEPT, parts.headers.get(ACCEPT).cloned().unwrap_or(HeaderValue::from_static("*/*")));
    let call = Call { manifest: &proxy.manifest, retry: &proxy.retry, method: parts.method, uri, headers, body, timeout: Duration::from_secs(60) };
    let Ok(mut up) = proxy.transport.send(call).await else { return Ok(status(StatusCode::BAD_GATEWAY)) };
    let content_type = up.headers.get(CONTENT_TYPE).cloned();
    // The fake upstream answers with a length, all at once: gathered and sent on with
    // one, as nginx passes it on.
    let mut out = Vec::new();
    while let Some(piece) = up.body.next().await {
        match piece {
            Ok(b) => out.extend_from_slice(&b),
            Err(_) => return Ok(status(StatusCode::BAD_GATEWAY)),
        }
    }
    let mut r = Response::new(Full::new(Bytes::from(out)));
    if let Some(ct) = content_type {
        r.headers_mut().insert(CONTENT_TYPE, ct);
    }
    Ok(r)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}
