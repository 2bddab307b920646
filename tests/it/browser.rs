//! The console and the API reference driven in a real browser (chromium), one test per flow script in tests/browser/.
//!
//! The console and the reference in a real browser: Debian's chromium, headless, driven
//! by selenium (tests/browser/harness.py) against the real binary on loopback, every
//! other host unreachable and every request checked. Each flow is a script in
//! tests/browser/; screenshots of each step at 360 px and 1280 px go to
//! target/browser-shots/<flow>/ (not committed). Skipped without chromium, chromedriver
//! or selenium (ops/setup-browser-tests installs them), a failure under CI.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::server::{Options, TestServer};

/// The test venv's python with selenium, when chromium and its driver are installed.
pub(super) fn browser() -> Option<PathBuf> {
    let cache = std::env::var_os("QUARRY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/quarry"));
    let python = cache.join("venv-sdk/bin/python");
    let ready = python.exists()
        && std::path::Path::new("/usr/bin/chromium").exists()
        && std::path::Path::new("/usr/bin/chromedriver").exists()
        && Command::new(&python).args(["-c", "import selenium"]).status().is_ok_and(|s| s.success());
    super::prerequisite::prerequisite("no chromium, chromedriver or selenium (ops/setup-browser-tests installs them)", ready).then_some(python)
}

/// Runs `tests/browser/<flow>.py` against `server`, with `env` added, within `limit`;
/// panics with its output unless it passed.
pub(super) fn run_flow(python: &PathBuf, flow: &str, server: &TestServer, env: &[(&str, String)], limit: Duration) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shots = root.join("target/browser-shots");
    let mut cmd = Command::new(python);
    cmd.arg(root.join(format!("tests/browser/{flow}.py")))
        .current_dir(root.join("tests/browser"))
        .env("QUARRY_URL", format!("http://{}", server.addr))
        .env("QUARRY_SHOTS", &shots)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("python runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("the flow can be waited for") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (reader.join().unwrap(), err_reader.join().unwrap());
    match status {
        Some(s) if s.success() => {
            // harness.run(name) prints "<name>: passed", the name being the flow's without "_flow".
            let passed = format!("{}: passed", flow.trim_end_matches("_flow"));
            assert!(stdout.contains(&passed), "{flow} exited 0 without passing:\n{stdout}\n{stderr}");
            eprintln!("{stdout}");
        }
        Some(s) => panic!("{flow} failed ({s}):\n{stdout}\n{stderr}"),
        None => panic!("{flow} did not finish within {limit:?}:\n{stdout}\n{stderr}"),
    }
}

/// `/` leads to the console; sign up, sign out, a wrong key refused in words, sign in
/// by keyboard, a read refused for the rate retried; `/docs` renders the four documents with the bundled Swagger UI.
#[test]
fn browser_console_shell_and_docs() {
    let Some(python) = browser() else { return };
    // A burst of one a second: the start page's read right after signing in is refused
    // for the rate, and the console retries it.
    let s = TestServer::with_config("[plans.scribe]\nrate_per_minute = 60\nburst = 1\n");
    run_flow(&python, "shell_flow", &s, &[], Duration::from_secs(120));
}

/// Collections, documents and search: create a collection, load the legal sample, search
/// (each citation, and marks exactly at the API's highlight offsets), the page view with
/// its chunks' kinds, paste and upload with chunk previews, the identifiers scan, a bad
/// request explained in words, the settings, and deleting after a confirmation.
#[test]
fn browser_collections_search_and_pages() {
    let Some(python) = browser() else { return };
    // The flow makes some 60 calls within a minute, past the default plan's burst of 20.
    let s = TestServer::with(Options {
        embedder: Some("all-MiniLM-L6-v2".into()),
        config: "[plans.scribe]\nrate_per_minute = 6000\nburst = 1000\n".into(),
        ..Options::default()
    });
    run_flow(&python, "search_flow", &s, &[], Duration::from_secs(300));
}

/// Where a research prompt lists the page titled `t` (`[n] Title, page …`): the number
/// the scripted model must cite it by.
fn listed_as(prompt: &str, t: &str) -> u64 {
    let at = prompt.find(&format!("] {t}, page")).unwrap_or_else(|| panic!("{t} not listed in {prompt}"));
    let open = prompt[..at].rfind('[').unwrap();
    prompt[open + 1..at].parse().unwrap()
}

/// Research from its page (tests/browser/research_flow.py): a failing model call is an
/// error in words; then the scripted model's answer quotes the contract and cites it; its judge takes seconds, so the page is seen
/// mid-stream; then the answer's [1] links to the page view, and one claim is marked
/// supported with the page's own sentence as evidence, one partly supported.
#[test]
fn browser_research_streams_a_cited_answer_with_a_supported_claim() {
    use super::scripted_llm::{from, text, Reply, Scripted};
    let Some(python) = browser() else { return };
    let up = Scripted::start();
    // First, before any other rule: a question whose model call fails.
    up.on("audit fees", Reply::Fail(500));
    up.on("You are a research assistant", text("Found the audit clause."));
    up.on(
        "You answer a question from numbered sources",
        from(|p| {
            let n = listed_as(p, "MSA");
            text(&format!(
                "The provider must permit \u{201c}one audit per year on reasonable notice\u{201d} [{n}]. Records of each audit are kept for three years [{n}]."
            ))
        }),
    );
    let verdicts = serde_json::json!({"claims": [
        {"claim": 1, "verdict": "supported", "evidence": "Provider shall permit one audit per year on reasonable notice."},
        {"claim": 2, "verdict": "partial", "evidence": ""},
    ]});
    up.on("You check claims against the sources", Reply::Slow(Duration::from_secs(4), Box::new(text(&verdicts.to_string()))));
    let config = format!("{}{}[research]\nfast = \"fake/reader\"\n", up.provider_config(), super::plans::LAB);
    let s = TestServer::with_config(&config);
    run_flow(&python, "research_flow", &s, &[], Duration::from_secs(180));
    assert!(up.bodies().iter().any(|b| b.to_string().contains("You check claims against the sources")), "the claims were judged");
}

/// An agent from its pages (tests/browser/agent_flow.py): a provider at the scripted
/// upstream, a client tool and the agent made from the forms; the playground's streamed
/// generation pauses on the tool, the page answers it, the final answer shows; then a
/// rollout, promote and restore. The page's output reached the model as the tool's result.
#[test]
fn browser_agent_pauses_on_a_client_tool_and_resumes_from_the_playground() {
    use super::scripted_llm::{from, text, tools, Scripted};
    let Some(python) = browser() else { return };
    let up = Scripted::start();
    up.models(&["reader", "writer"]);
    up.otherwise(from(|prompt| {
        if prompt.contains("tomorrow") {
            text("Tomorrow looks sunny too.")
        } else if prompt.contains("sunny") {
            text("It is sunny in Paris, 24 degrees: take sunglasses.")
        } else {
            tools(&[("get_weather", serde_json::json!({"city": "Paris"}))])
        }
    }));
    let s = TestServer::with_config(super::plans::LAB);
    run_flow(&python, "agent_flow", &s, &[("QUARRY_UPSTREAM", format!("http://{}/v1", up.addr))], Duration::from_secs(240));
    let bodies = up.bodies();
    assert_eq!(bodies.len(), 3, "a call that asked for the tool, one after the page answered it, the second turn");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let asked = messages.iter().position(|m| m["tool_calls"][0]["function"]["name"] == "get_weather").expect("the call is in the transcript");
    let answered = &messages[asked + 1];
    assert_eq!(answered["role"], "tool", "{answered}");
    assert!(answered["content"].to_string().contains("sunny"), "the page's output is the tool's result: {answered}");
    // The second turn carries the first: the user's question and the agent's answer.
    let turn: Vec<(String, String)> =
        bodies[2]["messages"].as_array().unwrap().iter().map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].to_string())).collect();
    let roles: Vec<&str> = turn.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{turn:?}");
    assert!(turn[2].1.contains("24 degrees") && turn[3].1.contains("And tomorrow?"), "{turn:?}");
}

/// A session from its pages (tests/browser/sessions_flow.py): "New session" from the
/// agent's page; a message whose generation streams from its events, the client
/// tool's call shown as it comes and answered from the page, the reply in the
/// transcript; a second, plain reply; a fork, a close, the list by status, a delete.
/// The page's output reached the model as the tool's result.
#[test]
fn browser_session_streams_replies_into_its_transcript() {
    use super::scripted_llm::{from, text, tools, Scripted};
    let Some(python) = browser() else { return };
    let up = Scripted::start();
    up.otherwise(from(|prompt| {
        if prompt.contains("Thanks a lot") {
            text("You are welcome.")
        } else if prompt.contains("shipped") {
            text("Your order 42 has shipped and arrives Friday.")
        } else {
            tools(&[("lookup_order", serde_json::json!({"order": 42}))])
        }
    }));
    let s = TestServer::with_config(super::plans::LAB);
    run_flow(&python, "sessions_flow", &s, &[("QUARRY_UPSTREAM", format!("http://{}/v1", up.addr))], Duration::from_secs(120));
    let bodies = up.bodies();
    assert_eq!(bodies.len(), 3, "the call that asked for the tool, the one after the page answered it, the second message");
    let answered = bodies[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").expect("the tool's result is sent");
    assert!(answered["content"].to_string().contains("shipped"), "the page's output is the tool's result: {answered}");
}

/// Webhooks from their pages (tests/browser/webhooks_flow.py) against a loopback
/// receiver: the secret shown once, a generation's event delivered and listed as
/// delivered, redelivered, the secret rotated, the settings saved, the hook deleted.
/// The receiver got the event twice (the same event id), signed.
#[test]
fn browser_webhook_lists_its_deliveries_and_redelivers() {
    use std::sync::{Arc, Mutex};

    use super::scripted_llm::{text, Scripted};
    let Some(python) = browser() else { return };
    let up = Scripted::start();
    up.otherwise(text("Hello!"));
    let got: Arc<Mutex<Vec<super::loopback::Request>>> = Arc::default();
    let g = got.clone();
    let hook = super::loopback::listen(move |stream| {
        let mut w = stream.try_clone().unwrap();
        let mut r = std::io::BufReader::new(stream);
        while let Some(req) = super::loopback::read_request(&mut r) {
            g.lock().unwrap().push(req);
            if !super::loopback::respond(&mut w, 200, &serde_json::json!({"ok": true})) {
                return;
            }
        }
    });
    let s = TestServer::with_config(super::plans::LAB);
    let env = [("QUARRY_UPSTREAM", format!("http://{}/v1", up.addr)), ("QUARRY_HOOK", format!("http://{hook}/hook"))];
    run_flow(&python, "webhooks_flow", &s, &env, Duration::from_secs(120));
    let got = got.lock().unwrap();
    let events: Vec<(&str, &str)> = got.iter().map(|r| (r.body["event"].as_str().unwrap_or(""), r.body["id"].as_str().unwrap_or(""))).collect();
    assert_eq!(events.len(), 2, "the event and its redelivery: {events:?}");
    assert!(events.iter().all(|(t, _)| *t == "agents.generation.completed"), "{events:?}");
    assert_eq!(events[0].1, events[1].1, "a redelivery sends the same event");
    assert!(got.iter().all(|r| r.path == "/hook" && r.headers.iter().any(|(k, _)| k == "x-soat-signature-v2")), "each post is signed");
}

/// actors (issue 36): the actors page (tests/browser/actors_flow.py): made from the form,
/// the same external id answering the same actor, its sessions counted, a delete
/// refused in words once it spoke, another deleted.
#[test]
fn browser_actors_page_creates_counts_and_deletes() {
    let Some(python) = browser() else { return };
    let s = TestServer::with_config(super::plans::LAB);
    run_flow(&python, "actors_flow", &s, &[], Duration::from_secs(120));
}

/// evaluations (issue 37): the eval-gated canary from the console
/// (tests/browser/evals_flow.py): a dataset, a test case and an eval from the evals
/// page; a rollout gated on it from the agent's page, its promotion refused while no
/// run passed; a run on the canary version from the evals page, answered by the
/// canary's instructions through the scripted upstream; then the promotion.
#[test]
fn browser_eval_gated_canary_promotes_after_a_run_on_the_canary() {
    use super::scripted_llm::{text, Scripted};
    let Some(python) = browser() else { return };
    let up = Scripted::start();
    up.on("CANARY-RULES", text("Invoices go out on the first of the month."));
    up.otherwise(text("I do not know."));
    let s = TestServer::with_config(super::plans::LAB);
    run_flow(&python, "evals_flow", &s, &[("QUARRY_UPSTREAM", format!("http://{}/v1", up.addr))], Duration::from_secs(180));
    let bodies = up.bodies();
    assert_eq!(bodies.len(), 1, "one test case, one generation");
    assert!(bodies[0].to_string().contains("CANARY-RULES"), "the run used the canary's config: {}", bodies[0]);
}
