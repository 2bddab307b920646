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

/// Regression (issue 2/9, finding 1, the ids a request names): a generation accepted
/// another account's trace as its `parent_trace_id` or `root_trace_id` unchecked, and
/// `GET /api/v1/api-keys?project_id=` answered 200 for a project the key could not act
/// in, where every other list answers 403.
#[test]
fn named_traces_and_a_listed_project_must_be_the_callers_own() {
    use super::scripted_llm::{text, Scripted};
    use super::soat_generate::{agent, server, setup};
    let up = Scripted::start();
    up.otherwise(text("Done."));
    let s = server();
    let theirs = setup(&s, &up, "trace-owner@example.org");
    let mine = setup(&s, &up, "trace-borrower@example.org");
    let generate = |key: &str, agent: &str, extra: Value| {
        let mut body = json!({"messages": [{"role": "user", "content": "Go."}]});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        call(&s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), key, Some(body))
    };
    let their_agent = agent(&s, &theirs, json!({}));
    let their_trace = ok(generate(&theirs.key, &their_agent, json!({})), 200)["trace_id"].as_str().unwrap().to_owned();
    let my_agent = agent(&s, &mine, json!({}));
    let before = ok(call(&s, "GET", "/api/v1/generations", &mine.key, None), 200)["total"].clone();
    for field in ["parent_trace_id", "root_trace_id"] {
        let r = generate(&mine.key, &my_agent, json!({ field: their_trace }));
        assert_eq!(r.status, 404, "{field}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], "RESOURCE_NOT_FOUND");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/generations", &mine.key, None), 200)["total"], before, "nothing ran");
    let my_trace = ok(generate(&mine.key, &my_agent, json!({})), 200)["trace_id"].as_str().unwrap().to_owned();
    ok(generate(&mine.key, &my_agent, json!({"parent_trace_id": my_trace, "root_trace_id": my_trace})), 200);

    // A project key lists its own project's keys, and is refused another project's.
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &mine.key, Some(json!({"name": "P1"}))), 201));
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &mine.key, Some(json!({"name": "P2"}))), 201));
    let sk2 =
        ok(call(&s, "POST", "/api/v1/api-keys", &mine.key, Some(json!({"name": "two", "project_id": p2}))), 201)["key"].as_str().unwrap().to_owned();
    let r = call(&s, "GET", &format!("/api/v1/api-keys?project_id={p1}"), &sk2, None);
    assert_eq!(r.status, 403, "{}", r.text());
    let listed = ok(call(&s, "GET", &format!("/api/v1/api-keys?project_id={p2}"), &sk2, None), 200);
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "{listed}");
    let by_account = ok(call(&s, "GET", &format!("/api/v1/api-keys?project_id={p1}"), &mine.key, None), 200);
    assert_eq!(by_account["data"].as_array().map(Vec::len), Some(0), "the account key lists P1's keys: none");
}
