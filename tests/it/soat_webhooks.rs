//! Webhooks (`/api/v1/webhooks`, `/api/v1/webhook-deliveries`): CRUD, the secret, and generations' events delivered signed to a loopback receiver.
//!
//! Webhooks over HTTP: made, read, changed, their secret read and rotated, deleted;
//! another account's are 404. A background generation against the scripted upstream
//! raises `agents.generation.started` and `.completed`, each delivered to a loopback
//! receiver with SOAT's signature headers, checked here with an HMAC-SHA256 written
//! over `sha2` (not the server's `ring`); the receiver's documented check refuses a
//! forged body and a stale timestamp. A receiver answering 500 first gets the
//! delivery retried to `success`; a redelivery sends the same event (its id) again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::scripted_llm::{text, Scripted};
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, server, settle, setup};

/// One POST as the receiver got it: headers (names lower case) and the raw body.
#[derive(Clone, Debug)]
pub(super) struct Got {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A loopback receiver: records every request, answers the next status of `script`,
/// then 200s.
#[derive(Clone)]
pub(super) struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Got>>>,
}

impl Receiver {
    pub(super) fn start(script: &[u16]) -> Receiver {
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.to_vec()));
        let (g, sc) = (got.clone(), script.clone());
        let addr = super::loopback::listen(move |stream| serve(stream, &g, &sc));
        Receiver { addr, got }
    }

    pub(super) fn url(&self) -> String {
        format!("http://{}/webhook", self.addr)
    }

    pub(super) fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

/// In a receiver's script: answer 200 after 600 ms.
const SLOW: u16 = 1;

fn serve(stream: TcpStream, got: &Mutex<Vec<Got>>, script: &Mutex<Vec<u16>>) {
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        got.lock().unwrap().push(Got { headers, body });
        let status = {
            let mut s = script.lock().unwrap();
            if s.is_empty() {
                200
            } else {
                s.remove(0)
            }
        };
        // SLOW: a receiver that takes its time, then accepts.
        let status = if status == SLOW {
            std::thread::sleep(Duration::from_millis(600));
            200
        } else {
            status
        };
        let answer = if status == 200 { "thanks" } else { "try later" };
        let head = format!("HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{answer}", answer.len());
        if w.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`, independent of the server's implementation.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner = Sha256::new().chain_update(k.map(|b| b ^ 0x36)).chain_update(msg).finalize();
    let outer = Sha256::new().chain_update(k.map(|b| b ^ 0x5c)).chain_update(inner).finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, PartialEq)]
enum Check {
    Valid,
    Malformed,
    Stale,
    Forged,
}

/// The receiver's check docs/agents.md (Webhooks) describes: `t` and `v1` from the V2 header,
/// `t` within 5 minutes of `now`, `v1` = hex HMAC-SHA256(secret, "<t>.<raw body>").
fn receiver_check(secret: &str, body: &[u8], header: &str, now: u64) -> Check {
    let part = |name: &str| header.split(',').find_map(|p| p.trim().strip_prefix(name).and_then(|v| v.strip_prefix('=')));
    let (Some(t), Some(v1)) = (part("t"), part("v1")) else { return Check::Malformed };
    let Ok(at) = t.parse::<u64>() else { return Check::Malformed };
    if at.abs_diff(now) > 300 {
        return Check::Stale;
    }
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    if hmac_sha256(secret.as_bytes(), &signed) == v1 {
        Check::Valid
    } else {
        Check::Forged
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

fn webhook(s: &super::server::TestServer, key: &str, url: &str, events: Value) -> Value {
    ok(call(s, "POST", "/api/v1/webhooks", key, Some(json!({"name": "session-events", "url": url, "events": events}))), 201)
}

/// Polls the webhook's deliveries until `done` holds of them.
fn deliveries_until(s: &super::server::TestServer, key: &str, webhook: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = ok(call(s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={webhook}"), key, None), 200);
        let data = list["data"].as_array().unwrap().clone();
        if done(&data) {
            return data;
        }
        assert!(Instant::now() < deadline, "deliveries never {what}: {list}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn webhooks_are_made_read_changed_rotated_and_deleted_by_their_account_only() {
    let s = server();
    let (_, key) = s.signup("webhooks-crud@example.com");
    let (_, other) = s.signup("webhooks-crud-other@example.com");
    let made = webhook(&s, &key, "http://127.0.0.1:9/hook", json!(["sessions.generation.*"]));
    let id = made["id"].as_str().unwrap();
    assert!(id.starts_with("wh_"), "{made}");
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_") && secret.len() > 30, "{made}");
    assert_eq!(made["active"], true);
    assert_eq!(made["events"], json!(["sessions.generation.*"]));
    assert!(made["project_id"].as_str().unwrap().starts_with("proj_"));

    let got = ok(call(&s, "GET", &format!("/api/v1/webhooks/{id}"), &key, None), 200);
    assert!(got.get("secret").is_none(), "a read never shows the secret: {got}");
    assert_eq!(got["url"], "http://127.0.0.1:9/hook");
    let listed = ok(call(&s, "GET", "/api/v1/webhooks", &key, None), 200);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["data"][0]["id"], id);
    assert!(listed["data"][0].get("secret").is_none());

    let changed = ok(
        call(&s, "PUT", &format!("/api/v1/webhooks/{id}"), &key, Some(json!({"name": "all", "events": ["*"], "active": false, "description": "d"}))),
        200,
    );
    assert_eq!((changed["name"].as_str(), changed["active"].as_bool(), changed["description"].as_str()), (Some("all"), Some(false), Some("d")));
    assert_eq!(changed["events"], json!(["*"]));
    assert_eq!(changed["url"], "http://127.0.0.1:9/hook", "what the PUT does not name stays");

    // Bad input changes nothing.
    for (body, field) in [
        (json!({"url": "ftp://127.0.0.1/x"}), "url"),
        (json!({"url": "not a url"}), "url"),
        (json!({"events": [""]}), "events[0]"),
        (json!({"colour": "blue"}), "colour"),
    ] {
        let e = refused(call(&s, "PUT", &format!("/api/v1/webhooks/{id}"), &key, Some(body.clone())), 400);
        assert_eq!(e["code"], "VALIDATION_FAILED", "{body}: {e}");
        assert_eq!(e["meta"]["field"], field, "{body}: {e}");
    }
    let e =
        refused(call(&s, "POST", "/api/v1/webhooks", &key, Some(json!({"name": "x", "url": "http://169.254.169.254/latest", "events": ["*"]}))), 403);
    assert_eq!((e["code"].as_str(), e["meta"]["field"].as_str()), (Some("EGRESS_REFUSED"), Some("url")), "{e}");
    assert_eq!(ok(call(&s, "GET", "/api/v1/webhooks", &key, None), 200)["total"], 1, "nothing was stored");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/webhooks/{id}"), &key, None), 200)["name"], "all");

    let read = ok(call(&s, "GET", &format!("/api/v1/webhooks/{id}/secret"), &key, None), 200);
    assert_eq!(read, json!({"secret": secret}));
    let rotated = ok(call(&s, "POST", &format!("/api/v1/webhooks/{id}/rotate-secret"), &key, None), 200);
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret, "{rotated}");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/webhooks/{id}/secret"), &key, None), 200)["secret"], new_secret);

    // Another account: every row 404, and its own list is empty.
    for (method, path) in [
        ("GET", format!("/api/v1/webhooks/{id}")),
        ("PUT", format!("/api/v1/webhooks/{id}")),
        ("DELETE", format!("/api/v1/webhooks/{id}")),
        ("GET", format!("/api/v1/webhooks/{id}/secret")),
        ("POST", format!("/api/v1/webhooks/{id}/rotate-secret")),
        ("GET", format!("/api/v1/webhook-deliveries?webhook_id={id}")),
    ] {
        let body = (method == "PUT").then(|| json!({"name": "mine"}));
        let e = refused(call(&s, method, &path, &other, body), 404);
        assert_eq!(e["code"], "RESOURCE_NOT_FOUND", "{method} {path}: {e}");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/webhooks", &other, None), 200)["total"], 0);
    assert_eq!(
        ok(call(&s, "GET", &format!("/api/v1/webhooks/{id}/secret"), &key, None), 200)["secret"],
        new_secret,
        "the other account's rotate did nothing"
    );

    let e = refused(call(&s, "GET", "/api/v1/webhook-deliveries", &key, None), 400);
    assert_eq!(e["meta"]["field"], "webhook_id", "{e}");
    assert_eq!(call(&s, "DELETE", &format!("/api/v1/webhooks/{id}"), &key, None).status, 204);
    refused(call(&s, "GET", &format!("/api/v1/webhooks/{id}"), &key, None), 404);
    refused(call(&s, "GET", &format!("/api/v1/webhooks/{id}/secret"), &key, None), 404);

    // A project holding a webhook refuses to go without force, then takes it along.
    let p = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "hooks"}))), 201)["id"].as_str().unwrap().to_owned();
    let body = json!({"project_id": p, "name": "h", "url": "http://127.0.0.1:9/hook", "events": ["*"]});
    let in_p = ok(call(&s, "POST", "/api/v1/webhooks", &key, Some(body)), 201)["id"].as_str().unwrap().to_owned();
    let e = refused(call(&s, "DELETE", &format!("/api/v1/projects/{p}"), &key, None), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["webhook_count"].as_u64()), (Some("PROJECT_HAS_DEPENDENTS"), Some(1)), "{e}");
    ok(call(&s, "DELETE", &format!("/api/v1/projects/{p}?force=true"), &key, None), 204);
    refused(call(&s, "GET", &format!("/api/v1/webhooks/{in_p}"), &key, None), 404);
}

#[test]
fn a_background_generation_is_delivered_signed_and_a_forged_or_stale_signature_is_refused() {
    let s = server();
    let up = Scripted::start();
    up.otherwise(text("Forty-two."));
    let st = setup(&s, &up, "webhooks-deliver@example.com");
    let receiver = Receiver::start(&[]);
    let hook = webhook(&s, &st.key, &receiver.url(), json!(["agents.generation.*"]));
    let (wid, secret) = (hook["id"].as_str().unwrap().to_owned(), hook["secret"].as_str().unwrap().to_owned());
    // A second webhook that takes nothing a generation raises.
    let quiet = webhook(&s, &st.key, &receiver.url(), json!(["sessions.deleted"]));

    let a = agent(&s, &st, json!({}));
    let accepted = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate"),
            &st.key,
            Some(json!({"messages": [{"role": "user", "content": "What is the answer?"}], "tool_context": {"token": "tc-private-value"}})),
        ),
        202,
    );
    let gid = accepted["generation_id"].as_str().unwrap().to_owned();
    assert_eq!(settle(&s, &st.key, &gid)["status"], "completed");

    let data = deliveries_until(&s, &st.key, &wid, "both succeeded", |d| d.len() == 2 && d.iter().all(|x| x["status"] == "success"));
    let mut types: Vec<&str> = data.iter().map(|d| d["event_type"].as_str().unwrap()).collect();
    types.sort();
    assert_eq!(types, ["agents.generation.completed", "agents.generation.started"]);
    for d in &data {
        assert_eq!((d["status_code"].as_u64(), d["attempts"].as_u64(), d["webhook_id"].as_str()), (Some(200), Some(1), Some(wid.as_str())), "{d}");
        assert_eq!(d["response_body"], "thanks");
        assert!(d["next_attempt_at"].is_null() && d["last_attempt_at"].is_string(), "{d}");
        assert_eq!(d["payload"]["resource_id"], gid.as_str());
        assert_eq!(ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries/{}", d["id"].as_str().unwrap()), &st.key, None), 200), *d);
    }
    assert_eq!(
        ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={}", quiet["id"].as_str().unwrap()), &st.key, None), 200)["total"],
        0
    );

    let got = receiver.got();
    assert_eq!(got.len(), 2, "one POST per event, none for the quiet webhook");
    let now = unix_now();
    for g in &got {
        let body = g.json();
        assert_eq!(g.header("content-type"), "application/json");
        assert_eq!(g.header("x-soat-event"), body["event"].as_str().unwrap());
        assert_eq!(g.header("x-soat-event-id"), body["id"].as_str().unwrap());
        assert!(body["id"].as_str().unwrap().starts_with("evt_"));
        assert!(data.iter().any(|d| d["id"] == g.header("x-soat-delivery") && d["event_id"] == body["id"]), "{body}");
        assert_eq!((body["project_id"].as_str(), body["resource_type"].as_str()), (hook["project_id"].as_str(), Some("generation")));
        assert_eq!(body["data"]["id"], gid.as_str());
        assert!(body["timestamp"].is_string());
        if body["event"] == "agents.generation.completed" {
            assert_eq!(body["data"]["status"], "completed");
            assert_eq!(body["data"]["output"]["content"], "Forty-two.");
        }
        let raw = String::from_utf8_lossy(&g.body);
        assert!(!raw.contains("tc-private-value") && !raw.contains(&secret), "no secret value in a payload: {raw}");

        // SOAT's V2 header, checked as a receiver does, with our own HMAC.
        let v2 = g.header("x-soat-signature-v2");
        assert_eq!(receiver_check(&secret, &g.body, v2, now), Check::Valid, "{v2}");
        // The legacy header: sha256=<hex HMAC over the bare body>.
        assert_eq!(g.header("x-soat-signature"), format!("sha256={}", hmac_sha256(secret.as_bytes(), &g.body)));
        // Forged: another body, another secret, a moved timestamp. Stale: ten minutes on.
        let mut forged = g.body.clone();
        forged.extend_from_slice(b" ");
        assert_eq!(receiver_check(&secret, &forged, v2, now), Check::Forged);
        assert_eq!(receiver_check("whsec_guessed", &g.body, v2, now), Check::Forged);
        let t: u64 = v2.split(',').next().unwrap().strip_prefix("t=").unwrap().parse().unwrap();
        assert_eq!(receiver_check(&secret, &g.body, &v2.replace(&format!("t={t}"), &format!("t={}", t + 1)), now), Check::Forged);
        assert_eq!(receiver_check(&secret, &g.body, v2, now + 600), Check::Stale);
        assert_eq!(receiver_check(&secret, &g.body, "v1=00", now), Check::Malformed);
    }

    // After a rotation, the next event is signed with the new secret only.
    let rotated = ok(call(&s, "POST", &format!("/api/v1/webhooks/{wid}/rotate-secret"), &st.key, None), 200)["secret"].as_str().unwrap().to_owned();
    let g2 = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate?wait=true"),
            &st.key,
            Some(json!({"messages": [{"role": "user", "content": "Again?"}]})),
        ),
        200,
    );
    deliveries_until(&s, &st.key, &wid, "four succeeded", |d| d.len() == 4 && d.iter().all(|x| x["status"] == "success"));
    let later: Vec<Got> = receiver.got().into_iter().filter(|g| g.json()["resource_id"] == g2["id"]).collect();
    assert_eq!(later.len(), 2);
    for g in &later {
        assert_eq!(receiver_check(&rotated, &g.body, g.header("x-soat-signature-v2"), unix_now()), Check::Valid);
        assert_eq!(receiver_check(&secret, &g.body, g.header("x-soat-signature-v2"), unix_now()), Check::Forged);
    }
}

#[test]
fn a_receiver_answering_500_gets_the_delivery_retried_to_success_and_a_redelivery_sends_the_event_again() {
    let s = server();
    let up = Scripted::start();
    up.otherwise(text("Done."));
    let st = setup(&s, &up, "webhooks-retry@example.com");
    let receiver = Receiver::start(&[500]);
    let hook = webhook(&s, &st.key, &receiver.url(), json!(["agents.generation.completed"]));
    let wid = hook["id"].as_str().unwrap().to_owned();
    let a = agent(&s, &st, json!({}));
    ok(
        call(&s, "POST", &format!("/api/v1/agents/{a}/generate?wait=true"), &st.key, Some(json!({"messages": [{"role": "user", "content": "Hi"}]}))),
        200,
    );

    let first = deliveries_until(&s, &st.key, &wid, "succeeded", |d| d.len() == 1 && d[0]["status"] == "success");
    let d = &first[0];
    assert_eq!((d["attempts"].as_u64(), d["status_code"].as_u64()), (Some(2), Some(200)), "a 500, then a retry: {d}");
    let got = receiver.got();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].header("x-soat-event-id"), got[1].header("x-soat-event-id"), "a retry is the same event");
    assert_eq!(got[0].body, got[1].body, "and the same body");
    assert_ne!(got[0].header("x-soat-signature-v2"), "", "each attempt is signed");

    let did = d["id"].as_str().unwrap();
    let again = ok(call(&s, "POST", &format!("/api/v1/webhook-deliveries/{did}/redeliver"), &st.key, None), 202);
    assert_ne!(again["id"], d["id"], "a new delivery, the original kept");
    assert_eq!((again["event_id"].as_str(), again["status"].as_str()), (d["event_id"].as_str(), Some("pending")));
    let all = deliveries_until(&s, &st.key, &wid, "both succeeded", |d| d.len() == 2 && d.iter().all(|x| x["status"] == "success"));
    assert!(all.iter().any(|x| x["id"] == d["id"] && x["attempts"] == 2), "the original is untouched: {all:?}");
    let got = receiver.got();
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].header("x-soat-event-id"), d["event_id"].as_str().unwrap(), "the receiver can dedupe it");
    assert_eq!(got[2].header("x-soat-delivery"), again["id"].as_str().unwrap());

    // Another account sees none of it.
    let (_, other) = s.signup("webhooks-retry-other@example.com");
    refused(call(&s, "GET", &format!("/api/v1/webhook-deliveries/{did}"), &other, None), 404);
    refused(call(&s, "POST", &format!("/api/v1/webhook-deliveries/{did}/redeliver"), &other, None), 404);
    assert_eq!(receiver.got().len(), 3);
}

/// Issue 40: two nodes share the records (PostgreSQL) and so the webhook outbox. Each
/// event reaches the receiver once, whichever node raised it; when the node sending
/// dies, the other sends what is owed from then on.
#[test]
fn nodes_sharing_the_outbox_deliver_each_event_once_and_another_takes_over_the_sending() {
    if !quarry_test_support::store::have_postgres() {
        return;
    }
    // Nodes sharing records share the key that seals their secrets (the webhook's).
    let cluster = quarry_test_support::store::Cluster::new(false);
    let node = |name: &str| super::server::TestServer::with(cluster.node(name, super::plans::LAB));
    let up = Scripted::start();
    up.otherwise(text("Done."));
    let mut a = node("a");
    let b = node("b");
    let st = setup(&a, &up, "cluster-hooks@example.com");
    // A slow receiver: each delivery is in flight while both nodes look at the outbox.
    let receiver = Receiver::start(&[SLOW; 8]);
    let hook = webhook(&a, &st.key, &receiver.url(), json!(["agents.generation.completed"]));
    let wid = hook["id"].as_str().unwrap().to_owned();
    let agent_id = agent(&a, &st, json!({}));
    let run = |s: &super::server::TestServer| {
        let g = ok(
            call(
                s,
                "POST",
                &format!("/api/v1/agents/{agent_id}/generate?wait=true"),
                &st.key,
                Some(json!({"messages": [{"role": "user", "content": "Go."}]})),
            ),
            200,
        );
        assert_eq!(g["status"], "completed", "{g}");
    };
    for i in 0..6 {
        run(if i % 2 == 0 { &a } else { &b });
    }
    deliveries_until(&b, &st.key, &wid, "all six succeeded", |d| d.len() == 6 && d.iter().all(|x| x["status"] == "success"));
    std::thread::sleep(Duration::from_millis(1500)); // any second sender would have sent by now
    let ids = |got: &[Got]| got.iter().map(|g| g.json()["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let mut sent = ids(&receiver.got());
    sent.sort();
    let before = sent.len();
    sent.dedup();
    assert_eq!((before, sent.len()), (6, 6), "each event once: {sent:?}");

    // Whichever node was sending, a dies; b sends what b raises next.
    a.kill9();
    for _ in 0..2 {
        run(&b);
    }
    deliveries_until(&b, &st.key, &wid, "the two new ones succeeded", |d| d.len() == 8 && d.iter().all(|x| x["status"] == "success"));
    let all = ids(&receiver.got());
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 8, "{all:?}");
}
