//! SOAT identity through HTTP (`/api/v1`): the default project, project keys and
//! their scope (403 `API_KEY_PROJECT_SCOPE`), revocation on every shard at once,
//! another account's records as absent (404) on every route, pagination, strict
//! bodies, and AI providers: CRUD, `/models`, and a provider made at run time used
//! at once against a loopback upstream.

use serde_json::{json, Value};

use super::client::Response;
use super::server::TestServer;

fn call(s: &TestServer, method: &str, path: &str, key: &str, body: Option<Value>) -> Response {
    let body = body.map(|b| b.to_string());
    s.request(method, path, Some(key), body.as_deref())
}

fn ok(r: Response, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

/// The SOAT error code of an error answer, after checking its status.
fn refused(r: Response, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    let e = r.json()["error"].clone();
    assert!(e["hint"].is_string() && e["docs_url"].is_string(), "{e}");
    e["code"].as_str().unwrap().to_owned()
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
    let s = TestServer::start();
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
    let s = TestServer::start();
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
    // A key it makes is bound to its project; it cannot make or delete projects.
    let made = ok(call(&s, "POST", "/api/v1/api-keys", &sk, Some(json!({"name": "child"}))), 201);
    assert_eq!(made["project_id"], a.as_str());
    assert_eq!(refused(call(&s, "POST", "/api/v1/projects", &sk, Some(json!({"name": "C"}))), 403), "FORBIDDEN");
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/projects/{a}"), &sk, None), 403), "FORBIDDEN");
    // Off /api/v1 it is no key at all.
    assert_eq!(s.get("/v1/collections", Some(&sk)).status, 403);
}
