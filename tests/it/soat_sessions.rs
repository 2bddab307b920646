//! Sessions and conversations over HTTP against a scripted upstream: SOAT's chat tutorial end to end, tool pauses, forks, tags, conversations, tenancy and a restart.
//!
//! SOAT's tutorials chat through sessions: a session made with auto_generate answers
//! a user message inline; with it off the message is only stored; a background
//! generate answers 202 and its reply later joins the conversation; `?wait=true`
//! answers the reply. These tests drive that flow as the CLI does, a session's tool
//! pause, forks and tags, conversations on their own, another account's and another
//! project's keys, and a background generation cut by `kill -9` whose reply still
//! lands once.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted_llm::{from, text, tools, Reply, Scripted};
use super::server::TestServer;
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, server, setup, tool, Setup};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

pub(super) fn session(s: &TestServer, st: &Setup, agent: &str, extra: Value) -> Value {
    let mut body = json!({"agent_id": agent, "name": "My first chat"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    ok(call(s, "POST", "/api/v1/sessions", &st.key, Some(body)), 201)
}

pub(super) fn say(s: &TestServer, key: &str, session: &str, text: &str) -> super::client::Response {
    call(s, "POST", &format!("/api/v1/sessions/{session}/messages"), key, Some(json!({"message": text})))
}

/// `(position, role, content)` of every message of the conversation.
pub(super) fn history(s: &TestServer, key: &str, conversation: &str) -> Vec<(u64, String, String)> {
    let page = ok(call(s, "GET", &format!("/api/v1/conversations/{conversation}/messages?limit=100"), key, None), 200);
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["position"].as_u64().unwrap(), m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned()))
        .collect()
}

/// Polls the conversation until it holds `n` messages.
fn history_of(s: &TestServer, key: &str, conversation: &str, n: usize) -> Vec<(u64, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h = history(s, key, conversation);
        if h.len() >= n {
            return h;
        }
        assert!(Instant::now() < deadline, "the conversation holds {h:?}, not {n} messages");
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Answers the last capital asked about in the prompt (which holds the whole history).
fn upstream() -> Scripted {
    let up = Scripted::start();
    up.otherwise(from(|prompt| {
        let asked = [("capital of France", "Paris"), ("capital of Italy", "Rome"), ("capital of Spain", "Madrid")];
        let last = asked.iter().filter_map(|(q, a)| prompt.rfind(q).map(|at| (at, q, a))).max_by_key(|x| x.0);
        match last {
            Some((_, q, a)) => text(&format!("The {q} is {a}.")),
            None => text("Noted."),
        }
    }));
    up
}

#[test]
fn the_chat_tutorial_runs_auto_on_off_background_and_waiting() {
    let up = upstream();
    let s = server();
    let st = setup(&s, &up, "sessions-tutorial@example.com");
    let a = agent(&s, &st, json!({}));
    let sess = session(&s, &st, &a, json!({"auto_generate": true}));
    let (sid, conv) = (id(&sess), sess["conversation_id"].as_str().unwrap().to_owned());
    assert!(sid.starts_with("sess_") && conv.starts_with("conv_"), "{sess}");
    assert_eq!((sess["auto_generate"].as_bool(), sess["status"].as_str(), sess["agent_id"].as_str()), (Some(true), Some("open"), Some(a.as_str())));

    // auto_generate on: the reply comes inline.
    let r = ok(say(&s, &st.key, &sid, "What is the capital of France?"), 201);
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["message"]["role"], "assistant");
    assert_eq!(r["message"]["content"], "The capital of France is Paris.");
    assert_eq!(r["message"]["model"], "reader");
    assert!(r["generation_id"].as_str().unwrap().starts_with("gen_") && r["trace_id"].as_str().unwrap().starts_with("trace_"), "{r}");
    let trace = r["trace_id"].as_str().unwrap().to_owned();
    let gens = ok(call(&s, "GET", &format!("/api/v1/generations?trace_id={trace}"), &st.key, None), 200);
    assert_eq!(gens["total"], 1, "{gens}");
    assert_eq!(gens["data"][0]["id"], r["generation_id"]);
    assert_eq!(
        history(&s, &st.key, &conv),
        vec![(0, "user".into(), "What is the capital of France?".into()), (1, "assistant".into(), "The capital of France is Paris.".into())]
    );

    // auto_generate off: the message is only stored.
    let off = ok(call(&s, "PATCH", &format!("/api/v1/sessions/{sid}"), &st.key, Some(json!({"auto_generate": false}))), 200);
    assert_eq!(off["auto_generate"], false);
    let calls = up.bodies().len();
    let saved = ok(say(&s, &st.key, &sid, "And the capital of Italy?"), 201);
    assert_eq!((saved["role"].as_str(), saved["content"].as_str()), (Some("user"), Some("And the capital of Italy?")), "{saved}");
    assert!(saved["document_id"].as_str().unwrap().starts_with("doc_"));
    assert_eq!(up.bodies().len(), calls, "no model call without auto_generate");
    assert_eq!(history(&s, &st.key, &conv).len(), 3);

    // Background: 202 at once, the reply joins the conversation when it settles.
    let acc = ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate"), &st.key, None), 202);
    assert_eq!((acc["status"].as_str(), acc["session_id"].as_str()), (Some("accepted"), Some(sid.as_str())), "{acc}");
    let h = history_of(&s, &st.key, &conv, 4);
    assert_eq!(h[3], (3, "assistant".into(), "The capital of Italy is Rome.".into()));
    // The model saw the whole history, in order.
    let last = up.bodies().last().unwrap().clone();
    let texts: Vec<String> = last["messages"].as_array().unwrap().iter().map(|m| m["content"].to_string()).collect();
    let joined = texts.join("\n");
    let (france, paris, italy) = (joined.find("capital of France?"), joined.find("is Paris"), joined.find("capital of Italy?"));
    assert!(france < paris && paris < italy && france.is_some(), "{joined}");

    // ?wait=true: the reply inline.
    ok(say(&s, &st.key, &sid, "The capital of Spain?"), 201);
    let w = ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate?wait=true"), &st.key, Some(json!({}))), 200);
    assert_eq!((w["status"].as_str(), w["message"]["content"].as_str()), (Some("completed"), Some("The capital of Spain is Madrid.")), "{w}");
    assert_eq!(history(&s, &st.key, &conv).len(), 6);
    let g = ok(call(&s, "GET", &format!("/api/v1/generations/{}", w["generation_id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(g["status"], "completed");

    // A repeated idempotency key answers the first message, 200, and adds nothing.
    let body = json!({"message": "once", "idempotency_key": "wamid.1"});
    let first = ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/messages"), &st.key, Some(body.clone())), 201);
    let again = ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/messages"), &st.key, Some(body)), 200);
    assert_eq!(first["document_id"], again["document_id"]);
    assert_eq!(history(&s, &st.key, &conv).len(), 7);

    // Listing by agent and status; get; delete takes the conversation with it.
    let listed = ok(call(&s, "GET", &format!("/api/v1/sessions?agent_id={a}&status=open"), &st.key, None), 200);
    assert_eq!(listed["total"], 1);
    assert_eq!(ok(call(&s, "GET", "/api/v1/sessions?status=closed", &st.key, None), 200)["total"], 0);
    ok(call(&s, "DELETE", &format!("/api/v1/sessions/{sid}"), &st.key, None), 204);
    refused(call(&s, "GET", &format!("/api/v1/sessions/{sid}"), &st.key, None), 404);
    refused(call(&s, "GET", &format!("/api/v1/conversations/{conv}/messages"), &st.key, None), 404);
}

#[test]
fn a_running_session_generation_refuses_another_and_a_closed_session_any() {
    let up = Scripted::start();
    up.on("slowly", Reply::Slow(Duration::from_millis(1500), Box::new(text("At last."))));
    up.otherwise(text("Fine."));
    let s = server();
    let st = setup(&s, &up, "sessions-busy@example.com");
    let a = agent(&s, &st, json!({}));
    let sid = id(&session(&s, &st, &a, json!({})));
    ok(say(&s, &st.key, &sid, "Answer slowly."), 201);
    ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate"), &st.key, None), 202);
    let running = ok(call(&s, "GET", &format!("/api/v1/sessions/{sid}"), &st.key, None), 200);
    assert!(running["generating_at"].is_string(), "{running}");
    let e = refused(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate?wait=true"), &st.key, None), 409);
    assert_eq!(e["code"], "GENERATION_ALREADY_IN_PROGRESS");
    // With auto_generate on, a message during a run is stored and nothing more starts.
    ok(call(&s, "PATCH", &format!("/api/v1/sessions/{sid}"), &st.key, Some(json!({"auto_generate": true}))), 200);
    let saved = ok(say(&s, &st.key, &sid, "Meanwhile."), 201);
    assert_eq!(saved["role"], "user", "{saved}");
    let conv = running["conversation_id"].as_str().unwrap().to_owned();
    let h = history_of(&s, &st.key, &conv, 3);
    assert_eq!(h.iter().filter(|m| m.1 == "assistant").count(), 1, "{h:?}");
    ok(call(&s, "PATCH", &format!("/api/v1/sessions/{sid}"), &st.key, Some(json!({"status": "closed"}))), 200);
    let e = refused(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate"), &st.key, None), 409);
    assert_eq!(e["code"], "SESSION_CLOSED");
    // Bad input changes nothing.
    let e = refused(call(&s, "PATCH", &format!("/api/v1/sessions/{sid}"), &st.key, Some(json!({"status": "asleep"}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    refused(call(&s, "POST", "/api/v1/sessions", &st.key, Some(json!({"agent_id": "agent_nope"}))), 404);
    refused(call(&s, "POST", &format!("/api/v1/sessions/{sid}/messages"), &st.key, Some(json!({"message": "x", "extra": 1}))), 400);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/sessions/{sid}"), &st.key, None), 200)["status"], "closed");
}

#[test]
fn a_session_tool_pause_resumes_with_its_outputs() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| {
        if prompt.contains("sunny and 24") {
            text("It is sunny in Lisbon.")
        } else {
            tools(&[("weather", json!({"city": "Lisbon"}))])
        }
    }));
    let s = server();
    let st = setup(&s, &up, "sessions-tools@example.com");
    let t = tool(&s, &st, json!({"name": "weather", "type": "client", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let sess = session(&s, &st, &a, json!({"auto_generate": true}));
    let (sid, conv) = (id(&sess), sess["conversation_id"].as_str().unwrap().to_owned());
    let r = ok(say(&s, &st.key, &sid, "Weather in Lisbon?"), 201);
    assert_eq!(r["status"], "requires_action", "{r}");
    let call_id = r["required_action"]["tool_calls"][0]["id"].clone();
    assert_eq!(r["required_action"]["tool_calls"][0]["args"]["city"], "Lisbon");
    assert_eq!(history(&s, &st.key, &conv).len(), 1, "a pause adds no reply");
    let path = format!("/api/v1/sessions/{sid}/tool-outputs");
    let other = json!({"generation_id": "gen_nope", "tool_outputs": [{"tool_call_id": call_id, "output": "x"}]});
    refused(call(&s, "POST", &path, &st.key, Some(other)), 404);
    let body = json!({"generation_id": r["generation_id"], "tool_outputs": [{"tool_call_id": call_id, "output": "sunny and 24"}]});
    let done = ok(call(&s, "POST", &path, &st.key, Some(body)), 200);
    assert_eq!((done["status"].as_str(), done["message"]["content"].as_str()), (Some("completed"), Some("It is sunny in Lisbon.")), "{done}");
    assert_eq!(history(&s, &st.key, &conv)[1], (1, "assistant".into(), "It is sunny in Lisbon.".into()));
}

#[test]
fn a_fork_copies_history_up_to_a_position_and_tags_replace_and_merge() {
    let up = upstream();
    let s = server();
    let st = setup(&s, &up, "sessions-fork@example.com");
    let a = agent(&s, &st, json!({}));
    let b = agent(&s, &st, json!({"name": "other"}));
    let sess = session(&s, &st, &a, json!({"auto_generate": true, "tool_context": {"tenant": "t1"}}));
    let sid = id(&sess);
    ok(say(&s, &st.key, &sid, "What is the capital of France?"), 201);
    ok(say(&s, &st.key, &sid, "And the capital of Italy?"), 201);
    let fork = ok(
        call(&s, "POST", &format!("/api/v1/sessions/{sid}/fork"), &st.key, Some(json!({"fork_at_position": 1, "agent_id": b, "name": "branch"}))),
        201,
    );
    assert_eq!((fork["forked_from_session_id"].as_str(), fork["forked_from_position"].as_u64()), (Some(sid.as_str()), Some(1)), "{fork}");
    assert_eq!((fork["auto_generate"].as_bool(), fork["agent_id"].as_str()), (Some(false), Some(b.as_str())));
    assert_eq!(fork["tool_context"]["tenant"], "t1", "a fork inherits the parent's tool_context");
    let fork_conv = fork["conversation_id"].as_str().unwrap().to_owned();
    assert_ne!(fork_conv, sess["conversation_id"].as_str().unwrap());
    let h = history(&s, &st.key, &fork_conv);
    assert_eq!(h.iter().map(|m| m.2.as_str()).collect::<Vec<_>>(), vec!["What is the capital of France?", "The capital of France is Paris."]);
    // The fork goes on its own way; the parent keeps its four messages.
    ok(say(&s, &st.key, &id(&fork), "The capital of Spain?"), 201);
    assert_eq!(history(&s, &st.key, &fork_conv).len(), 3);
    assert_eq!(history(&s, &st.key, sess["conversation_id"].as_str().unwrap()).len(), 4);
    let forks = ok(call(&s, "GET", &format!("/api/v1/sessions/{sid}/forks"), &st.key, None), 200);
    assert_eq!((forks["total"].as_u64(), forks["data"][0]["id"].as_str()), (Some(1), fork["id"].as_str()));
    let e = refused(call(&s, "POST", &format!("/api/v1/sessions/{sid}/fork"), &st.key, Some(json!({"fork_at_position": 9}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");

    let tags = format!("/api/v1/sessions/{sid}/tags");
    assert_eq!(ok(call(&s, "GET", &tags, &st.key, None), 200), json!({}));
    assert_eq!(ok(call(&s, "PUT", &tags, &st.key, Some(json!({"team": "a", "tier": "gold"}))), 200), json!({"team": "a", "tier": "gold"}));
    assert_eq!(
        ok(call(&s, "PATCH", &tags, &st.key, Some(json!({"tier": "silver", "region": "eu"}))), 200),
        json!({"team": "a", "tier": "silver", "region": "eu"})
    );
    assert_eq!(ok(call(&s, "PUT", &tags, &st.key, Some(json!({"only": "this"}))), 200), json!({"only": "this"}));
    refused(call(&s, "PUT", &tags, &st.key, Some(json!({"n": 1}))), 400);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/sessions/{sid}"), &st.key, None), 200)["tags"], json!({"only": "this"}));
}

#[test]
fn conversations_hold_messages_by_position_and_generate_into_themselves() {
    let up = upstream();
    let s = server();
    let st = setup(&s, &up, "conversations@example.com");
    let a = agent(&s, &st, json!({}));
    let c = ok(call(&s, "POST", "/api/v1/conversations", &st.key, Some(json!({"name": "support"}))), 201);
    let cid = id(&c);
    assert_eq!((c["status"].as_str(), c["name"].as_str()), (Some("open"), Some("support")), "{c}");
    let msgs = format!("/api/v1/conversations/{cid}/messages");
    let first = ok(call(&s, "POST", &msgs, &st.key, Some(json!({"message": "What is the capital of France?", "role": "user"}))), 201);
    assert_eq!(first["position"], 0);
    ok(call(&s, "POST", &msgs, &st.key, Some(json!({"message": "last", "role": "user", "metadata": {"channel": "sms"}}))), 201);
    let mid = ok(call(&s, "POST", &msgs, &st.key, Some(json!({"message": "middle", "role": "assistant", "position": 1}))), 201);
    assert_eq!(mid["position"], 1);
    assert_eq!(history(&s, &st.key, &cid).iter().map(|m| m.2.as_str()).collect::<Vec<_>>(), vec!["What is the capital of France?", "middle", "last"]);
    let e = refused(call(&s, "POST", &msgs, &st.key, Some(json!({"message": "x", "role": "system"}))), 400);
    assert_eq!(e["code"], "SYSTEM_MESSAGE_NOT_ALLOWED");
    ok(call(&s, "DELETE", &format!("{msgs}/{}", mid["document_id"].as_str().unwrap()), &st.key, None), 204);
    refused(call(&s, "DELETE", &format!("{msgs}/{}", mid["document_id"].as_str().unwrap()), &st.key, None), 404);
    assert_eq!(history(&s, &st.key, &cid).len(), 2);

    let w = ok(call(&s, "POST", &format!("/api/v1/conversations/{cid}/generate?wait=true"), &st.key, Some(json!({"agent_id": a}))), 200);
    assert_eq!((w["status"].as_str(), w["content"].as_str()), (Some("completed"), Some("The capital of France is Paris.")), "{w}");
    assert_eq!((w["message"]["role"].as_str(), w["message"]["agent_id"].as_str()), (Some("assistant"), Some(a.as_str())));
    let acc = ok(call(&s, "POST", &format!("/api/v1/conversations/{cid}/generate"), &st.key, Some(json!({"agent_id": a}))), 202);
    assert_eq!((acc["status"].as_str(), acc["conversation_id"].as_str()), (Some("accepted"), Some(cid.as_str())));
    assert_eq!(history_of(&s, &st.key, &cid, 4).len(), 4);

    let up_c = ok(call(&s, "PATCH", &format!("/api/v1/conversations/{cid}"), &st.key, Some(json!({"status": "closed", "name": null}))), 200);
    assert_eq!((up_c["status"].as_str(), up_c["name"].is_null()), (Some("closed"), true));
    let tags = format!("/api/v1/conversations/{cid}/tags");
    ok(call(&s, "PUT", &tags, &st.key, Some(json!({"a": "1"}))), 200);
    assert_eq!(ok(call(&s, "PATCH", &tags, &st.key, Some(json!({"b": "2"}))), 200), json!({"a": "1", "b": "2"}));
    assert_eq!(ok(call(&s, "GET", "/api/v1/conversations", &st.key, None), 200)["total"], 1);
    ok(call(&s, "DELETE", &format!("/api/v1/conversations/{cid}"), &st.key, None), 204);
    refused(call(&s, "GET", &format!("/api/v1/conversations/{cid}"), &st.key, None), 404);
}

#[test]
fn another_account_or_project_sees_no_session_or_conversation() {
    let up = upstream();
    let s = server();
    let st = setup(&s, &up, "sessions-owner@example.com");
    let a = agent(&s, &st, json!({}));
    let sess = session(&s, &st, &a, json!({}));
    let (sid, conv) = (id(&sess), sess["conversation_id"].as_str().unwrap().to_owned());
    ok(say(&s, &st.key, &sid, "hello"), 201);
    let (_, stranger) = s.signup("sessions-stranger@example.com");
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &st.key, Some(json!({"name": "P2"}))), 201));
    let p2_key =
        ok(call(&s, "POST", "/api/v1/api-keys", &st.key, Some(json!({"name": "k", "project_id": p2}))), 201)["key"].as_str().unwrap().to_owned();
    for key in [&stranger, &p2_key] {
        for (method, path) in [
            ("GET", format!("/api/v1/sessions/{sid}")),
            ("POST", format!("/api/v1/sessions/{sid}/generate")),
            ("GET", format!("/api/v1/conversations/{conv}")),
            ("GET", format!("/api/v1/conversations/{conv}/messages")),
            ("DELETE", format!("/api/v1/sessions/{sid}")),
        ] {
            let r = call(&s, method, &path, key, None);
            assert!(r.status == 404 || r.status == 403, "{method} {path}: {}", r.text());
        }
        let r = say(&s, key, &sid, "hijack");
        assert!(r.status == 404 || r.status == 403, "{}", r.text());
        let r = call(&s, "POST", "/api/v1/sessions", key, Some(json!({"agent_id": a})));
        assert!(r.status == 404 || r.status == 403, "{}", r.text());
        assert_eq!(ok(call(&s, "GET", "/api/v1/sessions", key, None), 200)["total"], 0);
        assert_eq!(ok(call(&s, "GET", "/api/v1/conversations", key, None), 200)["total"], 0);
    }
    assert_eq!(history(&s, &st.key, &conv).len(), 1, "nothing another key sent landed");
}

#[test]
fn a_background_session_reply_lands_once_across_a_kill_and_restart() {
    let up = Scripted::start();
    up.otherwise(Reply::Slow(Duration::from_millis(1500), Box::new(text("Survived."))));
    let mut s = server();
    let st = setup(&s, &up, "sessions-crash@example.com");
    let a = agent(&s, &st, json!({}));
    let sess = session(&s, &st, &a, json!({}));
    let (sid, conv) = (id(&sess), sess["conversation_id"].as_str().unwrap().to_owned());
    ok(say(&s, &st.key, &sid, "Keep going."), 201);
    ok(call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate"), &st.key, None), 202);
    // Killed while the model call is in flight; the run resumes after the restart.
    std::thread::sleep(Duration::from_millis(400));
    s.kill9();
    s.restart();
    let h = history_of(&s, &st.key, &conv, 2);
    assert_eq!(h[1], (1, "assistant".into(), "Survived.".into()));
    // Settled once: no second reply follows.
    std::thread::sleep(Duration::from_millis(2000));
    let h = history(&s, &st.key, &conv);
    assert_eq!(h.iter().filter(|m| m.1 == "assistant").count(), 1, "{h:?}");
    let after = ok(call(&s, "GET", &format!("/api/v1/sessions/{sid}"), &st.key, None), 200);
    assert!(after["generating_at"].is_null(), "{after}");
}

/// Requests that ask a session for a generation at once start exactly one: the claim
/// and the check are one write of the session's record.
#[test]
fn concurrent_generates_start_one_generation() {
    let up = Scripted::start();
    up.otherwise(Reply::Slow(Duration::from_millis(800), Box::new(text("One."))));
    let s = server();
    let st = setup(&s, &up, "sessions-race@example.com");
    let a = agent(&s, &st, json!({}));
    let sess = session(&s, &st, &a, json!({}));
    let (sid, conv) = (id(&sess), sess["conversation_id"].as_str().unwrap().to_owned());
    ok(say(&s, &st.key, &sid, "Go."), 201);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let asks: Vec<_> =
            (0..6).map(|_| scope.spawn(|| call(&s, "POST", &format!("/api/v1/sessions/{sid}/generate"), &st.key, None).status)).collect();
        asks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|&&c| c == 202).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|&c| c == 202 || c == 409), "{statuses:?}");
    let h = history_of(&s, &st.key, &conv, 2);
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(history(&s, &st.key, &conv).len(), h.len(), "one reply, from the one generation");
}
