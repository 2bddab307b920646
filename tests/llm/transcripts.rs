//! Every recorded transcript through the gateway, streamed and whole, against the reference.
//!
//! Every recorded transcript through the gateway, streamed and whole: the text, tool
//! calls and finish reason the client sees equal what the reference code computes
//! from the recording.

use serde_json::{json, Value};

use super::gateway::server;
use super::reference::{self, Expected};
use super::sse_client::post;
use super::upstream::{fixtures, Upstream};

/// (family, provider instance, fixture dir) — the legacy completions API is not chat.
const DIRS: &[(&str, &str, &str)] =
    &[("anthropic", "an", "anthropic"), ("openai", "oa", "openai/chat"), ("openai", "oa", "openai-compatible/chat"), ("google", "ge", "google")];

/// Recorded error bodies, not answers.
const NOT_ANSWERS: &[&str] = &["google-429-retry-info", "reasoning-model-legacy-parameter-error"];

pub fn all() -> Vec<(&'static str, &'static str, String, bool)> {
    let mut out = Vec::new();
    for (family, provider, dir) in DIRS {
        let mut files: Vec<String> =
            std::fs::read_dir(fixtures().join(dir)).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        files.sort();
        for f in files {
            let (name, stream) = if let Some(n) = f.strip_suffix(".chunks.txt") {
                (n, true)
            } else if let Some(n) = f.strip_suffix(".sse") {
                (n, true)
            } else if let Some(n) = f.strip_suffix(".json") {
                (n, false)
            } else {
                continue;
            };
            if !NOT_ANSWERS.contains(&name) {
                out.push((*family, *provider, format!("{dir}/{name}"), stream));
            }
        }
    }
    out
}

pub fn expected(family: &str, fixture: &str, stream: bool) -> Expected {
    let base = fixtures().join(fixture).display().to_string();
    if !stream {
        let body: Value = serde_json::from_slice(&std::fs::read(format!("{base}.json")).unwrap()).unwrap();
        return reference::whole(family, &body);
    }
    let text = std::fs::read_to_string(format!("{base}.chunks.txt")).or_else(|_| std::fs::read_to_string(format!("{base}.sse"))).unwrap();
    let frames: Vec<Value> = text
        .lines()
        .map(|l| l.strip_prefix("data: ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty() && *l != "[DONE]")
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    reference::streamed(family, &frames)
}

#[test]
fn every_transcript_parses_to_its_expected_text_and_tool_calls() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("replay@x.org");
    let cases = all();
    assert!(cases.len() > 80, "{} transcripts", cases.len());
    let mut failures = Vec::new();
    for (family, provider, fixture, stream) in &cases {
        let model = format!("{provider}/r~{}", fixture.replace('/', "~"));
        let r = post(s.addr, &key, &json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}));
        if r.status != 200 {
            failures.push(format!("{fixture} (stream {stream}): {} {}", r.status, String::from_utf8_lossy(&r.body)));
            continue;
        }
        let got = if *stream { reference::from_chunks(&r.events()) } else { reference::from_completion(&r.json()) };
        let want = expected(family, fixture, *stream);
        if got != want {
            failures.push(format!("{fixture} (stream {stream}):\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} transcripts differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
