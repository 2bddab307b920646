//! SOAT memory stores and entries: CRUD, tenancy, search through the engine, durability.
//!
//! Memory stores and entries through `/api/v1` against the real binary (memories.yaml,
//! memoryEntries.yaml): CRUD and errors, tenancy, entries indexed by the engine (found
//! by `POST /api/v1/knowledge/search`, the search a generation runs, and written by the
//! builtin `memories:WriteMemory`), the tags filter, the cosine floor, `limit`, a
//! near-duplicate skipped, and an acknowledged entry still found after `kill -9`.

use serde_json::{json, Value};

use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};

use super::plans::ROOMY;

/// A server with the default embedding model: entries are searched by their vectors.
fn searching() -> TestServer {
    TestServer::with(Options { config: ROOMY.into(), embedder: Some("multilingual-e5-small".into()), ..Options::default() })
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

fn code(v: Value) -> String {
    v["code"].as_str().unwrap().to_owned()
}

fn store(s: &TestServer, key: &str, body: Value) -> String {
    id(&ok(call(s, "POST", "/api/v1/memories", key, Some(body)), 201))
}

fn entry(s: &TestServer, key: &str, body: Value) -> Value {
    ok(call(s, "POST", "/api/v1/memory-entries", key, Some(body)), 201)
}

fn search(s: &TestServer, key: &str, body: Value) -> Vec<Value> {
    ok(call(s, "POST", "/api/v1/knowledge/search", key, Some(body)), 200)["results"].as_array().unwrap().clone()
}

fn contents(results: &[Value]) -> Vec<String> {
    results.iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn memory_stores_are_made_listed_by_tag_updated_and_deleted() {
    let s = TestServer::with_config(ROOMY);
    let (_, key) = s.signup("memory-crud@example.org");
    let m = ok(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"name": "Support", "description": "d", "tags": ["customer-support"]}))), 201);
    let mid = id(&m);
    assert!(mid.starts_with("mem_") && m["project_id"].as_str().unwrap().starts_with("proj_"), "{m}");
    assert_eq!((m["name"].as_str(), m["description"].as_str(), m["tags"][0].as_str()), (Some("Support"), Some("d"), Some("customer-support")));
    let other = store(&s, &key, json!({"name": "Sales", "tags": ["sales"]}));
    store(&s, &key, json!({"name": "Untagged"}));
    assert_eq!(code(refused(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"description": "no name"}))), 400)), "VALIDATION_FAILED");
    assert_eq!(code(refused(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"name": " "}))), 400)), "VALIDATION_FAILED");
    assert_eq!(code(refused(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"name": "x", "colour": 1}))), 400)), "VALIDATION_FAILED");
    let all = ok(call(&s, "GET", "/api/v1/memories", &key, None), 200);
    assert_eq!(all["total"], 3, "{all}");
    let tagged = ok(call(&s, "GET", "/api/v1/memories?tags=customer*&tags=sal%3F%3F", &key, None), 200);
    let names: Vec<&str> = tagged["data"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Support", "Sales"]);
    assert_eq!(ok(call(&s, "GET", "/api/v1/memories?limit=1&offset=1", &key, None), 200)["data"][0]["id"], other.as_str());
    let put = ok(call(&s, "PUT", &format!("/api/v1/memories/{mid}"), &key, Some(json!({"name": "Help", "description": null}))), 200);
    assert_eq!((put["name"].as_str(), put["description"].is_null(), put["tags"][0].as_str()), (Some("Help"), true, Some("customer-support")));
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/memories/{mid}"), &key, None), 200)["name"], "Help");
    // The store's engine collection is its own: not among the account's /v1 collections.
    assert_eq!(ok(call(&s, "GET", "/v1/collections", &key, None), 200)["collections"].as_array().map(Vec::len), Some(0));
    assert_eq!(s.get(&format!("/v1/collections/{mid}"), Some(&key)).status, 404);
    ok(call(&s, "DELETE", &format!("/api/v1/memories/{mid}"), &key, None), 204);
    assert_eq!(code(refused(call(&s, "GET", &format!("/api/v1/memories/{mid}"), &key, None), 404)), "RESOURCE_NOT_FOUND");
    assert_eq!(code(refused(call(&s, "DELETE", &format!("/api/v1/memories/{mid}"), &key, None), 404)), "RESOURCE_NOT_FOUND");
    assert_eq!(code(refused(call(&s, "PUT", "/api/v1/memories/mem_nothere", &key, Some(json!({"name": "x"}))), 404)), "RESOURCE_NOT_FOUND");
}

#[test]
fn memory_entries_are_written_indexed_changed_and_deleted() {
    let s = searching();
    let (_, key) = s.signup("memory-entries@example.org");
    let mid = store(&s, &key, json!({"name": "Prefs"}));
    let e = entry(
        &s,
        &key,
        json!({"memory_id": mid, "content": "The customer prefers email over phone calls.", "tags": ["channel:email"], "metadata": {"evidence": "high"}}),
    );
    let eid = id(&e);
    assert!(eid.starts_with("mem_entry_"), "{e}");
    assert_eq!(
        (e["action"].as_str(), e["source_type"].as_str(), e["metadata"]["evidence"].as_str()),
        (Some("created"), Some("manual"), Some("high"))
    );
    assert!(e["invalidated_at"].is_null() && e["source_generation_id"].is_null());
    // A near-duplicate is skipped: 200, the existing entry.
    let dup = ok(
        call(&s, "POST", "/api/v1/memory-entries", &key, Some(json!({"memory_id": mid, "content": "The customer prefers email over phone calls."}))),
        200,
    );
    assert_eq!((dup["action"].as_str(), dup["id"].as_str()), (Some("skipped"), Some(eid.as_str())));
    let bad = |body: Value, status: u16| code(refused(call(&s, "POST", "/api/v1/memory-entries", &key, Some(body)), status));
    assert_eq!(bad(json!({"memory_id": mid, "content": ""}), 400), "VALIDATION_FAILED");
    assert_eq!(bad(json!({"memory_id": mid, "content": "x", "source_type": "dream"}), 400), "VALIDATION_FAILED");
    assert_eq!(bad(json!({"memory_id": mid, "content": "x", "duplicate_threshold": 2}), 400), "VALIDATION_FAILED");
    assert_eq!(bad(json!({"content": "x"}), 400), "VALIDATION_FAILED");
    assert_eq!(bad(json!({"memory_id": "mem_nothere", "content": "x"}), 404), "RESOURCE_NOT_FOUND");
    let listed = ok(call(&s, "GET", &format!("/api/v1/memory-entries?memory_id={mid}"), &key, None), 200);
    assert_eq!((listed["total"].as_u64(), listed["data"][0]["id"].as_str()), (Some(1), Some(eid.as_str())));
    assert_eq!(code(refused(call(&s, "GET", "/api/v1/memory-entries", &key, None), 400)), "VALIDATION_FAILED");
    assert_eq!(code(refused(call(&s, "GET", "/api/v1/memory-entries?memory_id=mem_nothere", &key, None), 404)), "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/memory-entries/{eid}"), &key, None), 200)["content"], e["content"]);
    let found = search(&s, &key, json!({"query": "how does the customer like to be contacted", "memory_ids": [mid]}));
    assert_eq!((found.len(), found[0]["entry_id"].as_str(), found[0]["memory_name"].as_str()), (1, Some(eid.as_str()), Some("Prefs")));
    // New content is indexed again: the old words find nothing, the new ones the entry.
    let put = ok(
        call(
            &s,
            "PUT",
            &format!("/api/v1/memory-entries/{eid}"),
            &key,
            Some(json!({"content": "Invoices go to the finance team in Lisbon.", "tags": null})),
        ),
        200,
    );
    assert!(put["tags"].is_null() && put["metadata"]["evidence"] == "high", "{put}");
    assert_eq!(search(&s, &key, json!({"query": "Lisbon invoices", "memory_ids": [mid]}))[0]["entry_id"], eid.as_str());
    let stale = search(&s, &key, json!({"query": "the customer prefers email over phone calls", "memory_ids": [mid]}));
    let fresh = search(&s, &key, json!({"query": "Invoices go to the finance team in Lisbon.", "memory_ids": [mid]}));
    let (was, now) = (stale[0]["similarity_score"].as_f64().unwrap(), fresh[0]["similarity_score"].as_f64().unwrap());
    assert!(now > 0.9 && was < now - 0.1, "the vector is the new content's: {was} {now}");
    ok(call(&s, "DELETE", &format!("/api/v1/memory-entries/{eid}"), &key, None), 204);
    assert_eq!(code(refused(call(&s, "GET", &format!("/api/v1/memory-entries/{eid}"), &key, None), 404)), "RESOURCE_NOT_FOUND");
    assert!(search(&s, &key, json!({"query": "Lisbon invoices", "memory_ids": [mid]})).is_empty(), "a deleted entry is not found");
    // A store's entries go with it.
    let e2 = id(&entry(&s, &key, json!({"memory_id": mid, "content": "Ships on Fridays."})));
    ok(call(&s, "DELETE", &format!("/api/v1/memories/{mid}"), &key, None), 204);
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/memory-entries/{e2}"), &key, None), 404)["code"], "RESOURCE_NOT_FOUND");
}

#[test]
fn another_account_or_project_sees_no_store_and_no_entry() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("memory-owner@example.org");
    let (_, stranger) = s.signup("memory-stranger@example.org");
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P1"}))), 201));
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P2"}))), 201));
    let key = |p: &str| {
        ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "k", "project_id": p}))), 201)["key"].as_str().unwrap().to_owned()
    };
    let (sk1, sk2) = (key(&p1), key(&p2));
    let mid = store(&s, &sk1, json!({"name": "Secrets of P1"}));
    let eid = id(&entry(&s, &sk1, json!({"memory_id": mid, "content": "The vault code is kept by Ana."})));
    for k in [&stranger, &sk2] {
        for (method, path) in [
            ("GET", format!("/api/v1/memories/{mid}")),
            ("DELETE", format!("/api/v1/memories/{mid}")),
            ("GET", format!("/api/v1/memory-entries/{eid}")),
            ("DELETE", format!("/api/v1/memory-entries/{eid}")),
            ("GET", format!("/api/v1/memory-entries?memory_id={mid}")),
        ] {
            assert_eq!(refused(call(&s, method, &path, k, None), 404)["code"], "RESOURCE_NOT_FOUND", "{method} {path}");
        }
        assert_eq!(
            refused(call(&s, "PUT", &format!("/api/v1/memory-entries/{eid}"), k, Some(json!({"content": "x"}))), 404)["code"],
            "RESOURCE_NOT_FOUND"
        );
        assert_eq!(
            refused(call(&s, "POST", "/api/v1/memory-entries", k, Some(json!({"memory_id": mid, "content": "x"}))), 404)["code"],
            "RESOURCE_NOT_FOUND"
        );
        assert_eq!(ok(call(&s, "GET", "/api/v1/memories", k, None), 200)["total"], 0);
        assert!(search(&s, k, json!({"query": "vault code", "memory_ids": [mid]})).is_empty(), "another's store is not searched");
    }
    assert_eq!(search(&s, &sk1, json!({"query": "vault code"})).len(), 1, "the project's own stores are searched");
    // Deleting the project with force takes its stores and entries along.
    ok(call(&s, "DELETE", &format!("/api/v1/projects/{p1}?force=true"), &owner, None), 204);
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/memories/{mid}"), &owner, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/memory-entries/{eid}"), &owner, None), 404)["code"], "RESOURCE_NOT_FOUND");
}

#[test]
fn knowledge_search_filters_by_tags_floors_the_cosine_keeps_the_limit_and_reads_documents() {
    let s = searching();
    let (_, key) = s.signup("memory-knowledge@example.org");
    let mid = store(&s, &key, json!({"name": "Ops", "tags": ["team:ops"]}));
    for (text, env) in [
        ("The production database is backed up every night at 2am.", "prod"),
        ("The staging database is reset every Monday.", "staging"),
        ("Production deploys need two approvals.", "prod"),
    ] {
        entry(&s, &key, json!({"memory_id": mid, "content": text, "tags": [format!("env:{env}")]}));
    }
    let q = "when is the database backed up";
    let all = search(&s, &key, json!({"query": q, "memory_ids": [mid]}));
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all[0]["content"].as_str().unwrap().contains("backed up"), "{all:?}");
    assert!(all.windows(2).all(|w| w[0]["score"].as_f64() >= w[1]["score"].as_f64()));
    let prod = contents(&search(&s, &key, json!({"query": q, "memory_ids": [mid], "tags": {"env": "prod"}})));
    assert_eq!(prod.len(), 2);
    assert!(prod.iter().all(|c| !c.contains("staging")), "{prod:?}");
    assert_eq!(search(&s, &key, json!({"query": q, "memory_ids": [mid], "tags": {"team": "ops", "env": "staging"}})).len(), 1, "store tags count");
    assert!(search(&s, &key, json!({"query": q, "memory_ids": [mid], "tags": {"env": "dev"}})).is_empty());
    assert_eq!(search(&s, &key, json!({"query": q, "memory_ids": [mid], "limit": 1})).len(), 1);
    let floor = all[0]["similarity_score"].as_f64().unwrap();
    assert!(floor > all[2]["similarity_score"].as_f64().unwrap() && floor <= 1.0, "{all:?}");
    let above = search(&s, &key, json!({"query": q, "memory_ids": [mid], "min_similarity": floor - 1e-6}));
    assert_eq!(contents(&above), contents(&all[..1]), "only the best passes a floor at its cosine");
    assert_eq!(search(&s, &key, json!({"query": "memory_tags selects stores", "memory_tags": ["team:*"]})).len(), 3);
    assert_eq!(code(refused(call(&s, "POST", "/api/v1/knowledge/search", &key, Some(json!({"memory_ids": [mid]}))), 400)), "VALIDATION_FAILED");
    assert_eq!(
        code(refused(call(&s, "POST", "/api/v1/knowledge/search", &key, Some(json!({"query": q, "min_similarity": 3}))), 400)),
        "VALIDATION_FAILED"
    );
    // Documents of the account's collections, by id.
    let col = ok(call(&s, "POST", "/v1/collections", &key, Some(json!({"name": "handbook"}))), 201)["id"].as_str().unwrap().to_owned();
    let doc = ok(
        call(
            &s,
            "POST",
            &format!("/v1/collections/{col}/documents"),
            &key,
            Some(json!({"title": "Backups", "text": "Backups are verified weekly by restoring one."})),
        ),
        201,
    );
    let doc_id = doc["id"].as_str().unwrap().to_owned();
    let both = search(&s, &key, json!({"query": q, "memory_ids": [mid], "document_ids": [doc_id]}));
    let d = both.iter().find(|r| r["source_type"] == "document").unwrap_or_else(|| panic!("{both:?}"));
    assert!(d["document_id"] == doc_id.as_str() && d["citation"].as_str().unwrap().starts_with("AL-"), "{d}");
    assert_eq!(both.len(), 4);
}

#[test]
fn the_builtin_write_memory_indexes_an_entry_that_survives_kill_9() {
    let mut s = searching();
    let (_, key) = s.signup("memory-builtin@example.org");
    let mid = store(&s, &key, json!({"name": "Agent notes"}));
    let tool =
        id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "q", "type": "builtin", "actions": ["memories:WriteMemory"]}))), 201));
    let write = |content: &str| {
        call(
            &s,
            "POST",
            &format!("/api/v1/tools/{tool}/call"),
            &key,
            Some(json!({"action": "memories:WriteMemory", "input": {"memory_id": mid, "content": content, "metadata": {"by": "agent"}}})),
        )
    };
    let wrote = ok(write("The user's favourite colour is teal."), 200);
    assert_eq!(
        (wrote["action"].as_str(), wrote["source_type"].as_str(), wrote["memory_id"].as_str()),
        (Some("created"), Some("agent"), Some(mid.as_str()))
    );
    let eid = id(&wrote);
    let bad = call(
        &s,
        "POST",
        &format!("/api/v1/tools/{tool}/call"),
        &key,
        Some(json!({"action": "memories:WriteMemory", "input": {"memory_id": "mem_nothere", "content": "x"}})),
    );
    assert_eq!(refused(bad, 400)["code"], "VALIDATION_FAILED", "a store not in the project");
    s.kill9();
    s.restart();
    let found = search(&s, &key, json!({"query": "what colour does the user like", "memory_ids": [mid]}));
    assert_eq!(found.first().and_then(|r| r["entry_id"].as_str()), Some(eid.as_str()), "{found:?}");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/memory-entries/{eid}"), &key, None), 200)["metadata"]["by"], "agent");
}

#[test]
fn an_agent_names_only_memory_stores_of_its_own_project() {
    let s = TestServer::with_config(ROOMY);
    let (_, key) = s.signup("memory-agent@example.org");
    let aip =
        id(&ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(json!({"name": "p", "provider": "openai", "default_model": "gpt-4o"}))), 201));
    let mid = store(&s, &key, json!({"name": "Notes"}));
    let other = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Other"}))), 201));
    let theirs = store(&s, &key, json!({"name": "Elsewhere", "project_id": other}));
    let agent = |k: Value| call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": aip, "knowledge_config": k})));
    ok(agent(json!({"memory_store_ids": [mid], "write_memory_store_id": mid})), 201);
    for (k, field) in [
        (json!({"memory_store_ids": [mid, "mem_nothere"]}), "knowledge_config.memory_store_ids[1]"),
        (json!({"memory_store_ids": [theirs]}), "knowledge_config.memory_store_ids[0]"),
        (json!({"write_memory_store_id": "mem_nothere"}), "knowledge_config.write_memory_store_id"),
    ] {
        let e = refused(agent(k), 400);
        assert_eq!((e["code"].as_str(), e["meta"]["field"].as_str()), (Some("VALIDATION_FAILED"), Some(field)), "{e}");
    }
}
