//! The generations crash binary: 20 seeded `kill -9` rounds of background generations, none lost.
//!
//! Generations under `kill -9`, in their own binary: 20 rounds of concurrent background
//! generations (some whose agent calls an `http` tool on a loopback service, some that
//! then pause on a `client` tool), the server killed at a random moment (seeded; the seed
//! is printed, `CRASH_SEED` replays it) and restarted on the same data directory. After
//! each restart: every generation answered 202 is readable (a request whose answer was
//! lost is retried with its idempotency key and names one generation), none stays
//! `in_progress` (each settles or pauses within a bound), every paused one accepts its
//! tool outputs once and completes, and no tool call's side effect happened twice for
//! one step.
//!
//! The tool's target is an idempotent service: it executes once per `Idempotency-Key`
//! and answers a receipt naming the key and which send of it this was. So the test can
//! tell, from the receipts the model was finally shown (the fake model echoes them in
//! its last answer), that the server (a) sent every call with a key, (b) never sent a
//! key twice in one boot, (c) re-sent a key after a restart only when the answer it had
//! got was never committed (the committed receipt is always the key's last send), and
//! (d) never ran a tool call of a step it then threw away (every key the service saw is
//! one of the generation's committed calls).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quarry_test_support::loopback;
use quarry_test_support::scripted_llm::{from, text, tools, Reply, Scripted};
use quarry_test_support::server::{Options, TestServer};
use serde_json::{json, Value};

// webhooks (issue 36): deliveries owed across kill -9.
mod webhooks;
// evaluations (issue 37): an eval run across kill -9.
mod evals;

const ROUNDS: usize = 20;
/// How long, after a restart, every generation has to settle or pause.
const SETTLE: Duration = Duration::from_secs(60);
/// The whole test's bound (debug build, 2 cores).
const WHOLE: Duration = Duration::from_secs(240);
/// Room for the rounds' requests, and for their generations at once (three clients
/// fire up to 36 a round, beside the resumed ones).
const CONFIG: &str = "[plans.scribe]\nrate_per_minute = 60000000\nburst = 1000000\n[agents]\nmax_running_per_account = 1000\n";

/// A small seeded generator (xorshift64*), shared by the fakes and the rounds.
struct Rng(Mutex<u64>);

impl Rng {
    fn below(&self, n: u64) -> u64 {
        let mut s = self.0.lock().unwrap();
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// One send of a key, as the service saw it.
struct Send {
    boot: u64,
    at: Instant,
    body: Value,
}

/// What the test's world records: the boot number (bumped at each kill), the service's
/// sends per key, and every broken rule found off the main thread.
struct World {
    rng: Rng,
    boot: AtomicU64,
    sends: Mutex<BTreeMap<String, Vec<Send>>>,
    broken: Mutex<Vec<String>>,
}

impl World {
    fn broke(&self, what: String) {
        eprintln!("BROKEN: {what}");
        self.broken.lock().unwrap().push(what);
    }
}

// --- The idempotent service the http tool calls --------------------------------------

fn serve_effect(stream: TcpStream, w: Arc<World>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some(req) = loopback::read_request(&mut reader) {
        let key = req.headers.iter().find(|(k, _)| k == "idempotency-key").map(|(_, v)| v.clone());
        let Some(key) = key else {
            w.broke(format!("a tool call without an Idempotency-Key: {} {}", req.path, req.body));
            let _ = loopback::respond(&mut out, 400, &json!({"error": "no key"}));
            return;
        };
        let boot = w.boot.load(Ordering::SeqCst);
        let attempt = {
            let mut sends = w.sends.lock().unwrap();
            let list = sends.entry(key.clone()).or_default();
            if let Some(before) = list.iter().find(|s| s.boot == boot) {
                w.broke(format!("{key} sent twice in boot {boot}, {:?} apart: {} then {}", before.at.elapsed(), before.body, req.body));
            }
            if let Some(first) = list.first() {
                if first.body != req.body {
                    w.broke(format!("{key} re-sent for another call: {} then {}", first.body, req.body));
                }
            }
            list.push(Send { boot, at: Instant::now(), body: req.body.clone() });
            list.len()
        };
        // Slow enough that kills land while a call is out.
        std::thread::sleep(Duration::from_millis(w.rng.below(150)));
        let receipt = format!("RECEIPT:{key}#{attempt}!");
        if !loopback::respond(&mut out, 200, &json!({"receipt": receipt})) {
            return;
        }
    }
}

// --- The fake model: the scripted OpenAI-compatible upstream, answering after 50-300 ms ---

/// What the model does next for a prompt: tool calls (name, args) or a final text.
fn decide(prompt: &str) -> Result<Vec<(&'static str, Value)>, String> {
    let receipts: Vec<&str> = prompt.split("RECEIPT:").skip(1).map(|r| r.split('!').next().unwrap_or("")).collect();
    let job = prompt.split("JOB-").nth(1).map(|r| r.split_whitespace().next().unwrap_or("").to_owned()).unwrap_or_default();
    let answered = prompt.contains("CLIENT-ANSWER");
    let done = || Err(format!("DONE {}", receipts.join(" ")));
    if job.starts_with('H') {
        // Two parallel calls, then one, then the answer.
        match receipts.len() {
            0 => Ok(vec![("record", json!({"job": job, "part": "a"})), ("record", json!({"job": job, "part": "b"}))]),
            2 => Ok(vec![("record", json!({"job": job, "part": "c"}))]),
            _ => done(),
        }
    } else if job.starts_with('C') {
        // One call, then a pause on the client tool, then the answer.
        match (receipts.len(), answered) {
            (0, _) => Ok(vec![("record", json!({"job": job, "part": "a"}))]),
            (_, false) => Ok(vec![("ask", json!({"job": job}))]),
            _ => done(),
        }
    } else {
        Err("DONE".into())
    }
}

// --- The client ---------------------------------------------------------------------

/// One request on its own connection; a transport failure (the server may be dead) is
/// an `Err`, never a panic.
fn send(addr: SocketAddr, method: &str, path: &str, key: &str, extra: &[(&str, &str)], body: Option<&Value>) -> io::Result<(u16, Value)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut req = format!("{method} {path} HTTP/1.1\r\nhost: q\r\nauthorization: Bearer {key}\r\nconnection: close\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(&buf) {
        Ok(httparse::Status::Complete(n)) => Ok((r.code.unwrap_or(0), serde_json::from_slice(&buf[n..]).unwrap_or(Value::Null))),
        _ => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no complete response")),
    }
}

/// A generate request: its agent, its idempotency key and its body.
#[derive(Clone)]
struct Asked {
    agent: String,
    key: String,
    body: Value,
}

#[derive(Default)]
struct Fired {
    /// Answered 202: (request, generation id).
    accepted: Vec<(Asked, String)>,
    /// Sent, but the server died before answering.
    unanswered: Vec<Asked>,
}

fn generate(addr: SocketAddr, key: &str, a: &Asked) -> io::Result<(u16, Value)> {
    send(addr, "POST", &format!("/api/v1/agents/{}/generate", a.agent), key, &[("idempotency-key", &a.key)], Some(&a.body))
}

/// Fires generations from one client until `stop`.
fn fire(addr: SocketAddr, key: String, agents: [String; 2], round: usize, t: usize, stop: Arc<AtomicBool>, w: Arc<World>) -> Fired {
    let mut fired = Fired::default();
    for i in 0.. {
        if stop.load(Ordering::Acquire) || i >= 12 {
            break;
        }
        let (kind, agent) = if (i + t).is_multiple_of(2) { ("H", &agents[0]) } else { ("C", &agents[1]) };
        let job = format!("{kind}{round}x{t}x{i}");
        let a = Asked {
            agent: agent.clone(),
            key: format!("crash-{job}"),
            body: json!({"messages": [{"role": "user", "content": format!("Do JOB-{job} now.")}]}),
        };
        match generate(addr, &key, &a) {
            Ok((202, v)) => {
                let id = v["generation_id"].as_str().unwrap_or_default().to_owned();
                if v["status"] != "accepted" || !id.starts_with("gen_") {
                    w.broke(format!("a 202 that names no generation: {v}"));
                }
                // Pollable at once.
                if let Ok((status, g)) = send(addr, "GET", &format!("/api/v1/generations/{id}"), &key, &[], None) {
                    if status != 200 {
                        w.broke(format!("{id} answered 202 but GET is {status}: {g}"));
                    }
                }
                fired.accepted.push((a, id));
            }
            Ok((status, v)) => w.broke(format!("a generate answered {status}: {v}")),
            Err(_) => {
                fired.unanswered.push(a);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20 + w.rng.below(80)));
    }
    fired
}

/// The outputs for a paused generation's client calls.
fn outputs(g: &Value) -> Value {
    let calls = g["required_action"]["tool_calls"].as_array().cloned().unwrap_or_default();
    json!({"tool_outputs": calls.iter().map(|c| json!({"tool_call_id": c["id"], "output": "CLIENT-ANSWER"})).collect::<Vec<_>>()})
}

fn resume(addr: SocketAddr, key: &str, agent: &str, id: &str, g: &Value) -> io::Result<(u16, Value)> {
    send(addr, "POST", &format!("/api/v1/agents/{agent}/generate/{id}/tool-outputs"), key, &[], Some(&outputs(g)))
}

/// One known generation.
struct Known {
    agent: String,
    kind: char,
    /// The last record read.
    last: Value,
}

#[test]
fn kill_9_during_generations_loses_none_and_repeats_no_side_effect() {
    let started = Instant::now();
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1);
    eprintln!("seed {seed} (CRASH_SEED={seed} replays the kill times)");
    let w = Arc::new(World { rng: Rng(Mutex::new(seed)), boot: AtomicU64::new(0), sends: Mutex::default(), broken: Mutex::default() });
    let ww = w.clone();
    let service = loopback::listen(move |s| serve_effect(s, ww.clone()));
    let ww = w.clone();
    let model = Scripted::start();
    model.models(&["m"]).otherwise(from(move |prompt| {
        let pause = Duration::from_millis(50 + ww.rng.below(250));
        Reply::Slow(pause, Box::new(decide(prompt).map_or_else(|done| text(&done), |calls| tools(&calls))))
    }));
    let model = model.addr;

    // The server's log goes to a file (20 boots of it would bury the rounds' lines).
    let log = std::env::temp_dir().join(format!("crash-generations-{seed}.log"));
    eprintln!("server log: {}", log.display());
    let mut s = TestServer::with(Options { config: CONFIG.into(), log: Some(log.clone()), ..Options::default() });
    let (_, key) = s.signup("crash-generations@example.com");
    let post = |s: &TestServer, path: &str, body: Value| -> String {
        let (status, v) = send(s.addr, "POST", path, &key, &[], Some(&body)).unwrap();
        assert_eq!(status, 201, "{path}: {v}");
        v["id"].as_str().unwrap().to_owned()
    };
    let aip = post(
        &s,
        "/api/v1/ai-providers",
        json!({"name": "fake", "provider": "custom", "base_url": format!("http://{model}/v1"), "default_model": "m"}),
    );
    let params = |props: Value| json!({"type": "object", "properties": props});
    let record = post(
        &s,
        "/api/v1/tools",
        json!({"name": "record", "type": "http", "execute": {"url": format!("http://{service}/effect"), "method": "POST"},
               "parameters": params(json!({"job": {"type": "string"}, "part": {"type": "string"}}))}),
    );
    let ask = post(&s, "/api/v1/tools", json!({"name": "ask", "type": "client", "parameters": params(json!({"job": {"type": "string"}}))}));
    let agent_h = post(
        &s,
        "/api/v1/agents",
        json!({"ai_provider_id": aip, "instructions": "Record the job's parts.", "max_steps": 10, "tool_bindings": [{"tool_id": record}]}),
    );
    let agent_c = post(
        &s,
        "/api/v1/agents",
        json!({"ai_provider_id": aip, "instructions": "Record the job, then ask.", "max_steps": 10,
               "tool_bindings": [{"tool_id": record}, {"tool_id": ask}]}),
    );

    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut interrupted = 0usize;
    let mut resumed = 0usize;
    let mut retried = 0usize;
    for round in 0..ROUNDS {
        let paused: Vec<(String, String, Value)> = known
            .iter()
            .filter(|(_, k)| k.last["status"] == "requires_action")
            .map(|(id, k)| (id.clone(), k.agent.clone(), k.last.clone()))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..3)
            .map(|t| {
                let (key, agents, stop, w) = (key.clone(), [agent_h.clone(), agent_c.clone()], stop.clone(), w.clone());
                let addr = s.addr;
                std::thread::spawn(move || fire(addr, key, agents, round, t, stop, w))
            })
            .collect();
        // Paused generations of earlier rounds are resumed, each at a random moment,
        // while the kill may land.
        let resumers: Vec<_> = paused
            .into_iter()
            .map(|(id, agent, g)| {
                let (key, stop, w, addr) = (key.clone(), stop.clone(), w.clone(), s.addr);
                let pause = Duration::from_millis(w.rng.below(1200));
                std::thread::spawn(move || {
                    std::thread::sleep(pause);
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    match resume(addr, &key, &agent, &id, &g) {
                        Ok((200, _)) | Err(_) => {}
                        Ok((status, v)) => w.broke(format!("{id}: tool outputs for a paused generation answered {status}: {v}")),
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100 + w.rng.below(1400)));
        s.kill9();
        // Requests the dead server sent are read by the fakes a moment later: they
        // belong to the boot that sent them.
        std::thread::sleep(Duration::from_millis(150));
        w.boot.fetch_add(1, Ordering::SeqCst);
        stop.store(true, Ordering::Release);
        let mut unanswered = Vec::new();
        for c in clients {
            let f = c.join().unwrap();
            for (a, id) in f.accepted {
                let kind = a.body.to_string().split("JOB-").nth(1).unwrap().chars().next().unwrap();
                known.insert(id, Known { agent: a.agent, kind, last: Value::Null });
            }
            unanswered.extend(f.unanswered);
        }
        for r in resumers {
            r.join().unwrap();
        }
        s.restart();

        // A generate whose answer was lost: the same key again names one generation.
        for a in unanswered {
            let (status, v) = generate(s.addr, &key, &a).expect("the restarted server answers");
            assert_eq!(status, 202, "{}: a retried generate: {v}", a.key);
            let id = v["generation_id"].as_str().unwrap().to_owned();
            let kind = a.body.to_string().split("JOB-").nth(1).unwrap().chars().next().unwrap();
            known.entry(id).or_insert(Known { agent: a.agent, kind, last: Value::Null });
            retried += 1;
        }
        // None lost, none stuck: every generation settles or pauses within the bound.
        let until = Instant::now() + SETTLE;
        loop {
            let mut open = Vec::new();
            for (id, k) in known.iter_mut() {
                if matches!(k.last["status"].as_str(), Some("completed" | "failed")) {
                    continue;
                }
                let (status, g) = send(s.addr, "GET", &format!("/api/v1/generations/{id}"), &key, &[], None).expect("the server answers");
                assert_eq!(status, 200, "round {round}: generation {id} answered 202 and is lost: {g}");
                if g["status"] == "in_progress" {
                    open.push(id.clone());
                }
                k.last = g;
            }
            if open.is_empty() {
                break;
            }
            assert!(Instant::now() < until, "round {round}: {} generation(s) still in_progress {SETTLE:?} after the restart: {open:?}", open.len());
            std::thread::sleep(Duration::from_millis(100));
        }
        for (id, k) in &known {
            match k.last["status"].as_str() {
                Some("failed") => {
                    assert_eq!(k.last["stop_reason"], "interrupted", "{id} failed for something else than the crash: {}", k.last);
                    assert!(k.last["error"]["code"].is_string(), "{id}: a failure says what: {}", k.last);
                }
                Some("requires_action") => {
                    assert_eq!(k.kind, 'C', "{id} paused, but its agent has no client tool: {}", k.last);
                    let calls = k.last["required_action"]["tool_calls"].as_array().unwrap_or_else(|| panic!("{id}: {}", k.last));
                    assert!(calls.len() == 1 && calls[0]["tool_name"] == "ask", "{id}: {}", k.last);
                }
                _ => {}
            }
        }
        interrupted = known.values().filter(|k| k.last["status"] == "failed").count();
        eprintln!(
            "round {round}: {} generations, {} completed, {} paused, {interrupted} interrupted; {:?} so far",
            known.len(),
            known.values().filter(|k| k.last["status"] == "completed").count(),
            known.values().filter(|k| k.last["status"] == "requires_action").count(),
            started.elapsed()
        );
    }

    // The last restart is not killed: every paused generation accepts its outputs once,
    // then refuses them, and is completed.
    let finals: Vec<_> = known
        .iter()
        .filter(|(_, k)| k.last["status"] == "requires_action")
        .map(|(id, k)| {
            let (key, addr, id, agent, last) = (key.clone(), s.addr, id.clone(), k.agent.clone(), k.last.clone());
            std::thread::spawn(move || {
                let (status, v) = resume(addr, &key, &agent, &id, &last).unwrap();
                assert_eq!((status, v["status"].as_str()), (200, Some("completed")), "{id}: {v}");
                let (again, e) = resume(addr, &key, &agent, &id, &last).unwrap();
                assert_eq!((again, e["error"]["code"].as_str()), (409, Some("GENERATION_NOT_AWAITING_TOOL_OUTPUTS")), "{id}: {e}");
                id
            })
        })
        .collect();
    for f in finals {
        f.join().unwrap();
        resumed += 1;
    }
    // None lost, over every round: each read back, settled.
    for (id, k) in known.iter_mut() {
        let (status, g) = send(s.addr, "GET", &format!("/api/v1/generations/{id}"), &key, &[], None).unwrap();
        assert_eq!(status, 200, "generation {id} is lost: {g}");
        assert!(matches!(g["status"].as_str(), Some("completed" | "failed")), "{id}: {g}");
        if k.last["status"] == "completed" {
            assert_eq!(g["output"], k.last["output"], "{id}: a completed generation changed");
        }
        k.last = g;
    }

    let broken = w.broken.lock().unwrap().clone();
    assert!(broken.is_empty(), "{} rule(s) broken:\n{}", broken.len(), broken.join("\n"));
    // Side effects: per key, what the model was finally shown is the key's last send.
    let sends = w.sends.lock().unwrap();
    let mut committed_keys = BTreeSet::new();
    for (id, k) in &known {
        if k.last["status"] != "completed" {
            continue;
        }
        let content = k.last["output"]["content"].as_str().unwrap_or_else(|| panic!("{id}: no output: {}", k.last));
        let receipts: Vec<&str> = content.split_whitespace().skip(1).collect();
        let expected = if k.kind == 'H' { 3 } else { 1 };
        assert_eq!(receipts.len(), expected, "{id}: the model was shown {receipts:?}");
        for r in receipts {
            let (key_sent, attempt) = r.rsplit_once('#').unwrap();
            assert!(key_sent.starts_with(&format!("{id}:")), "{id}: a receipt of another generation: {r}");
            let list = &sends[key_sent];
            assert_eq!(
                attempt.parse::<usize>().unwrap(),
                list.len(),
                "{key_sent}: re-sent after its answer #{attempt} was committed (sent in boots {:?})",
                list.iter().map(|s| s.boot).collect::<Vec<_>>()
            );
            committed_keys.insert(key_sent.to_owned());
        }
    }
    let mut resent = 0;
    for (k, list) in sends.iter() {
        let id = k.split(':').next().unwrap();
        let settled = known.get(id).map(|g| g.last["status"] == "completed").unwrap_or(false);
        if settled {
            assert!(committed_keys.contains(k), "{k}: the service ran a call of a step the generation threw away");
        }
        assert!(list.windows(2).all(|p| p[0].boot < p[1].boot), "{k}: re-sent within one boot");
        resent += usize::from(list.len() > 1);
    }
    eprintln!(
        "{} generations over {ROUNDS} kill -9 rounds: {interrupted} ended interrupted, {resumed} resumed at the end, {retried} generate retried; \
         {} tool calls, {resent} re-sent after a crash, none executed twice; {:?}",
        known.len(),
        sends.len(),
        started.elapsed()
    );
    assert!(known.len() >= 60, "{} generations over {ROUNDS} rounds; too few to mean much", known.len());
    assert!(started.elapsed() < WHOLE, "the test took {:?}", started.elapsed());
    let _ = std::fs::remove_file(&log);
}
