//! Agent generations against a scripted upstream: the three modes, the turn loop, idempotency and errors.
//!
//! Agent generations over HTTP against a scripted OpenAI-compatible upstream: the
//! three modes (background, `?wait=true`, streamed), the turn loop (client tools
//! paused and resumed, `max_steps` across a pause, a forced `tool_choice` with its
//! stop condition, an http tool with a secret header), idempotency, `output_schema`,
//! and the errors the spec names.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted_llm::{from, text, tools, Reply, Scripted};
use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};

/// Rates high enough that a test's requests are never limited.
use super::plans::LAB;

pub fn server() -> TestServer {
    TestServer::with_config(LAB)
}

pub struct Setup {
    pub key: String,
    pub provider: String,
}

/// An account, and an AI provider pointing at `up`.
pub fn setup(s: &TestServer, up: &Scripted, email: &str) -> Setup {
    let (_, key) = s.signup(email);
    let p = ok(
        call(
            s,
            "POST",
            "/api/v1/ai-providers",
            &key,
            Some(json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"})),
        ),
        201,
    );
    Setup { key, provider: p["id"].as_str().unwrap().to_owned() }
}

pub fn agent(s: &TestServer, st: &Setup, extra: Value) -> String {
    let mut body = json!({"ai_provider_id": st.provider, "name": "helper", "instructions": "You help."});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    ok(call(s, "POST", "/api/v1/agents", &st.key, Some(body)), 201)["id"].as_str().unwrap().to_owned()
}

pub fn tool(s: &TestServer, st: &Setup, body: Value) -> String {
    ok(call(s, "POST", "/api/v1/tools", &st.key, Some(body)), 201)["id"].as_str().unwrap().to_owned()
}

fn generate(s: &TestServer, st: &Setup, agent: &str, query: &str, body: Value) -> super::client::Response {
    call(s, "POST", &format!("/api/v1/agents/{agent}/generate{query}"), &st.key, Some(body))
}

fn user(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

/// Polls the generation until it is no longer `in_progress`.
pub fn settle(s: &TestServer, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let g = ok(call(s, "GET", &format!("/api/v1/generations/{id}"), key, None), 200);
        if g["status"] != "in_progress" {
            return g;
        }
        assert!(Instant::now() < deadline, "generation {id} still in progress: {g}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One SSE frame: its id (if any) and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub id: Option<u64>,
    pub data: String,
}

/// Reads SSE frames from a raw HTTP response until the server closes it (or `stop`
/// frames were read).
pub fn read_frames(reader: &mut impl BufRead, stop: Option<usize>) -> Vec<Frame> {
    let mut frames = Vec::new();
    let (mut id, mut data) = (None, None::<String>);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return frames;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if let Some(d) = data.take() {
                frames.push(Frame { id: id.take(), data: d });
                if stop.is_some_and(|n| frames.len() >= n) {
                    return frames;
                }
            }
            continue;
        }
        // Chunked encoding's size lines are hex digits alone; SSE lines have a colon.
        if let Some(v) = l.strip_prefix("id: ") {
            id = v.parse().ok();
        } else if let Some(v) = l.strip_prefix("data: ") {
            data = Some(v.to_owned());
        }
    }
}

/// Opens an SSE request and returns the reader past the head (status checked).
pub fn open_sse(s: &TestServer, key: &str, method: &str, path: &str, body: Option<&Value>, last_event_id: Option<u64>) -> BufReader<TcpStream> {
    open_sse_with_id(s, key, method, path, body, last_event_id).0
}

/// As [`open_sse`], with the `x-generation-id` header the generate route sends.
pub fn open_sse_with_id(
    s: &TestServer,
    key: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
    last_event_id: Option<u64>,
) -> (BufReader<TcpStream>, Option<String>) {
    let mut stream = TcpStream::connect(s.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let last = last_event_id.map(|n| format!("last-event-id: {n}\r\n")).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: q\r\nauthorization: Bearer {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{last}connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut id = None;
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("content-type") {
            assert!(line.contains("text/event-stream"), "{line}");
        }
        if lower.starts_with("x-generation-id:") {
            id = Some(line["x-generation-id:".len()..].trim().to_owned());
        }
    }
    (reader, id)
}

#[test]
fn a_background_generation_is_pollable_at_once_and_completes() {
    let up = Scripted::start();
    up.otherwise(text("The answer is 42."));
    let s = server();
    let st = setup(&s, &up, "bg@example.com");
    let a = agent(&s, &st, json!({}));
    let accepted = ok(generate(&s, &st, &a, "", user("What is the answer?")), 202);
    assert_eq!(accepted["status"], "accepted");
    let id = accepted["generation_id"].as_str().unwrap();
    assert!(id.starts_with("gen_") && accepted["trace_id"].as_str().unwrap().starts_with("trace_"), "{accepted}");
    // The record exists as soon as the 202 is answered.
    let first = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
    assert!(first["status"] == "in_progress" || first["status"] == "completed", "{first}");
    let g = settle(&s, &st.key, id);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "The answer is 42.");
    assert_eq!(g["stop_reason"], "stop");
    assert_eq!(g["agent_version"], 1);
    assert_eq!(g["agent_id"], a.as_str());
    // The agent's instructions were its system prompt; the user's message followed.
    let sent = up.bodies().pop().unwrap();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][0]["content"], "You help.");
    assert_eq!(sent["messages"][1]["content"], "What is the answer?");
}

#[test]
fn wait_answers_the_generation_and_refuses_stream_beside_it() {
    let up = Scripted::start();
    up.otherwise(text("Done."));
    let s = server();
    let st = setup(&s, &up, "wait@example.com");
    let a = agent(&s, &st, json!({}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Go.")), 200);
    assert_eq!(g["status"], "completed");
    assert_eq!(g["output"]["content"], "Done.");
    assert_eq!(g["output"]["finish_reason"], "stop");
    assert_eq!(g["output"]["model"], "reader");
    assert_eq!(g["ai_provider_id"], st.provider.as_str());
    let mut b = user("Go.");
    b["stream"] = json!(true);
    let e = refused(generate(&s, &st, &a, "?wait=true", b), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    // A system message, an unknown field, an empty list, another account's agent.
    let e = refused(generate(&s, &st, &a, "", json!({"messages": [{"role": "system", "content": "x"}]})), 400);
    assert_eq!(e["code"], "SYSTEM_MESSAGE_NOT_ALLOWED");
    assert_eq!(
        refused(generate(&s, &st, &a, "", json!({"messages": [{"role": "user", "content": "x"}], "nope": 1})), 400)["code"],
        "VALIDATION_FAILED"
    );
    assert_eq!(refused(generate(&s, &st, &a, "", json!({"messages": []})), 400)["code"], "VALIDATION_FAILED");
    let other = setup(&s, &up, "other@example.com");
    assert_eq!(refused(generate(&s, &other, &a, "", user("x")), 404)["code"], "RESOURCE_NOT_FOUND");
    let e = refused(generate(&s, &st, &a, "", json!({"messages": [{"role": "user", "content": "x"}], "tool_context": {"bad key": "v"}})), 400);
    assert_eq!(e["code"], "INVALID_TOOL_CONTEXT_KEY");
}

#[test]
fn a_provider_failure_is_a_502_with_the_generation_named_and_recorded_failed() {
    let up = Scripted::start();
    up.otherwise(Reply::Fail(404));
    let s = server();
    let st = setup(&s, &up, "fail@example.com");
    let a = agent(&s, &st, json!({}));
    let e = refused(generate(&s, &st, &a, "?wait=true", user("Go.")), 502);
    assert_eq!(e["code"], "AI_PROVIDER_ERROR");
    assert!(e["message"].as_str().unwrap().starts_with("Provider returned 404"), "{e}");
    let id = e["meta"]["generation_id"].as_str().unwrap();
    assert!(e["meta"]["trace_id"].as_str().unwrap().starts_with("trace_"));
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
    assert_eq!(g["status"], "failed");
    assert_eq!(g["error"]["code"], "AI_PROVIDER_ERROR");
}

#[test]
fn a_stream_sends_deltas_then_done_and_a_failure_as_a_last_error_frame() {
    let up = Scripted::start();
    up.on("fail", Reply::CutAfter("Partial ".into()));
    up.otherwise(text("Hello there, friend."));
    let s = server();
    let st = setup(&s, &up, "stream@example.com");
    let a = agent(&s, &st, json!({}));
    let mut b = user("Say hello.");
    b["stream"] = json!(true);
    let mut r = open_sse(&s, &st.key, "POST", &format!("/api/v1/agents/{a}/generate"), Some(&b), None);
    let frames = read_frames(&mut r, None);
    assert_eq!(frames.last().unwrap().data, "[DONE]", "{frames:?}");
    let text: String = frames
        .iter()
        .filter_map(|f| serde_json::from_str::<Value>(&f.data).ok())
        .filter(|v| v["type"] == "delta")
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hello there, friend.");
    let ids: Vec<u64> = frames.iter().map(|f| f.id.expect("every frame has an id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    let mut b = user("Please fail.");
    b["stream"] = json!(true);
    let mut r = open_sse(&s, &st.key, "POST", &format!("/api/v1/agents/{a}/generate"), Some(&b), None);
    let frames = read_frames(&mut r, None);
    let last: Value = serde_json::from_str(&frames.last().unwrap().data).unwrap();
    assert!(last["error"].is_string(), "{frames:?}");
    assert!(frames.iter().all(|f| f.data != "[DONE]"), "no [DONE] after a failure: {frames:?}");
    assert!(frames.iter().any(|f| f.data.contains("Partial")), "chunks before the failure are delivered: {frames:?}");
}

/// A client tool `ask_user`; the model calls it twice in one turn, then answers.
#[test]
fn a_client_tool_pauses_twice_in_one_turn_and_each_pause_accepts_outputs_once() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| {
        if prompt.contains("second answer") {
            text("All answered.")
        } else if prompt.contains("first answer") {
            tools(&[("ask_user", json!({"question": "two?"}))])
        } else {
            tools(&[("ask_user", json!({"question": "one?"}))])
        }
    }));
    let s = server();
    let st = setup(&s, &up, "client@example.com");
    let t = tool(
        &s,
        &st,
        json!({"name": "ask_user", "type": "client", "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}),
    );
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Ask me.")), 200);
    assert_eq!(g["status"], "requires_action", "{g}");
    assert_eq!(g["required_action"]["type"], "submit_tool_outputs");
    let call1 = g["required_action"]["tool_calls"][0].clone();
    assert_eq!(call1["tool_name"], "ask_user");
    assert_eq!(call1["args"]["question"], "one?");
    let id = g["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/agents/{a}/generate/{id}/tool-outputs");
    // A call id it does not wait for is a 400 and changes nothing.
    let e = refused(call(&s, "POST", &path, &st.key, Some(json!({"tool_outputs": [{"tool_call_id": "nope", "output": 1}]}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    let out1 = json!({"tool_outputs": [{"tool_call_id": call1["id"], "output": "first answer"}]});
    let g2 = ok(call(&s, "POST", &path, &st.key, Some(out1.clone())), 200);
    assert_eq!(g2["status"], "requires_action", "{g2}");
    let call2 = g2["required_action"]["tool_calls"][0].clone();
    assert_eq!(call2["args"]["question"], "two?");
    // The first pause's outputs were accepted once: sending them again is a 400 now
    // (the generation waits for another call), and after the end a 409.
    let g3 = ok(call(&s, "POST", &path, &st.key, Some(json!({"tool_outputs": [{"tool_call_id": call2["id"], "output": "second answer"}]}))), 200);
    assert_eq!(g3["status"], "completed", "{g3}");
    assert_eq!(g3["output"]["content"], "All answered.");
    let e = refused(call(&s, "POST", &path, &st.key, Some(out1)), 409);
    assert_eq!(e["code"], "GENERATION_NOT_AWAITING_TOOL_OUTPUTS");
    // Three model calls in one turn.
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
    assert_eq!(g["step_count"], 3);
}

#[test]
fn max_steps_is_spent_across_a_pause() {
    let up = Scripted::start();
    up.otherwise(tools(&[("ask_user", json!({}))]));
    let s = server();
    let st = setup(&s, &up, "steps@example.com");
    let t = tool(&s, &st, json!({"name": "ask_user", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}], "max_steps": 2}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Loop.")), 200);
    let id = g["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/agents/{a}/generate/{id}/tool-outputs");
    let c = g["required_action"]["tool_calls"][0]["id"].clone();
    let g = ok(call(&s, "POST", &path, &st.key, Some(json!({"tool_outputs": [{"tool_call_id": c, "output": 1}]}))), 200);
    assert_eq!(g["status"], "requires_action", "the second step pauses again: {g}");
    let before = up.bodies().len();
    let c = g["required_action"]["tool_calls"][0]["id"].clone();
    let g = ok(call(&s, "POST", &path, &st.key, Some(json!({"tool_outputs": [{"tool_call_id": c, "output": 2}]}))), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(up.bodies().len(), before, "no model call once the steps are spent");
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
    assert_eq!(g["stop_reason"], "max_steps");
}

#[test]
fn a_forced_tool_choice_ends_at_its_stop_condition() {
    let up = Scripted::start();
    up.otherwise(tools(&[("finish", json!({"summary": "ok"}))]));
    let s = server();
    let st = setup(&s, &up, "forced@example.com");
    let finish = tool(
        &s,
        &st,
        json!({"name": "finish", "type": "http", "execute": {"url": format!("http://{}/finish", echo_service().0)}, "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}}}),
    );
    let a = agent(
        &s,
        &st,
        json!({"tool_bindings": [{"tool_id": finish}], "tool_choice": {"type": "tool", "tool_name": "finish"}, "stop_conditions": [{"type": "has_tool_call", "tool_name": "finish"}]}),
    );
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Wrap up.")), 200);
    assert_eq!(g["status"], "completed", "{g}");
    let sent = up.bodies();
    assert_eq!(sent.len(), 1, "the turn ended after the step that called finish");
    assert_eq!(sent[0]["tool_choice"]["function"]["name"], "finish", "{}", sent[0]);
    let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(rec["stop_reason"], "stop_condition");
}

/// What [`echo_service`] saw: each request's path, headers (lower-case names) and body.
pub type Seen = Arc<Mutex<Vec<(String, HashMap<String, String>, String)>>>;

/// A loopback HTTP service that records every request's headers and body and
/// answers `{"ok": true, "n": <count>}`; non-2xx for paths containing "fail".
pub fn echo_service() -> (std::net::SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    let addr = super::loopback::listen(move |stream| {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        while let Some(r) = super::loopback::read_request(&mut reader) {
            let count = {
                let mut s = s2.lock().unwrap();
                s.push((r.path.clone(), r.headers.into_iter().collect(), r.body.to_string()));
                s.len()
            };
            let (status, reply) = if r.path.contains("fail") { (500, json!({"error": "boom"})) } else { (200, json!({"ok": true, "n": count})) };
            if !super::loopback::respond(&mut out, status, &reply) {
                return;
            }
        }
    });
    (addr, seen)
}

#[test]
fn an_http_tool_gets_its_secret_header_and_an_idempotency_key_and_no_answer_shows_the_secret() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| if prompt.contains("\"ok\"") { text("Booked.") } else { tools(&[("book", json!({"room": "A"}))]) }));
    let (addr, seen) = echo_service();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let s = TestServer::with(Options { config: format!("{LAB}[log]\nlevel = \"debug\"\n"), log: Some(log.clone()), ..Options::default() });
    let st = setup(&s, &up, "http@example.com");
    let secret = ok(call(&s, "POST", "/api/v1/secrets", &st.key, Some(json!({"name": "svc", "value": "s3cr3t-value-123"}))), 201);
    let sec = secret["id"].as_str().unwrap();
    let book = tool(
        &s,
        &st,
        json!({"name": "book", "type": "http", "execute": {"url": format!("http://{addr}/book"), "headers": {"Authorization": format!("Bearer {{{{secret:{sec}}}}}")}}, "parameters": {"type": "object", "properties": {"room": {"type": "string"}}}}),
    );
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": book}]}));
    let mut b = user("Book a room.");
    b["tool_context"] = json!({"tenant": "acme"});
    let g = ok(generate(&s, &st, &a, "?wait=true", b), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "Booked.");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (path, headers, body) = &seen[0];
    assert_eq!(path, "/book");
    assert_eq!(headers["authorization"], "Bearer s3cr3t-value-123");
    assert_eq!(headers["x-soat-context-tenant"], "acme");
    let id = g["id"].as_str().unwrap();
    assert!(headers["idempotency-key"].starts_with(&format!("{id}:")), "{headers:?}");
    assert_eq!(serde_json::from_str::<Value>(body).unwrap()["room"], "A");
    // Nothing the client can read holds the secret.
    for path in [format!("/api/v1/generations/{id}"), format!("/api/v1/tools/{book}"), format!("/api/v1/agents/{a}")] {
        let r = call(&s, "GET", &path, &st.key, None);
        assert!(!r.text().contains("s3cr3t-value-123"), "{path}: {}", r.text());
    }
    let mut r = open_sse(&s, &st.key, "GET", &format!("/api/v1/generations/{id}/events"), None, None);
    let frames = read_frames(&mut r, None);
    assert!(frames.iter().any(|f| f.data.contains("tool_result")), "{frames:?}");
    assert!(frames.iter().all(|f| !f.data.contains("s3cr3t")), "{frames:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("soat_create_agent_generation") || !logged.is_empty(), "the log was written");
    assert!(!logged.contains("s3cr3t-value-123"), "the log shows the secret");
}

#[test]
fn an_http_tool_answering_non_2xx_fails_the_generation_with_tool_http_error() {
    let up = Scripted::start();
    up.otherwise(tools(&[("charge", json!({}))]));
    let (addr, _) = echo_service();
    let s = server();
    let st = setup(&s, &up, "http-fail@example.com");
    let t = tool(&s, &st, json!({"name": "charge", "type": "http", "execute": {"url": format!("http://{addr}/fail")}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let e = refused(generate(&s, &st, &a, "?wait=true", user("Charge.")), 502);
    assert_eq!(e["code"], "TOOL_HTTP_ERROR", "{e}");
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{}", e["meta"]["generation_id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(g["status"], "failed");
}

#[test]
fn an_idempotent_replay_while_the_first_runs_is_202_and_runs_nothing() {
    let up = Scripted::start();
    up.otherwise(Reply::Slow(Duration::from_millis(800), Box::new(text("Once."))));
    let s = server();
    let st = setup(&s, &up, "idem@example.com");
    let a = agent(&s, &st, json!({}));
    let b = json!({"messages": [{"role": "user", "content": "Once please."}], "idempotency_key": "order-1"});
    let first = ok(generate(&s, &st, &a, "", b.clone()), 202);
    // While it runs: the same request (even streamed, even waiting) is 202 with the same ids.
    let again = ok(generate(&s, &st, &a, "?wait=true", b.clone()), 202);
    assert_eq!(again, first);
    let mut streamed = b.clone();
    streamed["stream"] = json!(true);
    assert_eq!(ok(generate(&s, &st, &a, "", streamed), 202), first);
    // The header carries the key as well.
    let auth = format!("Bearer {}", st.key);
    let body = user("Once please.").to_string();
    let r = s.conn().send(
        "POST",
        &format!("/api/v1/agents/{a}/generate"),
        &[("authorization", &auth), ("idempotency-key", "order-1")],
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json(), first);
    // A changed body, or another agent, is a 409 and runs nothing.
    let mut changed = b.clone();
    changed["messages"][0]["content"] = json!("Twice please.");
    assert_eq!(refused(generate(&s, &st, &a, "", changed), 409)["code"], "IDEMPOTENCY_KEY_REUSED");
    let other = agent(&s, &st, json!({}));
    assert_eq!(refused(generate(&s, &st, &other, "", b.clone()), 409)["code"], "IDEMPOTENCY_KEY_REUSED");
    let e = refused(generate(&s, &st, &a, "", json!({"messages": [{"role": "user", "content": "x"}], "idempotency_key": ""})), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    let g = settle(&s, &st.key, first["generation_id"].as_str().unwrap());
    assert_eq!(g["status"], "completed");
    assert_eq!(up.bodies().len(), 1, "one upstream call for all the replays");
    // After it completed the key still names it.
    assert_eq!(ok(generate(&s, &st, &a, "", b), 202), first);
}

#[test]
fn output_schema_is_parsed_into_output_object_and_a_violation_names_the_field() {
    let up = Scripted::start();
    up.on("good", text(r#"{"city": "Paris", "tags": ["capital"]}"#));
    up.otherwise(text(r#"{"city": "P", "tags": []}"#));
    let s = server();
    let st = setup(&s, &up, "schema@example.com");
    let schema = json!({"type": "object", "required": ["city", "tags"], "properties": {"city": {"type": "string", "minLength": 2}, "tags": {"type": "array", "minItems": 1}}});
    let a = agent(&s, &st, json!({"output_schema": schema}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("A good answer please.")), 200);
    assert_eq!(g["output"]["object"]["city"], "Paris", "{g}");
    let sent = up.bodies().pop().unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema", "the schema constrains the output: {sent}");
    let e = refused(generate(&s, &st, &a, "?wait=true", user("Any answer.")), 502);
    assert_eq!(e["code"], "OUTPUT_SCHEMA_VALIDATION_FAILED");
    assert!(e["message"].as_str().unwrap().contains("city"), "{e}");
    let mut b = user("x");
    b["stream"] = json!(true);
    assert_eq!(refused(generate(&s, &st, &a, "", b), 400)["code"], "OUTPUT_SCHEMA_STREAMING_UNSUPPORTED");
}

#[test]
fn a_tool_call_written_as_text_is_a_502_naming_the_tool() {
    let up = Scripted::start();
    up.otherwise(text(r#"{"name": "lookup", "arguments": {"q": "x"}}"#));
    let s = server();
    let mut st = setup(&s, &up, "textcall@example.com");
    // The openai manifest does not parse calls written as text (openai-compatible's
    // does, for small local models: there the same answer is a real call).
    let sec =
        ok(call(&s, "POST", "/api/v1/secrets", &st.key, Some(json!({"name": "k", "value": "sk-test"}))), 201)["id"].as_str().unwrap().to_owned();
    let p = ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &st.key,
            Some(
                json!({"name": "oa", "provider": "openai", "secret_id": sec, "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"}),
            ),
        ),
        201,
    );
    st.provider = p["id"].as_str().unwrap().to_owned();
    let t = tool(&s, &st, json!({"name": "lookup", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let e = refused(generate(&s, &st, &a, "?wait=true", user("Look up x.")), 502);
    assert_eq!(e["code"], "TEXT_ENCODED_TOOL_CALL");
    assert_eq!(e["meta"]["tool_name"], "lookup");
}

#[test]
fn a_stream_cut_at_any_event_resumes_with_last_event_id_and_misses_nothing() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| if prompt.contains("\"ok\"") { text("Finished after the tool.") } else { tools(&[("ping", json!({}))]) }));
    let (addr, _) = echo_service();
    let s = server();
    let st = setup(&s, &up, "resume@example.com");
    let t = tool(&s, &st, json!({"name": "ping", "type": "http", "execute": {"url": format!("http://{addr}/ping")}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    // The whole stream once, for reference.
    let mut b = user("Ping then finish.");
    b["stream"] = json!(true);
    let mut r = open_sse(&s, &st.key, "POST", &format!("/api/v1/agents/{a}/generate"), Some(&b), None);
    let whole = read_frames(&mut r, None);
    assert_eq!(whole.last().unwrap().data, "[DONE]");
    assert!(whole.len() >= 4, "{whole:?}");
    // Each cut point: read k frames, drop the connection, resume after the last id.
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as usize;
    for round in 0..3 {
        let (mut r, gen_id) = open_sse_with_id(&s, &st.key, "POST", &format!("/api/v1/agents/{a}/generate"), Some(&b), None);
        let gen_id = gen_id.expect("the stream names its generation");
        let cut = 1 + (seed + round * 7) % (whole.len() - 1);
        let head = read_frames(&mut r, Some(cut));
        drop(r);
        let last = head.last().unwrap().id.unwrap();
        let mut r = open_sse(&s, &st.key, "GET", &format!("/api/v1/generations/{gen_id}/events"), None, Some(last));
        let tail = read_frames(&mut r, None);
        let all: Vec<Frame> = head.iter().chain(tail.iter()).cloned().collect();
        let ids: Vec<u64> = all.iter().map(|f| f.id.unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "every event once, in order (cut at {cut}): {ids:?}");
        let kinds = |fs: &[Frame]| {
            fs.iter()
                .map(|f| serde_json::from_str::<Value>(&f.data).map(|v| v["type"].as_str().unwrap_or("?").to_owned()).unwrap_or(f.data.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(&all), kinds(&whole), "cut at {cut}");
    }
}

#[test]
fn step_rules_choose_the_tools_and_choice_of_one_step() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| if prompt.contains("\"ok\"") { text("Done.") } else { tools(&[("first", json!({}))]) }));
    let (addr, _) = echo_service();
    let s = server();
    let st = setup(&s, &up, "rules@example.com");
    let first = tool(&s, &st, json!({"name": "first", "type": "http", "execute": {"url": format!("http://{addr}/a")}}));
    let second = tool(&s, &st, json!({"name": "second", "type": "http", "execute": {"url": format!("http://{addr}/b")}}));
    let a = agent(
        &s,
        &st,
        json!({"tool_bindings": [{"tool_id": first}, {"tool_id": second}], "step_rules": [{"step": 1, "tool_choice": "required", "active_tool_ids": [first]}]}),
    );
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Go.")), 200);
    assert_eq!(g["status"], "completed", "{g}");
    let sent = up.bodies();
    assert_eq!(sent.len(), 2);
    let names = |b: &Value| {
        b["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>()).unwrap_or_default()
    };
    assert_eq!(names(&sent[0]), ["first"], "step 1 sees only its rule's tools");
    assert_eq!(sent[0]["tool_choice"], "required");
    assert_eq!(names(&sent[1]), ["first", "second"], "step 2 has no rule: every bound tool");
    assert_ne!(sent[1]["tool_choice"], "required");
}

#[test]
fn another_agent_runs_as_a_tool_in_a_child_trace_and_the_depth_guard_holds() {
    let up = Scripted::start();
    up.on("You are the expert.", text("The expert says 7."));
    up.otherwise(from(
        |prompt| if prompt.contains("expert says") { text("It is 7.") } else { tools(&[("ask_expert", json!({"prompt": "What number?"}))]) },
    ));
    let s = server();
    let st = setup(&s, &up, "nested@example.com");
    let expert = agent(&s, &st, json!({"instructions": "You are the expert."}));
    let t = tool(
        &s,
        &st,
        json!({"name": "ask_expert", "type": "builtin", "actions": ["agents:CreateAgentGeneration"], "preset_parameters": {"agent_id": expert}}),
    );
    let boss = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(generate(&s, &st, &boss, "?wait=true", user("Ask the expert.")), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "It is 7.");
    // The child: its own generation, initiated by the parent, its trace a child of the parent's.
    let mut r = open_sse(&s, &st.key, "GET", &format!("/api/v1/generations/{}/events", g["id"].as_str().unwrap()), None, None);
    let frames = read_frames(&mut r, None);
    let result: Value = frames.iter().filter_map(|f| serde_json::from_str::<Value>(&f.data).ok()).find(|v| v["type"] == "tool_result").unwrap();
    let child = result["output"]["generation_id"].as_str().unwrap();
    let c = ok(call(&s, "GET", &format!("/api/v1/generations/{child}"), &st.key, None), 200);
    assert_eq!(c["initiator_generation_id"], g["id"]);
    assert_eq!(c["agent_id"], expert.as_str());
    assert_eq!(result["output"]["content"], "The expert says 7.");
    // max_call_depth 0: the depth guard answers, no model call is made.
    let before = up.bodies().len();
    let mut b = user("Ask the expert.");
    b["max_call_depth"] = json!(0);
    let g = ok(generate(&s, &st, &boss, "?wait=true", b), 200);
    assert_eq!(g["status"], "completed");
    assert_eq!(up.bodies().len(), before);
    let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(rec["stop_reason"], "max_call_depth");
    // Depth 1: the boss runs, its child is at depth 0 and answers the guard.
    let mut b = user("Ask the expert.");
    b["max_call_depth"] = json!(1);
    let before = up.bodies().len();
    let g = ok(generate(&s, &st, &boss, "?wait=true", b), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert!(up.bodies()[before..].iter().all(|b| !b.to_string().contains("You are the expert.")), "the child made no model call");
}

#[test]
fn a_canary_serves_its_version_and_the_generation_records_it() {
    let up = Scripted::start();
    up.on("You are v2.", text("two"));
    up.otherwise(text("one"));
    let s = server();
    let st = setup(&s, &up, "canary@example.com");
    let a = agent(&s, &st, json!({}));
    ok(call(&s, "PATCH", &format!("/api/v1/agents/{a}"), &st.key, Some(json!({"instructions": "You are v2."}))), 200);
    ok(
        call(
            &s,
            "PUT",
            &format!("/api/v1/agents/{a}/release"),
            &st.key,
            Some(json!({"stable_version": 1, "canary_version": 2, "canary_percent": 50})),
        ),
        200,
    );
    let mut seen = std::collections::BTreeSet::new();
    for actor in 0..24 {
        let mut b = user("Which?");
        b["tool_context"] = json!({"actorId": format!("actor-{actor}")});
        let g = ok(generate(&s, &st, &a, "?wait=true", b.clone()), 200);
        let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200);
        let v = rec["agent_version"].as_u64().unwrap();
        assert_eq!(g["output"]["content"], if v == 2 { "two" } else { "one" }, "the version recorded is the one that served");
        // The same actor keeps its version.
        let again = ok(generate(&s, &st, &a, "?wait=true", b), 200);
        assert_eq!(again["output"]["content"], g["output"]["content"]);
        seen.insert(v);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 2], "both versions serve");
}

#[test]
fn a_tool_output_message_runs_its_tool_before_the_generation() {
    let up = Scripted::start();
    up.otherwise(text("Summarized."));
    let (addr, seen) = echo_service();
    let s = server();
    let st = setup(&s, &up, "toolout@example.com");
    let t = tool(&s, &st, json!({"name": "fetch", "type": "http", "execute": {"url": format!("http://{addr}/report")}}));
    let a = agent(&s, &st, json!({}));
    let b = json!({"messages": [{"role": "user", "content": {"type": "tool_output", "tool_id": t, "input": {"day": "mon"}, "output_path": "n"}}], "metadata": {"run": "nightly"}, "action_id": "summaries"});
    let g = ok(generate(&s, &st, &a, "?wait=true", b), 200);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    let sent = up.bodies().pop().unwrap();
    assert_eq!(sent["messages"][1]["content"], "1", "the output at output_path became the message");
    let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(rec["metadata"]["run"], "nightly");
    assert_eq!(rec["action_id"], "summaries");
}

#[test]
fn a_pause_nobody_answers_expires_visibly_and_react_continues() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| {
        if prompt.contains("expired before the client answered") {
            text("Noted, the approval expired.")
        } else {
            tools(&[("approve", json!({}))])
        }
    }));
    let s = TestServer::with_config(&format!("{LAB}[agents]\napproval_expiry = \"1s\"\nmax_chain_generations = 3\n"));
    let st = setup(&s, &up, "expiry@example.com");
    let t = tool(&s, &st, json!({"name": "approve", "type": "client"}));
    let term = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let react = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}], "on_approval_expiry": "react"}));
    let g1 = ok(generate(&s, &st, &term, "?wait=true", user("Ask approval.")), 200);
    let g2 = ok(generate(&s, &st, &react, "?wait=true", user("Ask approval.")), 200);
    assert_eq!((g1["status"].as_str(), g2["status"].as_str()), (Some("requires_action"), Some("requires_action")));
    std::thread::sleep(Duration::from_millis(1600));
    let r1 = settle(&s, &st.key, g1["id"].as_str().unwrap());
    assert_eq!((r1["status"].as_str(), r1["stop_reason"].as_str()), (Some("failed"), Some("approval_expired")), "{r1}");
    assert_eq!(r1["error"]["code"], "APPROVAL_EXPIRED");
    let c = g1["required_action"]["tool_calls"][0]["id"].clone();
    let e = refused(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{term}/generate/{}/tool-outputs", g1["id"].as_str().unwrap()),
            &st.key,
            Some(json!({"tool_outputs": [{"tool_call_id": c, "output": 1}]})),
        ),
        409,
    );
    assert_eq!(e["code"], "GENERATION_NOT_AWAITING_TOOL_OUTPUTS");
    let r2 = settle(&s, &st.key, g2["id"].as_str().unwrap());
    assert_eq!(r2["stop_reason"], "approval_expired");
    // The continuation: initiated by the expired one, told the call expired.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sent = up.bodies();
        if sent.iter().any(|b| b.to_string().contains("expired before the client answered")) {
            break;
        }
        assert!(Instant::now() < deadline, "no continuation reached the model");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn trace_content_mode_none_writes_no_content_and_still_pauses_and_resumes() {
    let up = Scripted::start();
    up.otherwise(from(
        |prompt| if prompt.contains("ZEBRA-OUTPUT") { text("SECRET-ANSWER-TEXT") } else { tools(&[("ask", json!({"q": "SECRET-ARGS"}))]) },
    ));
    let mut s = server();
    let st = setup(&s, &up, "none@example.com");
    let t = tool(&s, &st, json!({"name": "ask", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}], "trace_content_mode": "none"}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("SECRET-PROMPT-TEXT")), 200);
    assert_eq!(g["status"], "requires_action");
    assert_eq!(g["required_action"]["tool_calls"][0]["args"]["q"], "SECRET-ARGS", "the caller is answered in full");
    let id = g["id"].as_str().unwrap().to_owned();
    let c = g["required_action"]["tool_calls"][0]["id"].clone();
    let done = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate/{id}/tool-outputs"),
            &st.key,
            Some(json!({"tool_outputs": [{"tool_call_id": c, "output": "ZEBRA-OUTPUT"}]})),
        ),
        200,
    );
    assert_eq!(done["output"]["content"], "SECRET-ANSWER-TEXT");
    // Nothing of it reached the disk.
    s.terminate(Duration::from_secs(10));
    let mut found = Vec::new();
    for entry in walk(s.data()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for needle in ["SECRET-PROMPT-TEXT", "SECRET-ARGS", "ZEBRA-OUTPUT", "SECRET-ANSWER-TEXT"] {
            if text.contains(needle) {
                found.push(format!("{needle} in {}", entry.display()));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
    s.restart();
    let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
    assert_eq!(rec["status"], "completed");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn after_kill_9_a_running_generation_resumes_and_a_paused_one_accepts_its_outputs() {
    let up = Scripted::start();
    up.on("resume me", Reply::Slow(Duration::from_millis(1500), Box::new(text("Resumed and done."))));
    up.otherwise(tools(&[("ask", json!({}))]));
    let mut s = server();
    let st = setup(&s, &up, "crash@example.com");
    let t = tool(&s, &st, json!({"name": "ask", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let paused = ok(generate(&s, &st, &a, "?wait=true", user("pause here")), 200);
    assert_eq!(paused["status"], "requires_action");
    let running = ok(generate(&s, &st, &a, "", user("resume me")), 202);
    let id = running["generation_id"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(400));
    s.kill9();
    s.restart();
    let g = settle(&s, &st.key, &id);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "Resumed and done.");
    let pid = paused["id"].as_str().unwrap();
    let c = paused["required_action"]["tool_calls"][0]["id"].clone();
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{pid}"), &st.key, None), 200);
    assert_eq!(g["status"], "requires_action", "a pause survives a restart");
    up.on("pause here", text("Answered after the restart."));
    let done = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate/{pid}/tool-outputs"),
            &st.key,
            Some(json!({"tool_outputs": [{"tool_call_id": c, "output": "ok"}]})),
        ),
        200,
    );
    assert_eq!(done["status"], "completed", "{done}");
}

#[test]
fn a_model_route_fails_over_on_a_provider_error_and_records_its_attempts() {
    let down = Scripted::start();
    down.otherwise(Reply::Fail(500));
    let up = Scripted::start();
    up.otherwise(text("From the second target."));
    let s = server();
    let st = setup(&s, &down, "route@example.com");
    let second = ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &st.key,
            Some(json!({"name": "up", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let route = ok(
        call(
            &s,
            "POST",
            "/api/v1/model-routes",
            &st.key,
            Some(json!({"name": "r", "targets": [{"ai_provider_id": st.provider, "model": "m1"}, {"ai_provider_id": second, "model": "m2"}], "retry_on": ["provider_error"]})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = ok(call(&s, "POST", "/api/v1/agents", &st.key, Some(json!({"model_route_id": route, "instructions": "x"}))), 201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Hi.")), 200);
    assert_eq!(g["output"]["content"], "From the second target.", "{g}");
    assert_eq!(g["output"]["model"], "m2");
    assert_eq!(g["ai_provider_id"], second.as_str());
    let rec = ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200);
    let r = &rec["routing"];
    assert_eq!((r["route_id"].as_str(), r["target_index"].as_u64(), r["fallbacks"].as_u64()), (Some(route.as_str()), Some(1), Some(1)), "{r}");
    assert_eq!(r["attempts"][0]["error_class"], "provider_error");
    assert!(r["attempts"][1].get("error_class").is_none());
    assert_eq!(up.bodies()[0]["model"], "m2");
}

#[test]
fn another_account_cannot_read_follow_or_resume_a_generation() {
    let up = Scripted::start();
    up.otherwise(tools(&[("ask", json!({}))]));
    let s = server();
    let st = setup(&s, &up, "owner@example.com");
    let t = tool(&s, &st, json!({"name": "ask", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Pause.")), 200);
    let id = g["id"].as_str().unwrap();
    let c = g["required_action"]["tool_calls"][0]["id"].clone();
    let (_, other) = s.signup("intruder@example.com");
    for (method, path, body) in [
        ("GET", format!("/api/v1/generations/{id}"), None),
        ("GET", format!("/api/v1/generations/{id}/events"), None),
        ("POST", format!("/api/v1/agents/{a}/generate/{id}/tool-outputs"), Some(json!({"tool_outputs": [{"tool_call_id": c, "output": 1}]}))),
        ("POST", format!("/api/v1/agents/{a}/generate"), Some(user("x"))),
    ] {
        assert_eq!(refused(call(&s, method, &path, &other, body), 404)["code"], "RESOURCE_NOT_FOUND", "{method} {path}");
    }
    // Still paused for its owner.
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200)["status"], "requires_action");
}

#[test]
fn a_run_purged_while_it_runs_writes_no_content_after_and_a_purged_pause_cannot_resume() {
    let up = Scripted::start();
    up.on("slow one", Reply::Slow(Duration::from_millis(600), Box::new(text("LATE-ANSWER-TEXT"))));
    up.otherwise(tools(&[("ask", json!({}))]));
    let s = server();
    let st = setup(&s, &up, "purge@example.com");
    let t = tool(&s, &st, json!({"name": "ask", "type": "client"}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("pause")), 200);
    let id = g["id"].as_str().unwrap();
    ok(call(&s, "DELETE", &format!("/api/v1/generations/{id}/content"), &st.key, None), 200);
    let c = g["required_action"]["tool_calls"][0]["id"].clone();
    let e = refused(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate/{id}/tool-outputs"),
            &st.key,
            Some(json!({"tool_outputs": [{"tool_call_id": c, "output": 1}]})),
        ),
        409,
    );
    assert_eq!(e["code"], "GENERATION_NOT_AWAITING_TOOL_OUTPUTS");
    // Purged mid-run: the run completes, and nothing of its content is stored.
    let started = ok(generate(&s, &st, &a, "", user("slow one")), 202);
    let id = started["generation_id"].as_str().unwrap();
    ok(call(&s, "DELETE", &format!("/api/v1/generations/{id}/content"), &st.key, None), 200);
    let g = settle(&s, &st.key, id);
    assert_eq!(g["status"], "completed", "{g}");
    assert!(!g.to_string().contains("LATE-ANSWER-TEXT"), "{g}");
    let r = call(&s, "GET", &format!("/api/v1/generations/{id}/transcript"), &st.key, None);
    assert!(!r.text().contains("LATE-ANSWER-TEXT"), "{}", r.text());
}

#[test]
fn an_agent_remembers_through_write_memory_and_its_knowledge_search_finds_it_next_time() {
    let up = Scripted::start();
    up.on(
        "Remember that",
        from(|prompt| {
            if prompt.contains("\"id\"") {
                text("Remembered.")
            } else {
                tools(&[("write_memory", json!({"content": "The customer's favourite colour is teal."}))])
            }
        }),
    );
    up.otherwise(text("Answered."));
    let s = TestServer::with(Options { config: LAB.into(), embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    let st = setup(&s, &up, "memory@example.com");
    let store = ok(call(&s, "POST", "/api/v1/memories", &st.key, Some(json!({"name": "customer"}))), 201)["id"].as_str().unwrap().to_owned();
    let a = agent(&s, &st, json!({"knowledge_config": {"memory_store_ids": [store], "write_memory_store_id": store, "limit": 3}}));
    let g = ok(generate(&s, &st, &a, "?wait=true", user("Remember that my favourite colour is teal.")), 200);
    assert_eq!(g["output"]["content"], "Remembered.", "{g}");
    let sent = up.bodies();
    let tools_sent: Vec<&str> = sent[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools_sent.contains(&"write_memory"), "{tools_sent:?}");
    // The next generation's knowledge search finds the entry and prepends it.
    let g = ok(generate(&s, &st, &a, "?wait=true", user("What is my favourite colour?")), 200);
    assert_eq!(g["status"], "completed");
    let system = up.bodies().last().unwrap()["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("teal"), "the remembered entry is in the context: {system}");
    // A request's override merges with the stored config.
    let mut b = user("What is my favourite colour?");
    b["knowledge_config"] = json!({"limit": 1});
    ok(generate(&s, &st, &a, "?wait=true", b), 200);
    let system = up.bodies().last().unwrap()["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("teal"), "the override merges with the stored config (arrays unioned): {system}");
    let mut b = user("x");
    b["knowledge_config"] = json!({"write_memory_store_id": store});
    assert_eq!(refused(generate(&s, &st, &a, "", b), 400)["code"], "VALIDATION_FAILED");
}

#[test]
fn a_forced_step_answered_with_text_fails_and_a_named_tool_is_the_only_one_shown() {
    let up = Scripted::start();
    up.otherwise(text("I would rather talk."));
    let s = server();
    let st = setup(&s, &up, "forced-text@example.com");
    let a_tool = tool(&s, &st, json!({"name": "pick", "type": "client"}));
    let other = tool(&s, &st, json!({"name": "other", "type": "client"}));
    let a = agent(
        &s,
        &st,
        json!({"tool_bindings": [{"tool_id": a_tool}, {"tool_id": other}], "tool_choice": {"type": "tool", "tool_name": "pick"}, "stop_conditions": [{"type": "has_tool_call", "tool_name": "pick"}]}),
    );
    let e = refused(generate(&s, &st, &a, "?wait=true", user("Choose.")), 502);
    assert_eq!(e["code"], "AI_PROVIDER_ERROR");
    assert!(e["message"].as_str().unwrap().contains("forces a tool call"), "{e}");
    let sent = up.bodies().pop().unwrap();
    let names: Vec<&str> = sent["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["pick"]);
}

/// Regression (issue 2/9, finding 8): one account could run 300 background generations
/// at once. Now `agents.max_running_per_account` caps what an account runs across the
/// shards: a new generation past it is 429 `too_many_concurrent` with `retry-after`,
/// nothing is recorded, another account is not held back, and a slot is free again once
/// a generation ends.
#[test]
fn an_account_runs_at_most_its_share_of_generations_at_once() {
    let up = Scripted::start();
    up.otherwise(Reply::Slow(Duration::from_millis(1500), Box::new(text("Done."))));
    let s = TestServer::with_config(&format!("{LAB}[agents]\nmax_running_per_account = 2\n"));
    let st = setup(&s, &up, "busy@example.com");
    let a = agent(&s, &st, json!({}));
    let first: Vec<String> = (0..2).map(|_| ok(generate(&s, &st, &a, "", user("Go.")), 202)["generation_id"].as_str().unwrap().to_owned()).collect();
    let total = |key: &str| ok(call(&s, "GET", "/api/v1/generations", key, None), 200)["total"].as_u64().unwrap();
    let r = generate(&s, &st, &a, "", user("One more."));
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["error"]["meta"]["quarry_code"], "too_many_concurrent", "{}", r.text());
    assert_eq!(total(&st.key), 2, "the refused one is not recorded");
    // Another account runs meanwhile.
    let other = setup(&s, &up, "other@example.com");
    let b = agent(&s, &other, json!({}));
    ok(generate(&s, &other, &b, "", user("Go.")), 202);
    for id in &first {
        assert_eq!(settle(&s, &st.key, id)["status"], "completed");
    }
    // A slot is given back when the run's task ends, just after its last commit.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = generate(&s, &st, &a, "", user("Now."));
        if r.status == 202 {
            break;
        }
        assert!(r.status == 429 && Instant::now() < deadline, "{}", r.text());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 40: two nodes share the records (PostgreSQL). A run whose node is killed is
/// taken over by the other once its heartbeat is stale, resumed from its last
/// committed step, and completes; a run whose node is alive is left to it.
#[test]
fn a_run_whose_node_dies_is_taken_over_by_another_node_and_completes() {
    if !quarry_test_support::store::have_postgres() {
        return;
    }
    let cluster = quarry_test_support::store::Cluster::new(false);
    let node = |name: &str| TestServer::with(cluster.node(name, LAB));
    let up = Scripted::start();
    up.on("survive the node", Reply::Slow(Duration::from_millis(2500), Box::new(text("Finished on the other node."))));
    up.on("stay home", Reply::Slow(Duration::from_millis(2500), Box::new(text("Finished where it started."))));
    let mut a = node("a");
    let b = node("b");
    let st = setup(&a, &up, "cluster-run@example.com");
    let agent_id = agent(&a, &st, json!({}));
    // A run on b, alive throughout: nobody takes it from b.
    let home = ok(generate(&b, &st, &agent_id, "", user("stay home")), 202)["generation_id"].as_str().unwrap().to_owned();
    // A run on a, which dies mid-call with no goodbye.
    let orphan = ok(generate(&a, &st, &agent_id, "", user("survive the node")), 202)["generation_id"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(400));
    a.kill9();
    let g = settle(&b, &st.key, &orphan);
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["output"]["content"], "Finished on the other node.");
    let h = settle(&b, &st.key, &home);
    assert_eq!((h["status"].as_str(), h["output"]["content"].as_str()), (Some("completed"), Some("Finished where it started.")), "{h}");
    // Each prompt reached the model as many times as it ran to the end: the home run
    // once, the orphan twice (the call a's death cut, and b's).
    let asked = |needle: &str| up.bodies().iter().filter(|r| r.to_string().contains(needle)).count();
    assert_eq!(asked("stay home"), 1, "a live node's run is never taken over");
    assert_eq!(asked("survive the node"), 2);
    // a comes back: its old run is b's now and stays completed.
    a.restart();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(settle(&a, &st.key, &orphan)["status"], "completed");
}

/// Issue 40: a generation's events are read from any node. A reader on b follows a run
/// on a as it goes, through a's death and b's take-over, to `[DONE]`; and a stream cut
/// on one node resumes on the other with `Last-Event-ID`, missing nothing and repeating
/// nothing.
#[test]
fn any_node_follows_any_generations_events_and_last_event_id_resumes_across_nodes() {
    if !quarry_test_support::store::have_postgres() {
        return;
    }
    let cluster = quarry_test_support::store::Cluster::new(false);
    let node = |name: &str| TestServer::with(cluster.node(name, LAB));
    let up = Scripted::start();
    // A tool step, then the answer: a stream of several events, each step slow.
    up.otherwise(from(|prompt| {
        let reply = if prompt.contains("\"ok\"") { text("Finished after the ping.") } else { tools(&[("ping", json!({}))]) };
        Reply::Slow(Duration::from_millis(1200), Box::new(reply))
    }));
    let (addr, _) = echo_service();
    let mut a = node("a");
    let b = node("b");
    let st = setup(&a, &up, "cluster-events@example.com");
    let t = tool(&a, &st, json!({"name": "ping", "type": "http", "execute": {"url": format!("http://{addr}/ping")}}));
    let agent_id = agent(&a, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let id = ok(generate(&a, &st, &agent_id, "", user("Ping, then finish.")), 202)["generation_id"].as_str().unwrap().to_owned();
    // b reads the events of a's run from the start, while a runs it.
    let follower = {
        let (addr, key, id) = (b.addr, st.key.clone(), id.clone());
        std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let head = format!("GET /api/v1/generations/{id}/events HTTP/1.1\r\nhost: q\r\nauthorization: Bearer {key}\r\nconnection: close\r\n\r\n");
            stream.write_all(head.as_bytes()).unwrap();
            let mut reader = BufReader::new(stream);
            let mut status = String::new();
            reader.read_line(&mut status).unwrap();
            assert!(status.contains(" 200 "), "{status}");
            read_frames(&mut reader, None)
        })
    };
    // a dies once its first step (the tool call) is under way or done.
    std::thread::sleep(Duration::from_millis(1800));
    a.kill9();
    let followed = follower.join().unwrap();
    assert_eq!(followed.last().map(|f| f.data.as_str()), Some("[DONE]"), "b followed a's run to its end: {followed:?}");
    let g = settle(&b, &st.key, &id);
    assert_eq!((g["status"].as_str(), g["output"]["content"].as_str()), (Some("completed"), Some("Finished after the ping.")), "{g}");
    let ids = |fs: &[Frame]| fs.iter().filter_map(|f| f.id).collect::<Vec<u64>>();
    assert!(ids(&followed).windows(2).all(|w| w[0] < w[1]), "every event once, in order: {:?}", ids(&followed));
    // The whole stream, read on b; then cut on a (back) and resumed on b, and the other way.
    a.restart();
    let events = |s: &TestServer, last: Option<u64>, stop: Option<usize>| {
        let mut r = open_sse(s, &st.key, "GET", &format!("/api/v1/generations/{id}/events"), None, last);
        read_frames(&mut r, stop)
    };
    let whole = events(&b, None, None);
    assert_eq!(whole, followed, "a live reader and a later one read the same events");
    for (first, then) in [(&a, &b), (&b, &a)] {
        let cut = whole.len() / 2;
        let head = events(first, None, Some(cut));
        let tail = events(then, head.last().and_then(|f| f.id), None);
        let joined: Vec<Frame> = head.into_iter().chain(tail).collect();
        assert_eq!(joined, whole, "cut after {cut} events on one node, resumed on the other");
    }
}
