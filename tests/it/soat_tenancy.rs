//! Tenancy over every /api/v1 route that names a record: other accounts and projects get 404 or 403.
//!
//! Tenancy over the whole `/api/v1` route table: for every row whose path names a
//! record, the record is made in account A's project P1, and then account B's key
//! gets 404 `RESOURCE_NOT_FOUND` and a project key (`sk_…`) of A's other project P2
//! gets what the spec gives a key out of its project: 403 `API_KEY_PROJECT_SCOPE` on
//! the project itself (403 `FORBIDDEN` on DELETE, which no project key may do), 404
//! on a record inside the project. The rows come from `quarry::api::routes::table`, so
//! a route added later is walked too, and a path parameter with no fixture here fails
//! the test until one is added. A control read by P1's own key shows every id is real.

use serde_json::{json, Value};

use super::server::TestServer;
use super::soat::{call, ok};

/// Room for the walk's requests in the default plan's bucket.
use super::plans::ROOMY;

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

/// A body that would succeed on the owner's record, so a missing check cannot hide
/// behind a 400.
fn body_for(method: &str, path: &str) -> Option<Value> {
    if !matches!(method, "POST" | "PUT" | "PATCH") {
        return None;
    }
    Some(match path {
        p if p.ends_with("/release") => json!({"stable_version": 1, "canary_version": 1, "canary_percent": 10}),
        p if p.ends_with("/promote") || p.ends_with("/abort") || p.ends_with("/restore") => return None,
        p if p.ends_with("/runs") => json!({"agent_version": 1, "status": "completed", "passed": true}),
        p if p.ends_with("/call") => json!({"input": {}}),
        p if p.starts_with("/api/v1/memory-entries") => json!({"content": "renamed"}),
        "/api/v1/generations/{generation_id}" => json!({"metadata": {"k": "v"}}),
        p if p.ends_with("/generate") => json!({"messages": [{"role": "user", "content": "hi"}]}),
        p if p.ends_with("/tool-outputs") => json!({"tool_outputs": [{"tool_call_id": "call_1", "output": "ok"}]}),
        _ => json!({"name": "renamed"}),
    })
}

#[test]
fn every_record_route_hides_it_from_other_accounts_and_other_projects() {
    let mut s = TestServer::with_config(ROOMY);
    let (owner_account, owner) = s.signup("tenancy-owner@example.org");
    let (_, stranger) = s.signup("tenancy-stranger@example.org");
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P1"}))), 201));
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P2"}))), 201));
    let key = |p: &str| {
        let k = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "ci", "project_id": p}))), 201);
        (id(&k), k["key"].as_str().unwrap().to_owned())
    };
    let (key1, sk1) = key(&p1);
    let (_, sk2) = key(&p2);
    // One record of each kind in P1, made with P1's key.
    let make = |path: &str, body: Value| id(&ok(call(&s, "POST", path, &sk1, Some(body)), 201));
    let aip = make("/api/v1/ai-providers", json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}));
    let secret = make("/api/v1/secrets", json!({"name": "TOKEN", "value": "s3cret"}));
    let tool = make("/api/v1/tools", json!({"name": "search", "type": "client"}));
    let agent = make("/api/v1/agents", json!({"ai_provider_id": aip, "name": "a"}));
    let guardrail = make("/api/v1/guardrails", json!({"name": "pii"}));
    let eval = make("/api/v1/evals", json!({"name": "quality", "agent_id": agent}));
    let route = make("/api/v1/model-routes", json!({"name": "r", "targets": [{"ai_provider_id": aip, "model": "m"}]}));
    let memory = make("/api/v1/memories", json!({"name": "notes"}));
    let entry = make("/api/v1/memory-entries", json!({"memory_id": memory, "content": "The user likes tea."}));
    // A generation and its trace, written into the store as the runner writes them.
    let o = super::soat_generations::Owner { account_id: owner_account, project_id: p1.clone(), agent_id: agent.clone() };
    let (trace, generation) = (
        super::soat_generations::trace(&o, "trace_tenancy", None, None, "2026-01-01T00:00:00Z"),
        super::soat_generations::generation(&o, "gen_tenancy", "trace_tenancy", "2026-01-01T00:00:00Z"),
    );
    super::soat_generations::seed(&mut s, vec![trace], vec![generation]);
    let fixtures: Vec<(&str, String)> = vec![
        ("project_id", p1.clone()),
        ("api_key_id", key1),
        ("ai_provider_id", aip),
        ("secret_id", secret),
        ("tool_id", tool),
        ("agent_id", agent),
        ("version", "1".into()),
        ("guardrail_id", guardrail),
        ("eval_id", eval),
        ("route_id", route),
        ("memory_id", memory),
        ("entry_id", entry),
        ("generation_id", "gen_tenancy".into()),
        ("trace_id", "trace_tenancy".into()),
    ];
    let mut walked = Vec::new();
    for row in quarry::api::routes::table(&quarry::config::Config::defaults()) {
        if !row.path.starts_with("/api/v1/") || !row.path.contains('{') {
            continue;
        }
        let mut path = row.path.to_owned();
        for (param, value) in &fixtures {
            path = path.replace(&format!("{{{param}}}"), value);
        }
        assert!(!path.contains('{'), "{} {}: a path parameter with no fixture in soat_tenancy.rs; add one", row.method, row.path);
        let method = row.method.as_str();
        let what = format!("{method} {}", row.path);
        let body = body_for(method, row.path);
        let r = call(&s, method, &path, &stranger, body.clone());
        assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND".to_owned()), "account B, {what}: {}", r.text());
        let want = match (row.path, method) {
            ("/api/v1/projects/{project_id}", "DELETE") => (403, "FORBIDDEN"),
            ("/api/v1/projects/{project_id}", _) => (403, "API_KEY_PROJECT_SCOPE"),
            _ => (404, "RESOURCE_NOT_FOUND"),
        };
        let r = call(&s, method, &path, &sk2, body);
        assert_eq!((r.status, r.code()), (want.0, want.1.to_owned()), "P2's key, {what}: {}", r.text());
        walked.push((method.to_owned(), path));
    }
    assert!(walked.len() >= 30, "walked only {} routes", walked.len());
    // The control: every read is there for P1's own key, so no 404 above came from a
    // wrong id, and no DELETE above took effect.
    for (method, path) in walked.iter().filter(|(m, _)| m == "GET") {
        let r = call(&s, method, path, &sk1, None);
        // /models reaches for the provider (loopback port 9, closed): found, then 502.
        let found = r.status == 200 || (path.ends_with("/models") && r.status == 502 && r.code() == "MODEL_LISTING_FAILED");
        assert!(found, "P1's key, {method} {path}: {} {}", r.status, r.text());
    }
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/projects/{p1}"), &owner, None), 200)["name"], "P1");
}
