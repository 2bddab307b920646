//! Names and ids a client chooses: one rule on every surface, each refusal in that surface's shape.
//!
//! Regression (issue 2/9, finding 10): NUL, bidi overrides and isolates and the
//! byte-order mark were accepted in collection, secret, agent, tool, project, key,
//! memory, provider, guardrail and model-route names and in the retrieval plugin's
//! document ids: a name that shows as something it is not in the console or a log
//! ("\u{202E}fdp.exe" reads "exe.pdf"). Each is now refused with the surface's own
//! error (AgentLex 400 `invalid_name`, SOAT 400, the plugin's 422) naming the character,
//! and nothing is made.

use serde_json::{json, Value};

use super::plans::ROOMY;
use super::server::TestServer;
use super::soat::{call, ok};

/// A create body with this name (and the provider id, for records that need one).
type Body = fn(&str, &str) -> Value;

const BAD: [&str; 5] = ["a\u{0}b", "\u{202E}fdp.exe", "\u{FEFF}notes", "left\u{2066}right", "bell\u{7}"];

#[test]
fn control_bidi_and_bom_characters_are_refused_in_every_name_and_nothing_is_made() {
    let s = TestServer::with_config(ROOMY);
    let (_, key) = s.signup("names@example.com");
    // AgentLex: a collection's name.
    for bad in BAD {
        let r = s.request("POST", "/v1/collections", Some(&key), Some(&json!({"name": bad}).to_string()));
        assert_eq!((r.status, r.code()), (400, "invalid_name".to_owned()), "{bad:?}: {}", r.text());
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with("name must not hold") && message.contains("U+"), "{message}");
    }
    assert!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().is_empty());
    // The retrieval plugin: a document's id, refused in FastAPI's 422 before a collection is made.
    for bad in BAD {
        let r = s.request("POST", "/upsert", Some(&key), Some(&json!({"documents": [{"id": bad, "text": "Some text."}]}).to_string()));
        assert_eq!(r.status, 422, "{bad:?}: {}", r.text());
        assert_eq!(r.json()["detail"][0]["loc"], json!(["body", "documents", 0, "id"]), "{}", r.text());
    }
    assert!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().is_empty(), "no default collection");
    // SOAT: every record a client names.
    let aip = ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &key,
            Some(json!({"name": "p", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bodies: [(&str, Body); 9] = [
        ("/api/v1/projects", |n, _| json!({"name": n})),
        ("/api/v1/api-keys", |n, _| json!({"name": n})),
        ("/api/v1/secrets", |n, _| json!({"name": n, "value": "s3cret"})),
        ("/api/v1/tools", |n, _| json!({"name": n, "type": "client"})),
        ("/api/v1/agents", |n, aip| json!({"name": n, "ai_provider_id": aip})),
        ("/api/v1/ai-providers", |n, _| json!({"name": n, "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"})),
        ("/api/v1/memories", |n, _| json!({"name": n})),
        ("/api/v1/guardrails", |n, _| json!({"name": n})),
        ("/api/v1/model-routes", |n, aip| json!({"name": n, "targets": [{"ai_provider_id": aip, "model": "m"}]})),
    ];
    for (path, body) in bodies {
        let before = ok(call(&s, "GET", path, &key, None), 200);
        for bad in BAD {
            let r = call(&s, "POST", path, &key, Some(body(bad, &aip)));
            assert_eq!(r.status, 400, "{path} {bad:?}: {}", r.text());
            let e = &r.json()["error"];
            assert!(e["code"].is_string() && e["message"].as_str().is_some_and(|m| m.contains("must not hold") && m.contains("U+")), "{path}: {e}");
        }
        assert_eq!(ok(call(&s, "GET", path, &key, None), 200), before, "{path}: nothing was made");
        // The same names without the character are taken.
        let r = call(&s, "POST", path, &key, Some(body("fdp.exe", &aip)));
        assert_eq!(r.status, 201, "{path}: {}", r.text());
    }
    // A rename goes through the same rule.
    let tool = ok(call(&s, "POST", "/api/v1/tools", &key, Some(json!({"name": "plain", "type": "client"}))), 201)["id"].as_str().unwrap().to_owned();
    let r = call(&s, "PATCH", &format!("/api/v1/tools/{tool}"), &key, Some(json!({"name": "\u{202E}nialp"})));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/tools/{tool}"), &key, None), 200)["name"], "plain");
}
