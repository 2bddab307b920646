//! SOAT documents (v0.28's documents.yaml) and knowledge in v0.28's names: CRUD, an agent grounded in a document.
//!
//! Issue 36's `memories-agent` tutorial against the real binary: documents made, listed
//! by path prefix, changed, tagged, re-ingested and deleted through `/api/v1/documents`
//! (kept out of `/v1`, hidden from another project's key); an agent whose
//! `knowledge_config` is written in SOAT v0.28's names (`memory_ids`,
//! `write_memory_id`) and answered in the seed's, whose generation sends the model the
//! document found by its path prefix and the memory entries (asserted on what the
//! scripted upstream received); `POST /api/v1/knowledge/search` answering both source
//! types with `score` and `similarity_score`.

use serde_json::{json, Value};

use super::plans::{LAB, ROOMY};
use super::scripted_llm::{text, Scripted};
use super::server::{Options, TestServer};
use super::soat::{call, ok, refused};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap()
}

fn paths(list: &Value) -> Vec<&str> {
    list["data"].as_array().unwrap().iter().map(|d| d["path"].as_str().unwrap()).collect()
}

#[test]
fn documents_are_made_listed_by_path_changed_tagged_and_deleted() {
    let s = TestServer::with_config(ROOMY);
    let (_, key) = s.signup("documents-crud@example.org");
    let make = |path: &str, content: &str| {
        ok(call(&s, "POST", "/api/v1/documents", &key, Some(json!({"path": path, "content": content, "tags": {"team": "support"}}))), 201)
    };
    let d = make("reports/q1.txt", "Revenue rose in the first quarter.");
    let did = id(&d);
    assert!(did.starts_with("doc_") && d["project_id"].as_str().unwrap().starts_with("proj_"), "{d}");
    assert_eq!((d["path"].as_str(), d["status"].as_str(), d["tags"]["team"].as_str()), (Some("/reports/q1.txt"), Some("ready"), Some("support")));
    assert!(d.get("content").is_none(), "content only on getDocument: {d}");
    make("/reports-archive/q0.txt", "Old numbers.");
    make("/reports/2026/q2.txt", "Revenue held in the second quarter.");
    // path_prefix is a directory boundary, with or without its slashes.
    for prefix in ["/reports", "reports", "/reports/"] {
        let listed = ok(call(&s, "GET", &format!("/api/v1/documents?path_prefix={prefix}"), &key, None), 200);
        assert_eq!(paths(&listed), ["/reports/q1.txt", "/reports/2026/q2.txt"], "{prefix}");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/documents?limit=1&offset=2", &key, None), 200)["total"], 3);
    let got = ok(call(&s, "GET", &format!("/api/v1/documents/{did}"), &key, None), 200);
    assert_eq!(got["content"], "Revenue rose in the first quarter.");
    // A change of text is indexed again; of tags, merged or replaced.
    let patched = ok(
        call(&s, "PATCH", &format!("/api/v1/documents/{did}"), &key, Some(json!({"content": "Revenue fell.", "path": "/reports/q1-final.txt"}))),
        200,
    );
    assert_eq!(patched["path"], "/reports/q1-final.txt");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/documents/{did}"), &key, None), 200)["content"], "Revenue fell.");
    let tags = ok(call(&s, "PATCH", &format!("/api/v1/documents/{did}/tags"), &key, Some(json!({"status": "final"}))), 200);
    assert_eq!(tags, json!({"status": "final", "team": "support"}));
    assert_eq!(ok(call(&s, "PUT", &format!("/api/v1/documents/{did}/tags"), &key, Some(json!({"a": "b"}))), 200), json!({"a": "b"}));
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/documents/{did}/tags"), &key, None), 200), json!({"a": "b"}));
    let status = ok(call(&s, "GET", &format!("/api/v1/documents/{did}/status"), &key, None), 200);
    assert_eq!((status["status"].as_str(), status["progress"].as_i64()), (Some("ready"), Some(100)));
    assert!(status["chunk_count"].as_i64().unwrap() >= 1, "{status}");
    let again = ok(
        call(&s, "POST", &format!("/api/v1/documents/{did}/ingest?wait=true"), &key, Some(json!({"chunk_strategy": "size", "chunk_size": 500}))),
        201,
    );
    assert_eq!(
        (again["chunk_strategy"].as_str(), again["chunk_size"].as_i64(), again["chunk_overlap"].as_i64()),
        (Some("size"), Some(500), Some(200))
    );
    // Bad input changes nothing; no files module, so no file is found.
    let e = refused(call(&s, "PATCH", &format!("/api/v1/documents/{did}"), &key, Some(json!({"colour": 1}))), 400);
    assert_eq!(code(&e), "VALIDATION_FAILED");
    assert_eq!(code(&refused(call(&s, "POST", "/api/v1/documents", &key, Some(json!({"path": "/x"}))), 400)), "VALIDATION_FAILED");
    let e = refused(call(&s, "POST", "/api/v1/documents/ingest", &key, Some(json!({"file_id": "file_x"}))), 400);
    assert!(e["message"].as_str().unwrap().contains("file_x"), "{e}");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/documents/{did}"), &key, None), 200)["content"], "Revenue fell.");
    // The project's collection is not /v1 data.
    assert_eq!(ok(call(&s, "GET", "/v1/collections", &key, None), 200)["collections"].as_array().map(Vec::len), Some(0));
    // Another project's key does not see it.
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "P2"}))), 201));
    let sk2 = ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "ci", "project_id": p2}))), 201)["key"].as_str().unwrap().to_owned();
    assert_eq!(code(&refused(call(&s, "GET", &format!("/api/v1/documents/{did}"), &sk2, None), 404)), "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", "/api/v1/documents", &sk2, None), 200)["total"], 0);
    ok(call(&s, "DELETE", &format!("/api/v1/documents/{did}"), &key, None), 204);
    assert_eq!(code(&refused(call(&s, "GET", &format!("/api/v1/documents/{did}"), &key, None), 404)), "RESOURCE_NOT_FOUND");
    assert_eq!(code(&refused(call(&s, "DELETE", &format!("/api/v1/documents/{did}"), &key, None), 404)), "RESOURCE_NOT_FOUND");
}

const POLICY: &str = "Refunds are issued within 14 days of purchase. Premium customers get a dedicated support line.";

#[test]
fn an_agent_in_soat_names_is_grounded_in_a_document_by_path_and_in_memory() {
    let up = Scripted::start();
    up.otherwise(text("Alice is a premium customer; refunds take up to 14 days."));
    let s = TestServer::with(Options { config: LAB.into(), embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    let (_, key) = s.signup("documents-agent@example.org");
    let project = id(&ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "support"}))), 201));
    // The tutorial's work happens with the project's own key.
    let sk = ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "tutorial", "project_id": project}))), 201)["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let provider = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"});
    let provider = id(&ok(call(&s, "POST", "/api/v1/ai-providers", &sk, Some(provider)), 201));
    let memory = id(&ok(call(&s, "POST", "/api/v1/memories", &sk, Some(json!({"name": "alice", "tags": ["customer-support"]}))), 201));
    let entry = |content: &str| ok(call(&s, "POST", "/api/v1/memory-entries", &sk, Some(json!({"memory_id": memory, "content": content}))), 201);
    assert_eq!(entry("Alice is on the Premium plan.")["action"], "created");
    let doc = json!({"project_id": project, "path": "/alice/support-policy.txt", "content": POLICY});
    ok(call(&s, "POST", "/api/v1/documents", &sk, Some(doc)), 201);
    ok(call(&s, "POST", "/api/v1/documents", &sk, Some(json!({"path": "/bob/notes.txt", "content": "Bob prefers phone calls."}))), 201);
    // v0.28's names in, the seed's out; two differing spellings of one field refused.
    let knowledge = json!({"memory_ids": [memory], "document_paths": ["/alice/"], "limit": 5, "write_memory_id": memory});
    let body = json!({"ai_provider_id": provider, "name": "support", "instructions": "You help.", "knowledge_config": knowledge});
    let agent = ok(call(&s, "POST", "/api/v1/agents", &sk, Some(body.clone())), 201);
    let k = &agent["knowledge_config"];
    assert_eq!((k["memory_store_ids"][0].as_str(), k["write_memory_store_id"].as_str()), (Some(memory.as_str()), Some(memory.as_str())), "{agent}");
    assert!(k.get("memory_ids").is_none() && k.get("write_memory_id").is_none(), "{agent}");
    let mut both = body.clone();
    both["knowledge_config"]["memory_store_ids"] = json!(["mem_other"]);
    assert_eq!(code(&refused(call(&s, "POST", "/api/v1/agents", &sk, Some(both)), 400)), "VALIDATION_FAILED");
    let mut same = body;
    same["knowledge_config"]["memory_store_ids"] = json!([memory]);
    ok(call(&s, "POST", "/api/v1/agents", &sk, Some(same)), 201);
    // The generation's model call carries the document's text and the memory entry.
    let aid = id(&agent);
    let g = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{aid}/generate?wait=true"),
            &sk,
            Some(json!({"messages": [{"role": "user", "content": "What is the refund policy for Alice?"}]})),
        ),
        200,
    );
    assert_eq!(g["status"], "completed", "{g}");
    let sent = up.bodies().last().cloned().expect("the model was called").to_string();
    assert!(sent.contains("Refunds are issued within 14 days"), "the document's text reaches the model: {sent}");
    assert!(sent.contains("Alice is on the Premium plan."), "the memory entry reaches the model: {sent}");
    assert!(!sent.contains("Bob prefers phone calls"), "a document outside /alice/ does not: {sent}");
    // search-knowledge: both source types, each with its scores.
    let q = json!({"project_id": project, "query": "refund policy premium", "memory_ids": [memory], "document_paths": ["/alice/"]});
    let results = ok(call(&s, "POST", "/api/v1/knowledge/search", &sk, Some(q)), 200)["results"].as_array().unwrap().clone();
    let kinds: Vec<&str> = results.iter().map(|r| r["source_type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"document") && kinds.contains(&"memory"), "{results:?}");
    for r in &results {
        let (score, similarity) = (r["score"].as_f64().unwrap(), r["similarity_score"].as_f64().unwrap());
        assert!(score > 0.0 && similarity > 0.0 && similarity <= 1.0, "{r}");
    }
    let doc_hit = results.iter().find(|r| r["source_type"] == "document").unwrap();
    assert!(doc_hit["content"].as_str().unwrap().contains("Refunds are issued"), "{doc_hit}");
    assert!(doc_hit["document_id"].as_str().unwrap().starts_with("doc_"), "{doc_hit}");
    // The seed's spelling of memory_ids is read too.
    let q = json!({"query": "premium plan", "memory_store_ids": [memory]});
    let results = ok(call(&s, "POST", "/api/v1/knowledge/search", &sk, Some(q)), 200)["results"].as_array().unwrap().clone();
    assert_eq!(results[0]["content"], "Alice is on the Premium plan.");
}

const FACTS: &str = r#"["Alice signed a 2-year contract renewal.", "Alice is on the Premium plan."]"#;

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "waited a minute for {what}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `extraction: true` (v0.28): after the answer, the agent's own provider extracts the
/// turn's facts into the write store with provenance; a near-duplicate of an entry is
/// skipped; the generation's `extraction` summary counts them; an extraction cut off
/// by `kill -9` was recorded with the answer and is resumed after the restart.
#[test]
fn extraction_writes_facts_with_provenance_and_resumes_after_kill_9() {
    use super::scripted_llm::Reply;
    let up = Scripted::start();
    up.otherwise(text("Congratulations on the renewal, Alice."));
    // The extraction's call hangs until the server is killed.
    up.on("Extract discrete, atomic facts", Reply::Slow(std::time::Duration::from_secs(300), Box::new(text(FACTS))));
    let mut s = TestServer::with(Options { config: LAB.into(), embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    let (_, key) = s.signup("documents-extraction@example.org");
    let provider = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"});
    let provider = id(&ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(provider)), 201));
    let memory = id(&ok(call(&s, "POST", "/api/v1/memories", &key, Some(json!({"name": "alice"}))), 201));
    let manual =
        ok(call(&s, "POST", "/api/v1/memory-entries", &key, Some(json!({"memory_id": memory, "content": "Alice is on the Premium plan."}))), 201);
    assert_eq!((manual["source_type"].as_str(), manual["source_generation_id"].as_str()), (Some("manual"), None));
    let knowledge = json!({"memory_ids": [memory], "write_memory_id": memory, "extraction": true});
    let body = json!({"ai_provider_id": provider, "name": "support", "instructions": "You help.", "knowledge_config": knowledge});
    let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(body)), 201);
    assert_eq!(agent["knowledge_config"]["extraction"], true);
    let aid = id(&agent);
    let turn = json!({"messages": [{"role": "user", "content": "I just signed a 2-year renewal of my contract."}]});
    let g = ok(call(&s, "POST", &format!("/api/v1/agents/{aid}/generate?wait=true"), &key, Some(turn)), 200);
    assert_eq!(g["status"], "completed", "{g}");
    let gid = id(&g);
    // The answer did not wait for the extraction, which is under way.
    assert!(ok(call(&s, "GET", &format!("/api/v1/generations/{gid}"), &key, None), 200)["extraction"].is_null());
    wait_for("the extraction's model call", || up.bodies().iter().any(|b| b.to_string().contains("Extract discrete, atomic facts")).then_some(()));
    let asked = up.bodies().into_iter().find(|b| b.to_string().contains("Extract discrete")).unwrap().to_string();
    assert!(asked.contains("2-year renewal") && asked.contains("Congratulations"), "the transcript is extracted from: {asked}");
    s.kill9();
    up.on("Extract discrete, atomic facts", text(FACTS));
    s.restart();
    let entries = |s: &TestServer| {
        ok(call(s, "GET", &format!("/api/v1/memory-entries?memory_id={memory}"), &key, None), 200)["data"].as_array().unwrap().clone()
    };
    let extracted = wait_for("the extracted entry", || entries(&s).into_iter().find(|e| e["source_type"] == "extraction"));
    assert_eq!(extracted["content"], "Alice signed a 2-year contract renewal.");
    assert_eq!(extracted["source_generation_id"], gid.as_str());
    assert!(extracted["source_conversation_id"].is_null(), "no conversation behind a plain generation: {extracted}");
    let summary = wait_for("the extraction summary", || {
        let g = ok(call(&s, "GET", &format!("/api/v1/generations/{gid}"), &key, None), 200);
        (!g["extraction"].is_null()).then(|| g["extraction"].clone())
    });
    assert_eq!(summary, json!({"candidates": 2, "created": 1, "updated": 0, "skipped": 1}));
    // One extracted entry beside the manual one: the near-duplicate was skipped.
    let all = entries(&s);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all.iter().any(|e| e["source_type"] == "manual" && e["source_generation_id"].is_null()));
}

/// Issue 40: two nodes share the records (PostgreSQL) and the memory stores'
/// collections (the shared journal and S3). An extraction under way on a
/// live node is left to it; one whose node is killed mid-call is taken over by the
/// other once the dead node's heartbeat is stale, and its facts and summary land once.
#[test]
fn an_extraction_whose_node_dies_is_taken_over_by_another_node() {
    use super::scripted_llm::Reply;
    use std::time::Duration;
    if !quarry_test_support::store::have_postgres() || !quarry_test_support::store::have_s3() {
        return;
    }
    let cluster = quarry_test_support::store::Cluster::new(true);
    let node = |name: &str| TestServer::with(Options { embedder: Some("multilingual-e5-small".into()), ..cluster.node(name, LAB) });
    let up = Scripted::start();
    up.otherwise(text("Congratulations on the renewal, Alice."));
    // a's extraction call hangs until a is killed.
    up.on("Extract discrete, atomic facts", Reply::Slow(Duration::from_secs(300), Box::new(text(FACTS))));
    let mut a = node("a");
    let b = node("b");
    let (_, key) = a.signup("cluster-extraction@example.org");
    let provider = json!({"name": "fake", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"});
    let provider = id(&ok(call(&a, "POST", "/api/v1/ai-providers", &key, Some(provider)), 201));
    let memory = id(&ok(call(&a, "POST", "/api/v1/memories", &key, Some(json!({"name": "alice"}))), 201));
    let knowledge = json!({"memory_ids": [memory], "write_memory_id": memory, "extraction": true});
    let body = json!({"ai_provider_id": provider, "name": "support", "instructions": "You help.", "knowledge_config": knowledge});
    let aid = id(&ok(call(&a, "POST", "/api/v1/agents", &key, Some(body)), 201));
    let turn = json!({"messages": [{"role": "user", "content": "I just signed a 2-year renewal of my contract."}]});
    let g = ok(call(&a, "POST", &format!("/api/v1/agents/{aid}/generate?wait=true"), &key, Some(turn)), 200);
    assert_eq!(g["status"], "completed", "{g}");
    let gid = id(&g);
    let asked = || up.bodies().iter().filter(|b| b.to_string().contains("Extract discrete, atomic facts")).count();
    wait_for("a's extraction call", || (asked() == 1).then_some(()));
    // b looks for orphaned work every node_timeout (1 s): a is alive, so b leaves it.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(asked(), 1, "a live node's extraction is never taken over");
    assert!(ok(call(&b, "GET", &format!("/api/v1/generations/{gid}"), &key, None), 200)["extraction"].is_null());
    up.on("Extract discrete, atomic facts", text(FACTS));
    a.kill9();
    let summary = wait_for("the extraction summary, on b", || {
        let g = ok(call(&b, "GET", &format!("/api/v1/generations/{gid}"), &key, None), 200);
        (!g["extraction"].is_null()).then(|| g["extraction"].clone())
    });
    assert_eq!(summary, json!({"candidates": 2, "created": 2, "updated": 0, "skipped": 0}));
    assert_eq!(asked(), 2, "b asked once, after a died");
    let entries = ok(call(&b, "GET", &format!("/api/v1/memory-entries?memory_id={memory}"), &key, None), 200)["data"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries.iter().all(|e| e["source_type"] == "extraction" && e["source_generation_id"] == gid.as_str()), "{entries:?}");
    // a comes back: the extraction is b's and done, so a asks nothing more.
    a.restart();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(asked(), 2, "a returning node does not extract again");
}

/// SOAT v0.28's forcing `tool_choice` without a stop condition (tutorial
/// `client-tools.md`) is accepted and answered as the seed's explicit equivalent:
/// `auto`, with step 1 forced by a step rule.
#[test]
fn a_forced_tool_choice_without_a_stop_condition_forces_the_first_step_only() {
    let s = TestServer::with_config(ROOMY);
    let (_, key) = s.signup("documents-forced@example.org");
    let provider = json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"});
    let provider = id(&ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(provider)), 201));
    let forced = json!({"type": "tool", "tool_name": "get_order_status"});
    let body = json!({"ai_provider_id": provider, "name": "orders", "tool_choice": forced, "max_steps": 3});
    let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(body)), 201);
    assert_eq!((&agent["tool_choice"], &agent["step_rules"]), (&json!("auto"), &json!([{"step": 1, "tool_choice": forced}])), "{agent}");
    let with_stop =
        json!({"ai_provider_id": provider, "tool_choice": forced, "stop_conditions": [{"type": "has_tool_call", "tool_name": "get_order_status"}]});
    let agent = ok(call(&s, "POST", "/api/v1/agents", &key, Some(with_stop)), 201);
    assert_eq!(agent["tool_choice"], forced, "the seed's reading: every step forces: {agent}");
}
