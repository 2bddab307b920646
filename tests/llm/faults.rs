//! Faults: retried per policy, then reported as mapped errors; never a hang.

use std::io::Read;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use super::gateway::server;
use super::sse_client::{head, open, post};
use super::upstream::Upstream;

fn chat(model: &str, stream: bool) -> serde_json::Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

#[test]
fn a_429_with_retry_after_is_waited_out_and_retried() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("f429@x.org");
    let t = Instant::now();
    let r = post(s.addr, &key, &chat("oa/f~429-then-ok", false));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(t.elapsed() >= Duration::from_millis(950), "Retry-After: 1 was honoured ({:?})", t.elapsed());
    assert_eq!(up.calls("f~429-then-ok"), 2);
}

#[test]
fn server_errors_are_retried_with_backoff_then_succeed() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("f500@x.org");
    let r = post(s.addr, &key, &chat("oa/f~500-then-ok", true));
    assert_eq!(r.status, 200);
    assert_eq!(up.calls("f~500-then-ok"), 3);
    let r = post(s.addr, &key, &chat("an/f~529-then-ok", false));
    assert_eq!(r.status, 200, "anthropic's 529 overloaded is retried");
}

#[test]
fn an_outage_is_retried_per_policy_then_mapped() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("f503@x.org");
    let r = post(s.addr, &key, &chat("oa/f~always-503", false));
    assert_eq!(r.status, 503);
    let e = &r.json()["error"];
    assert_eq!(e["code"], "llm_busy");
    assert_eq!(e["provider_error"]["class"], "overloaded");
    assert_eq!(e["provider_error"]["standard_code"], "E3002");
    assert_eq!(e["provider_error"]["attempts"], 4, "openai's policy: 3 retries");
    assert_eq!(up.calls("f~always-503"), 4);
    let r = post(s.addr, &key, &chat("oa/f~bad-request", false));
    assert_eq!((r.status, r.json()["error"]["code"].as_str()), (400, Some("llm_rejected")));
    assert_eq!(up.calls("f~bad-request"), 1, "invalid requests are not retried");
}

#[test]
fn broken_streams_end_with_an_error_event_not_a_hang() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("fsse@x.org");
    for model in ["oa/f~malformed-sse", "oa/f~reset-mid-stream"] {
        let r = post(s.addr, &key, &chat(model, true));
        assert_eq!(r.status, 200);
        let events = r.events();
        let last: serde_json::Value = serde_json::from_str(events.last().unwrap()).unwrap();
        assert_eq!(last["error"]["code"], "llm_error", "{model}: {events:?}");
        assert!(events.iter().all(|e| e != "[DONE]"));
    }
}

#[test]
fn a_client_that_hangs_up_stops_the_upstream_call() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("fdis@x.org");
    let mut r = open(s.addr, &key, &chat("oa/f~trickle", true));
    let (status, _) = head(&mut r);
    assert_eq!(status, 200);
    let mut buf = [0u8; 512];
    let _ = r.read(&mut buf).unwrap();
    drop(r);
    let t = Instant::now();
    while !up.state.hung_up.load(Ordering::SeqCst) {
        assert!(t.elapsed() < Duration::from_secs(5), "the upstream kept streaming to nobody");
        std::thread::sleep(Duration::from_millis(20));
    }
}
