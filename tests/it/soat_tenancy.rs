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
        // evaluations (issue 37)
        p if p.ends_with("/runs") => json!({"agent_version": 1}),
        p if p.ends_with("/cancel") => return None,
        p if p.ends_with("/items/from-generation") => json!({"generation_id": "gen_tenancy"}),
        p if p.ends_with("/items") => json!({"input": [{"role": "user", "content": "hi"}]}),
        "/api/v1/datasets/{dataset_id}/items/{item_id}" => json!({"expected_output": "x"}),
        // guardrails and approvals (issue 37)
        p if p.ends_with("/approve") => return None,
        p if p.ends_with("/reject") => json!({"reason": "no"}),
        p if p.ends_with("/evaluate") => json!({"args": {}}),
        p if p.ends_with("/call") => json!({"input": {}}),
        p if p.starts_with("/api/v1/memory-entries") => json!({"content": "renamed"}),
        "/api/v1/generations/{generation_id}" => json!({"metadata": {"k": "v"}}),
        // sessions
        p if p.ends_with("/tags") => json!({"k": "v"}),
        "/api/v1/sessions/{session_id}/generate" => json!({}),
        "/api/v1/sessions/{session_id}/messages" => json!({"message": "hi"}),
        "/api/v1/sessions/{session_id}/tool-outputs" => {
            json!({"generation_id": "gen_x", "tool_outputs": [{"tool_call_id": "call_1", "output": "ok"}]})
        }
        "/api/v1/conversations/{conversation_id}/generate" => json!({"agent_id": "agent_x"}),
        "/api/v1/conversations/{conversation_id}/messages" => json!({"message": "hi", "role": "user"}),
        p if p.ends_with("/generate") => json!({"messages": [{"role": "user", "content": "hi"}]}),
        p if p.ends_with("/tool-outputs") => json!({"tool_outputs": [{"tool_call_id": "call_1", "output": "ok"}]}),
        // users (issue 36)
        p if p.ends_with("/policies") => json!({"policy_ids": []}),
        // policies, exceptions (issue 37)
        p if p.starts_with("/api/v1/policies/") => json!({"document": {"statement": []}}),
        p if p.ends_with("/acknowledge") => return None,
        p if p.ends_with("/resolve") => json!({"note": "done"}),
        // files (issue 36)
        p if p.ends_with("/metadata") => json!({"metadata": "{}"}),
        p if p.starts_with("/api/v1/files/") && p.ends_with("/tags") => json!({"k": "v"}),
        // SOAT documents (issue 36, knowledge).
        p if p.ends_with("/tags") => json!({"k": "v"}),
        p if p.ends_with("/ingest") || p.ends_with("/ingestion-callback") => json!({}),
        p if p.starts_with("/api/v1/documents") => json!({"title": "renamed"}),
        p if p.starts_with("/api/v1/quotas") => json!({"limit": 10}), // quotas (issue 37)
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
    // evaluations (issue 37): a dataset, an item, an eval and a run of it (its item's
    // generation fails on the closed port; the run is recorded all the same).
    let dataset = make("/api/v1/datasets", json!({"name": "suite"}));
    let item = make(&format!("/api/v1/datasets/{dataset}/items"), json!({"input": [{"role": "user", "content": "hi"}], "expected_output": "hi"}));
    let eval = make("/api/v1/evals", json!({"name": "quality", "agent_id": agent, "dataset_id": dataset, "scorers": [{"type": "exact_match"}]}));
    let eval_run = make(&format!("/api/v1/evals/{eval}/runs"), json!({"wait": true}));
    let route = make("/api/v1/model-routes", json!({"name": "r", "targets": [{"ai_provider_id": aip, "model": "m"}]}));
    let memory = make("/api/v1/memories", json!({"name": "notes"}));
    let file = make("/api/v1/files/upload/base64", json!({"content": "aGVsbG8=", "filename": "a.txt"})); // files (issue 36)
    let entry = make("/api/v1/memory-entries", json!({"memory_id": memory, "content": "The user likes tea."}));
    // sessions: a session, its conversation and a message of it.
    let session = ok(call(&s, "POST", "/api/v1/sessions", &sk1, Some(json!({"agent_id": agent}))), 201);
    let conversation = session["conversation_id"].as_str().unwrap().to_owned();
    let message =
        ok(call(&s, "POST", &format!("/api/v1/conversations/{conversation}/messages"), &sk1, Some(json!({"message": "hi", "role": "user"}))), 201)
            ["document_id"]
            .as_str()
            .unwrap()
            .to_owned();
    // webhooks: one taking every event, so the seeded generation below leaves a delivery.
    let webhook = make("/api/v1/webhooks", json!({"name": "all", "url": "http://127.0.0.1:9/hook", "events": ["*"]}));
    // SOAT documents (issue 36, knowledge).
    let document = make("/api/v1/documents", json!({"path": "/tenancy/a.txt", "content": "Refunds take five days."}));
    // actors (issue 36)
    let actor = make("/api/v1/actors", json!({"name": "Alice", "external_id": "+15550100"}));
    // chats (issue 36)
    let chat = make("/api/v1/chats", json!({"ai_provider_id": aip, "name": "support"}));
    // quotas (issue 37)
    let quota = make("/api/v1/quotas", json!({"scope": "project", "metric": "tokens", "window": "rolling_1h", "limit": 1000}));
    // usage thresholds (issue 37)
    let threshold = make("/api/v1/usage/thresholds", json!({"metric": "tokens", "window": "calendar_month", "threshold": 1000}));
    // A generation and its trace, written into the store as the runner writes them.
    let o = super::soat_generations::Owner { account_id: owner_account.clone(), project_id: p1.clone(), agent_id: agent.clone() };
    let (trace, generation) = (
        super::soat_generations::trace(&o, "trace_tenancy", None, None, "2026-01-01T00:00:00Z"),
        super::soat_generations::generation(&o, "gen_tenancy", "trace_tenancy", "2026-01-01T00:00:00Z"),
    );
    super::soat_generations::seed(&mut s, vec![trace], vec![generation]);
    // guardrails and approvals (issue 37): an approval item of P1, as a pause files one.
    let approval = seed_approval(&mut s, &o.account_id, &p1);
    // users (issue 36): a user of account A, made by its account key (users are the
    // account's, not a project's: a project-bound key manages none, 403).
    let user = id(&ok(call(&s, "POST", "/api/v1/users", &owner, Some(json!({"username": "tenancy-user", "password": "Tenancy-1"}))), 201));
    let deliveries = ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={webhook}"), &sk1, None), 200);
    let delivery = id(&deliveries["data"][0]);
    // policies (issue 37): a policy of account A (the account's, as users are); an audit
    // entry of P1 (the secret's create above); an exception of P1, filed by a generation
    // failing on the provider (nothing listens on port 9).
    let policy = id(&ok(call(&s, "POST", "/api/v1/policies", &owner, Some(json!({"document": {"statement": []}}))), 201));
    let audit_entry = id(&ok(call(&s, "GET", "/api/v1/audit-log?action=secrets:CreateSecret", &sk1, None), 200)["data"][0]);
    let failed =
        call(&s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), &sk1, Some(json!({"messages": [{"role": "user", "content": "hi"}]})));
    assert!(failed.status >= 400, "{}", failed.text());
    let exception = id(&ok(call(&s, "GET", "/api/v1/exceptions", &sk1, None), 200)["data"][0]);
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
        // evaluations (issue 37)
        ("dataset_id", dataset),
        ("item_id", item),
        ("eval_run_id", eval_run),
        ("route_id", route),
        ("memory_id", memory),
        ("entry_id", entry),
        ("document_id", document),
        ("generation_id", "gen_tenancy".into()),
        ("trace_id", "trace_tenancy".into()),
        // sessions
        ("session_id", id(&session)),
        ("conversation_id", conversation),
        ("user_id", user),
        ("file_id", file),
        ("webhook_id", webhook),
        ("delivery_id", delivery),
        // actors
        ("actor_id", actor),
        ("chat_id", chat),         // chats (issue 36)
        ("approval_id", approval), // approvals (issue 37)
        // policies (issue 37)
        ("policy_id", policy),
        ("exception_id", exception),
        ("quota_id", quota),         // quotas (issue 37)
        ("threshold_id", threshold), // usage thresholds (issue 37)
    ];
    let mut walked = Vec::new();
    for row in quarry::api::routes::table(&quarry::config::Config::defaults()) {
        if !row.path.starts_with("/api/v1/") || !row.path.contains('{') {
            continue;
        }
        // A presigned upload's token is its credential: whoever holds it uploads into the
        // project it names, and no other (soat_files' presigned test holds that).
        if row.path == "/api/v1/files/upload/{token}" {
            continue;
        }
        let mut path = row.path.to_owned();
        // A conversation's messages are named `document_id` too (sessions, issue 36).
        if path.starts_with("/api/v1/conversations/") {
            path = path.replace("{document_id}", &message);
        }
        // An audit entry is named `entry_id` too (policies, issue 37).
        if path.starts_with("/api/v1/audit-log/") {
            path = path.replace("{entry_id}", &audit_entry);
        }
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
            (p, _) if p.starts_with("/api/v1/users/") => (403, "FORBIDDEN"),
            // Policies are the account's, managed by its admins (policies, issue 37).
            (p, _) if p.starts_with("/api/v1/policies/") => (403, "FORBIDDEN"),
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
        // A user is the account's: its own key reads it (users, issue 36).
        let control = if path.starts_with("/api/v1/users/") || path.starts_with("/api/v1/policies/") { &owner } else { &sk1 };
        let r = call(&s, method, path, control, None);
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

/// Regression (issue 2/9, finding 1, the agent paths): a project key (`sk_…`) got 403
/// on `/v1/collections/{c}/documents/{d}/pages/0` but read the same text through the
/// builtin `collections:SearchCollection` tool, a `document` message and
/// `knowledge_config.document_ids`, because the agent paths authorised `/v1` data by
/// account, not by the key. One rule now holds on every path: an `/api/v1` key, bound
/// to a project or not, reads no collection and no document of `/v1`, whoever wrote the
/// agent or the tool it runs; the account key reads them on every path.
#[test]
fn a_project_key_reads_no_v1_document_through_any_agent_path() {
    use super::scripted_llm::{from, text, tools, Scripted};
    use super::soat_generate::{server, setup};
    const SECRET: &str = "azure heron 4417";
    let up = Scripted::start();
    let s = server();
    let owner = setup(&s, &up, "reach-owner@example.org");
    let col = id(&ok(call(&s, "POST", "/v1/collections", &owner.key, Some(json!({"name": "ledger"}))), 201));
    let doc = ok(
        call(
            &s,
            "POST",
            &format!("/v1/collections/{col}/documents"),
            &owner.key,
            Some(json!({"title": "Vault", "text": format!("The vault code is {SECRET}.")})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The model says so when the document's text reached it; otherwise it asks the
    // collection once (the tool call's arguments then stand in the transcript).
    let (c, echo) = (col.clone(), SECRET.to_owned());
    up.otherwise(from(move |prompt| {
        if prompt.contains(&echo) {
            text("I read the vault.")
        } else if prompt.contains(&c) {
            text("Nothing read.")
        } else {
            tools(&[("find", json!({"collection_id": c, "query": "vault code"}))])
        }
    }));
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner.key, Some(json!({"name": "P2"}))), 201));
    let key = |project: Option<&str>| {
        let body = project.map_or_else(|| json!({"name": "any"}), |p| json!({"name": "bound", "project_id": p}));
        ok(call(&s, "POST", "/api/v1/api-keys", &owner.key, Some(body)), 201)["key"].as_str().unwrap().to_owned()
    };
    let (bound, unscoped) = (key(Some(&p2)), key(None));
    let in_p2 = |body: Value| {
        let mut b = body;
        b["project_id"] = json!(p2);
        b
    };
    // The account's own provider and a builtin search tool in P2, written by the owner.
    let provider = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &owner.key,
            Some(in_p2(json!({"name": "fake2", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"}))),
        ),
        201,
    ));
    let find = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/tools",
            &owner.key,
            Some(in_p2(json!({"name": "find", "type": "builtin", "actions": ["collections:SearchCollection"]}))),
        ),
        201,
    ));
    let searching = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/agents",
            &owner.key,
            Some(in_p2(json!({"ai_provider_id": provider, "instructions": "You help.", "tool_bindings": [{"tool_id": find}]}))),
        ),
        201,
    ));
    let knowing = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/agents",
            &owner.key,
            Some(in_p2(json!({"ai_provider_id": provider, "instructions": "You help.", "knowledge_config": {"document_ids": [doc]}}))),
        ),
        201,
    ));
    let plain =
        id(&ok(call(&s, "POST", "/api/v1/agents", &owner.key, Some(in_p2(json!({"ai_provider_id": provider, "instructions": "You help."})))), 201));
    let ask = || json!({"messages": [{"role": "user", "content": "What is the vault code?"}]});
    let document_message = json!({"messages": [{"role": "user", "content": {"type": "document", "document_id": doc}}]});
    let search_call = json!({"action": "collections:SearchCollection", "input": {"collection_id": col, "query": "vault code"}});

    for (who, k) in [("a bound sk_ key", &bound), ("an unscoped sk_ key", &unscoped)] {
        let leaks = |r: &super::client::Response, path: &str| {
            assert!(!r.text().contains(SECRET), "{who}, {path}: the document's text came back: {}", r.text())
        };
        // The route itself.
        let r = call(&s, "GET", &format!("/v1/collections/{col}/documents/{doc}/pages/0"), k, None);
        assert_eq!(r.status, 403, "{who}: {}", r.text());
        // The builtin tool called directly.
        let r = call(&s, "POST", &format!("/api/v1/tools/{find}/call"), k, Some(search_call.clone()));
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (403, Some("API_KEY_PROJECT_SCOPE")), "{who}, tool call: {}", r.text());
        leaks(&r, "tool call");
        // The builtin tool called by the model in a generation.
        let r = call(&s, "POST", &format!("/api/v1/agents/{searching}/generate?wait=true"), k, Some(ask()));
        leaks(&r, "the model's tool call");
        let g = r.json();
        let transcript = call(&s, "GET", &format!("/api/v1/generations/{}/transcript", g["id"].as_str().unwrap_or("none")), k, None);
        leaks(&transcript, "the transcript");
        assert_ne!(g["output"]["content"], "I read the vault.", "{who}: {g}");
        // A document message.
        let before = ok(call(&s, "GET", &format!("/api/v1/generations?project_id={p2}"), &owner.key, None), 200)["total"].clone();
        let r = call(&s, "POST", &format!("/api/v1/agents/{plain}/generate?wait=true"), k, Some(document_message.clone()));
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (403, Some("API_KEY_PROJECT_SCOPE")), "{who}, document message: {}", r.text());
        leaks(&r, "document message");
        assert_eq!(
            ok(call(&s, "GET", &format!("/api/v1/generations?project_id={p2}"), &owner.key, None), 200)["total"],
            before,
            "{who}: nothing ran"
        );
        // Knowledge the owner configured, run by the key: refused, never read.
        let r = call(&s, "POST", &format!("/api/v1/agents/{knowing}/generate?wait=true"), k, Some(ask()));
        assert_eq!(r.status, 403, "{who}, configured knowledge: {}", r.text());
        leaks(&r, "configured knowledge");
        // Knowledge the key names itself: on an agent, on a generation, on a knowledge search.
        let r = call(
            &s,
            "POST",
            "/api/v1/agents",
            k,
            Some(in_p2(json!({"ai_provider_id": provider, "instructions": "x", "knowledge_config": {"document_ids": [doc]}}))),
        );
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (403, Some("API_KEY_PROJECT_SCOPE")), "{who}, agent knowledge: {}", r.text());
        let mut named = ask();
        named["knowledge_config"] = json!({"document_ids": [doc]});
        let r = call(&s, "POST", &format!("/api/v1/agents/{plain}/generate?wait=true"), k, Some(named));
        assert_eq!(r.status, 403, "{who}, generation knowledge: {}", r.text());
        leaks(&r, "generation knowledge");
        let r = call(&s, "POST", "/api/v1/knowledge/search", k, Some(in_p2(json!({"query": "vault code", "document_ids": [doc]}))));
        assert_eq!(r.status, 403, "{who}, knowledge search: {}", r.text());
        leaks(&r, "knowledge search");
    }
    let upstream_saw = serde_json::to_string(&up.bodies()).unwrap();
    assert!(!upstream_saw.contains(SECRET), "no project key's run sent the document to the model");

    // The account key reads it on every path.
    let r = ok(call(&s, "POST", &format!("/api/v1/tools/{find}/call"), &owner.key, Some(search_call)), 200);
    assert!(r.to_string().contains(SECRET), "{r}");
    let g = ok(call(&s, "POST", &format!("/api/v1/agents/{searching}/generate?wait=true"), &owner.key, Some(ask())), 200);
    assert_eq!(g["output"]["content"], "I read the vault.", "{g}");
    let g = ok(call(&s, "POST", &format!("/api/v1/agents/{plain}/generate?wait=true"), &owner.key, Some(document_message.clone())), 200);
    assert_eq!(g["output"]["content"], "I read the vault.", "{g}");
    let g = ok(call(&s, "POST", &format!("/api/v1/agents/{knowing}/generate?wait=true"), &owner.key, Some(ask())), 200);
    assert_eq!(g["output"]["content"], "I read the vault.", "{g}");

    // Another account's key names the document: it does not exist for it, on any path.
    let other = setup(&s, &up, "reach-other@example.org");
    let theirs = |body: Value| {
        let mut b = body;
        b["ai_provider_id"] = json!(other.provider);
        b
    };
    let r = call(&s, "POST", "/api/v1/agents", &other.key, Some(theirs(json!({"instructions": "x", "knowledge_config": {"document_ids": [doc]}}))));
    assert_eq!((r.status, r.json()["error"]["code"].as_str()), (404, Some("RESOURCE_NOT_FOUND")), "foreign knowledge: {}", r.text());
    let their_agent = id(&ok(call(&s, "POST", "/api/v1/agents", &other.key, Some(theirs(json!({"instructions": "x"})))), 201));
    let r = call(&s, "PATCH", &format!("/api/v1/agents/{their_agent}"), &other.key, Some(json!({"knowledge_config": {"document_ids": [doc]}})));
    assert_eq!(r.status, 404, "foreign knowledge on a change: {}", r.text());
    let generate = |body: Value| call(&s, "POST", &format!("/api/v1/agents/{their_agent}/generate?wait=true"), &other.key, Some(body));
    let r = generate(document_message.clone());
    assert_eq!((r.status, r.json()["error"]["meta"]["field"].as_str()), (404, Some("messages[0].content.document_id")), "{}", r.text());
    let mut named = ask();
    named["knowledge_config"] = json!({"document_ids": [doc]});
    assert_eq!(generate(named).status, 404);
    let r = call(&s, "POST", "/api/v1/knowledge/search", &other.key, Some(json!({"query": "vault code", "document_ids": [doc]})));
    assert_eq!((r.status, r.json()["error"]["meta"]["field"].as_str()), (404, Some("document_ids[0]")), "{}", r.text());
    assert_eq!(ok(call(&s, "GET", "/api/v1/generations", &other.key, None), 200)["total"], 0, "nothing ran");
}

/// guardrails and approvals (issue 37): a pending approval item of `project_id`, written
/// into the store with the server stopped (items are filed only by a paused generation).
fn seed_approval(s: &mut TestServer, account_id: &str, project_id: &str) -> String {
    assert!(s.terminate(std::time::Duration::from_secs(20)).success());
    let id = "apr_tenancy".to_owned();
    {
        let records = crate::records_of(s);
        let at = "2026-01-01T00:00:00.000Z".to_owned();
        let a = quarry::store::ApprovalRecord {
            id: id.clone(),
            account_id: account_id.into(),
            project_id: project_id.into(),
            origin: "tool_call".into(),
            status: "pending".into(),
            proposed_action: Some(json!({"tool_id": "tool_x", "action": "send", "arguments": {}})),
            reasoning: None,
            evidence: None,
            predicted_impact: None,
            expires_at: "2999-01-01T00:00:00.000Z".into(),
            dedup_key: Some("k".into()),
            generation_id: Some("gen_tenancy".into()),
            session_id: None,
            agent_id: None,
            tool_call_id: Some("call_1".into()),
            policy_version: None,
            previous_item_id: None,
            resolved_by: None,
            resolution_reason: None,
            edited_arguments: None,
            created_at: at.clone(),
            updated_at: at,
            also_waiting: Vec::new(),
        };
        records.insert(&a).expect("an approval is written");
    }
    s.restart();
    id
}
