//! The shard-local pool against a fake upstream on loopback: keep-alive reuse, an
//! upstream that closes idle connections, cancellation, `localhost` resolved off the
//! shard; and a tenant's calls under the egress policy on both paths: refused before
//! any connection, and never on a connection made for the operator.

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::{LocalExecutorBuilder, Placement};
use hyper::{HeaderMap, Method};

use super::native::{self, Settings};
use super::{Body, Call, Failure, SendError, Transport, Upstream};
use crate::llm::config::TlsRoots;
use crate::llm::manifest::Catalog;
use crate::llm::retry::RetryPolicy;
use crate::net::egress::{Policy, Rule, Trust, REFUSED};

const ANSWER: &[u8] = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Answers every request, keeps the connection.
    KeepAlive,
    /// Answers, then closes the connection 20 ms later without saying so.
    CloseIdle,
    /// Answers a connection's first request; reads its second and closes unanswered
    /// (an idle close racing a request).
    DropSecond,
    /// Sends a head and part of a body, then waits for the client to go.
    Trickle,
    /// Reads the request and never answers; waits for the client to go.
    Silent,
}

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: AtomicUsize,
    client_left: AtomicBool,
}

fn upstream(mode: Mode) -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            std::thread::spawn(move || serve(stream, mode, &s));
        }
    });
    (addr, seen)
}

/// Reads one request (head and content-length body); `false` at EOF.
fn read_request(r: &mut BufReader<TcpStream>) -> bool {
    let mut len = 0;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).is_ok()
}

fn serve(stream: TcpStream, mode: Mode, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    let mut n = 0;
    while read_request(&mut reader) {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        n += 1;
        if mode == Mode::DropSecond && n == 2 {
            return;
        }
        if mode == Mode::Trickle || mode == Mode::Silent {
            if mode == Mode::Trickle {
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\ndata: {}\n\n");
            }
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            seen.client_left.store(true, Ordering::SeqCst);
            return;
        }
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", ANSWER.len());
        if out.write_all(head.as_bytes()).and_then(|_| out.write_all(ANSWER)).is_err() {
            return;
        }
        if mode == Mode::CloseIdle {
            std::thread::sleep(Duration::from_millis(20));
            return;
        }
    }
    seen.client_left.store(true, Ordering::SeqCst);
}

/// Runs `f` on a glommio executor, as a shard would.
fn on_shard<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::new(Placement::Unbound).io_memory(64 << 10).ring_depth(64).spawn(f).unwrap().join().unwrap();
}

const SETTINGS: Settings = Settings { connect_timeout: Duration::from_secs(2), read_timeout: Duration::from_secs(2) };

async fn call(url: &str) -> Result<Upstream, Failure> {
    call_as(url, &Trust::Operator).await
}

async fn call_as(url: &str, trust: &Trust) -> Result<Upstream, Failure> {
    let manifest = Catalog::load(None).unwrap().get("openai").unwrap().clone();
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    native::send(&SETTINGS, trust, &chat(&manifest, &retry, url)).await
}

fn chat<'a>(manifest: &'a std::sync::Arc<crate::llm::manifest::Manifest>, retry: &'a RetryPolicy, url: &str) -> Call<'a> {
    Call {
        manifest,
        retry,
        method: Method::POST,
        uri: url.parse().unwrap(),
        headers: HeaderMap::new(),
        body: Bytes::from_static(b"{\"model\":\"m\"}"),
        timeout: Duration::from_secs(2),
    }
}

fn tenant(allow: &[String]) -> Trust {
    Trust::Tenant(std::sync::Arc::new(Policy::new(allow.iter().map(|r| Rule::parse(r).unwrap()).collect())))
}

async fn read_all(body: &mut Body) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(piece) = body.next().await {
        out.extend_from_slice(&piece.unwrap());
    }
    out
}

async fn complete(url: &str) -> Vec<u8> {
    let mut up = call(url).await.unwrap_or_else(|f| panic!("{url}: {f:?}"));
    read_all(&mut up.body).await
}

async fn wait_for(flag: &AtomicBool) {
    let t = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        assert!(t.elapsed() < Duration::from_secs(3), "the upstream connection stayed open");
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn sequential_calls_share_one_kept_alive_connection() {
    let (addr, seen) = upstream(Mode::KeepAlive);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        for _ in 0..10 {
            assert_eq!(complete(&url).await, ANSWER);
        }
        assert_eq!(seen.requests.load(Ordering::SeqCst), 10);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1, "one connection for 10 sequential calls");
        assert_eq!(super::pool::Pool::local(SETTINGS.connect_timeout).idle_count(false, &addr.to_string()), 1);
    });
}

#[test]
fn an_upstream_that_closes_idle_connections_costs_a_new_connection_not_the_call() {
    let (addr, seen) = upstream(Mode::CloseIdle);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        for _ in 0..3 {
            assert_eq!(complete(&url).await, ANSWER);
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(seen.connections.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn a_kept_alive_connection_closed_under_a_request_is_retried_on_a_new_one() {
    let (addr, seen) = upstream(Mode::DropSecond);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        assert_eq!(complete(&url).await, ANSWER);
        // The pooled connection is taken, the upstream reads the request and closes.
        assert_eq!(complete(&url).await, ANSWER);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
        assert_eq!(seen.requests.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn dropping_a_call_closes_its_upstream_connection() {
    let (addr, seen) = upstream(Mode::Trickle);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        // Mid-body: the body is dropped after its first piece.
        let mut up = call(&url).await.unwrap();
        assert!(up.body.next().await.unwrap().is_ok());
        drop(up);
        wait_for(&seen.client_left).await;
        assert_eq!(super::pool::Pool::local(SETTINGS.connect_timeout).idle_count(false, &addr.to_string()), 0);
    });
    let (addr, seen) = upstream(Mode::Silent);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        // Before the head: the caller gives up while the upstream thinks.
        let gave_up = futures_lite::future::or(async { call(&url).await.map(|_| ()).map_err(|f| f.error.message) }, async {
            glommio::timer::sleep(Duration::from_millis(100)).await;
            Err("gave up".to_owned())
        });
        assert_eq!(gave_up.await, Err("gave up".to_owned()));
        wait_for(&seen.client_left).await;
        assert_eq!(seen.requests.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn localhost_is_resolved_off_the_shard_and_called() {
    let (addr, seen) = upstream(Mode::KeepAlive);
    on_shard(move || async move {
        let resolver = super::dns::Resolver::default();
        let addrs = resolver.resolve("localhost", addr.port()).await.unwrap();
        assert!(addrs.contains(&SocketAddr::from(([127, 0, 0, 1], addr.port()))), "{addrs:?}");
        let url = format!("http://localhost:{}/v1/chat/completions", addr.port());
        assert_eq!(complete(&url).await, ANSWER);
        assert_eq!(complete(&url).await, ANSWER);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_tenants_call_to_loopback_is_refused_before_any_connection() {
    let (addr, seen) = upstream(Mode::KeepAlive);
    on_shard(move || async move {
        let p = addr.port();
        let closed = tenant(&[]);
        for host in [
            format!("127.0.0.1:{p}"),
            format!("localhost:{p}"),
            format!("127.1:{p}"),
            format!("2130706433:{p}"),
            format!("0.0.0.0:{p}"),
            format!("[::ffff:127.0.0.1]:{p}"),
        ] {
            let f = call_as(&format!("http://{host}/v1/chat/completions"), &closed).await.err().unwrap_or_else(|| panic!("{host} was called"));
            assert!(f.refused && f.unreachable, "{host}: {f:?}");
            assert_eq!((f.error.message.as_str(), f.attempts), (REFUSED, 1), "{host}: one message, no retry");
        }
        assert_eq!(seen.connections.load(Ordering::SeqCst), 0, "a refused address is never connected to");
        // Opened by the operator, the same address is called.
        assert_eq!(
            read_all(&mut call_as(&format!("http://127.0.0.1:{p}/v1/chat/completions"), &tenant(&[format!("127.0.0.1:{p}")])).await.unwrap().body)
                .await,
            ANSWER
        );
    });
}

#[test]
fn an_operators_kept_alive_connection_is_never_lent_to_a_tenants_call() {
    let (addr, seen) = upstream(Mode::KeepAlive);
    on_shard(move || async move {
        let url = format!("http://{addr}/v1/chat/completions");
        assert_eq!(complete(&url).await, ANSWER);
        let pool = super::pool::Pool::local(SETTINGS.connect_timeout);
        assert_eq!((pool.idle_count(false, &addr.to_string()), pool.idle_count(true, &addr.to_string())), (1, 0));
        // An idle connection to the same host:port is there, made for the operator: a
        // tenant's call is judged all the same, and refused.
        let f = call_as(&url, &tenant(&[])).await.err().expect("refused");
        assert!(f.refused, "{f:?}");
        assert_eq!(seen.requests.load(Ordering::SeqCst), 1, "the operator's connection carried nothing for the tenant");
        // Allowed, the tenant's call gets a connection of its own, kept apart.
        let allowed = tenant(&[addr.to_string()]);
        assert_eq!(read_all(&mut call_as(&url, &allowed).await.unwrap().body).await, ANSWER);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
        assert_eq!((pool.idle_count(false, &addr.to_string()), pool.idle_count(true, &addr.to_string())), (1, 1));
    });
}

#[test]
fn a_tenants_https_call_to_loopback_is_refused_before_any_connection() {
    let (addr, seen) = upstream(Mode::KeepAlive);
    on_shard(move || async move {
        let manifest = Catalog::load(None).unwrap().get("openai").unwrap().clone();
        let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
        let remote = Transport::start(&TlsRoots::Bundled, Duration::from_secs(2), Duration::from_secs(2), true, tenant(&[])).unwrap();
        let p = addr.port();
        for host in
            [format!("127.0.0.1:{p}"), format!("localhost:{p}"), format!("127.1:{p}"), format!("[::ffff:127.0.0.1]:{p}"), format!("0.0.0.0:{p}")]
        {
            match remote.send(chat(&manifest, &retry, &format!("https://{host}/v1/chat/completions"))).await {
                Err(SendError::Failed(f)) => {
                    assert!(f.refused, "{host}: {f:?}");
                    assert_eq!(f.error.message, REFUSED, "{host}");
                }
                Err(SendError::Down) => panic!("the outbound runtime is down"),
                Ok(_) => panic!("{host} answered"),
            }
        }
        assert_eq!(seen.connections.load(Ordering::SeqCst), 0, "a refused address is never connected to");
        // The operator's client connects (the TLS handshake then fails on plain HTTP).
        let operator = Transport::start(&TlsRoots::Bundled, Duration::from_secs(2), Duration::from_secs(2), true, Trust::Operator).unwrap();
        let _ = operator.send(chat(&manifest, &retry, &format!("https://127.0.0.1:{p}/v1/chat/completions"))).await;
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    });
}
