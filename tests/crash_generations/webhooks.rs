//! Webhook deliveries under `kill -9` (issue 36): 200 background generations, the
//! server killed while they run and their deliveries are owed, restarted on the same
//! data directory. Afterwards every generation answered 202 has reached the receiver
//! as `agents.generation.started` and as the event of its final status, every delivery
//! the server lists has reached it by its event id at least once, and every request it
//! got carries a valid `X-Soat-Signature-V2` (checked with an HMAC over `sha2`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quarry_test_support::scripted_llm::{text, Reply, Scripted};
use quarry_test_support::server::{Options, TestServer};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{send, CONFIG};

const GENERATIONS: usize = 200;

/// What the receiver got: per event id, its type and resource, and the signatures
/// that did not verify.
#[derive(Default)]
struct Got {
    events: BTreeMap<String, (String, String)>,
    posts: usize,
    bad: Vec<String>,
}

fn hmac_sha256(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let inner = Sha256::new().chain_update(k.map(|b| b ^ 0x36)).chain_update(msg).finalize();
    let outer = Sha256::new().chain_update(k.map(|b| b ^ 0x5c)).chain_update(inner).finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

fn receive(stream: TcpStream, secret: &str, got: &Mutex<Got>) {
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = BTreeMap::new();
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
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let sig = headers.get("x-soat-signature-v2").cloned().unwrap_or_default();
        let part = |name: &str| sig.split(',').find_map(|p| p.strip_prefix(name).and_then(|v| v.strip_prefix('='))).unwrap_or("").to_owned();
        let mut signed = format!("{}.", part("t")).into_bytes();
        signed.extend_from_slice(&body);
        let v: Value = serde_json::from_slice(&body).unwrap_or_default();
        {
            let mut g = got.lock().unwrap();
            g.posts += 1;
            if part("v1") != hmac_sha256(secret.as_bytes(), &signed) {
                g.bad.push(sig.clone());
            }
            let id = v["id"].as_str().unwrap_or_default().to_owned();
            g.events.insert(id, (v["event"].as_str().unwrap_or_default().to_owned(), v["resource_id"].as_str().unwrap_or_default().to_owned()));
        }
        if w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

fn get(s: &TestServer, path: &str, key: &str) -> Value {
    let (status, v) = send(s.addr, "GET", path, key, &[], None).unwrap();
    assert_eq!(status, 200, "{path}: {v}");
    v
}

/// Every delivery of the webhook, paging through the list.
fn deliveries(s: &TestServer, key: &str, webhook: &str) -> Vec<Value> {
    let mut all = Vec::new();
    loop {
        let page = get(s, &format!("/api/v1/webhook-deliveries?webhook_id={webhook}&limit=100&offset={}", all.len()), key);
        let data = page["data"].as_array().unwrap().clone();
        all.extend(data.iter().cloned());
        if data.is_empty() || all.len() >= page["total"].as_u64().unwrap() as usize {
            return all;
        }
    }
}

#[test]
fn kill_9_with_webhook_deliveries_owed_delivers_every_event_at_least_once() {
    let started = Instant::now();
    let model = Scripted::start();
    model.models(&["m"]).otherwise(Reply::Slow(Duration::from_millis(15000), Box::new(text("Done."))));
    let log = std::env::temp_dir().join(format!("crash-webhooks-{}.log", std::process::id()));
    let mut s = TestServer::with(Options { config: CONFIG.into(), log: Some(log), ..Options::default() });
    let (_, key) = s.signup("crash-webhooks@example.com");
    let post = |s: &TestServer, path: &str, body: Value| -> Value {
        let (status, v) = send(s.addr, "POST", path, &key, &[], Some(&body)).unwrap();
        assert_eq!(status, 201, "{path}: {v}");
        v
    };
    let got = Arc::new(Mutex::new(Got::default()));
    // The secret is known only once the webhook exists: the receiver reads it from here.
    let secret = Arc::new(Mutex::new(String::new()));
    let (g, sec) = (got.clone(), secret.clone());
    let receiver = quarry_test_support::loopback::listen(move |stream| {
        let secret = sec.lock().unwrap().clone();
        receive(stream, &secret, &g)
    });
    let aip = post(
        &s,
        "/api/v1/ai-providers",
        json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", model.addr), "default_model": "m"}),
    );
    let agent = post(&s, "/api/v1/agents", json!({"ai_provider_id": aip["id"], "instructions": "Answer."}));
    let hook = post(&s, "/api/v1/webhooks", json!({"name": "all", "url": format!("http://{receiver}/hook"), "events": ["agents.generation.*"]}));
    *secret.lock().unwrap() = hook["secret"].as_str().unwrap().to_owned();
    let wid = hook["id"].as_str().unwrap().to_owned();

    // 200 background generations from four clients; the kill lands while they run.
    let accepted: Vec<String> = {
        let ids = Arc::new(Mutex::new(Vec::new()));
        let clients: Vec<_> = (0..4)
            .map(|c| {
                let (addr, key, agent, ids) = (s.addr, key.clone(), agent["id"].as_str().unwrap().to_owned(), ids.clone());
                std::thread::spawn(move || {
                    for i in 0..GENERATIONS / 4 {
                        let body = json!({"messages": [{"role": "user", "content": format!("job {c}-{i}")}]});
                        if let Ok((202, v)) = send(addr, "POST", &format!("/api/v1/agents/{agent}/generate"), &key, &[], Some(&body)) {
                            ids.lock().unwrap().push(v["generation_id"].as_str().unwrap().to_owned());
                        }
                    }
                })
            })
            .collect();
        clients.into_iter().for_each(|c| c.join().unwrap());
        let ids = ids.lock().unwrap().clone();
        ids
    };
    assert_eq!(accepted.len(), GENERATIONS, "every generate was answered 202 before the kill");
    let before = got.lock().unwrap().posts;
    s.kill9();
    s.restart();

    // Every generation settles, and every delivery the server lists is sent.
    let deadline = Instant::now() + Duration::from_secs(120);
    let all = loop {
        let all = deliveries(&s, &key, &wid);
        let owed = all.iter().filter(|d| d["status"] != "success").count();
        if owed == 0 && all.len() >= 2 * GENERATIONS {
            break all;
        }
        assert!(Instant::now() < deadline, "{owed} of {} deliveries still owed ({} received)", all.len(), got.lock().unwrap().posts);
        std::thread::sleep(Duration::from_millis(200));
    };
    let got = got.lock().unwrap();
    eprintln!("{} posts before the kill, {} in all, {} deliveries, {:?}", before, got.posts, all.len(), started.elapsed());
    assert!(before < 3 * GENERATIONS / 2, "the kill landed after most events were sent ({before} posts): it tested little");
    assert!(got.bad.is_empty(), "signatures that do not verify: {:?}", &got.bad[..got.bad.len().min(5)]);
    let listed: BTreeSet<&str> = all.iter().map(|d| d["event_id"].as_str().unwrap()).collect();
    let missing: Vec<&&str> = listed.iter().filter(|id| !got.events.contains_key(**id)).collect();
    assert!(missing.is_empty(), "{} listed events never reached the receiver: {:?}", missing.len(), &missing[..missing.len().min(5)]);
    for id in &accepted {
        let (status, g) = send(s.addr, "GET", &format!("/api/v1/generations/{id}"), &key, &[], None).unwrap();
        assert_eq!(status, 200);
        let last = format!("agents.generation.{}", g["status"].as_str().unwrap());
        for want in ["agents.generation.started", last.as_str()] {
            assert!(got.events.values().any(|(e, r)| e == want && r == id), "{id} ({}): no {want} received", g["status"]);
        }
    }
}
