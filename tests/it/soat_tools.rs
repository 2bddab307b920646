//! SOAT secrets and tools: secrets never leak, tool definitions are checked, calls of every type.
//!
//! SOAT secrets and tools through HTTP (`/api/v1/secrets`, `/api/v1/tools`): a
//! secret's value never answered, logged or written in the clear (grepped for in
//! every response, the server's debug log and every file of the data directory, after
//! writes, reads, calls and `kill -9`); tools' definitions checked on write; calls of
//! each type against a fake target on loopback (templating, context headers, errors
//! with their meta, pipelines, the builtin search and memory write); and another
//! account's or project's key finding nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::client::Response;
use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};

/// One request the fake target received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: BTreeMap<String, String>,
    body: String,
}

/// A tool target on loopback. `/echo` answers what it got (method, target, body, and
/// the `x-user` and `x-soat-context-*` headers, never `authorization`); `/echo-auth`
/// answers the authorization header in plain text, `/echo-auth-escaped` in JSON with
/// every character `\u`-escaped; `/fail` is a 503 whose body repeats it; `/sum` adds
/// `a` and `b`; a chat-completions path is a 401 quoting the authorization.
struct Target {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Target {
    fn start() -> Target {
        Target::listen(None)
    }

    /// The same target over TLS, with the certificate `tests/data/tls/localhost.crt`.
    fn start_tls() -> Target {
        Target::listen(Some(Arc::new(tls_config())))
    }

    fn listen(tls: Option<Arc<rustls::ServerConfig>>) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, tls) = (s.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    None => serve(stream, s),
                    Some(config) => {
                        let conn = rustls::ServerConnection::new(config).unwrap();
                        serve(rustls::StreamOwned::new(conn, stream), s)
                    }
                });
            }
        });
        Target { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn last(&self) -> Seen {
        self.seen.lock().unwrap().last().cloned().expect("the target was called")
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

fn tls_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls")
}

fn tls_config() -> rustls::ServerConfig {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(tls_dir().join("localhost.crt")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(tls_dir().join("localhost.key")).unwrap();
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap()
}

fn serve<S: Read + Write>(stream: S, seen: Arc<Mutex<Vec<Seen>>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
    }
    let len: usize = headers.get("content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    let body = String::from_utf8(body).unwrap();
    seen.lock().unwrap().push(Seen { method: method.clone(), target: target.clone(), headers: headers.clone(), body: body.clone() });
    let auth = headers.get("authorization").cloned().unwrap_or_default();
    let path = target.split('?').next().unwrap_or("");
    let mut extra = String::new();
    let (status, ctype, answer) = match path {
        "/mcp" => {
            let (status, ctype, answer, session) = mcp(&headers, &body);
            if session {
                extra.push_str("mcp-session-id: s-1\r\n");
            }
            (status, ctype, answer)
        }
        "/fail" => (503, "text/plain", format!("upstream down; you sent {auth}")),
        "/echo-auth" => (200, "text/plain", format!("you sent {auth}")),
        // The authorization echoed in JSON, every character a \u escape.
        "/echo-auth-escaped" => {
            let escaped: String = auth.encode_utf16().map(|u| format!("\\u{u:04x}")).collect();
            (200, "application/json", format!(r#"{{"sent":"{escaped}"}}"#))
        }
        // An upstream that quotes the request in its error (as some gateways do), on
        // every model path and for model listings.
        p if p.ends_with("/chat/completions") || p.ends_with("/messages") => (
            401,
            "application/json",
            json!({"error": {"message": format!("bad key {auth}"), "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string(),
        ),
        "/sum" => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            (200, "application/json", json!({"sum": v["a"].as_f64().unwrap_or(0.0) + v["b"].as_f64().unwrap_or(0.0)}).to_string())
        }
        "/v1/models" => (200, "application/json", json!({"object": "list", "data": [{"id": "m1", "object": "model"}]}).to_string()),
        _ => {
            let context: BTreeMap<&String, &String> = headers.iter().filter(|(k, _)| k.starts_with("x-soat-context-") || *k == "x-user").collect();
            let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            (200, "application/json", json!({"method": method, "target": target, "body": parsed, "headers": context}).to_string())
        }
    };
    let out = reader.get_mut();
    let _ =
        write!(out, "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{answer}", answer.len());
    let _ = out.flush();
}

/// A plan whose bucket these tests do not empty.
use super::plans::ROOMY;

fn server() -> TestServer {
    TestServer::with_config(ROOMY)
}

/// A Streamable HTTP MCP server: `initialize` opens session `s-1` (JSON answer),
/// `notifications/initialized` is 202, `tools/call` needs the session and answers in an
/// event stream (a progress notification first): `echo` returns its arguments and the
/// authorization it got, `explode` is a JSON-RPC error. (status, type, body, session?)
fn mcp(headers: &BTreeMap<String, String>, body: &str) -> (u16, &'static str, String, bool) {
    let m: Value = serde_json::from_str(body).unwrap();
    let in_session = headers.get("mcp-session-id").map(String::as_str) == Some("s-1");
    match m["method"].as_str().unwrap_or("") {
        "initialize" => {
            let result = json!({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}});
            (200, "application/json", json!({"jsonrpc": "2.0", "id": m["id"], "result": result}).to_string(), true)
        }
        "notifications/initialized" if in_session => (202, "application/json", String::new(), false),
        "tools/call" if in_session => {
            let (name, args) = (m["params"]["name"].as_str().unwrap_or(""), m["params"]["arguments"].clone());
            let answer = match name {
                "explode" => json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "no such tool"}}),
                _ => {
                    let auth = headers.get("authorization").cloned().unwrap_or_default();
                    let text = format!("{name} got {args} with {auth}");
                    json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": text}], "structuredContent": args, "isError": false}})
                }
            };
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
            (200, "text/event-stream", format!("event: message\ndata: {progress}\n\nevent: message\ndata: {answer}\n\n"), false)
        }
        _ => (400, "application/json", json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "no session"}}).to_string(), false),
    }
}

fn code(r: Response, status: u16) -> String {
    refused(r, status)["code"].as_str().unwrap().to_owned()
}

/// `POST /api/v1/tools/{id}/call` with `X-Soat-Context-*` headers.
fn call_tool(s: &TestServer, key: &str, id: &str, body: Value, context: &[(&str, &str)]) -> Response {
    let auth = format!("Bearer {key}");
    let names: Vec<String> = context.iter().map(|(k, _)| format!("X-Soat-Context-{k}")).collect();
    let mut headers = vec![("authorization", auth.as_str())];
    headers.extend(names.iter().map(String::as_str).zip(context.iter().map(|(_, v)| *v)));
    let body = body.to_string();
    s.conn().send("POST", &format!("/api/v1/tools/{id}/call"), &headers, Some(body.as_bytes()))
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// Every file under `dir`, read.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_secret_value_is_never_answered_logged_or_stored_in_the_clear() {
    use std::os::unix::fs::PermissionsExt;
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("server.log");
    let mut s = TestServer::with(Options { config: format!("{ROOMY}[log]\nlevel = \"debug\"\n"), log: Some(log.clone()), ..Options::default() });
    let target = Target::start();
    let (_, key) = s.signup("soat-secrets@example.org");
    let (first, second) = ("sv-FIRST-3c1d9e77a0", "sv-SECOND-b85f20e614");
    let mut answers = Vec::new();
    let mut keep = |r: Response| {
        answers.push(r.text());
        r
    };

    let created = ok(keep(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "UPSTREAM_TOKEN", "value": first})))), 201);
    let sec = id(&created);
    assert!(sec.starts_with("sec_") && created["has_value"] == true && created.get("value").is_none(), "{created}");
    assert!(created["project_id"].as_str().unwrap().starts_with("proj_"));
    let got = ok(keep(call(&s, "GET", &format!("/api/v1/secrets/{sec}"), &key, None)), 200);
    assert_eq!((got["name"].as_str(), got["has_value"].as_bool()), (Some("UPSTREAM_TOKEN"), Some(true)));
    let listed = ok(keep(call(&s, "GET", "/api/v1/secrets", &key, None)), 200);
    assert_eq!((listed["total"].as_u64(), listed["limit"].as_u64()), (Some(1), Some(25)), "{listed}");
    // A wrong type for the value is refused without echoing anything of the body.
    let e = refused(keep(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "X", "value": 5, "extra": first})))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");

    // A tool that sends it, resolved only when called.
    let auth = format!("Bearer {{{{secret:{sec}}}}}");
    let tool = |path: &str| json!({"name": "t", "execute": {"url": target.url(path), "method": "GET", "headers": {"Authorization": auth}}});
    let echo = ok(keep(call(&s, "POST", "/api/v1/tools", &key, Some(tool("/echo-auth")))), 201);
    assert_eq!(echo["execute"]["headers"]["Authorization"], auth, "the reference reads back as written");
    let out = ok(keep(call_tool(&s, &key, &id(&echo), json!({}), &[])), 200);
    assert_eq!(target.last().headers["authorization"], format!("Bearer {first}"), "the target got the value");
    assert_eq!(out, json!("you sent Bearer [secret]"), "an echoed value is scrubbed from the output");
    // A new value is used by the next call.
    let patched = ok(keep(call(&s, "PATCH", &format!("/api/v1/secrets/{sec}"), &key, Some(json!({"value": second})))), 200);
    assert_eq!(patched["name"], "UPSTREAM_TOKEN");
    let fail = ok(keep(call(&s, "POST", "/api/v1/tools", &key, Some(tool("/fail")))), 201);
    let e = refused(keep(call_tool(&s, &key, &id(&fail), json!({}), &[])), 502);
    assert_eq!(target.last().headers["authorization"], format!("Bearer {second}"));
    assert_eq!(e["code"], "TOOL_HTTP_ERROR");
    assert_eq!(e["meta"]["tool_status_code"], 503);
    assert_eq!(e["meta"]["tool_method"], "GET");
    assert_eq!(e["meta"]["tool_url"], target.url("/fail"));
    assert_eq!(e["meta"]["tool_response_body"], "upstream down; you sent Bearer [secret]");

    for text in &answers {
        assert!(!text.contains(first) && !text.contains(second), "a response holds a value: {text}");
    }
    s.kill9();
    let key_file = s.data().join("secrets.key");
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    let all = files(s.data());
    let names: Vec<String> = all.iter().map(|(p, _)| p.display().to_string()).collect();
    assert!(names.iter().any(|n| n.ends_with("records.redb")), "{names:?}");
    for (path, bytes) in &all {
        assert!(!holds(bytes, first) && !holds(bytes, second), "{} holds a value", path.display());
    }
    let logged = std::fs::read(&log).unwrap();
    assert!(holds(&logged, "request"), "the debug log was written");
    assert!(!holds(&logged, first) && !holds(&logged, second), "the log holds a value");

    // After the crash, the key file opens what was sealed.
    s.restart();
    ok(call_tool(&s, &key, &id(&echo), json!({}), &[]), 200);
    assert_eq!(target.last().headers["authorization"], format!("Bearer {second}"));
    assert!(ok(call(&s, "DELETE", &format!("/api/v1/secrets/{sec}"), &key, None), 200)["id"] == sec);
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/secrets/{sec}"), &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call_tool(&s, &key, &id(&echo), json!({}), &[]), 400), "SECRET_NOT_FOUND", "a deleted secret no longer resolves");
    s.kill9();
    let logged = std::fs::read(&log).unwrap();
    assert!(!holds(&logged, first) && !holds(&logged, second), "the log holds a value");
}

#[test]
fn tool_definitions_are_checked_and_credentials_refused() {
    let s = server();
    let (_, key) = s.signup("soat-tool-defs@example.org");
    let weather = json!({
        "name": "get-weather", "type": "http", "description": "Fetches current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "execute": {"url": "https://api.weather.example/v1/current?city={city}"}
    });
    let t = ok(call(&s, "POST", "/api/v1/tools", &key, Some(weather.clone())), 201);
    let tid = id(&t);
    assert!(tid.starts_with("tool_") && t["project_id"].as_str().unwrap().starts_with("proj_"), "{t}");
    assert_eq!((t["type"].as_str(), t["mcp"].is_null(), t["created_at"].is_string()), (Some("http"), true, true));
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/tools/{tid}"), &key, None), 200), t);
    let patched = ok(call(&s, "PATCH", &format!("/api/v1/tools/{tid}"), &key, Some(json!({"description": null, "name": "weather"}))), 200);
    assert_eq!((patched["name"].as_str(), patched["description"].is_null()), (Some("weather"), true));
    assert_eq!(patched["execute"], t["execute"]);
    for n in 0..3 {
        ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": format!("c{n}"), "type": "client"}))), 201);
    }
    let page = ok(call(&s, "GET", "/api/v1/tools?limit=2&offset=1", &key, None), 200);
    assert_eq!((page["total"].as_u64(), page["limit"].as_u64(), page["data"].as_array().unwrap().len()), (Some(4), Some(2), 2), "{page}");

    let with = |patch: Value| {
        let mut v = weather.clone();
        for (k, x) in patch.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let cases = [
        (json!({"colour": "red"}), 400, "VALIDATION_FAILED"),
        (json!({"parameters": {"type": "objekt"}}), 400, "VALIDATION_FAILED"),
        (json!({"execute": {"url": "https://x", "headers": {"Authorization": "Bearer sk-live-abc123"}}}), 400, "LITERAL_CREDENTIAL"),
        (json!({"execute": {"url": "https://x/?api_key=abc123"}}), 400, "LITERAL_CREDENTIAL"),
        (json!({"execute": {"url": "https://x/{{city}}"}}), 400, "INVALID_TEMPLATE_TOKEN"),
        (json!({"execute": {"url": "https://x/{{context:user}}"}}), 400, "INVALID_TEMPLATE_TOKEN"),
        (json!({"execute": {"url": "https://x", "headers": {"X-Key": "{{secret:sec_none}}"}}}), 400, "SECRET_NOT_FOUND"),
        (json!({"execute": {"url": "https://x", "body_mode": "multipart"}}), 400, "VALIDATION_FAILED"),
        (json!({"context_keys": ["bad key"]}), 400, "INVALID_TOOL_CONTEXT_KEY"),
        (json!({"type": "pipeline", "pipeline": {"steps": []}}), 400, "PIPELINE_INVALID_STEP"),
        (json!({"guardrail_ids": ["gr_1"]}), 400, "GUARDRAIL_NOT_FOUND"),
    ];
    for (patch, status, want) in cases {
        assert_eq!(code(call(&s, "POST", "/api/v1/tools", &key, Some(with(patch.clone()))), status), want, "{patch}");
    }
    let e =
        refused(call(&s, "POST", "/api/v1/tools", &key, Some(with(json!({"execute": {"url": "https://x", "auth": {"type": "aws_sigv4"}}})))), 400);
    assert!(e["meta"]["not_implemented"].as_str().unwrap().contains("aws_sigv4"), "what is not implemented is named: {e}");
    assert_eq!(code(call(&s, "PATCH", &format!("/api/v1/tools/{tid}"), &key, Some(json!({"type": null}))), 400), "VALIDATION_FAILED");
    let e = refused(
        call(&s, "PATCH", &format!("/api/v1/tools/{tid}"), &key, Some(json!({"execute": {"url": "https://x", "headers": {"Cookie": "sid=abc"}}}))),
        400,
    );
    assert_eq!(e["code"], "LITERAL_CREDENTIAL");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/tools/{tid}"), &key, None), 200)["execute"], t["execute"], "a refused write changes nothing");

    assert_eq!(ok(call(&s, "DELETE", &format!("/api/v1/tools/{tid}"), &key, None), 204), Value::Null);
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/tools/{tid}"), &key, None), 404), "RESOURCE_NOT_FOUND");
}

#[test]
fn tools_are_called_by_type() {
    let s = server();
    let target = Target::start();
    let (_, key) = s.signup("soat-tool-calls@example.org");
    let create = |v: Value| id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(v)), 201));

    // http: {param} in the path, the rest in the query for GET, in the JSON body for POST.
    let params = json!({"type": "object", "properties": {"id": {"type": "string"}, "q": {"type": "integer"}}, "required": ["id"]});
    let get = create(json!({"name": "g", "parameters": params, "execute": {"url": target.url("/echo/{id}"), "method": "get"}}));
    let out = ok(call_tool(&s, &key, &get, json!({"input": {"id": "a b", "q": 3}}), &[]), 200);
    assert_eq!((out["method"].as_str(), out["target"].as_str()), (Some("GET"), Some("/echo/a%20b?q=3")), "{out}");
    assert_eq!(code(call_tool(&s, &key, &get, json!({"input": {"q": "three"}}), &[]), 400), "VALIDATION_FAILED", "parameters are checked");
    let calls = target.count();
    assert_eq!(code(call_tool(&s, &key, &get, json!({"input": {"id": 1}}), &[]), 400), "VALIDATION_FAILED");
    assert_eq!(target.count(), calls, "a refused input sends nothing");

    // Context: {{context:…}} in a header, and X-Soat-Context-<key> forwarded as allowed.
    let ctx = create(json!({
        "name": "ctx", "context_keys": ["tenant"], "preset_parameters": {"fixed": 1},
        "execute": {"url": target.url("/echo"), "headers": {"X-User": "{{context:userToken}}"}}
    }));
    let out = ok(
        call_tool(&s, &key, &ctx, json!({"input": {"x": 2}}), &[("userToken", "u-1"), ("tenant", "t-9"), ("other", "o"), ("actorId", "a-7")]),
        200,
    );
    assert_eq!(out["method"], "POST");
    assert_eq!(out["body"], json!({"fixed": 1, "x": 2}), "presets merge under the input");
    assert_eq!(out["headers"]["x-user"], "u-1");
    assert_eq!(out["headers"]["x-soat-context-tenant"], "t-9");
    assert_eq!(out["headers"]["x-soat-context-actorid"], "a-7", "identity keys are always forwarded");
    assert!(out["headers"].get("x-soat-context-other").is_none(), "{out}");
    let seen = target.last();
    assert_eq!((seen.method.as_str(), seen.target.as_str()), ("POST", "/echo"));
    assert_eq!(
        (serde_json::from_str::<Value>(&seen.body).unwrap(), seen.headers["content-type"].as_str()),
        (json!({"fixed": 1, "x": 2}), "application/json")
    );
    assert_eq!(code(call_tool(&s, &key, &ctx, json!({}), &[("tenant", "t")]), 400), "MISSING_TOOL_CONTEXT_KEY");

    // client, mcp, and a target that fails.
    let client = create(json!({"name": "c", "type": "client"}));
    assert_eq!(code(call_tool(&s, &key, &client, json!({}), &[]), 422), "TOOL_CALL_NOT_SUPPORTED");
    // mcp: one tools/call in a session of its own, headers templated like http's.
    let sec = id(&ok(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "MCP", "value": "sv-MCP-0a9b8c"}))), 201));
    let mcp_tool = json!({"name": "m", "type": "mcp", "denied_actions": ["drop_all"],
        "mcp": {"url": target.url("/mcp"), "headers": {"Authorization": format!("Bearer {{{{secret:{sec}}}}}")}}});
    let mcp = create(mcp_tool);
    let out = ok(call_tool(&s, &key, &mcp, json!({"action": "echo", "input": {"city": "Oslo"}}), &[("tenant", "t-1")]), 200);
    assert_eq!(out["structuredContent"], json!({"city": "Oslo"}), "{out}");
    assert_eq!(out["content"][0]["text"], "echo got {\"city\":\"Oslo\"} with Bearer [secret]", "the value is scrubbed: {out}");
    let seen = target.last();
    assert_eq!((seen.headers["authorization"].as_str(), seen.headers["x-soat-context-tenant"].as_str()), ("Bearer sv-MCP-0a9b8c", "t-1"));
    assert!(seen.headers["accept"].contains("text/event-stream"));
    let e = refused(call_tool(&s, &key, &mcp, json!({"action": "explode"}), &[]), 502);
    assert_eq!(e["code"], "TOOL_HTTP_ERROR");
    assert!(e["message"].as_str().unwrap().contains("no such tool"), "{e}");
    assert!(refused(call_tool(&s, &key, &mcp, json!({"action": "drop_all"}), &[]), 400)["message"].as_str().unwrap().contains("not available"));
    assert_eq!(code(call_tool(&s, &key, &mcp, json!({}), &[]), 400), "VALIDATION_FAILED", "mcp calls name an action");
    let listed = create(json!({"name": "m2", "type": "mcp", "actions": ["echo"], "mcp": {"url": target.url("/mcp")}}));
    assert_eq!(code(call_tool(&s, &key, &listed, json!({"action": "other"}), &[]), 400), "VALIDATION_FAILED", "outside the allowlist");
    let down = create(json!({"name": "d", "execute": {"url": "http://127.0.0.1:1/x"}}));
    let e = refused(call_tool(&s, &key, &down, json!({}), &[]), 502);
    assert_eq!((e["code"].as_str(), e["meta"]["tool_status_code"].is_null()), (Some("TOOL_HTTP_ERROR"), true), "{e}");

    // output_mapping and a pipeline of persisted tools.
    let sum = create(json!({"name": "sum", "execute": {"url": target.url("/sum")}, "output_mapping": {"var": "output.sum"}}));
    assert_eq!(ok(call_tool(&s, &key, &sum, json!({"input": {"a": 2, "b": 3}}), &[]), 200), json!(5.0));
    let plain_sum = create(json!({"name": "sum2", "execute": {"url": target.url("/sum")}}));
    let pipeline = create(json!({"name": "p", "type": "pipeline", "pipeline": {
        "steps": [
            {"id": "first", "tool_id": plain_sum, "input": {"a": {"var": "input.x"}, "b": {"var": "input.y"}}},
            {"id": "second", "tool_id": plain_sum, "input": {"a": {"var": "steps.first.sum"}, "b": 10}}
        ],
        "output": {"total": {"var": "steps.second.sum"}, "was": {"var": "steps.first.sum"}}
    }}));
    assert_eq!(ok(call_tool(&s, &key, &pipeline, json!({"input": {"x": 1, "y": 2}}), &[]), 200), json!({"total": 13.0, "was": 3.0}));
    let client_step = json!({"name": "pf", "type": "pipeline", "pipeline": {"steps": [{"id": "only", "tool_id": client}]}});
    assert_eq!(code(call(&s, "POST", "/api/v1/tools", &key, Some(client_step)), 400), "PIPELINE_INVALID_STEP");
    // A step whose tool fails: 422 naming the step, with the step's own error beside it.
    let broken = create(json!({"name": "pb", "type": "pipeline", "pipeline": {"steps": [{"id": "boom", "tool_id": down}]}}));
    let e = refused(call_tool(&s, &key, &broken, json!({}), &[]), 422);
    assert_eq!(
        (e["code"].as_str(), e["meta"]["step_id"].as_str(), e["meta"]["step_code"].as_str()),
        (Some("PIPELINE_STEP_FAILED"), Some("boom"), Some("TOOL_HTTP_ERROR")),
        "{e}"
    );
}

#[test]
fn builtin_tools_search_a_collection_and_write_memory() {
    let s = server();
    let (_, key) = s.signup("soat-builtin@example.org");
    let col = ok(call(&s, "POST", "/v1/collections", &key, Some(json!({"name": "animals"}))), 201)["id"].as_str().unwrap().to_owned();
    for (title, text) in [("Dogs", "Dogs are loyal companions. The dog barks at strangers."), ("Tea", "Green tea is brewed from leaves.")] {
        ok(call(&s, "POST", &format!("/v1/collections/{col}/documents"), &key, Some(json!({"title": title, "text": text}))), 201);
    }
    let builtin = ok(
        call(
            &s,
            "POST",
            "/api/v1/tools",
            &key,
            Some(json!({"name": "quarry", "type": "builtin", "actions": ["collections:SearchCollection", "memories:WriteMemory"]})),
        ),
        201,
    );
    let tid = id(&builtin);
    let out = ok(
        call_tool(
            &s,
            &key,
            &tid,
            json!({"action": "collections:SearchCollection", "input": {"collection_id": col, "query": "barking dog", "mode": "keyword"}}),
            &[],
        ),
        200,
    );
    assert_eq!(out["results"][0]["document"]["title"], "Dogs", "{out}");
    assert!(out["results"][0]["passages"][0].as_str().unwrap().contains("barks"));
    let notes = id(&ok(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"name": "notes"}))), 201));
    let wrote = ok(
        call_tool(&s, &key, &tid, json!({"action": "memories:WriteMemory", "input": {"memory_id": notes, "content": "The user likes tea."}}), &[]),
        200,
    );
    assert!(wrote["id"].as_str().unwrap().starts_with("mem_entry_") && wrote["memory_id"] == notes.as_str(), "{wrote}");
    assert_eq!(code(call_tool(&s, &key, &tid, json!({"input": {}}), &[]), 400), "VALIDATION_FAILED", "builtin calls name an action");
    let only_search =
        ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "s", "type": "builtin", "actions": ["collections:SearchCollection"]}))), 201);
    let e = refused(
        call_tool(&s, &key, &id(&only_search), json!({"action": "memories:WriteMemory", "input": {"memory_id": "m", "content": "x"}}), &[]),
        400,
    );
    assert!(e["message"].as_str().unwrap().contains("not available on this tool"), "{e}");
    let (_, other) = s.signup("soat-builtin-other@example.org");
    let theirs = ok(
        call(&s, "POST", "/api/v1/tools", &other, Some(json!({"name": "q", "type": "builtin", "actions": ["collections:SearchCollection"]}))),
        201,
    );
    let e = refused(
        call_tool(&s, &other, &id(&theirs), json!({"action": "collections:SearchCollection", "input": {"collection_id": col, "query": "dog"}}), &[]),
        400,
    );
    assert_eq!(e["code"], "VALIDATION_FAILED", "another account's collection is not searched: {e}");
}

#[test]
fn another_accounts_or_projects_key_finds_nothing() {
    let s = server();
    let (_, key) = s.signup("soat-tenancy@example.org");
    let (_, other) = s.signup("soat-tenancy-other@example.org");
    let sec = id(&ok(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "K", "value": "tenancy-value-1"}))), 201));
    let tool = id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "c", "type": "client"}))), 201));
    // A project key of a second project of the same account.
    let project = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Second"}))), 201));
    let sk =
        ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "ci", "project_id": project}))), 201)["key"].as_str().unwrap().to_owned();
    for k in [other.as_str(), sk.as_str()] {
        for (method, path, body) in [
            ("GET", format!("/api/v1/secrets/{sec}"), None),
            ("PATCH", format!("/api/v1/secrets/{sec}"), Some(json!({"name": "x"}))),
            ("DELETE", format!("/api/v1/secrets/{sec}"), None),
            ("GET", format!("/api/v1/tools/{tool}"), None),
            ("PATCH", format!("/api/v1/tools/{tool}"), Some(json!({"name": "x"}))),
            ("DELETE", format!("/api/v1/tools/{tool}"), None),
            ("POST", format!("/api/v1/tools/{tool}/call"), Some(json!({}))),
        ] {
            assert_eq!(code(call(&s, method, &path, k, body), 404), "RESOURCE_NOT_FOUND", "{method} {path}");
        }
        for path in ["/api/v1/secrets", "/api/v1/tools"] {
            assert_eq!(ok(call(&s, "GET", path, k, None), 200)["total"], 0, "{path}");
        }
    }
    // The project key writes into its own project, and cannot name another.
    let mine = ok(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "K2", "value": "v"}))), 201);
    assert_eq!(mine["project_id"], project);
    let default = ok(call(&s, "GET", &format!("/api/v1/secrets/{sec}"), &key, None), 200)["project_id"].as_str().unwrap().to_owned();
    assert_eq!(
        code(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "K3", "value": "v", "project_id": default}))), 403),
        "API_KEY_PROJECT_SCOPE"
    );
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/tools?project_id={default}"), &sk, None), 403), "API_KEY_PROJECT_SCOPE");
    // And the owner still has everything.
    ok(call(&s, "GET", &format!("/api/v1/secrets/{sec}"), &key, None), 200);
    ok(call(&s, "GET", &format!("/api/v1/tools/{tool}"), &key, None), 200);
}

#[test]
fn an_ai_providers_secret_id_is_resolved_when_it_calls() {
    let s = server();
    let target = Target::start();
    let (_, key) = s.signup("soat-provider-secret@example.org");
    let value = "sv-PROVIDER-77e0c3a9d1";
    let sec = id(&ok(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "LLM_KEY", "value": value}))), 201));
    let body = json!({"name": "p", "provider": "custom", "base_url": target.url("/v1"), "default_model": "m1", "secret_id": sec});
    let provider = id(&ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(body)), 201));
    let r = call(&s, "GET", &format!("/api/v1/ai-providers/{provider}/models"), &key, None);
    assert!(!r.text().contains(value), "{}", r.text());
    ok(r, 200);
    assert_eq!(target.last().headers["authorization"], format!("Bearer {value}"), "the provider's call carried the secret");
    let e = refused(call(&s, "DELETE", &format!("/api/v1/secrets/{sec}"), &key, None), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["ai_provider_ids"][0].as_str()), (Some("SECRET_HAS_DEPENDENTS"), Some(provider.as_str())), "{e}");
    // Pointed at a secret that is gone (another project's, say), the call is refused.
    ok(call(&s, "PATCH", &format!("/api/v1/ai-providers/{provider}"), &key, Some(json!({"secret_id": "sec_gone"}))), 200);
    let e = refused(call(&s, "GET", &format!("/api/v1/ai-providers/{provider}/models"), &key, None), 400);
    assert_eq!(e["code"], "SECRET_NOT_FOUND", "{e}");
    ok(call(&s, "DELETE", &format!("/api/v1/secrets/{sec}"), &key, None), 200);
}

#[test]
fn https_targets_are_called_through_tls_with_the_configured_roots() {
    let roots = tls_dir().join("localhost.crt");
    let s = TestServer::with_config(&format!("{ROOMY}[llm]\ntls_roots = \"{}\"\n", roots.display()));
    let target = Target::start_tls();
    let (_, key) = s.signup("soat-tools-https@example.org");
    let sec = id(&ok(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": "K", "value": "sv-TLS-5d1e0b"}))), 201));
    let url = format!("https://localhost:{}/echo/{{id}}", target.addr.port());
    let tool = json!({"name": "tls", "execute": {"url": url, "headers": {"Authorization": format!("Bearer {{{{secret:{sec}}}}}")}}});
    let tid = id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(tool)), 201));
    let out = ok(call_tool(&s, &key, &tid, json!({"input": {"id": "x", "n": 1}}), &[]), 200);
    assert_eq!((out["target"].as_str(), out["body"].clone()), (Some("/echo/x"), json!({"n": 1})), "{out}");
    assert_eq!(target.last().headers["authorization"], "Bearer sv-TLS-5d1e0b");
    // A target whose certificate the roots do not vouch for is refused before anything is sent.
    let plain = TestServer::with_config(ROOMY);
    let (_, key) = plain.signup("soat-tools-https-untrusted@example.org");
    let tid = id(&ok(call(&plain, "POST", "/api/v1/tools", &key, Some(json!({"name": "tls", "execute": {"url": url}}))), 201));
    let calls = target.count();
    let e = refused(call_tool(&plain, &key, &tid, json!({"input": {"id": "x"}}), &[]), 502);
    assert_eq!((e["code"].as_str(), e["meta"]["tool_status_code"].is_null()), (Some("TOOL_HTTP_ERROR"), true), "{e}");
    assert_eq!(target.count(), calls, "nothing reached the target");
}

#[test]
fn an_agent_binds_only_tools_of_its_own_project() {
    let s = server();
    let (_, key) = s.signup("soat-tools-bindings@example.org");
    let provider = json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"});
    let aip = id(&ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(provider)), 201));
    let tool = id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "c", "type": "client"}))), 201));
    let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": aip, "tool_bindings": [{"tool_id": tool}]}))), 201);
    assert_eq!(agent["tool_bindings"], json!([{"tool_id": tool}]));
    // Another project's tool, and one that never existed, are not this project's.
    let other = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Other"}))), 201));
    let theirs = id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "c", "type": "client", "project_id": other}))), 201));
    for missing in [theirs.as_str(), "tool_neverMade0000"] {
        let body = json!({"ai_provider_id": aip, "tool_bindings": [{"tool_id": missing}]});
        assert_eq!(code(call(&s, "POST", "/api/v1/agents", &key, Some(body)), 400), "TOOL_NOT_FOUND", "{missing}");
    }
    // An inline tool is refused for what POST /api/v1/tools refuses.
    let inline = |tool: Value| call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": aip, "tool_bindings": [{"tool": tool}]})));
    assert_eq!(code(inline(json!({"name": "x", "execute": {"url": "https://h/?api_key=abc123"}})), 400), "LITERAL_CREDENTIAL");
    assert_eq!(code(inline(json!({"name": "x", "execute": {"url": "https://h/{{oops}}"}})), 400), "VALIDATION_FAILED");
    assert_eq!(code(inline(json!({"name": "x", "type": "client", "parameters": {"type": "objekt"}})), 400), "VALIDATION_FAILED");
    ok(inline(json!({"name": "x", "type": "client", "parameters": {"type": "object"}})), 201);
}

/// Regression (issue 2/9, findings 2–4): an upstream that quotes the request in its
/// error body had the operator's provider token copied into the gateway's 502 (streamed
/// too), a tenant provider's secret into the generation's error (in the answer, the
/// lists, the record, and so the data directory); a tool target that answered the secret
/// `\u`-escaped, or one with `"` or `\` in it, had it come back decoded, and a secret
/// under 4 characters was never scrubbed. Now every failure text and every tool answer is
/// scrubbed of the call's credentials in any spelling, before it is answered or kept.
#[test]
fn an_echoed_credential_never_comes_back_in_any_spelling() {
    let target = Target::start();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("server.log");
    let config = format!(
        "{ROOMY}[log]\nlevel = \"debug\"\n[llm]\nmax_retries = 0\n[llm.local]\nenabled = false\n[llm.providers.op]\nmanifest = \"openai-compatible\"\nbase_url = \"{}\"\ntoken = \"op-OPERATORTOKEN\\\"x\\\\y\"\nmodels = [\"m\"]\n",
        target.url("/v1")
    );
    let mut s = TestServer::with(Options { config, log: Some(log.clone()), ..Options::default() });
    let (_, key) = s.signup("echoes@example.org");
    let mut answers: Vec<String> = Vec::new();
    // The gateway, whole and streamed: the upstream's 401 quotes the operator's token.
    for stream in [false, true] {
        let body = json!({"model": "op/m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}).to_string();
        let r = s.request("POST", "/v1/chat/completions", Some(&key), Some(&body));
        assert!(r.status >= 400 || stream, "{}", r.text());
        assert!(r.text().contains("bad key"), "the upstream's message is kept, less the token: {}", r.text());
        answers.push(r.text());
    }
    assert_eq!(target.last().headers["authorization"], "Bearer op-OPERATORTOKEN\"x\\y", "the upstream got the token");

    // A tenant's provider secret, in a generation that fails on the same echo.
    let secret =
        |name: &str, value: &str| ok(call(&s, "POST", "/api/v1/secrets", &key, Some(json!({"name": name, "value": value}))), 201)["id"].clone();
    let tenant = secret("PROVIDER", "TENANTSECRET\"q\\7");
    let provider = ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &key,
            Some(json!({"name": "echo", "provider": "custom", "base_url": target.url("/v1"), "default_model": "m", "secret_id": tenant})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent =
        ok(call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": provider, "name": "a"}))), 201)["id"].as_str().unwrap().to_owned();
    let r = call(
        &s,
        "POST",
        &format!("/api/v1/agents/{agent}/generate?wait=true"),
        &key,
        Some(json!({"messages": [{"role": "user", "content": "Go."}]})),
    );
    let e = refused(r, 502);
    assert!(e["message"].as_str().unwrap().contains("bad key"), "{e}");
    answers.push(e.to_string());
    assert!(target.last().headers["authorization"].contains("TENANTSECRET"), "the upstream got the secret");
    let generation = e["meta"]["generation_id"].as_str().unwrap().to_owned();
    for path in [format!("/api/v1/generations/{generation}"), "/api/v1/generations".into(), "/api/v1/traces".into()] {
        answers.push(ok(call(&s, "GET", &path, &key, None), 200).to_string());
    }

    // Tool secrets: one of 3 characters, one with a quote and a backslash, each echoed
    // in plain text and in JSON with every character \u-escaped.
    for value in ["q~z", "TOOLSECRET\"\\x"] {
        let sec = secret("TOOL", value);
        for path in ["/echo-auth", "/echo-auth-escaped"] {
            let auth = format!("Bearer {{{{secret:{}}}}}", sec.as_str().unwrap());
            let t = ok(
                call(
                    &s,
                    "POST",
                    "/api/v1/tools",
                    &key,
                    Some(json!({"name": "t", "execute": {"url": target.url(path), "method": "GET", "headers": {"Authorization": auth}}})),
                ),
                201,
            );
            let out = ok(call_tool(&s, &key, &id(&t), json!({}), &[]), 200);
            assert_eq!(target.last().headers["authorization"], format!("Bearer {value}"));
            let shown = if path == "/echo-auth" { out.as_str().unwrap().to_owned() } else { out["sent"].as_str().unwrap().to_owned() };
            assert_eq!(shown, if path == "/echo-auth" { "you sent Bearer [secret]" } else { "Bearer [secret]" }, "{value:?} on {path}");
            answers.push(out.to_string());
        }
    }

    let leaked = |text: &str| ["OPERATORTOKEN", "TENANTSECRET", "TOOLSECRET", "q~z"].into_iter().find(|m| text.contains(m));
    for text in &answers {
        assert_eq!(leaked(text), None, "an answer holds a credential: {text}");
    }
    s.kill9();
    for (path, bytes) in files(s.data()) {
        assert_eq!(leaked(&String::from_utf8_lossy(&bytes)), None, "{} holds a credential", path.display());
    }
    assert_eq!(leaked(&std::fs::read_to_string(&log).unwrap()), None, "the log holds a credential");
}
