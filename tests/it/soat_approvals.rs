//! Approvals (issue 37) beyond one decision, over HTTP against a scripted upstream: a
//! second identical proposal waits on the pending item instead of filing another (and
//! one decision resumes both generations); an item past its expiry is settled
//! `expired` in the store by the sweeper, with its `approvals.expired` event in the
//! webhook outbox, and its generation goes on told so, across a `kill -9` too; an
//! input a guardrail sends to approval waits for it; and a session's user message is
//! screened by its agent's guardrails before its conversation keeps it.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted_llm::{from, text, tools, Scripted};
use super::server::TestServer;
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, echo_service, server, settle, setup, tool, Setup};
use super::soat_guardrails::{finish, get, guardrail, start};
use super::soat_sessions::{history, say, session};

/// An upstream that proposes `send` to the board, says "Sent." once a call ran, and
/// reports the staleness once told the approval expired.
fn proposer() -> Scripted {
    let up = Scripted::start();
    up.otherwise(from(|p| {
        if p.contains("expired before a human decided") {
            text("The approval expired; nothing was sent.")
        } else if p.contains("\"ok\"") {
            text("Sent.")
        } else {
            tools(&[("send", json!({"to": "board"}))])
        }
    }));
    up
}

/// A class-C guardrail (`document`), an http tool `send` on an echo service, an agent.
fn gated(s: &TestServer, st: &Setup, document: Value) -> (String, super::soat_generate::Seen) {
    let (addr, seen) = echo_service();
    let g = guardrail(s, st, document);
    let send = tool(s, st, json!({"name": "send", "type": "http", "execute": {"url": format!("http://{addr}/send")}}));
    (agent(s, st, json!({"tool_bindings": [{"tool_id": send}], "guardrail_ids": [g["id"]]})), seen)
}

fn approval_of(g: &Value) -> String {
    g["required_action"]["approvals"][0]["approval_id"].as_str().unwrap_or_else(|| panic!("no approval: {g}")).to_owned()
}

/// Polls the item until it reads `status`.
fn item_until(s: &TestServer, key: &str, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let item = get(s, key, &format!("/api/v1/approvals/{id}"));
        if item["status"] == status || Instant::now() > deadline {
            return item;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The event types of the webhook's deliveries, polled until `n` are written.
fn events(s: &TestServer, key: &str, hook: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = ok(call(s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={hook}"), key, None), 200);
        let all = d["data"].as_array().unwrap().clone();
        if all.len() >= n || Instant::now() > deadline {
            return all;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hook(s: &TestServer, st: &Setup, events: &[&str]) -> String {
    // Its URL answers nothing: its deliveries are the outbox.
    let h = ok(call(s, "POST", "/api/v1/webhooks", &st.key, Some(json!({"name": "a", "url": "http://127.0.0.1:9/hook", "events": events}))), 201);
    h["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_second_identical_proposal_waits_on_the_pending_approval_and_one_decision_resumes_both() {
    let up = proposer();
    let s = server();
    let st = setup(&s, &up, "approvals-dedup@example.com");
    let (a, seen) = gated(&s, &st, json!({"class": "C"}));
    let first = start(&s, &st, &a, "Send the report.");
    let g1 = settle(&s, &st.key, &first);
    assert_eq!(g1["status"], "requires_action", "{g1}");
    let second = start(&s, &st, &a, "Send the report again.");
    let g2 = settle(&s, &st.key, &second);
    assert_eq!(g2["status"], "requires_action", "{g2}");
    let item = approval_of(&g1);
    assert_eq!(approval_of(&g2), item, "the same proposal waits on the pending item: {g2}");
    let pending = get(&s, &st.key, "/api/v1/approvals?status=pending");
    assert_eq!(pending["total"], 1, "one item, not two: {pending}");
    assert_eq!(pending["data"][0]["generation_id"].as_str(), Some(first.as_str()), "{pending}");
    ok(call(&s, "POST", &format!("/api/v1/approvals/{item}/approve"), &st.key, None), 200);
    for id in [&first, &second] {
        let g = finish(&s, &st.key, id);
        assert_eq!((g["status"].as_str(), g["output"]["content"].as_str()), (Some("completed"), Some("Sent.")), "{g}");
    }
    assert_eq!(seen.lock().unwrap().len(), 2, "each generation's approved call ran once");
    assert_eq!(get(&s, &st.key, "/api/v1/approvals")["total"], 1, "still one item");
    // Once decided, the same proposal is a new item (it recurs), linked to no rejection.
    let third = start(&s, &st, &a, "And once more.");
    let g3 = settle(&s, &st.key, &third);
    assert_ne!(approval_of(&g3), item, "{g3}");
    assert_eq!(get(&s, &st.key, "/api/v1/approvals?status=pending")["total"], 1);
}

#[test]
fn an_approval_past_its_expiry_is_settled_expired_with_its_event_and_the_generation_is_told() {
    let up = proposer();
    let s = server();
    let st = setup(&s, &up, "approvals-expiry@example.com");
    let hook = hook(&s, &st, &["approvals.*"]);
    let (a, seen) = gated(&s, &st, json!({"class": "C", "expires_in": 2}));
    let id = start(&s, &st, &a, "Send the report.");
    let g = settle(&s, &st.key, &id);
    assert_eq!(g["status"], "requires_action", "{g}");
    let item = approval_of(&g);
    let expired = item_until(&s, &st.key, &item, "expired");
    assert_eq!((expired["status"].as_str(), expired["resolved_by"].as_str()), (Some("expired"), None), "{expired}");
    let g = finish(&s, &st.key, &id);
    assert_eq!(
        (g["status"].as_str(), g["output"]["content"].as_str()),
        (Some("completed"), Some("The approval expired; nothing was sent.")),
        "the generation went on, told the call expired: {g}"
    );
    assert!(seen.lock().unwrap().is_empty(), "an expired call never runs");
    // Settled in the store: its event is in the outbox, once, and it can never be approved.
    let d = events(&s, &st.key, &hook, 2);
    let mut names: Vec<&str> = d.iter().map(|d| d["event_type"].as_str().unwrap_or("")).collect();
    names.sort_unstable();
    assert_eq!(names, ["approvals.created", "approvals.expired"], "filed once, expired once: {d:?}");
    for e in &d {
        let status = if e["event_type"] == "approvals.created" { "pending" } else { "expired" };
        assert_eq!(e["payload"]["data"]["approval"]["id"].as_str(), Some(item.as_str()), "{e}");
        assert_eq!(e["payload"]["data"]["approval"]["status"], status, "{e}");
    }
    let late = refused(call(&s, "POST", &format!("/api/v1/approvals/{item}/approve"), &st.key, None), 409);
    assert_eq!(late["code"], "APPROVAL_EXPIRED", "{late}");
}

#[test]
fn an_approval_that_expires_while_the_server_is_down_is_settled_after_the_restart() {
    let up = proposer();
    let mut s = server();
    let st = setup(&s, &up, "approvals-expiry-restart@example.com");
    let hook = hook(&s, &st, &["approvals.expired"]);
    let (a, _seen) = gated(&s, &st, json!({"class": "C", "expires_in": 1}));
    let id = start(&s, &st, &a, "Send the report.");
    let g = settle(&s, &st.key, &id);
    let item = approval_of(&g);
    s.kill9();
    std::thread::sleep(Duration::from_millis(1500));
    s.restart();
    let d = events(&s, &st.key, &hook, 1);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["event_type"], "approvals.expired");
    assert_eq!(item_until(&s, &st.key, &item, "expired")["status"], "expired");
    let g = finish(&s, &st.key, &id);
    assert_eq!(g["output"]["content"].as_str(), Some("The approval expired; nothing was sent."), "{g}");
}

#[test]
fn an_input_sent_to_approval_reaches_the_model_only_once_approved() {
    let up = Scripted::start();
    up.otherwise(text("Noted."));
    let s = server();
    let st = setup(&s, &up, "approvals-input@example.com");
    let g = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "require_approval", "on": ["input"]}}));
    let a = agent(&s, &st, json!({"guardrail_ids": [g["id"]]}));
    let held = |text: &str| {
        let id = start(&s, &st, &a, text);
        let gen = settle(&s, &st.key, &id);
        assert_eq!(gen["status"], "requires_action", "{gen}");
        assert_eq!(gen["required_action"]["approvals"][0]["stage"], "input", "{gen}");
        let approval = approval_of(&gen);
        let item = get(&s, &st.key, &format!("/api/v1/approvals/{approval}"));
        assert_eq!((item["status"].as_str(), item["evidence"]["stage"].as_str()), (Some("pending"), Some("input")), "{item}");
        (id, approval)
    };
    let (id, approval) = held("Mail l.garcia@example.com please.");
    assert!(up.bodies().is_empty(), "the model waits for the approval");
    ok(call(&s, "POST", &format!("/api/v1/approvals/{approval}/approve"), &st.key, None), 200);
    let gen = finish(&s, &st.key, &id);
    assert_eq!((gen["status"].as_str(), gen["output"]["content"].as_str()), (Some("completed"), Some("Noted.")), "{gen}");
    assert_eq!(up.bodies().len(), 1);
    assert!(up.bodies()[0].to_string().contains("l.garcia@example.com"), "approved as it was");
    let (id, approval) = held("Call (617) 555-0143 now.");
    ok(call(&s, "POST", &format!("/api/v1/approvals/{approval}/reject"), &st.key, Some(json!({"reason": "Private."}))), 200);
    let gen = finish(&s, &st.key, &id);
    let out = gen["output"]["content"].as_str().unwrap_or_default();
    assert!(gen["status"] == "completed" && out.contains("not run") && out.contains("Private."), "{gen}");
    assert_eq!(up.bodies().len(), 1, "a rejected input never reaches the model");
}

#[test]
fn a_session_message_is_screened_by_its_agents_guardrails_before_its_conversation_keeps_it() {
    let up = Scripted::start();
    up.otherwise(text("Noted."));
    let s = server();
    let st = setup(&s, &up, "approvals-session@example.com");
    let redact = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "redact", "on": ["input"]}}));
    let a = agent(&s, &st, json!({"guardrail_ids": [redact["id"]]}));
    let sess = session(&s, &st, &a, json!({"auto_generate": false}));
    let (sid, conv) = (sess["id"].as_str().unwrap(), sess["conversation_id"].as_str().unwrap());
    ok(say(&s, &st.key, sid, "Mail l.garcia@example.com please."), 201);
    let h = history(&s, &st.key, conv);
    assert_eq!(h.len(), 1, "{h:?}");
    assert!(h[0].2.contains("please") && !h[0].2.contains("l.garcia@example.com"), "stored redacted: {h:?}");

    let block = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "block", "on": ["input"]}}));
    let b = agent(&s, &st, json!({"guardrail_ids": [block["id"]]}));
    let sess = session(&s, &st, &b, json!({"auto_generate": true}));
    let (sid, conv) = (sess["id"].as_str().unwrap(), sess["conversation_id"].as_str().unwrap());
    let e = refused(say(&s, &st.key, sid, "Call (617) 555-0143 now."), 422);
    assert_eq!((e["code"].as_str(), e["meta"]["guardrail_id"].as_str()), (Some("GUARDRAIL_BLOCKED"), block["id"].as_str()), "{e}");
    assert!(history(&s, &st.key, conv).is_empty(), "a blocked message is not stored");
    assert!(up.bodies().is_empty(), "nor sent to the model");
    ok(say(&s, &st.key, sid, "Hello there."), 201);
    assert_eq!(history(&s, &st.key, conv)[0].2, "Hello there.");
}
