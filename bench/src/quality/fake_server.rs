//! A canned AgentLex server on loopback for the harness's own tests: just enough of signup,
//! account, health, collections, documents and evaluate, one request per connection.
//!
//! A document is one page, or one page per form feed-separated part of its text. Evaluate
//! resolves `{"document": id}` items as the real endpoint does (a one-page document by its id;
//! anything else is a `questions[i].relevant[j]` note, and a question left with nothing is left
//! out of `n`), ranks the pages of the documents holding a query word by how many query words
//! their text holds (ties by text), `semantic` in reverse, cuts at `k`, and scores nDCG@k with
//! the gains given, rounded to 4 decimals. Latency is 1.5 ms in keyword, 2.5 in semantic and
//! 3.5 in hybrid. A query holding `warn` earns a search warning note. The first document add is
//! answered `429 rate_limited` with `retry-after: 0`; a text holding `REJECT` is answered
//! `400 invalid_document`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{json, Value};

pub const KEY: &str = "al_fake";
pub const COLLECTION: &str = "col_1";

#[derive(Default)]
pub struct State {
    /// In the order added.
    pub docs: Vec<Doc>,
    /// Pages handed out so far: the next page's citation number.
    pub pages: u32,
    pub adds_refused: usize,
    /// Evaluate request bodies, in the order they came.
    pub evaluations: Vec<Value>,
}

pub struct Doc {
    pub id: String,
    pub text: String,
    /// Its pages' citation numbers.
    pub citations: Vec<u32>,
}

impl State {
    /// The server id of the document added with `text`.
    pub fn id_of(&self, text: &str) -> String {
        let doc = self.docs.iter().find(|d| d.text == text);
        doc.map(|d| d.id.clone()).expect("a document with this text")
    }
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
    Some(Request { method, path, auth, body })
}

fn error(status: u16, code: &str) -> (u16, String, Value) {
    let body = json!({ "error": { "code": code, "message": format!("fake: {code}") } });
    (status, String::new(), body)
}

fn route(request: &Request, state: &Mutex<State>) -> (u16, String, Value) {
    let authed = request.auth.as_deref() == Some(&format!("Bearer {KEY}"));
    let documents = format!("/v1/collections/{COLLECTION}/documents");
    let evaluate = format!("/v1/collections/{COLLECTION}/evaluate");
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
        ("GET", "/v1/account") => (200, String::new(), json!({ "id": "acct_1", "email": "x@y.z", "plan": "scribe", "usage": {} })),
        ("POST", "/v1/collections") => (201, String::new(), json!({ "id": COLLECTION, "name": request.body["name"], "embedder": "fake-embedder" })),
        ("POST", path) if path == documents => add(request, state),
        ("POST", path) if path == evaluate => evaluate_batch(&request.body, state),
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
    let text = request.body["text"].as_str().unwrap_or_default().to_string();
    if text.contains("REJECT") {
        return error(400, "invalid_document");
    }
    let id = format!("doc_{}", state.docs.len() + 100);
    let pages = text.split('\u{c}').count() as u32;
    let citations = (state.pages..state.pages + pages).collect();
    state.pages += pages;
    state.docs.push(Doc { id: id.clone(), text: text.clone(), citations });
    let body = json!({ "id": id, "pages": pages, "chunks": 3, "chars": text.len(),
                       "chunker": "prose", "embedder": "fake-embedder", "format": "text",
                       "meta": {}, "identifiers": { "total": 0, "counts": {} } });
    (201, String::new(), body)
}

fn evaluate_batch(body: &Value, state: &Mutex<State>) -> (u16, String, Value) {
    let mut state = state.lock().unwrap();
    state.evaluations.push(body.clone());
    let k = body["k"].as_u64().unwrap_or(10) as usize;
    let variants: Vec<&str> = match body["variants"].as_array() {
        Some(names) => names.iter().filter_map(Value::as_str).collect(),
        None => vec!["keyword", "semantic", "hybrid"],
    };
    let questions = body["questions"].as_array().cloned().unwrap_or_default();
    let (mut n, mut per_question, mut notes) = (0, Vec::new(), Vec::new());
    for (i, question) in questions.iter().enumerate() {
        let gold = resolve(i, question, &state, &mut notes);
        if gold.is_empty() {
            notes.push(format!("questions[{i}] has no relevant item that names a page here; it is not counted in n."));
            continue;
        }
        n += 1;
        let query = question["query"].as_str().unwrap_or_default();
        if query.contains("warn") && !notes.iter().any(|n| n.starts_with("Search warning")) {
            notes.push("Search warning: the fake was asked to warn.".into());
        }
        for variant in &variants {
            per_question.push(entry(query, variant, &gold, &rank(query, variant, k, &state), k));
        }
    }
    let body = json!({ "n": n, "k": k, "embedder": "fake-embedder", "reranker": null,
                       "variants": {}, "perQuestion": per_question, "notes": notes });
    (200, String::new(), body)
}

/// The question's gold as (label, citation, gain); a note for each item that names no page.
fn resolve(i: usize, question: &Value, state: &State, notes: &mut Vec<String>) -> Vec<(String, u32, f64)> {
    let items = question["relevant"].as_array().cloned().unwrap_or_default();
    let mut gold = Vec::new();
    for (j, item) in items.iter().enumerate() {
        let id = item["document"].as_str().unwrap_or_default();
        let gain = question["gains"][j].as_f64().unwrap_or(1.0);
        match state.docs.iter().find(|d| d.id == id) {
            Some(doc) if doc.citations.len() == 1 => gold.push((id.to_string(), doc.citations[0], gain)),
            Some(doc) => notes
                .push(format!("questions[{i}].relevant[{j}] ({id}): the document has {} pages; say which with page (from 0).", doc.citations.len())),
            None => notes.push(format!("questions[{i}].relevant[{j}] ({id}): no document has this id or title.")),
        }
    }
    gold
}

/// Citations of the pages of the documents sharing a word with `query`, best first, cut at k.
fn rank(query: &str, variant: &str, k: usize, state: &State) -> Vec<u32> {
    let query = query.to_lowercase();
    let mut scored: Vec<(usize, &Doc)> = state
        .docs
        .iter()
        .map(|doc| {
            let words: Vec<&str> = doc.text.split_whitespace().collect();
            let hits = query.split_whitespace().filter(|w| words.contains(w)).count();
            (hits, doc)
        })
        .filter(|(hits, _)| *hits > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.text.cmp(&b.1.text)));
    if variant == "semantic" {
        scored.reverse();
    }
    let pages = scored.iter().flat_map(|(_, doc)| doc.citations.iter().copied());
    pages.take(k).collect()
}

fn entry(query: &str, variant: &str, gold: &[(String, u32, f64)], ranked: &[u32], k: usize) -> Value {
    let hits: Vec<(usize, &(String, u32, f64))> =
        ranked.iter().enumerate().filter_map(|(i, page)| gold.iter().find(|g| g.1 == *page).map(|g| (i + 1, g))).collect();
    let dcg = |gains: &mut dyn Iterator<Item = (usize, f64)>| -> f64 { gains.map(|(rank, gain)| gain / ((rank + 1) as f64).log2()).sum() };
    let actual = dcg(&mut hits.iter().map(|(rank, g)| (*rank, g.2)));
    let mut ideal: Vec<f64> = gold.iter().map(|g| g.2).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let ideal = dcg(&mut ideal.into_iter().take(k).enumerate().map(|(i, g)| (i + 1, g)));
    let latency = match variant {
        "keyword" => 1.5,
        "semantic" => 2.5,
        _ => 3.5,
    };
    json!({
        "query": query, "variant": variant,
        "ndcg": (actual / ideal * 10_000.0).round() / 10_000.0,
        "firstHit": hits.first().map(|h| h.0), "latencyMs": latency, "missing": [],
        "ranked": ranked.iter().map(|c| citation(*c)).collect::<Vec<_>>(),
        "hits": hits.iter().map(|(rank, g)| json!({ "item": g.0, "rank": rank, "citation": citation(g.1) }))
            .collect::<Vec<_>>(),
    })
}

fn citation(page: u32) -> String {
    format!("AL-{page:08X}")
}
