//! The plans' rate limits: one bucket per key across every shard, 429 with `retry-after`, and recovery.

use std::time::Duration;

use super::server::TestServer;

use super::plans::TINY;

#[test]
fn the_rate_is_one_bucket_across_all_shards_then_recovers() {
    let s = TestServer::with_config(TINY);
    let (_, key) = s.signup("a@x.org");
    let auth = format!("Bearer {key}");
    let mut conns = s.conn_per_shard();
    let mut remaining = Vec::new();
    for i in 0..3 {
        let r = conns[i % 2].send("GET", "/v1/account", &[("authorization", &auth)], None);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("x-ratelimit-limit"), Some("3"));
        remaining.push(r.header("x-ratelimit-remaining").unwrap().to_owned());
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    // The burst is spent whichever shard is asked.
    for c in conns.iter_mut() {
        let r = c.send("GET", "/v1/account", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"));
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some("0"));
        assert_eq!(r.header("x-ratelimit-reset"), Some("1"));
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("Tiny"));
    }
    // 600 per minute: a token every 100 ms.
    std::thread::sleep(Duration::from_millis(1100));
    let r = conns[1].send("GET", "/v1/account", &[("authorization", &auth)], None);
    assert_eq!(r.status, 200);
}

/// Issue 1/9: evaluate costs 5; refused with 3 tokens left, the response said
/// `x-ratelimit-reset: 0` beside `retry-after: 3`.
#[test]
fn a_refusal_for_cost_has_a_reset_no_sooner_than_retry_after() {
    let s = TestServer::with_config(&TINY.replace("rate_per_minute = 600\nburst = 3", "rate_per_minute = 60\nburst = 6"));
    let (_, key) = s.signup("a@x.org");
    for _ in 0..3 {
        assert_eq!(s.get("/v1/account", Some(&key)).status, 200);
    }
    let r = s.request("POST", "/v1/collections/col_none/evaluate", Some(&key), Some("{}"));
    assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"), "{}", r.text());
    let header = |name: &str| r.header(name).unwrap_or_else(|| panic!("no {name}")).parse::<u64>().unwrap();
    assert!(header("x-ratelimit-remaining") >= 3, "tokens are left, just not five");
    let (retry, reset) = (header("retry-after"), header("x-ratelimit-reset"));
    assert!(retry >= 1 && reset >= retry, "reset {reset} is sooner than retry-after {retry}");
    // And the bucket does serve it once the reset has passed.
    std::thread::sleep(Duration::from_secs(reset));
    let r = s.request("POST", "/v1/collections/col_none/evaluate", Some(&key), Some("{}"));
    assert_ne!(r.status, 429, "{}", r.text());
}

/// Regression (issue 2/9, finding 7): a 10 MiB agent `instructions` was accepted (and
/// each PATCH kept another full copy as a version), and a document with an 8 MiB title
/// and 8 MiB metadata counted as one stored character and took ten times as long to
/// add. Now every free-text field beside a document's text has its own bound, and so do
/// an agent's instructions and configuration, a tool's definition and a memory entry:
/// each refused in its surface's shape with what fits, and nothing is made.
#[test]
fn free_text_beside_the_body_is_bounded_and_a_refusal_makes_nothing() {
    use serde_json::json;
    let s = TestServer::with_config(super::plans::RAISED);
    let (_, key) = s.signup("caps@example.com");
    let post = |path: &str, body: serde_json::Value| s.request("POST", path, Some(&key), Some(&body.to_string()));
    let big = "x".repeat(8 << 20);
    let col = super::collections::create_collection(&s, &key, "caps");
    let docs = format!("/v1/collections/{col}/documents");
    for (doc, field) in [
        (json!({"title": big, "text": "Some text."}), "title"),
        (json!({"text": "Some text.", "metadata": {"blob": big}}), "metadata"),
        (json!({"author": "y".repeat(2_001), "text": "Some text."}), "author"),
    ] {
        let started = std::time::Instant::now();
        let r = post(&docs, doc);
        assert_eq!((r.status, r.code()), (400, "invalid_document".to_owned()), "{field}: {}", &r.text()[..r.text().len().min(300)]);
        assert!(r.json()["error"]["message"].as_str().unwrap().contains(field), "{}", r.text());
        assert!(started.elapsed() < Duration::from_secs(10), "{field}: refused before it is chunked: {:?}", started.elapsed());
    }
    // The plugin checks every document of a batch before it adds any.
    let r = post("/upsert", json!({"documents": [{"id": "ok", "text": "Fine."}, {"id": "huge", "text": "Fine.", "metadata": {"author": big}}]}));
    assert!(r.status >= 400, "{}", &r.text()[..r.text().len().min(300)]);
    assert_eq!(s.get(&docs, Some(&key)).json()["documents"].as_array().unwrap().len(), 0, "nothing was added");

    let soat = |path: &str, body: serde_json::Value| {
        let r = post(path, body);
        assert_eq!(r.status, 400, "{path}: {}", &r.text()[..r.text().len().min(300)]);
        assert_eq!(r.json()["error"]["code"], "VALIDATION_FAILED", "{path}");
    };
    let aip = {
        let r = post("/api/v1/ai-providers", json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    soat("/api/v1/agents", json!({"ai_provider_id": aip, "name": "a", "instructions": "i".repeat(10 << 20)}));
    soat("/api/v1/agents", json!({"ai_provider_id": aip, "name": "a", "instructions": "i".repeat(100_001)}));
    soat("/api/v1/tools", json!({"name": "t", "type": "client", "description": "d".repeat(300 * 1024)}));
    let memory = {
        let r = post("/api/v1/memories", json!({"name": "notes"}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    soat("/api/v1/memory-entries", json!({"memory_id": memory, "content": "c".repeat(20_001)}));
    for (path, field) in [("/api/v1/agents", "data"), ("/api/v1/tools", "data")] {
        let listed = s.get(path, Some(&key)).json();
        assert_eq!(listed[field].as_array().map(Vec::len), Some(0), "{path}: {listed}");
    }
    // A PATCH is held to the same bound, and the agent keeps what it had.
    let agent = {
        let r = post("/api/v1/agents", json!({"ai_provider_id": aip, "name": "a", "instructions": "Be brief."}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let r = s.request("PATCH", &format!("/api/v1/agents/{agent}"), Some(&key), Some(&json!({"instructions": "i".repeat(100_001)}).to_string()));
    assert_eq!(r.status, 400, "{}", &r.text()[..r.text().len().min(300)]);
    assert_eq!(s.get(&format!("/api/v1/agents/{agent}"), Some(&key)).json()["instructions"], "Be brief.");
}

/// Regression (issue 2/9, finding 8): each key had a bucket of its own, so an account
/// got its plan's rate once per key (an `al_` and an `sk_` key: twice). Now the account
/// has one bucket that all its keys spend from.
#[test]
fn every_key_of_an_account_spends_from_one_bucket() {
    let s = TestServer::with_config("[plans.scribe]\nrate_per_minute = 60\nburst = 6\n");
    let (_, key) = s.signup("one-bucket@example.com");
    // The key-making calls spend from the bucket too: two for two keys.
    let make = |body: &str| {
        let r = s.request("POST", "/api/v1/api-keys", Some(&key), Some(body));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["key"].as_str().unwrap().to_owned()
    };
    let sk = make(r#"{"name": "ci"}"#);
    let second = {
        let r = s.request("POST", "/v1/keys", Some(&key), Some(r#"{"name": "second"}"#));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["api_key"].as_str().unwrap().to_owned()
    };
    let mut statuses = Vec::new();
    for k in [&key, &sk, &second, &key, &sk, &second] {
        let path = if k.starts_with("sk_") { "/api/v1/agents" } else { "/v1/account" };
        statuses.push(s.request("GET", path, Some(k), None).status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429], "six tokens for the account, whichever key spends them");
}

/// What the account keeps, as `GET /v1/account` says it.
fn stored(s: &TestServer, key: &str) -> u64 {
    let r = s.get("/v1/account", Some(key));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["usage"]["stored_chars"].as_u64().unwrap()
}

/// Regression (issue 34, finding 7): five PATCHes of an agent grew the records from 0.1
/// to 270 MB (each version a full copy) with `stored_chars` unchanged, and a document
/// with an 8 MiB title and 8 MiB metadata counted as one stored character. Now the
/// plan's stored characters count what the account keeps: a document's text, title,
/// labels and metadata, and every record with every version it keeps, charged as each
/// is written, given back on delete, one allowance over both (429 `storage_exceeded`
/// past it), and the same after a `kill -9` and a restart.
#[test]
fn stored_chars_count_labels_metadata_and_every_agent_version() {
    use serde_json::json;
    let plan = "[auth]\ndefault_plan = \"small\"\n[plans.small]\nname = \"Small\"\nprice = 0\nstored_chars = 500000\nsearch = 100\nextract = 1\nresearch = 1\nrate_per_minute = 60000\nburst = 1000\n";
    let mut s = TestServer::with_config(plan);
    let (_, key) = s.signup("storage@example.com");
    let post = |s: &TestServer, path: &str, body: serde_json::Value| s.request("POST", path, Some(&key), Some(&body.to_string()));

    let col = super::collections::create_collection(&s, &key, "kept");
    let before = stored(&s, &key);
    let doc = json!({"title": "T".repeat(2_000), "text": "a", "metadata": {"blob": "m".repeat(60_000)}});
    let r = post(&s, &format!("/v1/collections/{col}/documents"), doc);
    assert_eq!(r.status, 201, "{}", r.text());
    let with_doc = stored(&s, &key);
    assert!(with_doc - before >= 62_001, "one character of text, 2,000 of title, 60,000 of metadata: counted {}", with_doc - before);

    let aip = {
        let r =
            post(&s, "/api/v1/ai-providers", json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let agent = {
        let r = post(&s, "/api/v1/agents", json!({"ai_provider_id": aip, "name": "a", "instructions": "a".repeat(90_000)}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let mut last = stored(&s, &key);
    assert!(last - with_doc >= 180_000, "the agent and its first version: {}", last - with_doc);
    // Each PATCH keeps one more version: each is charged, until the plan is full.
    let mut refused = None;
    for (i, c) in ["b", "c", "d", "e"].iter().enumerate() {
        let r = s.request("PATCH", &format!("/api/v1/agents/{agent}"), Some(&key), Some(&json!({"instructions": c.repeat(90_000)}).to_string()));
        if r.status != 200 {
            refused = Some((i, r));
            break;
        }
        let now = stored(&s, &key);
        assert!(now - last >= 90_000, "version {} counted: {}", i + 2, now - last);
        last = now;
    }
    let (i, r) = refused.expect("a PATCH past 500,000 stored characters is refused");
    assert_eq!((i, r.status), (2, 429), "{}", r.text());
    assert_eq!(r.json()["error"]["meta"]["quarry_code"], "storage_exceeded", "{}", r.text());
    let got = s.get(&format!("/api/v1/agents/{agent}"), Some(&key)).json();
    assert_eq!(got["version"], 3, "the refused PATCH changed nothing: {}", &got.to_string()[..200]);
    assert_eq!(stored(&s, &key), last, "and counted nothing");
    // Documents and records share the allowance.
    let r = post(&s, &format!("/v1/collections/{col}/documents"), json!({"text": "z".repeat(100_000)}));
    assert_eq!((r.status, r.code().as_str()), (429, "storage_exceeded"), "{}", r.text());

    // The count holds across a crash: the index and the records' own count are recounted.
    s.kill9();
    s.restart();
    assert_eq!(stored(&s, &key), last, "the same after kill -9 and a restart");
    let r = s.request("DELETE", &format!("/api/v1/agents/{agent}"), Some(&key), None);
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    let after = stored(&s, &key);
    assert!(last - after >= 4 * 90_000, "the agent and its three versions given back: {}", last - after);
    s.kill9();
    s.restart();
    assert_eq!(stored(&s, &key), after);
}

/// Regression (issue 34, finding 7): past the fields bounded first (instructions,
/// configuration, definitions, memory entries), every other free-text or free-form
/// field of an `/api/v1` body was unbounded: a memory store's description, a secret's
/// value, an AI provider's config, a memory entry's metadata, tags, a model route's
/// targets. Now every body is held to one set of bounds (a text 100,000 characters, a
/// key 256, an array 1,000 items, a free-form object 64 KiB of JSON): past one is 400
/// `VALIDATION_FAILED` naming the field, and nothing is made.
#[test]
fn every_free_text_and_free_form_field_of_a_soat_body_is_bounded() {
    use serde_json::json;
    let s = TestServer::with_config(super::plans::RAISED);
    let (_, key) = s.signup("bounds@example.com");
    let post = |path: &str, body: serde_json::Value| s.request("POST", path, Some(&key), Some(&body.to_string()));
    let text = "t".repeat(100_001);
    let blob = json!({"blob": "b".repeat(64 * 1024)});
    let memory = {
        let r = post("/api/v1/memories", json!({"name": "notes"}));
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().unwrap().to_owned()
    };
    for (path, body, field) in [
        ("/api/v1/memories", json!({"name": "m", "description": text}), "description"),
        ("/api/v1/memories", json!({"name": "m", "tags": vec!["x".repeat(1_000); 100]}), "tags"),
        ("/api/v1/secrets", json!({"name": "s", "value": text}), "value"),
        (
            "/api/v1/ai-providers",
            json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m", "config": blob}),
            "config",
        ),
        ("/api/v1/memory-entries", json!({"memory_id": memory, "content": "c", "metadata": blob}), "metadata"),
        ("/api/v1/model-routes", json!({"name": "r", "targets": vec![json!({"ai_provider_id": "aip_x", "model": "m"}); 1_001]}), "targets"),
        ("/api/v1/projects", json!({"name": "p", "tags": {"k".repeat(257): "v"}}), "tags"),
    ] {
        let r = post(path, body);
        assert_eq!(
            (r.status, r.json()["error"]["code"].as_str()),
            (400, Some("VALIDATION_FAILED")),
            "{path} {field}: {}",
            &r.text()[..r.text().len().min(300)]
        );
        assert!(r.json()["error"]["message"].as_str().unwrap().starts_with(field), "{path}: {}", &r.text()[..r.text().len().min(300)]);
    }
    let entries = format!("/api/v1/memory-entries?memory_id={memory}");
    for path in ["/api/v1/secrets", "/api/v1/ai-providers", "/api/v1/model-routes", entries.as_str()] {
        assert_eq!(s.get(path, Some(&key)).json()["data"].as_array().map(Vec::len), Some(0), "{path}: nothing was made");
    }
    assert_eq!(s.get("/api/v1/memories", Some(&key)).json()["data"].as_array().map(Vec::len), Some(1), "only the first store");
}
