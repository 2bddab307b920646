//! Guardrails and approvals (issue 37) enforced in generations, against a scripted upstream.
//!
//! Guardrails' versions and restore, the dry run, and each action at run time over HTTP:
//! a class-D call blocked (on the trace with the guardrail and its version), a tripped
//! guard failing the generation, identifiers flagged, an input blocked before any model
//! call, a class-C call paused for an approval item that approve runs and reject
//! refuses, across a `kill -9` too; and the "done when": a guardrail that
//! redacts identifiers leaves none in the generation, its trace, transcript, events,
//! what the model and the tool were sent, or the data directory after `kill -9`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted_llm::{from, text, tools, Scripted};
use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, echo_service, server, settle, setup, tool, Setup};

pub(super) fn guardrail(s: &TestServer, st: &Setup, document: Value) -> Value {
    ok(call(s, "POST", "/api/v1/guardrails", &st.key, Some(json!({"name": "policy", "document": document}))), 201)
}

pub(super) fn start(s: &TestServer, st: &Setup, agent: &str, text: &str) -> String {
    let body = json!({"messages": [{"role": "user", "content": text}]});
    let g = ok(call(s, "POST", &format!("/api/v1/agents/{agent}/generate"), &st.key, Some(body)), 202);
    g["generation_id"].as_str().unwrap().to_owned()
}

pub(super) fn get(s: &TestServer, key: &str, path: &str) -> Value {
    ok(call(s, "GET", path, key, None), 200)
}

/// Polls until the generation settles (completed or failed).
pub(super) fn finish(s: &TestServer, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let g = settle(s, key, id);
        if g["status"] != "requires_action" || Instant::now() > deadline {
            return g;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn guardrail_versions_archive_each_document_change_and_restore_appends() {
    let s = server();
    let up = Scripted::start();
    let st = setup(&s, &up, "guard-versions@example.com");
    // The seed's spelling still makes one: class A, version 1.
    let g = ok(call(&s, "POST", "/api/v1/guardrails", &st.key, Some(json!({"name": "pii"}))), 201);
    let id = g["id"].as_str().unwrap();
    assert_eq!((g["version"].as_u64(), &g["document"]), (Some(1), &json!({"class": "A"})), "{g}");
    let path = format!("/api/v1/guardrails/{id}");
    let v2 = ok(call(&s, "PATCH", &path, &st.key, Some(json!({"document": {"class": "C"}, "version_label": "tighten"}))), 200);
    assert_eq!(v2["version"], 2, "{v2}");
    let same = ok(call(&s, "PATCH", &path, &st.key, Some(json!({"document": {"class": "C"}, "name": "renamed"}))), 200);
    assert_eq!((same["version"].as_u64(), same["name"].as_str()), (Some(2), Some("renamed")), "the same document archives nothing");
    let bad = refused(call(&s, "PATCH", &path, &st.key, Some(json!({"document": {"class": {"var": "secrets.x"}}}))), 400);
    assert_eq!(bad["code"], "VALIDATION_FAILED", "{bad}");
    let versions = get(&s, &st.key, &format!("{path}/versions"));
    let numbers: Vec<u64> = versions["data"].as_array().unwrap().iter().map(|v| v["version"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [2, 1], "newest first: {versions}");
    assert_eq!(versions["data"][0]["label"], "tighten");
    let v1 = get(&s, &st.key, &format!("{path}/versions/1"));
    assert_eq!(v1["config"]["document"], json!({"class": "A"}), "{v1}");
    let restored = ok(call(&s, "POST", &format!("{path}/versions/1/restore"), &st.key, None), 200);
    assert_eq!((restored["version"].as_u64(), &restored["document"]), (Some(3), &json!({"class": "A"})), "{restored}");
    assert_eq!(get(&s, &st.key, &format!("{path}/versions/3"))["label"], "restored from v1");
    assert_eq!(get(&s, &st.key, &format!("{path}/versions/2"))["config"]["document"], json!({"class": "C"}), "v2 still resolves");
    refused(call(&s, "GET", &format!("{path}/versions/9"), &st.key, None), 404);
    // The dry run: the same evaluator, nothing executed.
    let budget = guardrail(
        &s,
        &st,
        json!({"class": {"if": [{"<": [{"var": "args.amount"}, 500]}, "B", "C"]}, "guard": {"<=": [{"var": "args.amount"}, {"var": "context.max"}]}}),
    );
    let eval =
        |body: Value| ok(call(&s, "POST", &format!("/api/v1/guardrails/{}/evaluate", budget["id"].as_str().unwrap()), &st.key, Some(body)), 200);
    let e = eval(json!({"args": {"amount": 100}, "guardrail_context": {"max": 200}}));
    assert_eq!((e["class"].as_str(), e["decision"].as_str(), e["guard_result"].as_bool()), (Some("B"), Some("execute"), Some(true)), "{e}");
    assert_eq!(e["context_snapshot"]["context.max"], 200, "{e}");
    let e = eval(json!({"args": {"amount": 100}}));
    assert_eq!(e["decision"], "tripwire", "a missing context key fails the guard: {e}");
    assert_eq!(eval(json!({"args": {"amount": 900}}))["decision"], "route_to_approval");
}

#[test]
fn a_class_d_call_is_blocked_before_it_runs_and_the_trace_names_the_guardrail_and_version() {
    let up = Scripted::start();
    up.otherwise(from(|p| if p.contains("blocked") { text("I could not.") } else { tools(&[("wipe", json!({"all": true}))]) }));
    let (addr, seen) = echo_service();
    let s = server();
    let st = setup(&s, &up, "guard-block@example.com");
    let g = guardrail(&s, &st, json!({"class": "D"}));
    let gid = g["id"].as_str().unwrap();
    let wipe = tool(&s, &st, json!({"name": "wipe", "type": "http", "execute": {"url": format!("http://{addr}/wipe")}, "guardrail_ids": [gid]}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": wipe}]}));
    let id = start(&s, &st, &a, "Wipe it.");
    let gen = finish(&s, &st.key, &id);
    assert_eq!(gen["status"], "completed", "the model reads the blocked result and goes on: {gen}");
    assert!(seen.lock().unwrap().is_empty(), "the blocked call never reached the tool");
    let e = &gen["guardrail_evaluations"][0];
    assert_eq!((e["guardrail_id"].as_str(), e["guardrail_version"].as_u64(), e["decision"].as_str()), (Some(gid), Some(1), Some("blocked")), "{gen}");
    let trace = get(&s, &st.key, &format!("/api/v1/traces/{}", gen["trace_id"].as_str().unwrap()));
    let ev = &trace["guardrail_events"][0];
    assert_eq!(
        (ev["guardrail_id"].as_str(), ev["guardrail_version"].as_u64(), ev["decision"].as_str()),
        (Some(gid), Some(1), Some("blocked")),
        "{trace}"
    );
    // Guardrails still attached cannot be deleted.
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/guardrails/{gid}"), &st.key, None), 409)["code"], "GUARDRAIL_HAS_REFERENCES");
}

#[test]
fn a_tripped_guard_fails_the_generation_with_the_guardrail_and_version() {
    let up = Scripted::start();
    up.otherwise(tools(&[("pay", json!({"amount": 900}))]));
    let (addr, seen) = echo_service();
    let s = server();
    let st = setup(&s, &up, "guard-trip@example.com");
    let g = guardrail(&s, &st, json!({"class": "B", "guard": {"<": [{"var": "args.amount"}, 100]}}));
    let gid = g["id"].as_str().unwrap();
    // Version 2 governs: an edit takes effect at once wherever the id is attached.
    ok(
        call(
            &s,
            "PATCH",
            &format!("/api/v1/guardrails/{gid}"),
            &st.key,
            Some(json!({"document": {"class": "B", "guard": {"<": [{"var": "args.amount"}, 200]}}})),
        ),
        200,
    );
    let pay = tool(&s, &st, json!({"name": "pay", "type": "http", "execute": {"url": format!("http://{addr}/pay")}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": pay}], "guardrail_ids": [gid]}));
    let id = start(&s, &st, &a, "Pay it.");
    let gen = finish(&s, &st.key, &id);
    assert_eq!(gen["status"], "failed", "{gen}");
    assert_eq!(gen["error"]["code"], "GUARDRAIL_TRIPWIRE", "{gen}");
    assert_eq!((gen["error"]["meta"]["guardrail_id"].as_str(), gen["error"]["meta"]["guardrail_version"].as_u64()), (Some(gid), Some(2)), "{gen}");
    assert!(seen.lock().unwrap().is_empty(), "the call did not run");
    let trace = get(&s, &st.key, &format!("/api/v1/traces/{}", gen["trace_id"].as_str().unwrap()));
    assert_eq!(trace["error"]["code"], "GUARDRAIL_TRIPWIRE", "{trace}");
    assert_eq!(trace["guardrail_events"][0]["decision"], "tripwire", "{trace}");
}

#[test]
fn identifiers_flagged_go_on_and_an_input_blocked_never_reaches_the_model() {
    let up = Scripted::start();
    up.otherwise(text("Noted."));
    let s = server();
    let st = setup(&s, &up, "guard-ids@example.com");
    let flag = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "flag", "on": ["input"]}}));
    let a = agent(&s, &st, json!({"guardrail_ids": [flag["id"]]}));
    let gen = finish(&s, &st.key, &start(&s, &st, &a, "Mail l.garcia@example.com please."));
    assert_eq!(gen["status"], "completed", "{gen}");
    let e = &gen["guardrail_evaluations"][0];
    assert_eq!((e["identifiers"]["action"].as_str(), e["identifiers"]["counts"]["email"].as_u64()), (Some("flag"), Some(1)), "{gen}");
    assert!(up.bodies()[0].to_string().contains("l.garcia@example.com"), "a flag changes nothing");
    let sent = up.bodies().len();

    let block = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "block", "on": ["input"]}}));
    let b = agent(&s, &st, json!({"guardrail_ids": [block["id"]]}));
    let gen = finish(&s, &st.key, &start(&s, &st, &b, "Call (617) 555-0143 now."));
    assert_eq!(gen["status"], "failed", "{gen}");
    assert_eq!(
        (gen["error"]["code"].as_str(), gen["error"]["meta"]["guardrail_id"].as_str()),
        (Some("GUARDRAIL_BLOCKED"), block["id"].as_str()),
        "{gen}"
    );
    assert_eq!(up.bodies().len(), sent, "the model was not called");
}

/// A class-C tool, an agent, and a generation paused on its approval item.
struct Paused {
    s: TestServer,
    st: Setup,
    up: Scripted,
    seen: super::soat_generate::Seen,
    id: String,
    approval: String,
}

fn paused(email: &str) -> Paused {
    let up = Scripted::start();
    up.otherwise(from(|p| {
        if p.contains("rejected") {
            text("Refused, as you wished.")
        } else if p.contains("\"ok\"") {
            text("Sent.")
        } else {
            tools(&[("send", json!({"to": "board"}))])
        }
    }));
    let (addr, seen) = echo_service();
    let s = server();
    let st = setup(&s, &up, email);
    let g = guardrail(&s, &st, json!({"class": "C"}));
    let send = tool(&s, &st, json!({"name": "send", "type": "http", "execute": {"url": format!("http://{addr}/send")}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": send}], "guardrail_ids": [g["id"]]}));
    let id = start(&s, &st, &a, "Send the report.");
    let gen = settle(&s, &st.key, &id);
    assert_eq!(gen["status"], "requires_action", "{gen}");
    let approval = gen["required_action"]["approvals"][0]["approval_id"].as_str().unwrap_or_else(|| panic!("no approval: {gen}")).to_owned();
    assert!(seen.lock().unwrap().is_empty(), "nothing ran before the approval");
    let item = get(&s, &st.key, &format!("/api/v1/approvals/{approval}"));
    assert_eq!(
        (item["status"].as_str(), item["origin"].as_str(), item["generation_id"].as_str()),
        (Some("pending"), Some("tool_call"), Some(id.as_str())),
        "{item}"
    );
    assert_eq!(item["proposed_action"]["arguments"], json!({"to": "board"}), "{item}");
    let listed = get(&s, &st.key, "/api/v1/approvals?status=pending");
    assert_eq!(listed["total"], 1, "{listed}");
    Paused { s, st, up, seen, id, approval }
}

#[test]
fn an_approval_pause_approved_runs_the_tool_and_completes() {
    let p = paused("guard-approve@example.com");
    let item = ok(call(&p.s, "POST", &format!("/api/v1/approvals/{}/approve", p.approval), &p.st.key, None), 200);
    assert_eq!(item["status"], "approved", "{item}");
    let gen = finish(&p.s, &p.st.key, &p.id);
    assert_eq!((gen["status"].as_str(), gen["output"]["content"].as_str()), (Some("completed"), Some("Sent.")), "{gen}");
    assert_eq!(p.seen.lock().unwrap().len(), 1, "the approved call ran once");
    let again = refused(call(&p.s, "POST", &format!("/api/v1/approvals/{}/approve", p.approval), &p.st.key, None), 409);
    assert_eq!(again["code"], "APPROVAL_ALREADY_RESOLVED");
    drop(p.up);
}

#[test]
fn an_approval_pause_rejected_answers_the_model_with_the_refusal() {
    let p = paused("guard-reject@example.com");
    let missing = refused(call(&p.s, "POST", &format!("/api/v1/approvals/{}/reject", p.approval), &p.st.key, Some(json!({"reason": " "}))), 400);
    assert_eq!(missing["code"], "APPROVAL_REASON_REQUIRED");
    let item =
        ok(call(&p.s, "POST", &format!("/api/v1/approvals/{}/reject", p.approval), &p.st.key, Some(json!({"reason": "Not to the board."}))), 200);
    assert_eq!((item["status"].as_str(), item["resolution_reason"].as_str()), (Some("rejected"), Some("Not to the board.")), "{item}");
    let gen = finish(&p.s, &p.st.key, &p.id);
    assert_eq!((gen["status"].as_str(), gen["output"]["content"].as_str()), (Some("completed"), Some("Refused, as you wished.")), "{gen}");
    assert!(p.seen.lock().unwrap().is_empty(), "a rejected call never runs");
    let last = p.up.bodies().last().unwrap().to_string();
    assert!(last.contains("Not to the board."), "the model read the refusal: {last}");
    let recurrences = get(&p.s, &p.st.key, "/api/v1/approvals/recurrences?min_count=1");
    assert_eq!((recurrences["total"].as_u64(), recurrences["data"][0]["count"].as_u64()), (Some(1), Some(1)), "{recurrences}");
    assert_eq!(recurrences["data"][0]["reasons"], json!(["Not to the board."]));
}

#[test]
fn an_approval_pause_survives_kill_9_and_resumes_on_approval() {
    let mut p = paused("guard-restart@example.com");
    p.s.kill9();
    p.s.restart();
    let gen = settle(&p.s, &p.st.key, &p.id);
    assert_eq!(gen["status"], "requires_action", "the pause survived: {gen}");
    ok(call(&p.s, "POST", &format!("/api/v1/approvals/{}/approve", p.approval), &p.st.key, None), 200);
    let gen = finish(&p.s, &p.st.key, &p.id);
    assert_eq!(gen["status"], "completed", "{gen}");
    assert_eq!(p.seen.lock().unwrap().len(), 1);
}

const ORIGINALS: [&str; 3] = ["l.garcia@example.com", "555-0143", "512-44-7832"];

fn files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

fn holds(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The "done when" (issue 37): a guardrail that redacts identifiers leaves none
/// in the generation, its trace, transcript, events, what the model and the tool were
/// sent, or the data directory, read after `kill -9`.
#[test]
fn a_redacting_guardrail_leaves_no_identifier_in_generation_trace_transcript_events_or_data_dir() {
    let up = Scripted::start();
    // The model repeats identifiers it was never sent, in a tool call and in its answer:
    // the output and tool-call stages must catch what the input stage could not.
    up.otherwise(from(|p| {
        if p.contains("\"ok\"") {
            text("Done: SSN 512-44-7832, phone (617) 555-0143, mail l.garcia@example.com.")
        } else {
            tools(&[("lookup", json!({"email": "l.garcia@example.com", "note": "call (617) 555-0143"}))])
        }
    }));
    let (addr, seen) = echo_service();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let mut s = TestServer::with(Options { config: super::plans::LAB.into(), log: Some(log.clone()), ..Options::default() });
    let st = setup(&s, &up, "guard-redact@example.com");
    let g = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "redact"}}));
    let lookup = tool(
        &s,
        &st,
        json!({"name": "lookup", "type": "http", "execute": {"url": format!("http://{addr}/lookup")}, "parameters": {"type": "object", "properties": {"email": {"type": "string"}, "note": {"type": "string"}}}}),
    );
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": lookup}], "guardrail_ids": [g["id"]]}));
    let body =
        json!({"messages": [{"role": "user", "content": "Find l.garcia@example.com, SSN 512-44-7832, phone (617) 555-0143."}], "stream": true});
    let streamed = call(&s, "POST", &format!("/api/v1/agents/{a}/generate"), &st.key, Some(body));
    assert_eq!(streamed.status, 200, "{}", streamed.text());
    let streamed = streamed.text();
    let id = streamed.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str::<Value>(d).ok()).find_map(|v| {
        v["id"].as_str().filter(|i| i.starts_with("gen_")).map(str::to_owned).or_else(|| v["generation_id"].as_str().map(str::to_owned))
    });
    let gen = match id {
        Some(id) => finish(&s, &st.key, &id),
        None => {
            let list = get(&s, &st.key, "/api/v1/generations");
            finish(&s, &st.key, list["data"][0]["id"].as_str().unwrap())
        }
    };
    let id = gen["id"].as_str().unwrap().to_owned();
    assert_eq!(gen["status"], "completed", "{gen}");
    let content = gen["output"]["content"].as_str().unwrap();
    assert!(content.contains("[SSN-1]") && content.contains("[EMAIL-1]"), "the answer is masked: {gen}");
    let stages: Vec<&str> = gen["guardrail_evaluations"].as_array().unwrap().iter().filter_map(|e| e["identifiers"]["stage"].as_str()).collect();
    for stage in ["input", "tool_call", "output"] {
        assert!(stages.contains(&stage), "{stage} redacted: {gen}");
    }
    let transcript = call(&s, "GET", &format!("/api/v1/generations/{id}/transcript"), &st.key, None).text();
    let trace = get(&s, &st.key, &format!("/api/v1/traces/{}", gen["trace_id"].as_str().unwrap()));
    assert_eq!(trace["guardrail_events"][0]["guardrail_id"], g["id"], "{trace}");
    let events = call(&s, "GET", &format!("/api/v1/generations/{id}/events"), &st.key, None).text();
    let sent_to_model = up.bodies().iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let sent_to_tool = seen.lock().unwrap().iter().map(|(_, _, b)| b.clone()).collect::<Vec<_>>().join("\n");
    assert!(sent_to_tool.contains("[EMAIL-1]"), "the tool got the masked arguments: {sent_to_tool}");
    for (what, text) in [
        ("the stream", streamed.as_str()),
        ("the generation", &gen.to_string()),
        ("the transcript", &transcript),
        ("the trace", &trace.to_string()),
        ("the events", &events),
        ("the model's requests", &sent_to_model),
        ("the tool's requests", &sent_to_tool),
    ] {
        for original in ORIGINALS {
            assert!(!text.contains(original), "{original:?} is in {what}: {text}");
        }
    }
    s.kill9();
    s.restart();
    assert_eq!(get(&s, &st.key, &format!("/api/v1/generations/{id}"))["status"], "completed", "it survived kill -9");
    s.kill9();
    let mut all = Vec::new();
    files(s.data(), &mut all);
    all.push((log.clone(), std::fs::read(&log).unwrap()));
    assert!(all.iter().any(|(p, b)| p.ends_with("records.redb") && !b.is_empty()), "the records store was read");
    assert!(all.iter().any(|(p, b)| *p == log && !b.is_empty()), "the log was read");
    for (path, bytes) in &all {
        for original in ORIGINALS {
            assert!(!holds(bytes, original), "{original:?} is stored in {}", path.display());
        }
    }
}

/// An answer with identifiers held for approval: approved, it goes out as written;
/// rejected, the refusal goes out instead.
#[test]
fn an_answer_held_for_approval_goes_out_approved_and_is_refused_rejected() {
    let up = Scripted::start();
    up.otherwise(text("Her number is (617) 555-0143."));
    let s = server();
    let st = setup(&s, &up, "guard-output@example.com");
    let g = guardrail(&s, &st, json!({"class": "A", "identifiers": {"action": "require_approval", "on": ["output"]}}));
    let a = agent(&s, &st, json!({"guardrail_ids": [g["id"]]}));
    let held = |s: &TestServer| {
        let id = start(s, &st, &a, "What is her number?");
        let gen = settle(s, &st.key, &id);
        assert_eq!(gen["status"], "requires_action", "{gen}");
        assert!(gen["output"].is_null(), "nothing went out yet: {gen}");
        let approval = gen["required_action"]["approvals"][0]["approval_id"].as_str().unwrap_or_else(|| panic!("{gen}")).to_owned();
        assert_eq!(get(s, &st.key, &format!("/api/v1/approvals/{approval}"))["evidence"]["stage"], "output");
        (id, approval)
    };
    let (id, approval) = held(&s);
    ok(call(&s, "POST", &format!("/api/v1/approvals/{approval}/approve"), &st.key, None), 200);
    let gen = finish(&s, &st.key, &id);
    assert_eq!((gen["status"].as_str(), gen["output"]["content"].as_str()), (Some("completed"), Some("Her number is (617) 555-0143.")), "{gen}");
    let (id, approval) = held(&s);
    ok(call(&s, "POST", &format!("/api/v1/approvals/{approval}/reject"), &st.key, Some(json!({"reason": "Private."}))), 200);
    let gen = finish(&s, &st.key, &id);
    let out = gen["output"]["content"].as_str().unwrap_or_default();
    assert!(gen["status"] == "completed" && out.contains("withheld") && out.contains("Private.") && !out.contains("555-0143"), "{gen}");
}
