//! Actors over HTTP (SOAT v0.28's actors.yaml, issue 36): create, find-or-create by external id, list filters, update, tags and the delete rules; sessions naming actors, `single_session_per_actor` (also under racing creates), and a release's canary split by the actor behind a session.
//!
//! An actor is an end user of a project's agents. What a user would check: the same
//! `external_id` twice is one actor; a session names only an actor of its project; an
//! agent with `single_session_per_actor` lets an actor hold one open session, however
//! many creates race; an actor that spoke is not deleted, one that did not is, and its
//! sessions forget it; a release at 50% serves both versions, each actor always the
//! same one, whatever the session or turn, and whatever its request's tool_context says.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::scripted_llm::{text, Scripted};
use super::server::TestServer;
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, server, setup, Setup};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

fn actor(s: &TestServer, key: &str, body: Value) -> Value {
    ok(call(s, "POST", "/api/v1/actors", key, Some(body)), 201)
}

fn session(s: &TestServer, st: &Setup, agent: &str, extra: Value) -> super::client::Response {
    let mut body = json!({"agent_id": agent});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    call(s, "POST", "/api/v1/sessions", &st.key, Some(body))
}

fn ids(page: &Value) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(id).collect()
}

#[test]
fn actors_are_made_once_per_external_id_listed_changed_tagged_and_deleted_by_the_rules() {
    let up = Scripted::start();
    up.otherwise(text("Hello."));
    let s = server();
    let st = setup(&s, &up, "actors-crud@example.com");
    let key = st.key.clone();
    let a = agent(&s, &st, json!({}));
    let alice = actor(&s, &key, json!({"name": "Alice", "external_id": "+15551234567", "instructions": "Speaks French."}));
    assert!(id(&alice).starts_with("actor_"), "{alice}");
    assert_eq!((&alice["name"], &alice["external_id"], &alice["instructions"]), (&json!("Alice"), &json!("+15551234567"), &json!("Speaks French.")));
    assert_eq!((&alice["agent_id"], &alice["chat_id"], &alice["tags"]), (&Value::Null, &Value::Null, &json!({})));
    assert!(alice["project_id"].as_str().unwrap().starts_with("proj_"));
    // The same external id again: the existing actor, unchanged, 200.
    let again = ok(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": "Someone else", "external_id": "+15551234567"}))), 200);
    assert_eq!((id(&again), &again["name"]), (id(&alice), &json!("Alice")));
    let bob = actor(&s, &key, json!({"name": "Bob", "agent_id": a}));
    assert_eq!(bob["agent_id"], a.as_str());
    // Lists and their filters.
    let all = ok(call(&s, "GET", "/api/v1/actors", &key, None), 200);
    assert_eq!((ids(&all), &all["total"]), (vec![id(&alice), id(&bob)], &json!(2)));
    assert_eq!(ids(&ok(call(&s, "GET", "/api/v1/actors?external_id=%2B15551234567", &key, None), 200)), [id(&alice)]);
    assert_eq!(ids(&ok(call(&s, "GET", &format!("/api/v1/actors?agent_id={a}"), &key, None), 200)), [id(&bob)]);
    assert_eq!(ids(&ok(call(&s, "GET", "/api/v1/actors?limit=1&offset=1", &key, None), 200)), [id(&bob)]);
    // Bad input changes nothing.
    let e = refused(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": "C", "agent_id": a, "chat_id": "chat_x"}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    assert_eq!(refused(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": "C", "chat_id": "chat_x"}))), 400)["code"], "CHAT_NOT_FOUND");
    assert_eq!(
        refused(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": "C", "agent_id": "agent_nope"}))), 400)["code"],
        "AGENT_NOT_FOUND"
    );
    assert_eq!(refused(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": "C", "color": "red"}))), 400)["code"], "VALIDATION_FAILED");
    assert_eq!(refused(call(&s, "POST", "/api/v1/actors", &key, Some(json!({"name": " "}))), 400)["code"], "VALIDATION_FAILED");
    assert_eq!(ok(call(&s, "GET", "/api/v1/actors", &key, None), 200)["total"], 2, "no actor made by a refused create");
    // Update: the fields, and an external id another actor holds.
    let path = format!("/api/v1/actors/{}", id(&bob));
    let changed = ok(call(&s, "PATCH", &path, &key, Some(json!({"name": "Robert", "instructions": "Brief.", "agent_id": null}))), 200);
    assert_eq!((&changed["name"], &changed["instructions"], &changed["agent_id"]), (&json!("Robert"), &json!("Brief."), &Value::Null));
    let e = refused(call(&s, "PATCH", &path, &key, Some(json!({"external_id": "+15551234567"}))), 409);
    assert_eq!(e["meta"]["actor_id"], id(&alice).as_str(), "{e}");
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200)["external_id"], Value::Null, "nothing written");
    ok(call(&s, "PATCH", &path, &key, Some(json!({"external_id": "bob@example.com"}))), 200);
    // Tags: replace, merge, read.
    let tags = format!("{path}/tags");
    assert_eq!(
        ok(call(&s, "PUT", &tags, &key, Some(json!({"type": "customer", "status": "active"}))), 200),
        json!({"type": "customer", "status": "active"})
    );
    assert_eq!(
        ok(call(&s, "PATCH", &tags, &key, Some(json!({"status": "vip", "tier": "2"}))), 200),
        json!({"type": "customer", "status": "vip", "tier": "2"})
    );
    assert_eq!(ok(call(&s, "PUT", &tags, &key, Some(json!({"only": "this"}))), 200), json!({"only": "this"}));
    assert_eq!(ok(call(&s, "GET", &tags, &key, None), 200), json!({"only": "this"}));
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200)["tags"], json!({"only": "this"}));
    // Sessions and conversations name only an actor of their project.
    let e = refused(session(&s, &st, &a, json!({"actor_id": "actor_nope"})), 400);
    assert_eq!((e["code"].as_str(), e["meta"]["field"].as_str()), (Some("ACTOR_NOT_FOUND"), Some("actor_id")), "{e}");
    let e = refused(call(&s, "POST", "/api/v1/conversations", &key, Some(json!({"actor_id": "actor_nope"}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    // Alice speaks in a session: she can no longer be deleted.
    let hers = ok(session(&s, &st, &a, json!({"actor_id": id(&alice)})), 201);
    assert_eq!(hers["actor_id"], id(&alice).as_str());
    ok(call(&s, "POST", &format!("/api/v1/sessions/{}/messages", id(&hers)), &key, Some(json!({"message": "Bonjour"}))), 201);
    let conversation = hers["conversation_id"].as_str().unwrap();
    assert_eq!(ids(&ok(call(&s, "GET", &format!("/api/v1/actors?conversation_id={conversation}"), &key, None), 200)), [id(&alice)]);
    let e = refused(call(&s, "DELETE", &format!("/api/v1/actors/{}", id(&alice)), &key, None), 409);
    assert_eq!((e["code"].as_str(), &e["meta"]["message_count"]), (Some("ACTOR_HAS_MESSAGES"), &json!(1)), "{e}");
    ok(call(&s, "GET", &format!("/api/v1/actors/{}", id(&alice)), &key, None), 200);
    // Bob has a session but said nothing: deleted, and the session forgets him.
    let his = ok(session(&s, &st, &a, json!({"actor_id": id(&bob)})), 201);
    assert_eq!(ok(call(&s, "DELETE", &path, &key, None), 204), Value::Null);
    assert_eq!(refused(call(&s, "GET", &path, &key, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(refused(call(&s, "DELETE", &path, &key, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/sessions/{}", id(&his)), &key, None), 200)["actor_id"], Value::Null);
    assert_eq!(
        ok(call(&s, "GET", &format!("/api/v1/conversations/{}", his["conversation_id"].as_str().unwrap()), &key, None), 200)["actor_id"],
        Value::Null
    );
}

#[test]
fn another_accounts_or_projects_actor_is_out_of_reach() {
    let up = Scripted::start();
    up.otherwise(text("Hello."));
    let s = server();
    let st = setup(&s, &up, "actors-owner@example.com");
    let other = setup(&s, &up, "actors-other@example.com");
    let alice = id(&actor(&s, &st.key, json!({"name": "Alice", "external_id": "x-1"})));
    // The other account: 404 on the record, and its own external ids are its own.
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/actors/{alice}"), &other.key, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", "/api/v1/actors", &other.key, None), 200)["total"], 0);
    assert_ne!(id(&actor(&s, &other.key, json!({"name": "Alice", "external_id": "x-1"}))), alice);
    let theirs = agent(&s, &other, json!({}));
    assert_eq!(refused(session(&s, &other, &theirs, json!({"actor_id": alice})), 400)["code"], "ACTOR_NOT_FOUND");
    // Another project of the same account: its key sees none, and its sessions cannot name her.
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &st.key, Some(json!({"name": "P2"}))), 201));
    let sk2 =
        ok(call(&s, "POST", "/api/v1/api-keys", &st.key, Some(json!({"name": "p2", "project_id": p2}))), 201)["key"].as_str().unwrap().to_owned();
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/actors/{alice}"), &sk2, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", "/api/v1/actors", &sk2, None), 200)["total"], 0);
    let e = refused(call(&s, "POST", "/api/v1/actors", &sk2, Some(json!({"name": "X", "project_id": "proj_elsewhere"}))), 403);
    assert_eq!(e["code"], "API_KEY_PROJECT_SCOPE");
}

#[test]
fn single_session_per_actor_allows_one_open_session_even_under_racing_creates() {
    let up = Scripted::start();
    up.otherwise(text("Hello."));
    let s = server();
    let st = setup(&s, &up, "actors-single@example.com");
    let single = agent(&s, &st, json!({"single_session_per_actor": true}));
    let plain = agent(&s, &st, json!({}));
    let [alice, bob, carol, dave] = ["Alice", "Bob", "Carol", "Dave"].map(|n| id(&actor(&s, &st.key, json!({"name": n}))));
    let first = ok(session(&s, &st, &single, json!({"actor_id": alice})), 201);
    let e = refused(session(&s, &st, &single, json!({"actor_id": alice})), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["session_id"].as_str()), (Some("SINGLE_SESSION_CONFLICT"), first["id"].as_str()), "{e}");
    // Another actor, no actor, another agent: not held.
    ok(session(&s, &st, &single, json!({"actor_id": bob})), 201);
    ok(session(&s, &st, &single, json!({})), 201);
    ok(session(&s, &st, &single, json!({})), 201);
    ok(session(&s, &st, &plain, json!({"actor_id": alice})), 201);
    ok(session(&s, &st, &plain, json!({"actor_id": alice})), 201);
    // Closed, the slot is free again; reopening the closed one while another is open is refused.
    let first_path = format!("/api/v1/sessions/{}", id(&first));
    ok(call(&s, "PATCH", &first_path, &st.key, Some(json!({"status": "closed"}))), 200);
    let second = ok(session(&s, &st, &single, json!({"actor_id": alice})), 201);
    let e = refused(call(&s, "PATCH", &first_path, &st.key, Some(json!({"status": "open", "name": "again"}))), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["session_id"].as_str()), (Some("SINGLE_SESSION_CONFLICT"), second["id"].as_str()), "{e}");
    let unchanged = ok(call(&s, "GET", &first_path, &st.key, None), 200);
    assert_eq!((&unchanged["status"], &unchanged["name"]), (&json!("closed"), &Value::Null), "nothing written");
    ok(call(&s, "PATCH", &first_path, &st.key, Some(json!({"name": "renamed while closed"}))), 200);
    // An open session idle past its TTL no longer holds it (it is marked expired).
    let idle = ok(session(&s, &st, &single, json!({"actor_id": dave, "inactivity_ttl_seconds": 1})), 201);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    ok(session(&s, &st, &single, json!({"actor_id": dave})), 201);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/sessions/{}", id(&idle)), &st.key, None), 200)["status"], "expired");
    // Twelve racing creates for one actor: exactly one wins.
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..12).map(|_| scope.spawn(|| session(&s, &st, &single, json!({"actor_id": carol})).status)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|&&c| c == 201).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|&c| c == 201 || c == 409), "{statuses:?}");
    let open = ok(call(&s, "GET", &format!("/api/v1/sessions?agent_id={single}&actor_id={carol}&status=open"), &st.key, None), 200);
    assert_eq!(open["total"], 1, "{open}");
}

/// The version a session's turn was served by: v2 answers "two", v1 "one".
fn turn(s: &TestServer, key: &str, session: &str, extra: Value) -> u64 {
    let mut body = json!({"message": "Which version?"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = ok(call(s, "POST", &format!("/api/v1/sessions/{session}/messages"), key, Some(body)), 201);
    match r["message"]["content"].as_str() {
        Some("two") => 2,
        Some("one") => 1,
        other => panic!("no reply: {other:?} in {r}"),
    }
}

#[test]
fn a_canary_keeps_each_actor_on_one_version_across_turns_and_sessions() {
    let up = Scripted::start();
    up.on("You are v2.", text("two"));
    up.otherwise(text("one"));
    let s = server();
    let st = setup(&s, &up, "actors-canary@example.com");
    let a = agent(&s, &st, json!({}));
    ok(call(&s, "PATCH", &format!("/api/v1/agents/{a}"), &st.key, Some(json!({"instructions": "You are v2."}))), 200);
    let release = json!({"stable_version": 1, "canary_version": 2, "canary_percent": 50});
    ok(call(&s, "PUT", &format!("/api/v1/agents/{a}/release"), &st.key, Some(release)), 200);
    let mut version_of: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..40 {
        let who = id(&actor(&s, &st.key, json!({"name": format!("User {i}")})));
        let mut seen = BTreeSet::new();
        // Two sessions, two turns each.
        for _ in 0..2 {
            let sess = id(&ok(session(&s, &st, &a, json!({"actor_id": who, "auto_generate": true})), 201));
            seen.insert(turn(&s, &st.key, &sess, json!({})));
            seen.insert(turn(&s, &st.key, &sess, json!({})));
        }
        assert_eq!(seen.len(), 1, "actor {who} was served {seen:?}");
        version_of.insert(who, seen.pop_first().unwrap());
    }
    let canary = version_of.values().filter(|&&v| v == 2).count();
    assert!((10..=30).contains(&canary), "{canary} of 40 actors in a 50% canary");
    // A request's tool_context cannot move an actor to another's side.
    let (one, two) = (version_of.iter().find(|(_, &v)| v == 1).unwrap().0, version_of.iter().find(|(_, &v)| v == 2).unwrap().0);
    let sess = id(&ok(session(&s, &st, &a, json!({"actor_id": one, "auto_generate": true})), 201));
    assert_eq!(turn(&s, &st.key, &sess, json!({"tool_context": {"actorId": two}})), 1);
    // Sessions without an actor: each keeps its own side on every turn.
    let mut sides = BTreeSet::new();
    for _ in 0..16 {
        let sess = id(&ok(session(&s, &st, &a, json!({"auto_generate": true})), 201));
        let v = turn(&s, &st.key, &sess, json!({}));
        assert_eq!(turn(&s, &st.key, &sess, json!({})), v, "session {sess} flipped");
        sides.insert(v);
    }
    assert_eq!(sides.len(), 2, "16 sessions all on one side");
}
