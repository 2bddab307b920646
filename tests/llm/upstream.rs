//! Shared by the tests: the fake upstream that replays transcripts and injects faults.
//!
//! The fake upstream: the shared loopback listener (a thread per connection). What it
//! answers is chosen by the request's model (in the body, or in Gemini's path):
//! `r~<dir>~<fixture>` replays a transcript (streamed when the request asks),
//! `f~<name>` injects a fault. It counts the calls per model and notes
//! when a streaming client hangs up.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quarry_test_support::loopback;

/// A request the upstream saw: its path, its JSON body and its headers.
pub type Recorded = (String, serde_json::Value, Vec<(String, String)>);

#[derive(Default)]
pub struct State {
    pub calls: Mutex<HashMap<String, u32>>,
    pub bodies: Mutex<Vec<Recorded>>,
    pub hung_up: AtomicBool,
    /// Connections accepted.
    pub connections: AtomicUsize,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub state: Arc<State>,
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/provider-transcripts")
}

impl Upstream {
    pub fn start() -> Upstream {
        let state = Arc::new(State::default());
        let s = state.clone();
        let addr = loopback::listen(move |stream| {
            s.connections.fetch_add(1, Ordering::SeqCst);
            serve(stream, s.clone())
        });
        Upstream { addr, state }
    }

    pub fn calls(&self, model: &str) -> u32 {
        self.state.calls.lock().unwrap().get(model).copied().unwrap_or(0)
    }
}

fn serve(stream: TcpStream, state: Arc<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some(req) = loopback::read_request(&mut reader) {
        let model = match req.body.get("model").and_then(|m| m.as_str()) {
            Some(m) => m.to_owned(),
            // Gemini: /v1beta/models/{model}:generateContent
            None => req.path.split("/models/").nth(1).and_then(|r| r.split(':').next()).unwrap_or("").to_owned(),
        };
        let stream = req.body.get("stream") == Some(&serde_json::Value::Bool(true)) || req.path.contains("streamGenerateContent");
        let n = {
            let mut calls = state.calls.lock().unwrap();
            let c = calls.entry(model.clone()).or_default();
            *c += 1;
            *c
        };
        state.bodies.lock().unwrap().push((req.path.clone(), req.body.clone(), req.headers.clone()));
        if !answer(&mut out, &model, stream, n, &state) {
            return;
        }
    }
}

fn head(out: &mut TcpStream, status: &str, content_type: &str, extra: &str, body: &[u8]) -> bool {
    let h = format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}\r\n", body.len());
    out.write_all(h.as_bytes()).is_ok() && out.write_all(body).is_ok()
}

fn sse_head(out: &mut TcpStream) -> bool {
    out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n").is_ok()
}

/// Writes the answer; `false` closes the connection.
fn answer(out: &mut TcpStream, model: &str, stream: bool, n: u32, state: &State) -> bool {
    if let Some(fixture) = model.strip_prefix("r~") {
        return replay(out, &fixture.replace('~', "/"), stream);
    }
    let oa_error = |msg: &str, kind: &str| format!(r#"{{"error":{{"message":"{msg}","type":"{kind}","code":null}}}}"#);
    match model.strip_prefix("f~").unwrap_or(model) {
        "429-then-ok" if n == 1 => {
            head(out, "429 Too Many Requests", "application/json", "retry-after: 1\r\n", oa_error("slow down", "rate_limit_exceeded").as_bytes())
        }
        "500-then-ok" if n <= 2 => head(out, "500 Internal Server Error", "application/json", "", oa_error("boom", "server_error").as_bytes()),
        "529-then-ok" if n == 1 => {
            let body = std::fs::read(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/data/ai-protocol/compliance/fixtures/responses/error-responses/anthropic-529.json"),
            )
            .unwrap();
            head(out, "529 Overloaded", "application/json", "", &body)
        }
        "429-then-ok" | "500-then-ok" | "529-then-ok" => replay(out, "openai/chat/openai-text", stream),
        "always-503" => head(out, "503 Service Unavailable", "application/json", "", oa_error("down", "server_error").as_bytes()),
        "bad-request" => head(out, "400 Bad Request", "application/json", "", oa_error("messages is empty", "invalid_request_error").as_bytes()),
        "malformed-sse" => {
            // The malformed frame, then the connection is closed (never kept alive).
            let _ =
                sse_head(out) && out.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {not json\n\n").is_ok();
            false
        }
        "reset-mid-stream" => {
            sse_head(out);
            let _ = out.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n");
            let _ = out.flush();
            std::thread::sleep(Duration::from_millis(50));
            false
        }
        "trickle" => {
            if !sse_head(out) {
                return false;
            }
            for i in 0..200 {
                let chunk = format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{i} \"}}}}]}}\n\n");
                if out.write_all(chunk.as_bytes()).and_then(|_| out.flush()).is_err() {
                    state.hung_up.store(true, Ordering::SeqCst);
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = out.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
            false
        }
        _ => head(out, "404 Not Found", "application/json", "", oa_error("no such fixture", "invalid_request_error").as_bytes()),
    }
}

/// A transcript: `*.chunks.txt` streamed one `data:` event per line (`*.sse` as is),
/// or the `*.json` body whole.
fn replay(out: &mut TcpStream, fixture: &str, stream: bool) -> bool {
    let base = fixtures().join(fixture).display().to_string();
    if !stream {
        let body = std::fs::read(format!("{base}.json")).unwrap();
        return head(out, "200 OK", "application/json", "x-ratelimit-remaining-requests: 41\r\n", &body);
    }
    if !sse_head(out) {
        return false;
    }
    let raw = PathBuf::from(format!("{base}.sse"));
    if raw.exists() {
        let _ = out.write_all(&std::fs::read(raw).unwrap());
        return false;
    }
    let text = std::fs::read_to_string(format!("{base}.chunks.txt")).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if out.write_all(format!("data: {line}\n\n").as_bytes()).is_err() {
            return false;
        }
    }
    if fixture.starts_with("openai") {
        let _ = out.write_all(b"data: [DONE]\n\n");
    }
    false
}
