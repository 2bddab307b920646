//! Shared by the model-calling tests: a scripted OpenAI-compatible upstream on loopback.
//!
//! A scripted OpenAI-compatible upstream on loopback, for the endpoints that call a
//! model (extract, research): `POST /v1/chat/completions` answered in OpenAI's wire
//! format, whole or (when the request says `stream: true`) as server-sent
//! `chat.completion.chunk` events, from rules keyed by what the prompt holds (the first
//! rule whose needle is in the request's messages wins), a default answer otherwise. A
//! rule can answer text or tool calls, a sequence of replies (one per call, the last
//! repeated), fail with an HTTP status, break off mid-stream, or hang mid-stream until
//! the caller goes away (counted as cancelled). Every request body is recorded.
//! `GET …/models` lists the models [`Scripted::models`] names.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

#[derive(Clone)]
pub enum Reply {
    /// The assistant's message text, with these prompt and completion token counts.
    Text(String, u64, u64),
    /// An error status with OpenAI's error body.
    Fail(u16),
    /// The same reply, after a pause.
    Slow(std::time::Duration, Box<Reply>),
    /// Tool calls: (name, arguments as JSON).
    Tools(Vec<(String, Value)>),
    /// One reply per call that matches, in order; the last is repeated.
    Seq(Vec<Reply>),
    /// Streamed: this text, then the connection is cut (no finish, no `[DONE]`).
    CutAfter(String),
    /// Streamed: this text, then nothing but keep-alive comments until the caller
    /// closes the connection.
    HangAfter(String),
    /// Streamed or not: no answer at all until the caller closes the connection
    /// (counted as cancelled), for up to 60 s.
    Hang,
    /// The reply computed from the prompt's text.
    From(Arc<dyn Fn(&str) -> Reply + Send + Sync>),
}

#[derive(Default)]
struct State {
    rules: Vec<(String, Reply)>,
    default: Option<Reply>,
    bodies: Vec<Value>,
    models: Vec<String>,
    in_flight: usize,
    most_in_flight: usize,
    /// Calls of each rule so far (for `Seq`), by rule index; the default is `usize::MAX`.
    calls: std::collections::HashMap<usize, usize>,
    cancelled: usize,
    /// Tool calls answered so far: each gets the id `call_<n>`, unique for the upstream's
    /// life, as a provider's ids are.
    next_call: usize,
}

pub struct Scripted {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Scripted {
    pub fn start() -> Scripted {
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        let addr = crate::loopback::listen(move |stream| serve(stream, s.clone()));
        Scripted { addr, state }
    }

    /// Answers a prompt holding `needle` with `reply` (in place of an earlier rule for
    /// the same needle).
    pub fn on(&self, needle: &str, reply: Reply) -> &Self {
        let mut s = self.state.lock().unwrap();
        match s.rules.iter().position(|r| r.0 == needle) {
            Some(i) => s.rules[i].1 = reply,
            None => s.rules.push((needle.to_owned(), reply)),
        }
        self
    }

    /// The answer when no rule matches.
    pub fn otherwise(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().default = Some(reply);
        self
    }

    /// The models `GET /v1/models` lists.
    pub fn models(&self, ids: &[&str]) -> &Self {
        self.state.lock().unwrap().models = ids.iter().map(|m| m.to_string()).collect();
        self
    }

    /// The most requests that were being answered at once.
    pub fn most_in_flight(&self) -> usize {
        self.state.lock().unwrap().most_in_flight
    }

    /// Hanging streams whose caller went away.
    pub fn cancelled(&self) -> usize {
        self.state.lock().unwrap().cancelled
    }

    /// Every request body received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.state.lock().unwrap().bodies.clone()
    }

    /// The config that makes this the provider `fake`, listing the model `reader`.
    pub fn provider_config(&self) -> String {
        format!(
            "[llm]\nmax_retries = 0\n[llm.local]\nenabled = false\n[llm.providers.fake]\nmanifest = \"openai-compatible\"\nbase_url = \"http://{}/v1\"\ntoken = \"sk-fake\"\nmodels = [\"reader\"]\n",
            self.addr
        )
    }
}

/// Tool calls as a reply.
pub fn tools(calls: &[(&str, Value)]) -> Reply {
    Reply::Tools(calls.iter().map(|(n, a)| (n.to_string(), a.clone())).collect())
}

/// A reply computed from the prompt's text.
pub fn from(f: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Reply {
    Reply::From(Arc::new(f))
}

/// A plain text reply.
pub fn text(t: &str) -> Reply {
    Reply::Text(t.to_owned(), 100, 20)
}

/// A reader's JSON answer.
pub fn reading(relevant: bool, note: &str, excerpts: &[&str]) -> Reply {
    Reply::Text(json!({ "relevant": relevant, "note": note, "excerpts": excerpts }).to_string(), 100, 20)
}

/// Every string under `v`, joined: the messages' text, whatever their content shape.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => o.values().map(text_of).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some(crate::loopback::Request { path, body, .. }) = crate::loopback::read_request(&mut reader) {
        if path.ends_with("/models") {
            let ids = state.lock().unwrap().models.clone();
            let list = json!({"object": "list", "data": ids.iter().map(|id| json!({"id": id, "object": "model"})).collect::<Vec<_>>()});
            if !crate::loopback::respond(&mut out, 200, &list) {
                return;
            }
            continue;
        }
        let prompt = text_of(&body["messages"]);
        let reply = {
            let mut s = state.lock().unwrap();
            s.bodies.push(body.clone());
            s.in_flight += 1;
            s.most_in_flight = s.most_in_flight.max(s.in_flight);
            let rule = s.rules.iter().position(|(needle, _)| prompt.contains(needle.as_str()));
            let reply = match rule {
                Some(i) => Some(s.rules[i].1.clone()),
                None => s.default.clone(),
            };
            let key = rule.unwrap_or(usize::MAX);
            let n = *s.calls.entry(key).and_modify(|n| *n += 1).or_insert(0);
            let reply = match reply {
                Some(Reply::Seq(items)) => items.get(n).or(items.last()).cloned(),
                r => r,
            };
            match reply {
                Some(Reply::From(f)) => Some(f(&prompt)),
                r => r,
            }
        };
        let mut reply = reply;
        while let Some(Reply::Slow(pause, inner)) = reply {
            std::thread::sleep(pause);
            reply = Some(*inner);
        }
        state.lock().unwrap().in_flight -= 1;
        if let Some(Reply::Hang) = reply {
            if closed_within(&out, std::time::Duration::from_secs(60)) {
                state.lock().unwrap().cancelled += 1;
            }
            return;
        }
        let streamed = body["stream"] == json!(true);
        if streamed {
            let kept = stream_reply(&mut out, &body, reply, &state);
            if !kept {
                return;
            }
            continue;
        }
        let (status, bytes) = match reply {
            Some(Reply::Text(text, input, output)) => {
                (200, completion(&body, json!({ "role": "assistant", "content": text }), "stop", input, output))
            }
            Some(Reply::Tools(calls)) => (
                200,
                completion(&body, json!({ "role": "assistant", "content": null, "tool_calls": tool_calls(&calls, &state) }), "tool_calls", 100, 20),
            ),
            Some(Reply::Fail(status)) => (status, json!({ "error": { "message": "scripted failure", "type": "server_error", "code": null } })),
            Some(Reply::CutAfter(_) | Reply::HangAfter(_)) => {
                // Not streamed: the connection is cut before any answer.
                return;
            }
            Some(Reply::Slow(..) | Reply::Seq(_) | Reply::From(_) | Reply::Hang) => unreachable!("unwrapped above"),
            None => (200, json!({ "choices": [{ "index": 0, "message": { "role": "assistant", "content": "{}" }, "finish_reason": "stop" }] })),
        };
        if !crate::loopback::respond(&mut out, status, &bytes) {
            return;
        }
    }
}

/// Whether the caller closes `conn` within `limit` (it sends nothing more meanwhile).
fn closed_within(conn: &TcpStream, limit: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(50)));
    while started.elapsed() < limit {
        match conn.peek(&mut [0u8; 1]) {
            Ok(0) => return true,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

fn completion(body: &Value, message: Value, finish: &str, input: u64, output: u64) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body["model"],
        "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
        "usage": { "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output }
    })
}

fn tool_calls(calls: &[(String, Value)], state: &Mutex<State>) -> Value {
    let first = {
        let mut s = state.lock().unwrap();
        s.next_call += calls.len();
        s.next_call - calls.len()
    };
    Value::Array(
        calls
            .iter()
            .zip(first..)
            .map(|((name, args), n)| json!({ "id": format!("call_{n}"), "type": "function", "function": { "name": name, "arguments": args.to_string() } }))
            .collect(),
    )
}

/// A streamed answer, as OpenAI sends one; whether the connection stays usable.
fn stream_reply(out: &mut TcpStream, body: &Value, reply: Option<Reply>, state: &Arc<Mutex<State>>) -> bool {
    let chunk = |delta: Value, finish: Option<&str>, usage: Option<Value>| {
        let mut c = json!({ "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": body["model"],
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    };
    let pieces = |text: &str| -> Vec<String> {
        // A few characters at a time, on character boundaries.
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(7).map(|c| chunk(json!({ "content": c.iter().collect::<String>() }), None, None)).collect()
    };
    let status = match &reply {
        Some(Reply::Fail(status)) => *status,
        _ => 200,
    };
    if status != 200 {
        return crate::loopback::respond(out, status, &json!({ "error": { "message": "scripted failure", "type": "server_error", "code": null } }));
    }
    if out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut send = |s: &str| out.write_all(s.as_bytes()).and_then(|_| out.flush()).is_ok();
    send(&chunk(json!({ "role": "assistant", "content": "" }), None, None));
    match reply {
        Some(Reply::Text(text, input, output)) => {
            for p in pieces(&text) {
                send(&p);
            }
            let usage = json!({ "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output });
            send(&chunk(json!({}), Some("stop"), Some(usage)));
            send("data: [DONE]\n\n");
        }
        Some(Reply::CutAfter(text)) => {
            for p in pieces(&text) {
                send(&p);
            }
        }
        Some(Reply::HangAfter(text)) => {
            for p in pieces(&text) {
                send(&p);
            }
            let started = std::time::Instant::now();
            while started.elapsed() < std::time::Duration::from_secs(60) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if !send(": keep-alive\n\n") {
                    state.lock().unwrap().cancelled += 1;
                    break;
                }
            }
        }
        Some(Reply::Tools(calls)) => {
            // OpenAI's shape: each call's id and name first, its arguments in pieces.
            for (i, call) in tool_calls(&calls, state).as_array().unwrap().iter().enumerate() {
                let head = json!({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}]});
                send(&chunk(head, None, None));
                let args: Vec<char> = call["function"]["arguments"].as_str().unwrap().chars().collect();
                for piece in args.chunks(5) {
                    let d = json!({"tool_calls": [{"index": i, "function": {"arguments": piece.iter().collect::<String>()}}]});
                    send(&chunk(d, None, None));
                }
            }
            let usage = json!({ "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 });
            send(&chunk(json!({}), Some("tool_calls"), Some(usage)));
            send("data: [DONE]\n\n");
        }
        other => {
            let text = match other {
                None => "{}".to_owned(),
                _ => String::new(),
            };
            for p in pieces(&text) {
                send(&p);
            }
            send(&chunk(json!({}), Some("stop"), None));
            send("data: [DONE]\n\n");
        }
    }
    // connection: close ends the body.
    false
}
