use super::server::TestServer;

#[test]
fn signup_creates_an_account_and_a_key_shown_once() {
    let s = TestServer::start();
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email":"  You@Institute.ORG ","extra":true}"#));
    assert_eq!(r.status, 201, "{}", r.text());
    let j = r.json();
    assert_eq!(j["account"]["email"], "you@institute.org");
    assert_eq!(j["account"]["plan"], "scribe");
    assert!(j["account"]["id"].as_str().unwrap().starts_with("acct_"));
    let key = j["api_key"].as_str().unwrap();
    assert!(key.starts_with("al_") && key.len() >= 46, "{key}");
    assert!(j["note"].as_str().unwrap().contains("not shown again"));
    let keys = s.get("/v1/keys", Some(key));
    assert!(!keys.text().contains(key), "the key is never shown again");
    assert_eq!(keys.json()["keys"][0]["prefix"], &key[..10]);
}

#[test]
fn signup_for_a_taken_email_is_refused_unless_the_caller_holds_its_key() {
    let s = TestServer::start();
    let (id, key) = s.signup("a@x.org");
    let (_, other_key) = s.signup("b@x.org");
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email":"A@x.org"}"#));
    assert_eq!((r.status, r.code().as_str()), (409, "email_taken"));
    let r = s.request("POST", "/v1/signup", Some(&other_key), Some(r#"{"email":"a@x.org"}"#));
    assert_eq!(r.status, 409, "another account's key does not unlock it");
    let r = s.request("POST", "/v1/signup", Some(&key), Some(r#"{"email":"a@x.org"}"#));
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["account"]["id"], id.as_str());
    assert_eq!(s.get("/v1/keys", Some(&key)).json()["keys"].as_array().unwrap().len(), 2);
}

#[test]
fn new_key_mode_restores_the_specs_behaviour() {
    let s = TestServer::with_config("[auth]\nsignup_existing_email = \"new_key\"\n");
    let (id, _) = s.signup("a@x.org");
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email":"a@x.org"}"#));
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["account"]["id"], id.as_str());
}

#[test]
fn closed_signup_refuses_everyone() {
    let s = TestServer::with_config("[auth]\nsignup = \"closed\"\n");
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email":"a@x.org"}"#));
    assert_eq!((r.status, r.code().as_str()), (403, "signup_closed"));
}

#[test]
fn account_shows_plan_usage_allowances_and_keys() {
    let s = TestServer::start();
    let (id, key) = s.signup("a@x.org");
    let r = s.get("/v1/account", Some(&key));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["id"], id.as_str());
    assert_eq!(j["email"], "a@x.org");
    assert_eq!(j["plan"], "scribe");
    assert_eq!(j["usage"], serde_json::json!({"stored_chars": 0}));
    assert_eq!(j["allowances"]["name"], "Scribe");
    assert_eq!(j["allowances"]["rate"]["burst"], 20);
    let k = &j["keys"][0];
    assert_eq!(k["prefix"], &key[..10]);
    assert!(k["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(k["revoked_at"].is_null());
    assert_eq!(r.header("x-ratelimit-limit"), Some("20"));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("19"));
    assert_eq!(r.header("x-ratelimit-reset"), Some("0"));
}

#[test]
fn keys_are_issued_listed_and_revoked() {
    let s = TestServer::start();
    let (_, key) = s.signup("a@x.org");
    let r = s.request("POST", "/v1/keys", Some(&key), None);
    assert_eq!(r.status, 201, "{}", r.text());
    let second = r.json()["api_key"].as_str().unwrap().to_owned();
    assert_eq!(r.json()["prefix"], &second[..10]);
    assert_eq!(s.get("/v1/account", Some(&second)).status, 200);

    let r = s.request("DELETE", &format!("/v1/keys/{}", &second[..10]), Some(&key), None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["revoked"], &second[..10]);
    assert!(r.json()["revoked_at"].as_str().unwrap().ends_with('Z'));
    let r = s.get("/v1/account", Some(&second));
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_key"));
    assert!(r.header("x-ratelimit-limit").is_none(), "no rate headers on 401");

    let listed = s.get("/v1/keys", Some(&key)).json();
    let revoked = listed["keys"].as_array().unwrap().iter().find(|k| k["prefix"] == &second[..10]).unwrap().clone();
    assert!(revoked["revoked_at"].is_string());
}

#[test]
fn a_key_cannot_revoke_itself_nor_unknown_keys() {
    let s = TestServer::start();
    let (_, key) = s.signup("a@x.org");
    let r = s.request("DELETE", &format!("/v1/keys/{}", &key[..10]), Some(&key), None);
    assert_eq!((r.status, r.code().as_str()), (400, "cannot_revoke_current"));
    let r = s.request("DELETE", "/v1/keys/al_nothere", Some(&key), None);
    assert_eq!((r.status, r.code().as_str()), (404, "key_not_found"));
    assert_eq!(s.get("/v1/account", Some(&key)).status, 200);
}

#[test]
fn one_account_cannot_see_or_touch_anothers_keys() {
    let s = TestServer::start();
    let (_, a) = s.signup("a@x.org");
    let (_, b) = s.signup("b@x.org");
    let r = s.request("DELETE", &format!("/v1/keys/{}", &a[..10]), Some(&b), None);
    assert_eq!((r.status, r.code().as_str()), (404, "key_not_found"));
    assert_eq!(s.get("/v1/account", Some(&a)).status, 200, "a's key still works");
    let listed = s.get("/v1/keys", Some(&b)).json();
    assert_eq!(listed["keys"].as_array().unwrap().len(), 1);
    assert_eq!(listed["keys"][0]["prefix"], &b[..10]);
    assert_eq!(s.get("/v1/account", Some(&b)).json()["email"], "b@x.org");
}

#[test]
fn missing_and_invalid_keys_are_401_without_rate_headers() {
    let s = TestServer::start();
    let (_, key) = s.signup("a@x.org");
    let r = s.get("/v1/account", None);
    assert_eq!((r.status, r.code().as_str()), (401, "missing_key"));
    assert!(r.header("x-ratelimit-remaining").is_none());
    let mut c = s.conn();
    let r = c.send("GET", "/v1/account", &[("authorization", "Basic abc")], None);
    assert_eq!(r.code(), "missing_key");
    // The real key with its last character changed (to X, or to Y when it already is X).
    let last = if key.ends_with('X') { 'Y' } else { 'X' };
    for bad in ["al_short", &format!("{}{last}", &key[..key.len() - 1]), &format!("al_{}", "A".repeat(43))] {
        let r = s.get("/v1/account", Some(bad));
        assert_eq!((r.status, r.code().as_str()), (401, "invalid_key"), "{bad}");
        assert!(r.header("x-ratelimit-limit").is_none());
    }
}

#[test]
fn a_revoked_key_is_refused_by_every_shard_at_once() {
    let s = TestServer::start();
    let (_, admin) = s.signup("a@x.org");
    let victim = s.request("POST", "/v1/keys", Some(&admin), None).json()["api_key"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {victim}");
    let mut conns = s.conn_per_shard();
    // Warm every shard's key cache with the victim key.
    for c in conns.iter_mut() {
        assert_eq!(c.send("GET", "/v1/account", &[("authorization", &auth)], None).status, 200);
    }
    let admin_auth = format!("Bearer {admin}");
    let r = conns[0].send("DELETE", &format!("/v1/keys/{}", &victim[..10]), &[("authorization", &admin_auth)], None);
    assert_eq!(r.status, 200);
    for c in conns.iter_mut() {
        let r = c.send("GET", "/v1/account", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.code().as_str()), (401, "invalid_key"), "shard {}", r.shard());
    }
}
