//! SOAT agents (`/api/v1/agents`): CRUD, preconditions, validation, versions, rollout and tenancy.
//!
//! SOAT agents through HTTP (`/api/v1/agents`): create, list, get, PUT and PATCH with
//! their preconditions (409 `VERSION_CONFLICT` with `meta.current_version`, two
//! concurrent PATCHes on one `If-Match`: exactly one lands, 100 rounds), every
//! validation rule of the digest as a 400 with its code, delete, versions and restore,
//! staged rollout with its promotion gate, and tenancy (another account's key and a
//! project key of another project see no agent).

use serde_json::{json, Value};

use super::client::Response;
use super::server::TestServer;
use super::soat::{ok, refused};

/// Room for a test's requests in the default plan's bucket (the race test makes ~800).
use super::plans::ROOMY;

fn server() -> TestServer {
    TestServer::with_config(ROOMY)
}

fn call(s: &TestServer, method: &str, path: &str, key: &str, body: Option<Value>) -> Response {
    let body = body.map(|b| b.to_string());
    s.request(method, path, Some(key), body.as_deref())
}

fn call_with(s: &TestServer, method: &str, path: &str, key: &str, headers: &[(&str, &str)], body: Option<Value>) -> Response {
    let auth = format!("Bearer {key}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let body = body.map(|b| b.to_string());
    s.conn().send(method, path, &all, body.as_deref().map(str::as_bytes))
}

fn code(r: Response, status: u16) -> String {
    refused(r, status)["code"].as_str().unwrap().to_owned()
}

/// An account with one AI provider in its default project: (key, provider id).
fn account(s: &TestServer, email: &str) -> (String, String) {
    let (_, key) = s.signup(email);
    let p = ok(call(s, "POST", "/api/v1/ai-providers", &key, Some(json!({"name": "main", "provider": "openai", "default_model": "gpt-4o"}))), 201);
    (key, p["id"].as_str().unwrap().to_owned())
}

fn create(s: &TestServer, key: &str, body: Value) -> Value {
    ok(call(s, "POST", "/api/v1/agents", key, Some(body)), 201)
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

#[test]
fn agents_are_created_listed_read_and_deleted() {
    let s = server();
    let (key, aip) = account(&s, "agents-crud@example.org");
    let minimal = create(&s, &key, json!({"ai_provider_id": aip}));
    assert!(id(&minimal).starts_with("agent_"), "{minimal}");
    assert_eq!((minimal["version"].as_u64(), &minimal["tool_choice"], &minimal["active_release"]), (Some(1), &json!("auto"), &Value::Null));
    assert_eq!((&minimal["model_route_id"], &minimal["single_session_per_actor"]), (&Value::Null, &json!(false)));
    assert!(minimal["project_id"].as_str().unwrap().starts_with("proj_") && minimal["created_at"].is_string());
    let tool = id(&ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "search", "type": "client"}))), 201));
    let full = create(
        &s,
        &key,
        json!({"ai_provider_id": aip, "name": "Research Assistant", "instructions": "You are a helpful research assistant.",
               "model": "gpt-4o", "tool_bindings": [{"tool_id": tool}], "max_steps": 10, "temperature": 0.7}),
    );
    assert_eq!(
        (full["name"].as_str(), full["max_steps"].as_u64(), &full["tool_bindings"]),
        (Some("Research Assistant"), Some(10), &json!([{"tool_id": tool}]))
    );
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/agents/{}", id(&full)), &key, None), 200), full);

    let listed = ok(call(&s, "GET", "/api/v1/agents", &key, None), 200);
    assert_eq!((listed["total"].as_u64(), listed["limit"].as_u64(), listed["offset"].as_u64()), (Some(2), Some(50), Some(0)));
    assert_eq!(listed["data"][0]["id"], minimal["id"], "oldest first");
    let page = ok(call(&s, "GET", "/api/v1/agents?limit=1000&offset=1", &key, None), 200);
    assert_eq!((page["limit"].as_u64(), page["data"].as_array().unwrap().len()), (Some(100), 1), "clamped, and the page served");
    for bad in ["limit=0", "limit=x", "offset=-1"] {
        assert_eq!(code(call(&s, "GET", &format!("/api/v1/agents?{bad}"), &key, None), 400), "VALIDATION_FAILED", "{bad}");
    }

    assert_eq!(code(call(&s, "GET", "/api/v1/agents/agent_nope", &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "DELETE", &format!("/api/v1/agents/{}?force=maybe", id(&full)), &key, None), 400), "VALIDATION_FAILED");
    ok(call(&s, "DELETE", &format!("/api/v1/agents/{}", id(&full)), &key, None), 204);
    assert_eq!(code(call(&s, "GET", &format!("/api/v1/agents/{}", id(&full)), &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "DELETE", &format!("/api/v1/agents/{}?force=true", id(&full)), &key, None), 404), "RESOURCE_NOT_FOUND");

    // The provider an agent uses cannot be deleted.
    assert_eq!(code(call(&s, "DELETE", &format!("/api/v1/ai-providers/{aip}"), &key, None), 409), "AI_PROVIDER_HAS_DEPENDENTS");
    ok(call(&s, "DELETE", &format!("/api/v1/agents/{}", id(&minimal)), &key, None), 204);
    ok(call(&s, "DELETE", &format!("/api/v1/ai-providers/{aip}"), &key, None), 204);
}

#[test]
fn every_rule_of_the_digest_is_a_400_with_its_code() {
    let s = server();
    let (key, aip) = account(&s, "agents-rules@example.org");
    let p = json!(aip);
    let has_tool_call = json!([{"type": "has_tool_call", "tool_name": "done"}]);
    let cases: Vec<(Value, u16, &str)> = vec![
        // Strict bodies.
        (json!({"ai_provider_id": p, "nmae": "x"}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "knowledge_config": {"extraction": 1}}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "knowledge_config": {"memory_ids": ["mem_a"], "memory_store_ids": ["mem_b"]}}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "reasoning": {"effort": "max"}}), 400, "VALIDATION_FAILED"),
        // Provider xor route; model not with a route.
        (json!({}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "model_route_id": "route_x"}), 400, "VALIDATION_FAILED"),
        (json!({"model_route_id": "route_x", "model": "gpt-4o"}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": "aip_missing"}), 404, "AI_PROVIDER_NOT_FOUND"),
        (json!({"model_route_id": "route_missing"}), 400, "MODEL_ROUTE_NOT_FOUND"),
        // A forcing tool_choice without a has_tool_call stop condition forces step 1 only
        // (v0.28), unless a step rule already sets step 1's choice (the seed's refusal).
        (
            json!({"ai_provider_id": p, "tool_choice": "required", "step_rules": [{"step": 1, "tool_choice": "auto"}]}),
            400,
            "FORCED_TOOL_CHOICE_CANNOT_STOP",
        ),
        (json!({"ai_provider_id": p, "tool_choice": null}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "tool_choice": "sometimes"}), 400, "VALIDATION_FAILED"),
        // Stop conditions.
        (json!({"ai_provider_id": p, "stop_conditions": [{"type": "never"}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "stop_conditions": [{"type": "has_tool_call"}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "stop_conditions": [{"type": "max_chain_generations", "max_generations": 0}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "stop_conditions": [{"type": "max_chain_generations", "max_generations": 2.5}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "stop_conditions": ["has_tool_call"]}), 400, "VALIDATION_FAILED"),
        // Step rules.
        (json!({"ai_provider_id": p, "step_rules": [{"step": 0}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "step_rules": [{"step": 1}, {"step": 1}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "step_rules": [{"tool_choice": "auto"}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "step_rules": [{"step": 1, "active_tool_ids": ["tool_unbound"]}]}), 400, "VALIDATION_FAILED"),
        // Bindings, inline tools, their context keys and credentials.
        (json!({"ai_provider_id": p, "tool_bindings": [{"tool_id": "tool_a", "tool": {"name": "x"}}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "tool_bindings": [{"tool_id": "not-a-tool"}]}), 400, "TOOL_NOT_FOUND"),
        (json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "x", "type": "pipeline"}}]}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "x", "context_keys": ["user id"]}}]}), 400, "INVALID_TOOL_CONTEXT_KEY"),
        (json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "x", "context_keys": ["User", "user"]}}]}), 400, "INVALID_TOOL_CONTEXT_KEY"),
        (
            json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "x", "execute": {"url": "https://h", "headers": {"Authorization": "Bearer sk-live"}}}}]}),
            400,
            "LITERAL_CREDENTIAL",
        ),
        // Knowledge, guardrails, numbers.
        (json!({"ai_provider_id": p, "knowledge_config": {"tags": {"system.owner": "me"}}}), 400, "RESERVED_TAG_KEY"),
        (json!({"ai_provider_id": p, "knowledge_config": {"tags": {"n": 1}}}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "guardrail_ids": ["guardrail_missing"]}), 400, "GUARDRAIL_NOT_FOUND"),
        (json!({"ai_provider_id": p, "max_output_tokens": 0}), 400, "VALIDATION_FAILED"),
        (json!({"ai_provider_id": p, "trace_content_mode": "partial"}), 400, "VALIDATION_FAILED"),
    ];
    for (body, status, expected) in &cases {
        let e = refused(call(&s, "POST", "/api/v1/agents", &key, Some(body.clone())), *status);
        assert_eq!(e["code"], *expected, "{body} → {e}");
    }
    let unknown = refused(call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": p, "nmae": "x"}))), 400);
    assert_eq!(unknown["meta"]["field"], "nmae", "{unknown}");
    assert_eq!(ok(call(&s, "GET", "/api/v1/agents", &key, None), 200)["total"], 0, "nothing refused was written");
    // What the rules allow.
    create(&s, &key, json!({"ai_provider_id": p, "tool_choice": "required", "stop_conditions": has_tool_call}));
    create(
        &s,
        &key,
        json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "x", "execute": {"url": "https://h", "headers": {"Authorization": "Bearer {{secret:sec_1}}"}}}}]}),
    );

    // The project's trace_content_mode is a floor.
    let project = ok(call(&s, "GET", "/api/v1/projects", &key, None), 200)["data"][0]["id"].as_str().unwrap().to_owned();
    ok(call(&s, "PATCH", &format!("/api/v1/projects/{project}"), &key, Some(json!({"trace_content_mode": "none"}))), 200);
    assert_eq!(
        code(call(&s, "POST", "/api/v1/agents", &key, Some(json!({"ai_provider_id": p, "trace_content_mode": "full"}))), 400),
        "VALIDATION_FAILED"
    );
    let tight = create(&s, &key, json!({"ai_provider_id": p, "trace_content_mode": "none"}));
    let loosen = call(&s, "PATCH", &format!("/api/v1/agents/{}", id(&tight)), &key, Some(json!({"trace_content_mode": "full"})));
    assert_eq!(code(loosen, 400), "VALIDATION_FAILED");
}

#[test]
fn put_and_patch_are_partial_and_conditional() {
    let s = server();
    let (key, aip) = account(&s, "agents-update@example.org");
    let agent = create(&s, &key, json!({"ai_provider_id": aip, "name": "one", "max_steps": 5, "version_label": "initial"}));
    let path = format!("/api/v1/agents/{}", id(&agent));
    for method in ["PUT", "PATCH"] {
        let same = ok(call(&s, method, &path, &key, Some(json!({"name": "one", "version_label": "x"}))), 200);
        assert_eq!(same["version"], agent["version"], "{method}: a write that changes nothing makes no version");
    }
    let two = ok(call_with(&s, "PUT", &path, &key, &[("if-match", "\"1\"")], Some(json!({"instructions": "be brief"}))), 200);
    assert_eq!((two["version"].as_u64(), two["name"].as_str(), two["max_steps"].as_u64()), (Some(2), Some("one"), Some(5)), "partial");
    let stale = refused(call_with(&s, "PATCH", &path, &key, &[("if-match", "1")], Some(json!({"name": "late"}))), 409);
    assert_eq!((stale["code"].as_str(), &stale["meta"]["current_version"]), (Some("VERSION_CONFLICT"), &json!(2)), "{stale}");
    assert_eq!(code(call(&s, "PATCH", &path, &key, Some(json!({"name": "late", "expected_version": 1}))), 409), "VERSION_CONFLICT");
    let both = call_with(&s, "PATCH", &path, &key, &[("if-match", "2")], Some(json!({"name": "x", "expected_version": 3})));
    assert_eq!(code(both, 400), "VALIDATION_FAILED", "header and body disagree");
    assert_eq!(code(call_with(&s, "PATCH", &path, &key, &[("if-match", "two")], Some(json!({"name": "x"}))), 400), "VALIDATION_FAILED");
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200)["name"], "one", "nothing of a refused write lands");
    // null clears a field or restores its default; `*` only says it exists.
    let cleared = ok(call_with(&s, "PATCH", &path, &key, &[("if-match", "*")], Some(json!({"max_steps": null, "instructions": null}))), 200);
    assert_eq!((&cleared["max_steps"], &cleared["instructions"], cleared["version"].as_u64()), (&Value::Null, &Value::Null, Some(3)));
    // Switching to a route: the provider must be cleared in the same request.
    let route = ok(
        call(&s, "POST", "/api/v1/model-routes", &key, Some(json!({"name": "r", "targets": [{"ai_provider_id": aip, "model": "gpt-4o-mini"}]}))),
        201,
    );
    assert_eq!(code(call(&s, "PATCH", &path, &key, Some(json!({"model_route_id": route["id"]}))), 400), "VALIDATION_FAILED");
    let routed = ok(call(&s, "PATCH", &path, &key, Some(json!({"model_route_id": route["id"], "ai_provider_id": null}))), 200);
    assert_eq!((&routed["ai_provider_id"], &routed["model_route_id"]), (&Value::Null, &route["id"]));
    assert_eq!(code(call(&s, "DELETE", &format!("/api/v1/model-routes/{}", id(&route)), &key, None), 409), "MODEL_ROUTE_HAS_DEPENDENTS");
    assert_eq!(code(call(&s, "PATCH", &path, &key, Some(json!({"project_id": "proj_x"}))), 400), "VALIDATION_FAILED", "project_id is create-only");
    assert_eq!(code(call(&s, "PATCH", "/api/v1/agents/agent_nope", &key, Some(json!({"name": "x"}))), 404), "RESOURCE_NOT_FOUND");
}

#[test]
fn two_concurrent_patches_on_one_if_match_exactly_one_lands() {
    let s = server();
    let (key, aip) = account(&s, "agents-race@example.org");
    for round in 0..100 {
        let agent = create(&s, &key, json!({"ai_provider_id": aip}));
        let path = format!("/api/v1/agents/{}", id(&agent));
        // Both requests written before either answer is read, on connections to both shards.
        let mut conns = s.conn_per_shard();
        let auth = format!("Bearer {key}");
        for (i, c) in conns.iter_mut().enumerate() {
            let body = json!({"name": format!("writer-{i}")}).to_string();
            c.write_request("PATCH", &path, &[("authorization", &auth), ("if-match", "1")], Some(body.as_bytes()));
        }
        let answers: Vec<Response> = conns.iter_mut().map(|c| c.read_response().unwrap()).collect();
        let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, [200, 409], "round {round}: {statuses:?}");
        let winner = answers.iter().find(|r| r.status == 200).unwrap().json();
        let loser = answers.iter().find(|r| r.status == 409).unwrap().json();
        assert_eq!((loser["error"]["code"].as_str(), &loser["error"]["meta"]["current_version"]), (Some("VERSION_CONFLICT"), &json!(2)));
        let now = ok(call(&s, "GET", &path, &key, None), 200);
        assert_eq!((&now["name"], now["version"].as_u64()), (&winner["name"], Some(2)), "round {round}");
        let versions = ok(call(&s, "GET", &format!("{path}/versions"), &key, None), 200);
        assert_eq!(versions["total"], 2, "round {round}: nothing of the losing write is archived");

        // Unconditional writes are serialised too: each that lands has a version of its
        // own, and one that loses the race is refused the same way, never lost.
        for (i, c) in conns.iter_mut().enumerate() {
            let body = json!({"instructions": format!("unconditional-{i}")}).to_string();
            c.write_request("PATCH", &path, &[("authorization", &auth)], Some(body.as_bytes()));
        }
        let answers: Vec<Response> = conns.iter_mut().map(|c| c.read_response().unwrap()).collect();
        let landed: Vec<u64> = answers.iter().filter(|r| r.status == 200).map(|r| r.json()["version"].as_u64().unwrap()).collect();
        for r in answers.iter().filter(|r| r.status != 200) {
            assert_eq!((r.status, r.code()), (409, "VERSION_CONFLICT".to_owned()), "round {round}");
        }
        let mut distinct = landed.clone();
        distinct.sort();
        distinct.dedup();
        assert!(!landed.is_empty() && distinct.len() == landed.len(), "round {round}: {landed:?}");
        let now = ok(call(&s, "GET", &path, &key, None), 200);
        assert_eq!(now["version"].as_u64(), Some(2 + landed.len() as u64), "round {round}");
        assert_eq!(ok(call(&s, "GET", &format!("{path}/versions"), &key, None), 200)["total"].as_u64(), Some(2 + landed.len() as u64));
    }
}

#[test]
fn versions_are_listed_newest_first_and_restored_as_new_versions() {
    let s = server();
    let (key, aip) = account(&s, "agents-versions@example.org");
    let g = ok(call(&s, "POST", "/api/v1/guardrails", &key, Some(json!({"name": "pii"}))), 201);
    let agent = create(&s, &key, json!({"ai_provider_id": aip, "name": "one", "guardrail_ids": [g["id"]], "version_label": "initial"}));
    let path = format!("/api/v1/agents/{}", id(&agent));
    ok(call(&s, "PATCH", &path, &key, Some(json!({"instructions": "be brief", "guardrail_ids": null, "version_label": "terse"}))), 200);
    let listed = ok(call(&s, "GET", &format!("{path}/versions"), &key, None), 200);
    let numbers: Vec<u64> = listed["data"].as_array().unwrap().iter().map(|v| v["version"].as_u64().unwrap()).collect();
    assert_eq!((numbers, listed["total"].as_u64()), (vec![2, 1], Some(2)));
    let v1 = ok(call(&s, "GET", &format!("{path}/versions/1"), &key, None), 200);
    assert!(v1["id"].as_str().unwrap().starts_with("agver_"));
    assert_eq!((&v1["label"], &v1["config"]["name"], &v1["config"]["instructions"]), (&json!("initial"), &json!("one"), &Value::Null));
    assert_eq!((&v1["agent_id"], &v1["created_by_principal_type"]), (&agent["id"], &json!("api_key")));
    assert!(v1["config"].get("id").is_none() && v1["config"].get("version").is_none(), "identity is not config");
    for bad in ["0", "-1", "one"] {
        assert_eq!(code(call(&s, "GET", &format!("{path}/versions/{bad}"), &key, None), 400), "VALIDATION_FAILED", "{bad}");
    }
    assert_eq!(code(call(&s, "GET", &format!("{path}/versions/9"), &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "POST", &format!("{path}/versions/9/restore"), &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(code(call(&s, "POST", &format!("{path}/versions/1/restore"), &key, Some(json!({"label": "x", "v": 1}))), 400), "VALIDATION_FAILED");
    assert_eq!(code(call_with(&s, "POST", &format!("{path}/versions/1/restore"), &key, &[("if-match", "1")], None), 409), "VERSION_CONFLICT");

    let restored = ok(call(&s, "POST", &format!("{path}/versions/1/restore"), &key, None), 200);
    assert_eq!(
        (restored["version"].as_u64(), &restored["instructions"], &restored["guardrail_ids"]),
        (Some(3), &Value::Null, &json!([g["id"]])),
        "full replacement"
    );
    assert_eq!(ok(call(&s, "GET", &format!("{path}/versions/3"), &key, None), 200)["label"], "restored from v1");
    let again = ok(call(&s, "POST", &format!("{path}/versions/1/restore"), &key, Some(json!({"label": "again"}))), 200);
    assert_eq!(again["version"], 3, "restoring the config the agent holds is a no-op");
    let labelled =
        ok(call_with(&s, "POST", &format!("{path}/versions/2/restore"), &key, &[("if-match", "3")], Some(json!({"label": "rollback-42"}))), 200);
    assert_eq!(labelled["version"], 4);
    assert_eq!(ok(call(&s, "GET", &format!("{path}/versions/4"), &key, None), 200)["label"], "rollback-42");
}

#[test]
fn a_restore_revalidates_what_the_snapshot_names() {
    let s = server();
    let (key, aip) = account(&s, "agents-revalidate@example.org");
    let g = ok(call(&s, "POST", "/api/v1/guardrails", &key, Some(json!({"name": "pii"}))), 201);
    let agent = create(&s, &key, json!({"ai_provider_id": aip, "guardrail_ids": [g["id"]]}));
    let path = format!("/api/v1/agents/{}", id(&agent));
    assert_eq!(code(call(&s, "DELETE", &format!("/api/v1/guardrails/{}", id(&g)), &key, None), 409), "GUARDRAIL_HAS_REFERENCES");
    ok(call(&s, "PATCH", &path, &key, Some(json!({"guardrail_ids": []}))), 200);
    ok(call(&s, "DELETE", &format!("/api/v1/guardrails/{}", id(&g)), &key, None), 204);
    assert_eq!(code(call(&s, "POST", &format!("{path}/versions/1/restore"), &key, None), 400), "GUARDRAIL_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200)["version"], 2);
}

#[test]
fn a_gated_rollout_promotes_the_pinned_canary_and_abort_goes_back_to_stable() {
    let s = server();
    let (key, aip) = account(&s, "agents-rollout@example.org");
    let agent = create(&s, &key, json!({"ai_provider_id": aip, "name": "stable"}));
    let path = format!("/api/v1/agents/{}", id(&agent));
    ok(call(&s, "PATCH", &path, &key, Some(json!({"name": "canary"}))), 200);
    let eval = ok(call(&s, "POST", "/api/v1/evals", &key, Some(json!({"name": "quality", "agent_id": agent["id"]}))), 201);
    let release = format!("{path}/release");
    for (body, why) in [
        (json!({"stable_version": 1, "canary_version": 1, "canary_percent": 10}), "canary = stable"),
        (json!({"stable_version": 1, "canary_version": 7, "canary_percent": 10}), "no version 7"),
        (json!({"stable_version": 1, "canary_version": 2, "canary_percent": 101}), "over 100"),
        (json!({"stable_version": 1, "canary_version": 2, "canary_percent": -1}), "negative"),
        (json!({"stable_version": 0, "canary_version": 2, "canary_percent": 10}), "version 0"),
        (json!({"stable_version": 1, "canary_version": 2}), "percent missing"),
        (json!({"stable_version": 1, "canary_version": 2, "canary_percent": 10, "promotion_gate": "eval_other"}), "no such eval"),
        (json!({"stable_version": 1, "canary_version": 2, "canary_percent": 10, "extra": true}), "strict"),
    ] {
        assert_eq!(code(call(&s, "PUT", &release, &key, Some(body)), 400), "VALIDATION_FAILED", "{why}");
    }
    assert_eq!(code(call(&s, "POST", &format!("{release}/promote"), &key, None), 409), "NO_ACTIVE_RELEASE");
    assert_eq!(code(call(&s, "POST", &format!("{release}/abort"), &key, None), 409), "NO_ACTIVE_RELEASE");
    let set = json!({"stable_version": 1, "canary_version": 2, "canary_percent": 20, "promotion_gate": eval["id"]});
    let running = ok(call(&s, "PUT", &release, &key, Some(set.clone())), 200);
    assert_eq!(running["active_release"], set);
    // An edit mid-rollout is a draft: a new version, the split untouched.
    let draft = ok(call(&s, "PATCH", &path, &key, Some(json!({"name": "draft"}))), 200);
    assert_eq!((draft["version"].as_u64(), &draft["active_release"]), (Some(3), &set));
    // The gate: a run is Quarry's to execute (evaluations, issue 37): a posted one is
    // refused and clears nothing (tests/it/soat_evals.rs clears a gate with a real run).
    let runs = format!("/api/v1/evals/{}/runs", id(&eval));
    for posted in [json!({"agent_version": 2, "status": "completed", "passed": true}), json!({"agent_version": 9})] {
        assert_eq!(code(call(&s, "POST", &runs, &key, Some(posted)), 400), "VALIDATION_FAILED");
    }
    assert_eq!(code(call(&s, "POST", &format!("{release}/promote"), &key, None), 409), "PROMOTION_GATE_UNMET");
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200), draft, "the rollout is left untouched");
    // The same split without a gate promotes the pinned canary, not the draft.
    let ungated = json!({"stable_version": 1, "canary_version": 2, "canary_percent": 20});
    ok(call(&s, "PUT", &release, &key, Some(ungated)), 200);
    let promoted = ok(call(&s, "POST", &format!("{release}/promote"), &key, None), 200);
    assert_eq!(
        (promoted["version"].as_u64(), &promoted["name"], &promoted["active_release"]),
        (Some(4), &json!("canary"), &Value::Null),
        "the pinned canary, not the draft"
    );
    let v4 = ok(call(&s, "GET", &format!("{path}/versions/4"), &key, None), 200);
    assert_eq!((&v4["eval_run_id"], v4["label"].as_str().unwrap().contains("v2")), (&Value::Null, true));

    // Abort: back to the stable version's config, not the draft's.
    ok(call(&s, "PATCH", &path, &key, Some(json!({"name": "next"}))), 200);
    ok(call(&s, "PUT", &release, &key, Some(json!({"stable_version": 4, "canary_version": 5, "canary_percent": 50}))), 200);
    ok(call(&s, "PATCH", &path, &key, Some(json!({"name": "draft again"}))), 200);
    let back = ok(call(&s, "POST", &format!("{release}/abort"), &key, None), 200);
    assert_eq!((&back["name"], &back["active_release"], back["version"].as_u64()), (&json!("canary"), &Value::Null, Some(7)));
}

#[test]
fn another_account_and_a_key_of_another_project_see_no_agent() {
    let s = server();
    let (key, aip) = account(&s, "agents-owner@example.org");
    let (stranger, _) = account(&s, "agents-stranger@example.org");
    let other = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Other"}))), 201);
    let sk = ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "ci", "project_id": other["id"]}))), 201)["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = create(&s, &key, json!({"ai_provider_id": aip}));
    let path = format!("/api/v1/agents/{}", id(&agent));
    let routes: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", path.clone(), None),
        ("PUT", path.clone(), Some(json!({"name": "x"}))),
        ("PATCH", path.clone(), Some(json!({"name": "x"}))),
        ("DELETE", format!("{path}?force=true"), None),
        ("GET", format!("{path}/versions"), None),
        ("GET", format!("{path}/versions/1"), None),
        ("POST", format!("{path}/versions/1/restore"), None),
        ("PUT", format!("{path}/release"), Some(json!({"stable_version": 1, "canary_version": 2, "canary_percent": 5}))),
        ("POST", format!("{path}/release/promote"), None),
        ("POST", format!("{path}/release/abort"), None),
    ];
    for k in [&stranger, &sk] {
        for (method, p, body) in &routes {
            assert_eq!(code(call(&s, method, p, k, body.clone()), 404), "RESOURCE_NOT_FOUND", "{method} {p}");
        }
        assert_eq!(ok(call(&s, "GET", "/api/v1/agents", k, None), 200)["total"], 0);
    }
    // The project key cannot name the agent's project, nor use its provider from its own.
    let named = format!("/api/v1/agents?project_id={}", agent["project_id"].as_str().unwrap());
    assert_eq!(code(call(&s, "GET", &named, &sk, None), 403), "API_KEY_PROJECT_SCOPE");
    assert_eq!(code(call(&s, "POST", "/api/v1/agents", &sk, Some(json!({"ai_provider_id": aip}))), 404), "AI_PROVIDER_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", &path, &key, None), 200)["version"], 1, "untouched");
}

/// `tests/schemathesis/soat_agents.sh`: schemathesis over the agents, versions and
/// release operations of the bundled spec finds no server error and no response
/// outside its schema. Skipped, as `schema.rs`'s run, without the test venv.
#[test]
fn the_agents_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_agents.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("ST_BIN", super::server::bin())
        .env("ST_TIME_LIMIT", "200")
        .output()
        .expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let (generated, all_passed) = super::schema::generated_and_passed(&stdout).unwrap_or_else(|| panic!("no test-case count in:\n{stdout}"));
    assert!(generated > 500 && all_passed, "{generated} cases:\n{stdout}");
}
