//! SOAT identity (`/api/v1`): projects, project keys and their scope, revocation, AI providers.
//!
//! SOAT identity through HTTP (`/api/v1`): the default project, project keys and
//! their scope (403 `API_KEY_PROJECT_SCOPE`), revocation on every shard at once,
//! another account's records as absent (404) on every route, pagination, strict
//! bodies, and AI providers: CRUD, `/models`, and a provider made at run time used
//! at once against a loopback upstream.

use serde_json::{json, Value};

use super::client::Response;
use super::server::TestServer;
use super::soat::{call, ok};

/// Room for a test's requests in the default plan's bucket.
use super::plans::ROOMY;

fn start() -> TestServer {
    TestServer::with_config(ROOMY)
}

/// The SOAT error code of an error answer, after checking its status and shape.
fn refused(r: Response, status: u16) -> String {
    super::soat::refused(r, status)["code"].as_str().unwrap().to_owned()
}

/// A project key (`sk_…`) bound to `project`, made with `key`: (id, secret).
fn project_key(s: &TestServer, key: &str, project: Option<&str>) -> (String, String) {
    let body = match project {
        Some(p) => json!({"name": "ci", "project_id": p}),
        None => json!({"name": "ci"}),
    };
    let k = ok(call(s, "POST", "/api/v1/api-keys", key, Some(body)), 201);
    (k["id"].as_str().unwrap().to_owned(), k["key"].as_str().unwrap().to_owned())
}

#[test]
fn an_account_key_acts_in_its_default_project_unless_it_names_another() {
    let s = start();
    let (_, key) = s.signup("soat-default@example.org");
    let listed = ok(call(&s, "GET", "/api/v1/projects", &key, None), 200);
    assert_eq!((listed["total"].as_u64(), listed["limit"].as_u64(), listed["offset"].as_u64()), (Some(1), Some(50), Some(0)), "{listed}");
    let default = listed["data"][0].clone();
    assert!(default["id"].as_str().unwrap().starts_with("proj_") && default["is_default"] == true, "{default}");
    // Made once, whichever shard answers first.
    for c in s.conn_per_shard().iter_mut() {
        let auth = format!("Bearer {key}");
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &auth)], None);
        assert_eq!(r.json()["total"], 1, "{}", r.text());
    }
    let other = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Research"}))), 201);
    let other_id = other["id"].as_str().unwrap();
    assert_eq!(other["is_default"], false);
    // A key made without naming a project is unscoped; one naming it is bound there.
    let (_, bound) = project_key(&s, &key, Some(other_id));
    let k = ok(call(&s, "GET", "/api/v1/api-keys", &bound, None), 200);
    assert_eq!(k["data"][0]["project_id"], other_id, "{k}");
}

#[test]
fn a_project_key_acts_only_in_its_project() {
    let s = start();
    let (_, key) = s.signup("soat-scope@example.org");
    let a = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "A"}))), 201)["id"].as_str().unwrap().to_owned();
    let b = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "B"}))), 201)["id"].as_str().unwrap().to_owned();
    let (_, sk) = project_key(&s, &key, Some(&a));
    assert!(sk.starts_with("sk_") && sk.len() == 46, "{sk}");
    // Its own project, and nothing else.
    let seen = ok(call(&s, "GET", "/api/v1/projects", &sk, None), 200);
    assert_eq!((seen["total"].as_u64(), seen["data"][0]["id"].as_str()), (Some(1), Some(a.as_str())), "{seen}");
    ok(call(&s, "GET", &format!("/api/v1/projects/{a}"), &sk, None), 200);
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/projects/{b}"), &sk, None), 403), "API_KEY_PROJECT_SCOPE");
    assert_eq!(refused(call(&s, "PATCH", &format!("/api/v1/projects/{b}"), &sk, Some(json!({"name": "x"}))), 403), "API_KEY_PROJECT_SCOPE");
    // Naming another project in a body or a query is 403 too.
    let mint = call(&s, "POST", "/api/v1/api-keys", &sk, Some(json!({"name": "x", "project_id": b})));
    assert_eq!(refused(mint, 403), "API_KEY_PROJECT_SCOPE");
    let unscoped = call(&s, "POST", "/api/v1/api-keys", &sk, Some(json!({"name": "x", "project_id": null})));
    assert_eq!(refused(unscoped, 403), "API_KEY_PROJECT_SCOPE");
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers?project_id={b}"), &sk, None), 403), "API_KEY_PROJECT_SCOPE");
    let elsewhere = json!({"project_id": b, "name": "p", "provider": "openai", "default_model": "m"});
    assert_eq!(refused(call(&s, "POST", "/api/v1/ai-providers", &sk, Some(elsewhere)), 403), "API_KEY_PROJECT_SCOPE");
    // What it makes lands in its project, whatever the account's default.
    let made = ok(call(&s, "POST", "/api/v1/ai-providers", &sk, Some(json!({"name": "p", "provider": "openai", "default_model": "m"}))), 201);
    assert_eq!(made["project_id"], a.as_str());
    let in_b = ok(
        call(&s, "POST", "/api/v1/ai-providers", &key, Some(json!({"project_id": b, "name": "q", "provider": "openai", "default_model": "m"}))),
        201,
    );
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{}", in_b["id"].as_str().unwrap()), &sk, None), 404), "RESOURCE_NOT_FOUND");
    ok(call(&s, "GET", &format!("/api/v1/ai-providers/{}", in_b["id"].as_str().unwrap()), &key, None), 200);
    // A key it makes is bound to its project; it cannot make or delete projects.
    let made = ok(call(&s, "POST", "/api/v1/api-keys", &sk, Some(json!({"name": "child"}))), 201);
    assert_eq!(made["project_id"], a.as_str());
    assert_eq!(refused(call(&s, "POST", "/api/v1/projects", &sk, Some(json!({"name": "C"}))), 403), "FORBIDDEN");
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/projects/{a}"), &sk, None), 403), "FORBIDDEN");
    // Off /api/v1 it is no key at all.
    assert_eq!(s.get("/v1/collections", Some(&sk)).status, 403);
}

#[test]
fn a_deleted_key_is_refused_on_every_shard_at_once() {
    let s = start();
    let (_, key) = s.signup("soat-revoke@example.org");
    let a = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "A"}))), 201)["id"].as_str().unwrap().to_owned();
    let b = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "B"}))), 201)["id"].as_str().unwrap().to_owned();
    let (id, sk) = project_key(&s, &key, Some(&a));
    let auth = format!("Bearer {sk}");
    let mut conns = s.conn_per_shard();
    // Every shard has the key cached, bound to A.
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &auth)], None);
        assert_eq!(r.json()["data"][0]["id"], a.as_str(), "{}", r.text());
    }
    // Moved to B, it acts in B alone, on every shard, from the answer on.
    ok(call(&s, "PUT", &format!("/api/v1/api-keys/{id}"), &key, Some(json!({"project_id": b}))), 200);
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &auth)], None);
        assert_eq!(r.json()["data"][0]["id"], b.as_str(), "shard {}: {}", r.shard(), r.text());
    }
    ok(call(&s, "DELETE", &format!("/api/v1/api-keys/{id}"), &key, None), 204);
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")), "shard {}: {}", r.shard(), r.text());
    }
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/api-keys/{id}"), &key, None), 404), "RESOURCE_NOT_FOUND");
    // A project's keys go with it.
    let (_, in_b) = project_key(&s, &key, Some(&b));
    ok(call(&s, "GET", "/api/v1/projects", &in_b, None), 200);
    ok(call(&s, "DELETE", &format!("/api/v1/projects/{b}"), &key, None), 204);
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &format!("Bearer {in_b}"))], None);
        assert_eq!(r.status, 401, "shard {}: {}", r.shard(), r.text());
    }
}

#[test]
fn another_accounts_records_are_absent_on_every_route() {
    let s = start();
    let (_, owner) = s.signup("soat-owner@example.org");
    let (_, stranger) = s.signup("soat-stranger@example.org");
    let project = ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "Mine"}))), 201)["id"].as_str().unwrap().to_owned();
    let (key_id, _) = project_key(&s, &owner, Some(&project));
    let body = json!({"project_id": project, "name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"});
    let provider = ok(call(&s, "POST", "/api/v1/ai-providers", &owner, Some(body)), 201)["id"].as_str().unwrap().to_owned();
    // Every /api/v1 row whose path names one of these records, walked from the table.
    let ids = [("project_id", project.as_str()), ("api_key_id", key_id.as_str()), ("ai_provider_id", provider.as_str())];
    let mut walked = 0;
    for row in quarry::api::routes::table(&quarry::config::Config::defaults()) {
        if !row.path.starts_with("/api/v1/") || !row.path.contains('{') {
            continue;
        }
        let mut path = row.path.to_owned();
        for (param, id) in ids {
            path = path.replace(&format!("{{{param}}}"), id);
        }
        if path.contains('{') {
            continue; // another module's record
        }
        let body = matches!(row.method.as_str(), "POST" | "PUT" | "PATCH").then(|| json!({"name": "renamed"}));
        let r = call(&s, row.method.as_str(), &path, &stranger, body);
        assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND".to_owned()), "{} {path}", row.method);
        walked += 1;
    }
    assert!(walked >= 9, "walked {walked} routes");
    // Nor can a list or a create act in the other account's project: 403, as for a
    // project that does not exist.
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers?project_id={project}"), &stranger, None), 403), "FORBIDDEN");
    assert_eq!(refused(call(&s, "GET", "/api/v1/ai-providers?project_id=proj_none", &stranger, None), 403), "FORBIDDEN");
    let into = json!({"project_id": project, "name": "p", "provider": "openai", "default_model": "m"});
    assert_eq!(refused(call(&s, "POST", "/api/v1/ai-providers", &stranger, Some(into)), 403), "FORBIDDEN");
    let bind = json!({"name": "k", "project_id": project});
    assert_eq!(refused(call(&s, "POST", "/api/v1/api-keys", &stranger, Some(bind)), 400), "VALIDATION_FAILED");
    assert_eq!(ok(call(&s, "GET", "/api/v1/api-keys", &stranger, None), 200)["total"], 0);
    assert_eq!(ok(call(&s, "GET", "/api/v1/projects", &stranger, None), 200)["total"], 1, "its own default alone");
    // The owner still has them all, unchanged.
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/projects/{project}"), &owner, None), 200)["name"], "Mine");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/ai-providers/{provider}"), &owner, None), 200)["name"], "p");
    ok(call(&s, "GET", &format!("/api/v1/api-keys/{key_id}"), &owner, None), 200);
}

#[test]
fn lists_clamp_limit_and_refuse_bad_paging() {
    let s = start();
    let (_, key) = s.signup("soat-paging@example.org");
    let names: Vec<String> = (0..3).map(|i| format!("k{i}")).collect();
    for n in &names {
        ok(call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": n}))), 201);
    }
    let page = ok(call(&s, "GET", "/api/v1/api-keys?limit=2&offset=1", &key, None), 200);
    assert_eq!((page["total"].as_u64(), page["limit"].as_u64(), page["offset"].as_u64()), (Some(3), Some(2), Some(1)));
    let got: Vec<&str> = page["data"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(got, ["k1", "k2"], "oldest first");
    let clamped = ok(call(&s, "GET", "/api/v1/api-keys?limit=1000", &key, None), 200);
    assert_eq!((clamped["limit"].as_u64(), clamped["data"].as_array().unwrap().len()), (Some(100), 3));
    let past = ok(call(&s, "GET", "/api/v1/api-keys?offset=50", &key, None), 200);
    assert_eq!((past["total"].as_u64(), past["data"].as_array().unwrap().len()), (Some(3), 0));
    assert_eq!(ok(call(&s, "GET", "/api/v1/ai-providers", &key, None), 200)["limit"], 25, "this module's default");
    for bad in ["limit=0", "limit=-3", "limit=2.5", "limit=many", "offset=-1", "offset=1e3"] {
        for list in ["/api/v1/api-keys", "/api/v1/projects", "/api/v1/ai-providers"] {
            let r = call(&s, "GET", &format!("{list}?{bad}"), &key, None);
            assert_eq!(refused(r, 400), "VALIDATION_FAILED", "{list}?{bad}");
        }
    }
}

#[test]
fn bodies_are_strict() {
    let s = start();
    let (_, key) = s.signup("soat-strict@example.org");
    let cases = [
        ("POST", "/api/v1/projects".to_owned(), json!({"name": "x", "nmae": "y"}), "nmae"),
        ("POST", "/api/v1/api-keys".to_owned(), json!({"name": "x", "scopes": []}), "scopes"),
        (
            "POST",
            "/api/v1/ai-providers".to_owned(),
            json!({"name": "x", "provider": "openai", "default_model": "m", "api_key": "sk-literal"}),
            "api_key",
        ),
        ("POST", "/api/v1/projects".to_owned(), json!({"name": 5}), "name"),
        ("POST", "/api/v1/ai-providers".to_owned(), json!({"name": "x", "provider": "openai"}), "default_model"),
    ];
    for (method, path, body, field) in cases {
        let r = call(&s, method, &path, &key, Some(body.clone()));
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        let e = r.json()["error"].clone();
        assert_eq!(e["code"], "VALIDATION_FAILED", "{e}");
        assert!(e["message"].as_str().unwrap().contains(field), "{body}: {e}");
        if field != "default_model" {
            assert_eq!(e["meta"]["field"], field, "{body}: {e}");
        }
    }
    let r = s.request("POST", "/api/v1/projects", Some(&key), Some("{\"name\": "));
    assert_eq!(refused(r, 400), "VALIDATION_FAILED");
    let project = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "P"}))), 201)["id"].as_str().unwrap().to_owned();
    let r = call(&s, "PATCH", &format!("/api/v1/projects/{project}"), &key, Some(json!({})));
    assert_eq!(refused(r, 400), "VALIDATION_FAILED", "a PATCH changes something");
    let r = call(&s, "PATCH", &format!("/api/v1/projects/{project}"), &key, Some(json!({"trace_content_mode": "some"})));
    assert_eq!(refused(r, 400), "VALIDATION_FAILED");
    let r = call(&s, "PATCH", &format!("/api/v1/projects/{project}"), &key, Some(json!({"default_model_route_id": "route_x"})));
    assert_eq!(refused(r, 400), "MODEL_ROUTE_NOT_FOUND");
    let changed = ok(
        call(&s, "PATCH", &format!("/api/v1/projects/{project}"), &key, Some(json!({"trace_content_mode": "none", "max_concurrent_runs": 3}))),
        200,
    );
    assert_eq!(
        (changed["trace_content_mode"].as_str(), changed["max_concurrent_runs"].as_u64(), changed["name"].as_str()),
        (Some("none"), Some(3), Some("P"))
    );
}

#[test]
fn providers_are_made_read_changed_listed_and_deleted() {
    use super::scripted_llm::Scripted;
    let s = TestServer::with_config(&format!("{ROOMY}[llm]\nmax_retries = 0\n[llm.local]\nenabled = false\n"));
    let (_, key) = s.signup("soat-providers@example.org");
    let first = Scripted::start();
    first.models(&["reader", "writer"]);
    let second = Scripted::start();
    second.models(&["other"]);
    // Made while the server runs, and used at once: /models asks the upstream itself.
    let body = json!({"name": "Local vLLM", "provider": "custom", "base_url": format!("http://{}/v1", first.addr), "default_model": "reader", "config": {"region": "x"}});
    let p = ok(call(&s, "POST", "/api/v1/ai-providers", &key, Some(body)), 201);
    let id = p["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("aip_") && p["project_id"].as_str().unwrap().starts_with("proj_"), "{p}");
    assert_eq!((p["provider"].as_str(), p["secret_id"].is_null(), p["config"]["region"].as_str()), (Some("custom"), true, Some("x")));
    let models = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{id}/models"), &key, None), 200);
    assert_eq!(models, json!({"provider": "custom", "models": [{"id": "reader"}, {"id": "writer"}]}));
    // Changed, the next call goes where it now says.
    let patched = ok(
        call(
            &s,
            "PATCH",
            &format!("/api/v1/ai-providers/{id}"),
            &key,
            Some(json!({"base_url": format!("http://{}/v1", second.addr), "default_model": "other"})),
        ),
        200,
    );
    assert_eq!((patched["default_model"].as_str(), patched["name"].as_str()), (Some("other"), Some("Local vLLM")));
    let models = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{id}/models"), &key, None), 200);
    assert_eq!(models["models"], json!([{"id": "other"}]));
    let got = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{id}"), &key, None), 200);
    assert_eq!(got["base_url"].as_str(), Some(format!("http://{}/v1", second.addr).as_str()));
    let listed = ok(call(&s, "GET", "/api/v1/ai-providers", &key, None), 200);
    assert_eq!((listed["total"].as_u64(), listed["data"][0]["id"].as_str()), (Some(1), Some(id.as_str())));
    // Each kind's own rules.
    let make = |body: Value| call(&s, "POST", "/api/v1/ai-providers", &key, Some(body));
    assert_eq!(
        refused(make(json!({"name": "a", "provider": "bedrock", "default_model": "m", "config": {"region": "us east"}})), 400),
        "VALIDATION_FAILED"
    );
    assert_eq!(refused(make(json!({"name": "a", "provider": "vertex", "default_model": "m", "config": {"location": 5}})), 400), "VALIDATION_FAILED");
    assert_eq!(refused(make(json!({"name": "a", "provider": "azure", "default_model": "m"})), 400), "VALIDATION_FAILED", "azure needs base_url");
    assert_eq!(refused(make(json!({"name": "a", "provider": "openai", "default_model": "m", "secret_id": "hunter2"})), 400), "VALIDATION_FAILED");
    assert_eq!(refused(make(json!({"name": "a", "provider": "custom", "default_model": "m", "base_url": "file:///etc"})), 400), "VALIDATION_FAILED");
    let ollama = ok(make(json!({"name": "o", "provider": "ollama", "default_model": "llama3"})), 201)["id"].as_str().unwrap().to_owned();
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{ollama}/models"), &key, None), 400), "MODEL_LISTING_UNSUPPORTED");
    let openai = ok(make(json!({"name": "o", "provider": "openai", "default_model": "gpt-4o"})), 201)["id"].as_str().unwrap().to_owned();
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{openai}/models"), &key, None), 400), "AI_PROVIDER_MISCONFIGURED", "no secret");
    let local = ok(make(json!({"name": "l", "provider": "local", "default_model": "qwen"})), 201)["id"].as_str().unwrap().to_owned();
    assert_eq!(
        refused(call(&s, "GET", &format!("/api/v1/ai-providers/{local}/models"), &key, None), 400),
        "AI_PROVIDER_MISCONFIGURED",
        "no local model here"
    );
    // An upstream that is not there is the provider's failure, not ours.
    let gone = ok(make(json!({"name": "g", "provider": "custom", "default_model": "m", "base_url": "http://127.0.0.1:9/v1"})), 201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{gone}/models"), &key, None), 502), "MODEL_LISTING_FAILED");
    // A PATCH that breaks a kind's rule changes nothing.
    let r = call(&s, "PATCH", &format!("/api/v1/ai-providers/{id}"), &key, Some(json!({"base_url": null})));
    assert_eq!(refused(r, 400), "VALIDATION_FAILED", "custom needs base_url");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/ai-providers/{id}"), &key, None), 200)["default_model"], "other");
    ok(call(&s, "DELETE", &format!("/api/v1/ai-providers/{id}"), &key, None), 204);
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{id}"), &key, None), 404), "RESOURCE_NOT_FOUND");
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/ai-providers/{id}"), &key, None), 404), "RESOURCE_NOT_FOUND");
    // The project holding the rest refuses to go without force, then goes with them.
    let default = ok(call(&s, "GET", "/api/v1/projects", &key, None), 200)["data"][0]["id"].as_str().unwrap().to_owned();
    let r = call(&s, "DELETE", &format!("/api/v1/projects/{default}"), &key, None);
    assert_eq!(r.status, 409, "{}", r.text());
    let e = r.json()["error"].clone();
    assert_eq!((e["code"].as_str(), e["meta"]["ai_provider_count"].as_u64()), (Some("PROJECT_HAS_DEPENDENTS"), Some(4)), "{e}");
    ok(call(&s, "DELETE", &format!("/api/v1/projects/{default}?force=true"), &key, None), 204);
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/ai-providers/{ollama}"), &key, None), 404), "RESOURCE_NOT_FOUND");
    // The next request makes a new default project, empty.
    let fresh = ok(call(&s, "GET", "/api/v1/projects", &key, None), 200);
    assert_ne!(fresh["data"][0]["id"].as_str(), Some(default.as_str()));
    assert_eq!(ok(call(&s, "GET", "/api/v1/ai-providers", &key, None), 200)["total"], 0);
}

#[test]
fn an_unscoped_key_acts_like_the_account_and_keys_count_against_the_plan() {
    let s = TestServer::with_config("[plans.scribe]\nrate_per_minute = 6000\nburst = 1000\nmax_keys = 2\n");
    let (_, key) = s.signup("soat-unscoped@example.org");
    let other = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "Other"}))), 201)["id"].as_str().unwrap().to_owned();
    let (_, unscoped) = project_key(&s, &key, None);
    let (_, bound) = project_key(&s, &key, Some(&other));
    let shown = ok(call(&s, "GET", "/api/v1/api-keys", &key, None), 200);
    assert_eq!(shown["data"][0]["project_id"], Value::Null, "{shown}");
    // It sees every project and acts in the default one unless it names another.
    assert_eq!(ok(call(&s, "GET", "/api/v1/projects", &unscoped, None), 200)["total"], 2);
    let p = ok(call(&s, "POST", "/api/v1/ai-providers", &unscoped, Some(json!({"name": "p", "provider": "openai", "default_model": "m"}))), 201);
    let default = ok(call(&s, "GET", "/api/v1/projects", &key, None), 200)["data"][0]["id"].clone();
    assert_eq!(p["project_id"], default);
    let q = json!({"project_id": other, "name": "q", "provider": "openai", "default_model": "m"});
    assert_eq!(ok(call(&s, "POST", "/api/v1/ai-providers", &unscoped, Some(q)), 201)["project_id"], other.as_str());
    // But it is no key off /api/v1.
    assert_eq!(s.get("/v1/account", Some(&unscoped)).status, 403);
    // The plan's max_keys caps /api/v1 keys as it caps /v1's.
    let r = call(&s, "POST", "/api/v1/api-keys", &key, Some(json!({"name": "third"})));
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["error"]["meta"]["max"], 2);
    assert_eq!(ok(call(&s, "GET", "/api/v1/projects", &bound, None), 200)["total"], 1);
}
