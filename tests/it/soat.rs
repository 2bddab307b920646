//! Shared by the /api/v1 (SOAT) tests: keyed requests and the SOAT error shape checked.
//!
//! What the /api/v1 tests share: a request with a key, a success read back, and a SOAT
//! error checked for its shape (`code`, `message`, `hint`, `docs_url`, `meta`).

use serde_json::Value;

use super::client::Response;
use super::server::TestServer;

pub fn call(s: &TestServer, method: &str, path: &str, key: &str, body: Option<Value>) -> Response {
    let body = body.map(|b| b.to_string());
    s.request(method, path, Some(key), body.as_deref())
}

/// The answer's JSON (null for an empty body), after checking its status.
pub fn ok(r: Response, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

/// The SOAT error of an answer, after checking its status and shape.
pub fn refused(r: Response, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    let e = r.json()["error"].clone();
    assert!(e["code"].is_string() && e["message"].is_string() && e["hint"].is_string() && e["docs_url"].is_string() && e["meta"].is_object(), "{e}");
    e
}
