//! SOAT users (`/api/v1/users`): bootstrap once, login and its token, me, an admin's users, revocation on every shard.
//!
//! The tutorials' first steps as a person takes them: the first admin bootstrapped
//! (201 once, 409 after, a weak password 400 with nothing made), a login whose token
//! works on `/api/v1` as the account (and nowhere else), `me`, users an admin makes,
//! lists, reads and deletes (a deleted user's token refused on every shard at once),
//! another account's user as absent, one answer for a wrong name or password, and
//! failed logins limited per client address.

use serde_json::{json, Value};

use super::plans::ROOMY;
use super::server::TestServer;
use super::soat::{call, ok, refused};

const ADMIN: &str = "Admin1234!";

fn public(s: &TestServer, path: &str, body: Value) -> super::client::Response {
    s.request("POST", path, None, Some(&body.to_string()))
}

/// Bootstraps `admin` and logs in: the admin's record and token.
pub fn admin_token(s: &TestServer) -> (Value, String) {
    let user = ok(public(s, "/api/v1/users/bootstrap", json!({"username": "admin", "password": ADMIN})), 201);
    (user, login(s, "admin", ADMIN))
}

pub fn login(s: &TestServer, username: &str, password: &str) -> String {
    let r = ok(public(s, "/api/v1/users/login", json!({"username": username, "password": password})), 200);
    r["token"].as_str().unwrap().to_owned()
}

#[test]
fn the_first_admin_is_bootstrapped_once_and_a_weak_password_makes_nothing() {
    let s = TestServer::with_config(ROOMY);
    let weak = refused(public(&s, "/api/v1/users/bootstrap", json!({"username": "admin", "password": "admin"})), 400);
    assert_eq!((weak["code"].as_str(), weak["meta"]["field"].as_str()), (Some("VALIDATION_FAILED"), Some("password")), "{weak}");
    assert!(weak["message"].as_str().unwrap().contains("too short"), "{weak}");
    let e = refused(public(&s, "/api/v1/users/bootstrap", json!({"username": "admin", "password": ADMIN, "role": "admin"})), 400);
    assert_eq!(e["meta"]["field"], "role", "unknown fields are refused: {e}");
    let user = ok(public(&s, "/api/v1/users/bootstrap", json!({"username": "admin", "password": ADMIN})), 201);
    assert!(user["id"].as_str().unwrap().starts_with("user_"), "{user}");
    assert_eq!((user["username"].as_str(), user["role"].as_str()), (Some("admin"), Some("admin")));
    assert!(user.get("password_hash").is_none() && user.get("password").is_none(), "{user}");
    let again = refused(public(&s, "/api/v1/users/bootstrap", json!({"username": "root", "password": "Other1234!"})), 409);
    assert_eq!(again["code"], "BOOTSTRAP_ALREADY_COMPLETED");
    // The second bootstrap made no user: it cannot log in.
    assert_eq!(refused(public(&s, "/api/v1/users/login", json!({"username": "root", "password": "Other1234!"})), 401)["code"], "UNAUTHORIZED");
}

#[test]
fn a_login_token_acts_for_the_account_on_api_v1_and_nowhere_else() {
    let s = TestServer::with_config(ROOMY);
    let (admin, token) = admin_token(&s);
    assert!(token.starts_with("ut_") && token.len() == 46, "{token}");
    let me = ok(call(&s, "GET", "/api/v1/users/me", &token, None), 200);
    assert_eq!((me["id"].as_str(), me["username"].as_str(), me["role"].as_str()), (admin["id"].as_str(), Some("admin"), Some("admin")));
    // The tutorials' next steps: projects and records, with the token as the bearer.
    let projects = ok(call(&s, "GET", "/api/v1/projects", &token, None), 200);
    assert_eq!(projects["total"], 1, "the new account's default project: {projects}");
    let p = ok(call(&s, "POST", "/api/v1/projects", &token, Some(json!({"name": "Tutorial"}))), 201);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/projects/{}", p["id"].as_str().unwrap()), &token, None), 200)["name"], "Tutorial");
    // Not a /v1 credential.
    let r = s.request("GET", "/v1/collections", Some(&token), None);
    assert_eq!(r.status, 403, "{}", r.text());
    // An API key is no user: me is 401; a wrong token is 401.
    let (_, key) = s.signup("users-me@example.org");
    assert_eq!(refused(call(&s, "GET", "/api/v1/users/me", &key, None), 401)["code"], "UNAUTHORIZED");
    let forged = format!("{}x", &token[..45]);
    assert_eq!(refused(call(&s, "GET", "/api/v1/users/me", &forged, None), 401)["code"], "UNAUTHORIZED");
}

#[test]
fn a_wrong_username_or_password_is_one_answer_and_guessing_is_limited() {
    let s = TestServer::with_config(ROOMY);
    admin_token(&s);
    let wrong_password = refused(public(&s, "/api/v1/users/login", json!({"username": "admin", "password": "Wrong1234!"})), 401);
    let wrong_name = refused(public(&s, "/api/v1/users/login", json!({"username": "nobody", "password": ADMIN})), 401);
    assert_eq!(wrong_password, wrong_name, "the same answer either way");
    // Ten failures in all, then even the right password waits.
    for i in 2..10 {
        refused(public(&s, "/api/v1/users/login", json!({"username": "admin", "password": format!("Guess{i}!")})), 401);
    }
    let r = public(&s, "/api/v1/users/login", json!({"username": "admin", "password": ADMIN}));
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some_and(|v| v.parse::<u64>().unwrap() >= 1), "{:?}", r.header("retry-after"));
}

#[test]
fn an_admin_manages_the_accounts_users_and_a_deleted_users_token_ends_on_every_shard() {
    let s = TestServer::with_config(ROOMY);
    let (admin, token) = admin_token(&s);
    let ann = ok(call(&s, "POST", "/api/v1/users", &token, Some(json!({"username": "ann", "password": "Ann-pass-1"}))), 201);
    let ann_id = ann["id"].as_str().unwrap().to_owned();
    assert_eq!(ann["role"], "user");
    let taken = refused(call(&s, "POST", "/api/v1/users", &token, Some(json!({"username": "ann", "password": "Ann-pass-2"}))), 409);
    assert_eq!(taken["code"], "NAME_CONFLICT");
    let listed = ok(call(&s, "GET", "/api/v1/users", &token, None), 200);
    let names: Vec<&str> = listed["data"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert_eq!((names, listed["total"].as_u64()), (vec!["admin", "ann"], Some(2)), "{listed}");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/users/{ann_id}"), &token, None), 200)["username"], "ann");
    ok(call(&s, "PUT", &format!("/api/v1/users/{ann_id}/policies"), &token, Some(json!({"policy_ids": ["pol_a"]}))), 204);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/users/{ann_id}"), &token, None), 200)["policy_ids"], json!(["pol_a"]));
    let e = refused(call(&s, "PUT", &format!("/api/v1/users/{ann_id}/policies"), &token, Some(json!({"policy_ids": "pol_a"}))), 400);
    assert_eq!(e["code"], "VALIDATION_FAILED");
    // Ann is no admin; she sees herself, and the account's projects.
    let ann_token = login(&s, "ann", "Ann-pass-1");
    assert_eq!(refused(call(&s, "GET", "/api/v1/users", &ann_token, None), 403)["code"], "FORBIDDEN");
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/users/{}", admin["id"].as_str().unwrap()), &ann_token, None), 403)["code"], "FORBIDDEN");
    // Every shard caches her token, then she is deleted: refused everywhere at once.
    let auth = format!("Bearer {ann_token}");
    let mut conns = s.conn_per_shard();
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/users/me", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.json()["username"].as_str()), (200, Some("ann")), "{}", r.text());
    }
    ok(call(&s, "DELETE", &format!("/api/v1/users/{ann_id}"), &token, None), 204);
    for c in conns.iter_mut() {
        let r = c.send("GET", "/api/v1/projects", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")), "shard {}: {}", r.shard(), r.text());
    }
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/users/{ann_id}"), &token, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(refused(call(&s, "DELETE", &format!("/api/v1/users/{ann_id}"), &token, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(refused(public(&s, "/api/v1/users/login", json!({"username": "ann", "password": "Ann-pass-1"})), 401)["code"], "UNAUTHORIZED");
}

#[test]
fn another_accounts_user_is_absent() {
    let s = TestServer::with_config(ROOMY);
    let (admin, _) = admin_token(&s);
    let admin_id = admin["id"].as_str().unwrap();
    let (_, other) = s.signup("users-other@example.org");
    for (method, path, body) in [
        ("GET", format!("/api/v1/users/{admin_id}"), None),
        ("DELETE", format!("/api/v1/users/{admin_id}"), None),
        ("PUT", format!("/api/v1/users/{admin_id}/policies"), Some(json!({"policy_ids": []}))),
    ] {
        assert_eq!(refused(call(&s, method, &path, &other, body), 404)["code"], "RESOURCE_NOT_FOUND", "{method} {path}");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/users", &other, None), 200)["total"], 0);
    // The account key administers its own account's users.
    let bob = ok(call(&s, "POST", "/api/v1/users", &other, Some(json!({"username": "bob", "password": "Bob-pass-1", "role": "admin"}))), 201);
    assert_eq!(bob["role"], "admin");
    let bob_token = login(&s, "bob", "Bob-pass-1");
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/users/{admin_id}"), &bob_token, None), 404)["code"], "RESOURCE_NOT_FOUND");
    assert_eq!(ok(call(&s, "GET", "/api/v1/users", &bob_token, None), 200)["total"], 1);
}
