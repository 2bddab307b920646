//! The supervised local model (`[llm.local]`) with a fake llama.cpp server in its place.
//!
//! The local model `quarry serve` supervises (`[llm.local]`), with a real process in
//! its place: `tests/llm/fake_local.py` speaks llama.cpp's server's HTTP (its health
//! check, chat completions whole and streamed, answers scripted by the request), so
//! the supervisor (start, ready, restart, stop, parent death) and the text-form tool
//! calls are tested without the weights. `real_model.rs` runs the real one.
//!
//! These servers are started here, not by `TestServer`: `.cargo/config.toml` turns the
//! local model off for every test process, and these remove that switch.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::client::Conn;
use super::sse_client::post;

pub struct LocalServer {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
    _config: tempfile::NamedTempFile,
}

/// Whether the real local model's weights are installed (`ops/setup`); without them a
/// test that needs them is skipped, or fails under CI, which installs them (see
/// `prerequisite`).
#[track_caller]
pub fn installed() -> bool {
    let ok = repo().join("models/llm/.installed").is_file();
    super::prerequisite::prerequisite("the local model is not installed (ops/setup installs it)", ok)
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `[llm.local]` pointing at the fake: its runtime is python3, its launcher the fake,
/// its model file any file that exists.
pub fn fake_config(extra: &str) -> String {
    let fake = repo().join("tests/llm/fake_local.py");
    format!(
        "[llm.local]\nenabled = true\nruntime = \"{}\"\nlauncher = \"{}\"\nmodel = \"{}\"\nname = \"fake-1b\"\nnice = 0\n{extra}",
        python3().display(),
        fake.display(),
        fake.display()
    )
}

fn python3() -> PathBuf {
    let out = Command::new("sh").args(["-c", "command -v python3"]).output().expect("sh runs");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

impl LocalServer {
    pub fn start(config: &str, env: &[(&str, &str)]) -> LocalServer {
        let dir = tempfile::tempdir().unwrap();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, config.as_bytes()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_quarry"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--shards", "2", "--data"])
            .arg(dir.path())
            .arg("--config")
            .arg(file.path())
            .env_remove("QUARRY_LLM__LOCAL__ENABLED")
            .env_remove("QUARRY_LISTEN")
            .env("QUARRY_EMBEDDER", "none")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("quarry starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().expect("quarry prints its address").unwrap();
        std::thread::spawn(move || lines.for_each(drop));
        let addr = line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().parse().unwrap();
        LocalServer { child: Some(child), addr, _dir: dir, _config: file }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> (u16, Value) {
        let auth = key.map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let r = Conn::open(self.addr).send("GET", path, &headers, None);
        (r.status, serde_json::from_slice(&r.body).unwrap_or(Value::Null))
    }

    pub fn health(&self) -> Value {
        self.get("/v1/health", None).1
    }

    pub fn signup(&self, email: &str) -> String {
        let r = Conn::open(self.addr).send("POST", "/v1/signup", &[], Some(format!("{{\"email\":\"{email}\"}}").as_bytes()));
        assert_eq!(r.status, 201);
        r.json()["api_key"].as_str().unwrap().to_owned()
    }

    /// Waits until `/v1/health` says the local model answers.
    pub fn wait_ready(&self, within: Duration) {
        let until = Instant::now() + within;
        while self.health()["llm"] != true {
            assert!(Instant::now() < until, "the local model was not ready within {within:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then waits for the exit.
    pub fn stop(&mut self) {
        let mut c = self.child.take().unwrap();
        Command::new("kill").arg(c.id().to_string()).status().unwrap();
        let status = c.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The live (not zombie) children of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        let rest: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
        if rest.len() > 1 && rest[1] == pid.to_string() && rest[0] != "Z" {
            out.push(p);
        }
    }
    out
}

/// Whether `pid` is still a running (not zombie) process.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < until, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn one_child(s: &LocalServer) -> u32 {
    let mut found = Vec::new();
    wait_for("one model process", Duration::from_secs(10), || {
        found = children(s.pid());
        found.len() == 1
    });
    found[0]
}

fn chat(s: &LocalServer, key: &str, content: &str, tools: bool, stream: bool) -> super::sse_client::Reply {
    let mut body = json!({"model": "local/fake-1b", "stream": stream, "messages": [{"role": "user", "content": content}]});
    if tools {
        body["tools"] = json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
        ]);
    }
    post(s.addr, key, &body)
}

#[test]
fn the_local_model_is_ready_after_search_is_and_is_listed_as_local() {
    // It "loads" for 2 s: the server answers (health, signup) meanwhile, llm false.
    let s = LocalServer::start(&fake_config(""), &[("FAKE_LOCAL_MODEL_DELAY", "2")]);
    let h = s.health();
    assert_eq!((h["llm"].clone(), h["local_model"].clone()), (json!(false), Value::Null), "{h}");
    let key = s.signup("early@x.org");
    s.wait_ready(Duration::from_secs(15));
    assert_eq!(s.health()["local_model"], "local/fake-1b");
    let (status, models) = s.get("/v1/models", Some(&key));
    assert_eq!(status, 200);
    assert_eq!(models["data"][0]["id"], "local/fake-1b");
    assert_eq!(models["data"][0]["owned_by"], "local");
    let r = chat(&s, &key, "hello", false, false);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["choices"][0]["message"]["content"], "ok");
}

#[test]
fn a_killed_local_model_is_restarted_and_shutdown_stops_it() {
    let mut s = LocalServer::start(&fake_config(""), &[]);
    s.wait_ready(Duration::from_secs(15));
    let first = one_child(&s);
    Command::new("kill").args(["-9", &first.to_string()]).status().unwrap();
    wait_for("the model process restarted", Duration::from_secs(15), || children(s.pid()).iter().any(|&p| p != first));
    s.wait_ready(Duration::from_secs(15));
    let second = one_child(&s);
    assert_ne!(first, second);
    let key = s.signup("restart@x.org");
    assert_eq!(chat(&s, &key, "again", false, false).status, 200);
    s.stop();
    wait_for("the model process stopped with the server", Duration::from_secs(5), || !alive(second));
}

#[test]
fn kill_9_of_quarry_leaves_no_model_process() {
    let mut s = LocalServer::start(&fake_config(""), &[]);
    s.wait_ready(Duration::from_secs(15));
    let model = one_child(&s);
    let mut quarry = s.child.take().unwrap();
    quarry.kill().unwrap(); // SIGKILL: no shutdown code runs
    quarry.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while alive(model) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(model) {
        Command::new("kill").args(["-9", &model.to_string()]).status().unwrap();
        panic!("the model process {model} outlived a kill -9 of quarry");
    }
}

#[test]
fn with_the_local_model_disabled_or_missing_the_server_starts_without_it() {
    for config in
        [fake_config("").replace("enabled = true", "enabled = false"), fake_config("").replace("fake_local.py\"\nname", "no-such-model.gguf\"\nname")]
    {
        let s = LocalServer::start(&config, &[]);
        std::thread::sleep(Duration::from_millis(500));
        assert!(children(s.pid()).is_empty(), "{config}");
        let h = s.health();
        assert_eq!((h["llm"].clone(), h["local_model"].clone()), (json!(false), Value::Null), "{h}");
        let key = s.signup("off@x.org");
        assert_eq!(s.get("/v1/models", Some(&key)).0, 503);
    }
}

/// A scripted answer, whether tools are bound, and the call it should become.
type Case = (&'static str, bool, Option<(&'static str, Value)>);

/// The manifest's text forms (providers/openai-compatible.yaml `tool_calls`) against
/// scripted answers, whole and streamed.
#[test]
fn tool_calls_written_as_text_reach_callers_as_tool_calls() {
    let s = LocalServer::start(&fake_config(""), &[]);
    s.wait_ready(Duration::from_secs(15));
    let key = s.signup("text-tools@x.org");
    let fenced = "SCRIPT:```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\"\n  }\n}\n```";
    let tagged = "SCRIPT:<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"rust\"}}\n</tool_call>";
    let cases: [Case; 6] = [
        (fenced, true, Some(("get_weather", json!({"city": "Paris"})))),
        (tagged, true, Some(("search", json!({"q": "rust"})))),
        ("SCRIPT:{\"name\": \"search\", \"arguments\": \"{\\\"q\\\": \\\"x\\\"}\"}", true, Some(("search", json!({"q": "x"})))),
        // Not a bound tool, no tools bound, prose around the block, plain prose: text.
        ("SCRIPT:```json\n{\"name\": \"rm_rf\", \"arguments\": {}}\n```", true, None),
        (fenced, false, None),
        ("SCRIPT:It is sunny in Paris, {\"name\": \"x\"} aside.", true, None),
    ];
    for (content, tools, want) in cases {
        let text = content.strip_prefix("SCRIPT:").unwrap();
        let whole = chat(&s, &key, content, tools, false);
        assert_eq!(whole.status, 200);
        let choice = &whole.json()["choices"][0];
        let streamed = streamed(&chat(&s, &key, content, tools, true));
        match &want {
            Some((name, args)) => {
                let call = &choice["message"]["tool_calls"][0];
                assert_eq!(call["function"]["name"], *name, "{content}: {choice}");
                assert_eq!(serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(), *args);
                assert!(call["id"].as_str().is_some_and(|i| !i.is_empty()));
                assert_eq!(choice["finish_reason"], "tool_calls");
                assert!(choice["message"]["content"].is_null() || choice["message"]["content"] == "", "{choice}");
                assert_eq!(streamed.text, "", "{content}");
                assert_eq!(streamed.calls, vec![(name.to_string(), args.clone())], "{content}");
                assert_eq!(streamed.finish, "tool_calls");
            }
            None => {
                assert_eq!(choice["message"]["content"], text, "{content}: {choice}");
                assert!(choice["message"]["tool_calls"].is_null(), "{choice}");
                assert_eq!(choice["finish_reason"], "stop");
                assert_eq!(streamed.text, text);
                assert!(streamed.calls.is_empty());
                assert_eq!(streamed.finish, "stop");
            }
        }
    }
}

pub struct Streamed {
    pub text: String,
    pub calls: Vec<(String, Value)>,
    pub finish: String,
}

/// A streamed answer's text, calls (arguments joined across chunks) and finish reason.
pub fn streamed(r: &super::sse_client::Reply) -> Streamed {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let mut out = Streamed { text: String::new(), calls: Vec::new(), finish: String::new() };
    let mut args: Vec<String> = Vec::new();
    for e in r.events().iter().filter(|e| *e != "[DONE]") {
        let v: Value = serde_json::from_str(e).unwrap();
        let Some(choice) = v["choices"].get(0) else { continue };
        if let Some(t) = choice["delta"]["content"].as_str() {
            out.text.push_str(t);
        }
        for c in choice["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = c["index"].as_u64().unwrap() as usize;
            if let Some(n) = c["function"]["name"].as_str() {
                out.calls.push((n.to_owned(), Value::Null));
                args.push(String::new());
            }
            args[i].push_str(c["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            out.finish = f.to_owned();
        }
    }
    for (c, a) in out.calls.iter_mut().zip(args) {
        c.1 = serde_json::from_str(&a).unwrap_or(Value::String(a));
    }
    out
}

/// Found by the real model's test on a busy machine: a streamed answer that sends
/// nothing for longer than `http.header_read_timeout` (the model thinking, 10 s by
/// default) is cut mid-stream, and the openai SDK raises "Connection error". The
/// handler counts the request finished when it returns the streaming body
/// (src/http/handler.rs), so the sweep (src/http/conn.rs) takes the silent
/// connection for one waiting for a request head. Fixed: a streamed reply keeps its
/// request in flight until its body ends (src/http/handler.rs `hold_until_sent`).
#[test]
fn a_stream_silent_longer_than_the_header_timeout_is_not_cut() {
    let s = LocalServer::start(&(fake_config("") + "[http]\nheader_read_timeout = \"1s\"\n"), &[]);
    s.wait_ready(Duration::from_secs(15));
    let key = s.signup("silent@x.org");
    let r = chat(&s, &key, "SCRIPT:PAUSE2.5:Hello there, slowly.", false, true);
    let out = streamed(&r);
    assert_eq!(out.text, "Hello there, slowly.");
    assert_eq!(out.finish, "stop");
}

/// Issue 34, finding 5: the local model answers a tenant through its own provider
/// (`local`, whose address the server configures) and never through a `custom` or
/// `ollama` base_url or a tool aimed at its port, even with loopback opened to
/// tenants by `[egress] allow`; the server's own port likewise.
#[test]
fn a_tenant_reaches_the_local_model_only_through_the_local_provider() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let egress = "[egress]\nallow = [\"127.0.0.0/8\", \"::1\", \"0.0.0.0/8\"]\n[plans.scribe]\nrate_per_minute = 60000\nburst = 5000\n";
    let config = fake_config(&format!("port = {port}\n{egress}"));
    let s = LocalServer::start(&config, &[]);
    s.wait_ready(Duration::from_secs(15));
    let key = s.signup("egress-local@x.org");
    let auth = format!("Bearer {key}");
    let send = |method: &str, path: &str, body: Value| {
        let body = body.to_string();
        Conn::open(s.addr).send(method, path, &[("authorization", auth.as_str())], Some(body.as_bytes()))
    };
    let refused = |r: super::client::Response, what: &str| {
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (403, Some("EGRESS_REFUSED")), "{what}: {}", r.text());
        assert!(!r.text().contains("\"ok\"") && !r.text().contains("os error"), "{what}: {}", r.text());
    };
    // Its own provider: answered.
    let local = send("POST", "/api/v1/ai-providers", json!({"name": "local", "provider": "local", "default_model": "fake-1b"}));
    assert_eq!(local.status, 201, "{}", local.text());
    let agent = json!({"ai_provider_id": local.json()["id"], "name": "a", "instructions": "Answer."});
    let agent = send("POST", "/api/v1/agents", agent).json()["id"].as_str().unwrap().to_owned();
    let g = send("POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), json!({"messages": [{"role": "user", "content": "hello"}]}));
    assert_eq!((g.status, g.json()["output"]["content"].as_str()), (200, Some("ok")), "{}", g.text());
    // Its port, or the server's, as a tenant's provider or tool: refused, in any spelling.
    for p in [port, s.addr.port()] {
        for host in [
            format!("127.0.0.1:{p}"),
            format!("localhost:{p}"),
            format!("127.1:{p}"),
            format!("[::ffff:127.0.0.1]:{p}"),
            format!("0.0.0.0:{p}"),
            format!("[::1]:{p}"),
        ] {
            for kind in ["custom", "ollama"] {
                let r = send(
                    "POST",
                    "/api/v1/ai-providers",
                    json!({"name": "sneaky", "provider": kind, "base_url": format!("http://{host}/v1"), "default_model": "m"}),
                );
                refused(r, &format!("a {kind} provider at {host}"));
            }
            let sec = send("POST", "/api/v1/secrets", json!({"name": "HOST", "value": host})).json()["id"].as_str().unwrap().to_owned();
            let tool = send(
                "POST",
                "/api/v1/tools",
                json!({"name": "t", "type": "http", "execute": {"url": format!("http://{{{{secret:{sec}}}}}/v1/models")}}),
            );
            assert_eq!(tool.status, 201, "{}", tool.text());
            refused(send("POST", &format!("/api/v1/tools/{}/call", tool.json()["id"].as_str().unwrap()), json!({})), &format!("a tool at {host}"));
        }
    }
}
