//! Egress closed by default: a tenant's tools and AI providers reach no loopback address in any spelling (issue 34, finding 5).
//!
//! A regression test for issue 34's finding 5: http tools, MCP tools and AI-provider
//! `base_url`s reached any loopback or private service (the server's own `/metrics`
//! and `/v1/signup`, a local model, an internal service) in every spelling of an
//! address, and a closed port answered "Connection refused", a port-scan signal.
//! Here a server with the default policy refuses each of them, written literally (on
//! write) or hidden behind a `{{secret:…}}` host or a record written while loopback
//! was open (at connect, after resolution), over `http://` and `https://`, with one
//! error that carries neither a target's answer nor a connection error's text; a
//! loopback target counts every connection it is offered and sees none. Then the
//! operator's `[egress] allow` opens exactly what it names. The other ranges are the
//! unit tests' (`core/src/net/egress/tests.rs`), which open no connection.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::client::Response;
use super::loopback::{read_request, respond};
use super::plans::LAB;
use super::scripted_llm::{tools, Scripted};
use super::server::{Egress, Options, TestServer};
use super::soat::{call, ok, refused};

/// What the target answers, which no refusal may carry.
const ANSWER: &str = "the-egress-target-answered";

/// A loopback service that counts every connection it accepts (a refused
/// destination must not be offered one) and answers whatever is asked: a model
/// listing at `…/models`, MCP at `/mcp`, [`ANSWER`] elsewhere.
struct Target {
    v4: SocketAddr,
    /// On `[::1]`, when the machine has IPv6 loopback.
    v6: Option<SocketAddr>,
    hits: Arc<AtomicUsize>,
}

impl Target {
    fn start() -> Target {
        let hits = Arc::new(AtomicUsize::new(0));
        let v4 = serve(TcpListener::bind("127.0.0.1:0").unwrap(), hits.clone());
        let v6 = TcpListener::bind("[::1]:0").ok().map(|l| serve(l, hits.clone()));
        Target { v4, v6, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// `host:port` in every spelling of loopback that reaches it.
    fn spellings(&self) -> Vec<String> {
        let p = self.v4.port();
        let mut out: Vec<String> =
            ["127.0.0.1", "localhost", "127.1", "2130706433", "0.0.0.0", "[::ffff:127.0.0.1]"].iter().map(|h| format!("{h}:{p}")).collect();
        out.extend(self.v6.map(|a| format!("[::1]:{}", a.port())));
        out
    }
}

fn serve(listener: TcpListener, hits: Arc<AtomicUsize>) -> SocketAddr {
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || answer(stream));
        }
    });
    addr
}

fn answer(stream: TcpStream) {
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    while let Some(req) = read_request(&mut r) {
        let (status, body) = if req.path.ends_with("/models") {
            (200, json!({"object": "list", "data": [{"id": ANSWER}]}))
        } else if req.path == "/mcp" {
            match req.body.get("id") {
                Some(id) => (200, json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": ANSWER}]}})),
                None => (202, json!({})),
            }
        } else {
            (200, json!({"said": ANSWER}))
        };
        if !respond(&mut w, status, &body) {
            return;
        }
    }
    let _ = w.flush();
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Where a tenant points: `host:port` and a path.
struct Destination {
    host: String,
    path: &'static str,
}

/// Every spelling of the target, a closed port, and the server's own port (its
/// `/metrics` and `/v1/signup`).
fn destinations(t: &Target, s: &TestServer, closed: u16) -> Vec<Destination> {
    let own = s.addr.port();
    let mut out: Vec<Destination> = t.spellings().into_iter().map(|host| Destination { host, path: "/x" }).collect();
    out.push(Destination { host: format!("127.0.0.1:{closed}"), path: "/x" });
    out.push(Destination { host: format!("127.0.0.1:{own}"), path: "/metrics" });
    out.push(Destination { host: format!("localhost:{own}"), path: "/v1/signup" });
    out
}

fn server(egress_allow: &[String]) -> TestServer {
    let allow: Vec<String> = egress_allow.iter().map(|a| format!("{a:?}")).collect();
    let config = format!("{LAB}[egress]\nallow = [{}]\n", allow.join(", "));
    TestServer::with(Options { config, egress: Egress::Closed, ..Options::default() })
}

/// The refusal, checked: 403 `EGRESS_REFUSED`, its one message, and nothing of a
/// target's answer or of a connection's error anywhere in the body.
#[track_caller]
fn assert_refused(r: Response, what: &str) -> Value {
    let text = r.text();
    let e = refused(r, 403);
    assert_eq!(e["code"], "EGRESS_REFUSED", "{what}: {e}");
    assert!(e["message"].as_str().unwrap().starts_with("refused by egress policy"), "{what}: {e}");
    for leak in [ANSWER, "Connection refused", "connection refused", "os error", "tcp connect", "# HELP", "requests_total", "api_key", "dns error"] {
        assert!(!text.contains(leak), "{what}: the refusal carries {leak:?}: {text}");
    }
    e
}

fn secret(s: &TestServer, key: &str, value: &str) -> String {
    let body = json!({"name": "TARGET_HOST", "value": value});
    ok(call(s, "POST", "/api/v1/secrets", key, Some(body)), 201)["id"].as_str().unwrap().to_owned()
}

fn tool(s: &TestServer, key: &str, body: Value) -> Response {
    call(s, "POST", "/api/v1/tools", key, Some(body))
}

fn id(r: Response) -> String {
    ok(r, 201)["id"].as_str().unwrap().to_owned()
}

fn call_tool(s: &TestServer, key: &str, tool: &str, body: Value) -> Response {
    call(s, "POST", &format!("/api/v1/tools/{tool}/call"), key, Some(body))
}

fn http_tool(url: &str, method: &str) -> Value {
    json!({"name": "peek", "type": "http", "execute": {"url": url, "method": method}})
}

fn mcp_tool(url: &str) -> Value {
    json!({"name": "peek-mcp", "type": "mcp", "mcp": {"url": url}})
}

fn method(d: &Destination) -> &'static str {
    if d.path == "/v1/signup" {
        "POST"
    } else {
        "GET"
    }
}

#[test]
fn a_tenants_tools_reach_no_loopback_address_in_any_spelling() {
    let target = Target::start();
    let s = server(&[]);
    let (_, key) = s.signup("egress-tools@example.com");
    for d in destinations(&target, &s, closed_port()) {
        let (host, path) = (&d.host, d.path);
        // Written as it is: refused when the tool is written.
        for scheme in ["http", "https"] {
            assert_refused(tool(&s, &key, http_tool(&format!("{scheme}://{host}{path}"), method(&d))), &format!("writing an http tool at {host}"));
            assert_refused(tool(&s, &key, mcp_tool(&format!("{scheme}://{host}/mcp"))), &format!("writing an mcp tool at {host}"));
        }
        // Behind a secret: nothing to judge on write; refused at connect, after resolution.
        let sec = secret(&s, &key, host);
        for scheme in ["http", "https"] {
            let http = id(tool(&s, &key, http_tool(&format!("{scheme}://{{{{secret:{sec}}}}}{path}"), method(&d))));
            assert_refused(call_tool(&s, &key, &http, json!({"input": {"email": "probe@example.com"}})), &format!("calling {scheme}://{host}{path}"));
            let mcp = id(tool(&s, &key, mcp_tool(&format!("{scheme}://{{{{secret:{sec}}}}}/mcp"))));
            assert_refused(call_tool(&s, &key, &mcp, json!({"action": "anything"})), &format!("calling mcp at {scheme}://{host}"));
        }
    }
    assert_eq!(target.hits(), 0, "a refused destination was offered a connection");
}

#[test]
fn a_tenants_ai_provider_reaches_no_loopback_address_in_any_spelling() {
    let target = Target::start();
    let closed = closed_port();
    let provider = |url: &str| json!({"name": "internal", "provider": "custom", "base_url": url, "default_model": "m"});
    let open = ["127.0.0.0/8", "::1", "0.0.0.0/8", "::"].map(String::from);
    let mut s = server(&open);
    let (_, key) = s.signup("egress-providers@example.com");
    // Records written while the operator had loopback open (the server's own port
    // stays closed even so), judged at connect once it is closed again.
    let mut stored = Vec::new();
    for d in destinations(&target, &s, closed) {
        for scheme in ["http", "https"] {
            let r = call(&s, "POST", "/api/v1/ai-providers", &key, Some(provider(&format!("{scheme}://{}/v1", d.host))));
            if d.path == "/x" {
                stored.push((d.host.clone(), ok(r, 201)["id"].as_str().unwrap().to_owned()));
            } else {
                assert_refused(r, &format!("a provider at the server's own port {}", d.host));
            }
        }
    }
    let ollama = ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(ollama_body())), 201)["id"].as_str().unwrap().to_owned();
    stored.push(("the ollama kind's default localhost:11434".into(), ollama.clone()));
    s.terminate(Duration::from_secs(10));
    s.set_config(LAB);
    s.restart();

    for d in destinations(&target, &s, closed) {
        for scheme in ["http", "https"] {
            let r = call(&s, "POST", "/api/v1/ai-providers", &key, Some(provider(&format!("{scheme}://{}/v1", d.host))));
            assert_refused(r, &format!("writing a provider at {scheme}://{}", d.host));
        }
    }
    assert_refused(call(&s, "POST", "/api/v1/ai-providers", &key, Some(ollama_body())), "an ollama provider at its default localhost");
    for (host, aip) in &stored {
        // The ollama kind lists no models (400 before any connection).
        if aip != &ollama {
            assert_refused(call(&s, "GET", &format!("/api/v1/ai-providers/{aip}/models"), &key, None), &format!("listing models at {host}"));
        }
        let agent = json!({"ai_provider_id": aip, "name": "a", "instructions": "Answer."});
        let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(agent)), 201)["id"].as_str().unwrap().to_owned();
        let asked = json!({"messages": [{"role": "user", "content": "Hello?"}]});
        let e = assert_refused(
            call(&s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), &key, Some(asked)),
            &format!("generating at {host}"),
        );
        let g = ok(call(&s, "GET", &format!("/api/v1/generations/{}", e["meta"]["generation_id"].as_str().unwrap()), &key, None), 200);
        assert_eq!((g["status"].as_str(), g["error"]["code"].as_str()), (Some("failed"), Some("EGRESS_REFUSED")), "{g}");
    }
    assert_eq!(target.hits(), 0, "a refused destination was offered a connection");
}

fn ollama_body() -> Value {
    json!({"name": "ollama", "provider": "ollama", "default_model": "llama3"})
}

#[test]
fn a_generation_whose_tool_is_refused_fails_with_egress_refused() {
    let up = Scripted::start();
    up.otherwise(tools(&[("peek", json!({}))]));
    let target = Target::start();
    let s = server(&[up.addr.to_string()]);
    let (_, key) = s.signup("egress-generation@example.com");
    let aip = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "m"});
    let aip = ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(aip)), 201)["id"].as_str().unwrap().to_owned();
    let sec = secret(&s, &key, &format!("localhost:{}", target.v4.port()));
    let peek = id(tool(&s, &key, http_tool(&format!("http://{{{{secret:{sec}}}}}/x"), "GET")));
    let agent = json!({"ai_provider_id": aip, "name": "a", "instructions": "Peek.", "tool_bindings": [{"tool_id": peek}]});
    let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(agent)), 201)["id"].as_str().unwrap().to_owned();
    let asked = json!({"messages": [{"role": "user", "content": "Peek, please."}]});
    let e = assert_refused(call(&s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), &key, Some(asked)), "a generation's tool call");
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{}", e["meta"]["generation_id"].as_str().unwrap()), &key, None), 200);
    assert_eq!((g["status"].as_str(), g["error"]["code"].as_str()), (Some("failed"), Some("EGRESS_REFUSED")), "{g}");
    assert!(!g.to_string().contains(ANSWER));
    assert_eq!(target.hits(), 0);
}

#[test]
fn the_operator_opens_exactly_what_egress_allow_names() {
    let target = Target::start();
    let p = target.v4.port();
    let s = server(&[format!("127.0.0.1:{p}"), "::1".into()]);
    let (_, key) = s.signup("egress-allowed@example.com");
    // What allow names is reached, as a tool, an MCP server and an AI provider.
    let http = id(tool(&s, &key, http_tool(&format!("http://127.0.0.1:{p}/x"), "GET")));
    assert_eq!(ok(call_tool(&s, &key, &http, json!({})), 200)["said"], ANSWER);
    let mcp = id(tool(&s, &key, mcp_tool(&format!("http://127.0.0.1:{p}/mcp"))));
    assert!(ok(call_tool(&s, &key, &mcp, json!({"action": "look"})), 200).to_string().contains(ANSWER));
    let aip = json!({"name": "vllm", "provider": "custom", "base_url": format!("http://127.0.0.1:{p}/v1"), "default_model": "m"});
    let aip = ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(aip)), 201)["id"].as_str().unwrap().to_owned();
    let models = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{aip}/models"), &key, None), 200);
    assert_eq!(models["models"][0]["id"], ANSWER, "{models}");
    let reached = target.hits();
    assert!(reached > 0);
    // What it does not name stays closed: another port of the same address, another
    // spelling that is not that address, the server's own port on an address allowed.
    let own = s.addr.port();
    let closed = [
        format!("127.0.0.1:{}", closed_port()),
        format!("127.0.0.2:{p}"),
        format!("[::ffff:127.0.0.2]:{p}"),
        format!("[::1]:{own}"),
        format!("127.0.0.1:{own}"),
    ];
    for host in closed {
        assert_refused(tool(&s, &key, http_tool(&format!("http://{host}/metrics"), "GET")), &format!("writing a tool at {host}"));
        let sec = secret(&s, &key, &host);
        let t = id(tool(&s, &key, http_tool(&format!("http://{{{{secret:{sec}}}}}/metrics"), "GET")));
        assert_refused(call_tool(&s, &key, &t, json!({})), &format!("calling {host}"));
    }
    assert_eq!(target.hits(), reached, "nothing more was reached");
}
