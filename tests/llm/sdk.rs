//! The official `openai` Python SDK against the gateway: every transcript and every typed error.
//!
//! The official `openai` Python SDK against the gateway: every recorded transcript,
//! whole through `chat.completions.create` and streamed through the `.stream()`
//! helper, and the typed error each gateway failure raises. The SDK lives in a venv that `ops/setup-llm-tests` installs (run here if
//! it is missing).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use super::gateway::server;
use super::server::TestServer;
use super::transcripts::{all, expected};
use super::upstream::Upstream;

pub fn python() -> PathBuf {
    let cache = std::env::var_os("QUARRY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/quarry"));
    let py = cache.join("venv-sdk/bin/python");
    let setup = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ops/setup-llm-tests");
    let ok = Command::new(&setup).status().expect("ops/setup-llm-tests runs").success();
    assert!(ok && py.exists(), "ops/setup-llm-tests did not install the SDK");
    py
}

#[test]
fn the_openai_sdk_round_trips_every_transcript() {
    let py = python();
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("sdk@x.org");
    let cases: Vec<_> = all()
        .into_iter()
        .map(|(family, provider, fixture, stream)| {
            let e = expected(family, &fixture, stream);
            let calls: Vec<_> = e.calls.iter().map(|(n, a)| json!([n, a])).collect();
            json!({"model": format!("{provider}/r~{}", fixture.replace('/', "~")), "stream": stream, "text": e.text, "calls": calls, "finish": e.finish})
        })
        .collect();
    let spec = json!({"base_url": format!("http://{}/v1", s.addr), "api_key": key, "cases": cases});
    let stdout = run_sdk(&py, &spec);
    assert!(stdout.contains(&format!("{} passed, 0 failed", cases.len() + 1)), "{stdout}");
}

/// Regression (issue 1/9, "the official openai Python SDK must get typed errors from the
/// gateway"): `AuthenticationError` for a bad key, `NotFoundError` for an unknown model,
/// `RateLimitError` once the key's burst is spent, and `APIStatusError` with the status
/// for a wrong method and an oversized body, each with OpenAI's `type` and our code.
#[test]
fn the_openai_sdk_gets_typed_errors_from_the_gateway() {
    const BURST: u64 = 4;
    let py = python();
    let up = Upstream::start();
    let config = super::gateway::config(&up).replace(r#"default_plan = "library""#, r#"default_plan = "tight""#)
        + &format!(
            "[plans.tight]\nname = \"Tight\"\nprice = 0\nstored_chars = 10\nsearch = 1\nextract = 1\nresearch = 1\n\
             rate_per_minute = 1\nburst = {BURST}\n[http]\nmax_body_bytes = 4096\n"
        );
    let s = TestServer::with_config(&config);
    let (_, key) = s.signup("sdk-errors@x.org");
    let spec = json!({"base_url": format!("http://{}/v1", s.addr), "api_key": key, "errors": {"burst": BURST}});
    let stdout = run_sdk(&py, &spec);
    assert!(stdout.contains("6 passed, 0 failed"), "{stdout}");
}

/// Runs tests/llm/sdk.py on `spec`; its stdout, once it exited 0.
fn run_sdk(py: &Path, spec: &serde_json::Value) -> String {
    run_script(py, "tests/llm/sdk.py", spec)
}

/// Runs the python `script` (a path from the repository root) with `spec` as JSON on
/// its stdin; its stdout, once it exited 0.
pub fn run_script(py: &Path, script: &str, spec: &serde_json::Value) -> String {
    let mut child = Command::new(py)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(script))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(spec.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout.into_owned()
}
