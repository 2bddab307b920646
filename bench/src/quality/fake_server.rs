//! A canned AgentLex server on loopback for the harness's own tests: just enough of signup,
//! account, health, collections, documents and search, one request per connection.
//!
//! Search ranks documents by how many query words their text holds (ties by text), each as two
//! pages; `semantic` reverses that order. The first document add is answered `429 rate_limited`
//! with `retry-after: 0`; a text holding `REJECT` is answered `400 invalid_document`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{json, Value};

pub const KEY: &str = "al_fake";
pub const COLLECTION: &str = "col_1";

#[derive(Default)]
pub struct State {
    /// (server id, text) in the order added.
    pub docs: Vec<(String, String)>,
    pub adds_refused: usize,
    pub searches: Vec<Value>,
}

pub struct FakeServer {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
}

impl FakeServer {
    pub fn start() -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                thread::spawn(move || serve(stream, &state));
            }
        });
        FakeServer { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

struct Request {
    method: String,
    path: String,
    auth: Option<String>,
    body: Value,
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let (status, extra, body) = route(&request, state);
    let body = body.to_string();
    let reply = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n{extra}\r\n{body}",
        body.len()
    );
    let mut stream = reader.into_inner();
    let _ = stream.write_all(reply.as_bytes());
    let _ = stream.flush();
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let (mut length, mut auth) = (0, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request {
        method,
        path,
        auth,
        body,
    })
}

fn error(status: u16, code: &str) -> (u16, String, Value) {
    let body = json!({ "error": { "code": code, "message": format!("fake: {code}") } });
    (status, String::new(), body)
}

fn route(request: &Request, state: &Mutex<State>) -> (u16, String, Value) {
    let authed = request.auth.as_deref() == Some(&format!("Bearer {KEY}"));
    let documents = format!("/v1/collections/{COLLECTION}/documents");
    let search = format!("/v1/collections/{COLLECTION}/search");
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/v1/health") => (
            200,
            String::new(),
            json!({ "ok": true, "version": "0", "embedder": "fake-embedder",
                    "rerankers": [], "llm": false, "features": [] }),
        ),
        ("POST", "/v1/signup") => (
            201,
            String::new(),
            json!({ "account": { "id": "acct_1", "email": request.body["email"], "plan": "scribe" },
                    "api_key": KEY, "note": "Store this key now." }),
        ),
        _ if !authed => error(401, "invalid_key"),
        ("GET", "/v1/account") => (
            200,
            String::new(),
            json!({ "id": "acct_1", "email": "x@y.z", "plan": "scribe", "usage": {} }),
        ),
        ("POST", "/v1/collections") => (
            201,
            String::new(),
            json!({ "id": COLLECTION, "name": request.body["name"], "embedder": "fake-embedder" }),
        ),
        ("POST", path) if path == documents => add(request, state),
        ("POST", path) if path == search => rank(request, state),
        _ => error(404, "not_found"),
    }
}

fn add(request: &Request, state: &Mutex<State>) -> (u16, String, Value) {
    let mut state = state.lock().unwrap();
    if state.adds_refused == 0 {
        state.adds_refused += 1;
        let (status, _, body) = error(429, "rate_limited");
        return (status, "retry-after: 0\r\n".into(), body);
    }
    let text = request.body["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if text.contains("REJECT") {
        return error(400, "invalid_document");
    }
    let id = format!("doc_{}", state.docs.len() + 100);
    state.docs.push((id.clone(), text.clone()));
    let body = json!({ "id": id, "pages": 2, "chunks": 3, "chars": text.len(),
                       "chunker": "prose", "embedder": "fake-embedder", "format": "text",
                       "meta": {}, "identifiers": { "total": 0, "counts": {} } });
    (201, String::new(), body)
}

fn rank(request: &Request, state: &Mutex<State>) -> (u16, String, Value) {
    let mut state = state.lock().unwrap();
    state.searches.push(request.body.clone());
    let query = request.body["query"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    let k = request.body["k"].as_u64().unwrap_or(10) as usize;
    let mut scored: Vec<(usize, &String, &String)> = state
        .docs
        .iter()
        .map(|(id, text)| {
            let words: Vec<&str> = text.split_whitespace().collect();
            let hits = query
                .split_whitespace()
                .filter(|w| words.contains(w))
                .count();
            (hits, text, id)
        })
        .filter(|(hits, _, _)| *hits > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    if request.body["mode"] == "semantic" {
        scored.reverse();
    }
    let results: Vec<Value> = scored
        .iter()
        .flat_map(|(_, _, id)| [(id.to_string(), 0), (id.to_string(), 1)])
        .take(k)
        .enumerate()
        .map(|(i, (id, n))| {
            json!({ "rank": i + 1, "citation": "AL-00000000", "score": 1.0,
                    "document": { "id": id, "title": null, "author": null },
                    "page": { "n": n, "number": null, "volume": null, "heading": null } })
        })
        .collect();
    let body = json!({ "query": query, "mode": request.body["mode"], "results": results,
                       "timings": { "totalMs": 2.5 }, "considered": results.len() });
    (200, String::new(), body)
}
