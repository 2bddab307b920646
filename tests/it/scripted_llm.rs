//! A scripted OpenAI-compatible upstream on loopback, for the endpoints that call a
//! model (extract; research to come): `POST /v1/chat/completions` answered in OpenAI's
//! wire format from rules keyed by what the prompt holds (the first rule whose needle is
//! in the request's messages wins), a default answer otherwise. A rule can also fail
//! with an HTTP status. Every request body is recorded. `GET …/models` lists the
//! models [`Scripted::models`] names.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
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
}

#[derive(Default)]
struct State {
    rules: Vec<(String, Reply)>,
    default: Option<Reply>,
    bodies: Vec<Value>,
    models: Vec<String>,
    in_flight: usize,
    most_in_flight: usize,
}

pub struct Scripted {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Scripted {
    pub fn start() -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(stream, s));
            }
        });
        Scripted { addr, state }
    }

    /// Answers a prompt holding `needle` with `reply`.
    pub fn on(&self, needle: &str, reply: Reply) -> &Self {
        self.state.lock().unwrap().rules.push((needle.to_owned(), reply));
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

/// A reader's JSON answer.
pub fn reading(relevant: bool, note: &str, excerpts: &[&str]) -> Reply {
    Reply::Text(json!({ "relevant": relevant, "note": note, "excerpts": excerpts }).to_string(), 100, 20)
}

/// The request line and the JSON body.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<(String, Value)> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((line, serde_json::from_slice(&body).unwrap_or_default()))
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
    while let Some((line, body)) = read_request(&mut reader) {
        if line.starts_with("GET ") && line.split(' ').nth(1).is_some_and(|p| p.ends_with("/models")) {
            let ids = state.lock().unwrap().models.clone();
            let list = json!({"object": "list", "data": ids.iter().map(|id| json!({"id": id, "object": "model"})).collect::<Vec<_>>()}).to_string();
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", list.len());
            if out.write_all(head.as_bytes()).is_err() || out.write_all(list.as_bytes()).is_err() {
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
            s.rules.iter().find(|(needle, _)| prompt.contains(needle.as_str())).map(|r| r.1.clone()).or(s.default.clone())
        };
        let mut reply = reply;
        while let Some(Reply::Slow(pause, inner)) = reply {
            std::thread::sleep(pause);
            reply = Some(*inner);
        }
        state.lock().unwrap().in_flight -= 1;
        let (status, bytes) = match reply {
            Some(Reply::Text(text, input, output)) => (
                200,
                json!({
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": body["model"],
                    "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
                    "usage": { "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output }
                }),
            ),
            Some(Reply::Fail(status)) => (status, json!({ "error": { "message": "scripted failure", "type": "server_error", "code": null } })),
            Some(Reply::Slow(..)) => unreachable!("unwrapped above"),
            None => (200, json!({ "choices": [{ "index": 0, "message": { "role": "assistant", "content": "{}" }, "finish_reason": "stop" }] })),
        };
        let bytes = bytes.to_string();
        let head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", bytes.len());
        if out.write_all(head.as_bytes()).is_err() || out.write_all(bytes.as_bytes()).is_err() {
            return;
        }
    }
}
