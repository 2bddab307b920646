//! Collections and documents through the AgentLex API: their CRUD, their field checks and their tenancy.
//!
//! Collections and documents through the API: create, read, patch, delete, every bad
//! field refused with its code, and one account's records invisible to another.

use serde_json::{json, Value};

use super::server::TestServer;

pub fn post(s: &TestServer, path: &str, key: &str, body: &Value) -> super::client::Response {
    s.request("POST", path, Some(key), Some(&body.to_string()))
}

pub fn create_collection(s: &TestServer, key: &str, name: &str) -> String {
    let r = post(s, "/v1/collections", key, &json!({ "name": name }));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

/// Adds a document; every answer is checked against the spec's `DocumentCreated`
/// (regression: `identifiers` was `{}`, which lacks the required `total` and `counts`).
pub fn add(s: &TestServer, key: &str, col: &str, doc: &Value) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/documents"), key, doc);
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    super::spec::check("DocumentCreated", &created);
    created
}

#[test]
fn a_collection_is_created_read_patched_listed_and_deleted() {
    let s = TestServer::start();
    let (account, key) = s.signup("owner@example.com");
    let r = post(&s, "/v1/collections", &key, &json!({"name": "Contracts", "settings": {"domain": "legal"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    let c = r.json();
    assert_eq!((c["name"].as_str(), c["account_id"].as_str(), c["embedder"].as_str()), (Some("Contracts"), Some(account.as_str()), Some("none")));
    assert_eq!(c["settings"], json!({"mask_identifiers": false, "redact_storage": false, "domain": "legal", "guidance": null, "glossary": null}));
    assert_eq!((c["documents"].as_u64(), c["domain"].clone()), (Some(0), Value::Null));
    let id = c["id"].as_str().unwrap();
    let r = s.request("PATCH", &format!("/v1/collections/{id}"), Some(&key), Some(r#"{"name":"Deals","settings":{"guidance":"Cite the MSA."}}"#));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!((r.json()["name"].as_str(), r.json()["settings"]["domain"].as_str()), (Some("Deals"), Some("legal")), "settings merge");
    add(&s, &key, id, &json!("A first document."));
    let got = s.get(&format!("/v1/collections/{id}"), Some(&key)).json();
    // The collection's domain setting names the chunker its documents get.
    assert_eq!((got["documents"].as_u64(), got["pages"].as_u64(), got["domain"].as_str()), (Some(1), Some(1), Some("legal")));
    assert_eq!(got["settings"]["guidance"], "Cite the MSA.");
    assert_eq!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().len(), 1);
    let r = s.request("DELETE", &format!("/v1/collections/{id}"), Some(&key), None);
    assert_eq!((r.status, r.json()["deleted"].as_str()), (200, Some(id)));
    assert_eq!(s.get(&format!("/v1/collections/{id}"), Some(&key)).code(), "collection_not_found");
    assert!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().is_empty());
    assert!(!s.data().join("collections").join(id).exists(), "its files are gone");
}

#[test]
fn bad_settings_and_names_are_refused_and_change_nothing() {
    let s = TestServer::start();
    let (_, key) = s.signup("settings@example.com");
    let cases = [
        (json!({}), "invalid_name", "name"),
        (json!({"name": 5}), "invalid_name", "name"),
        (json!({"name": "x", "settings": {"mask_identifiers": "yes"}}), "invalid_settings", "settings.mask_identifiers"),
        (json!({"name": "x", "settings": {"redact_storage": 1}}), "invalid_settings", "settings.redact_storage"),
        (json!({"name": "x", "settings": {"domain": "poetry"}}), "invalid_settings", "settings.domain"),
        (json!({"name": "x", "settings": {"guidance": 3}}), "invalid_settings", "settings.guidance"),
    ];
    for (body, code, field) in cases {
        let r = post(&s, "/v1/collections", &key, &body);
        assert_eq!((r.status, r.code()), (400, code.to_owned()), "{body}");
        assert!(r.json()["error"]["message"].as_str().unwrap().contains(field), "{body}: {}", r.text());
    }
    assert!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().is_empty());
    let id = create_collection(&s, &key, "kept");
    let r = s.request("PATCH", &format!("/v1/collections/{id}"), Some(&key), Some(r#"{"settings":{"domain":"nope"}}"#));
    assert_eq!(r.code(), "invalid_settings");
    assert_eq!(s.get(&format!("/v1/collections/{id}"), Some(&key)).json()["settings"]["domain"], "auto");
}

/// Regression: unknown keys were refused inside `settings` but ignored at the top level,
/// though the spec's `Settings` is open. Now they are ignored everywhere, with a warning.
#[test]
fn unknown_settings_keys_are_ignored_with_a_warning() {
    let s = TestServer::start();
    let (_, key) = s.signup("open-settings@example.com");
    let r = post(&s, "/v1/collections", &key, &json!({"name": "x", "colour": "red", "settings": {"shape": "round", "domain": "legal"}}));
    assert_eq!(r.status, 201, "{}", r.text());
    let c = r.json();
    assert_eq!(c["settings"]["domain"], "legal");
    assert!(c["settings"].get("shape").is_none(), "{c}");
    let w = c["warnings"].as_array().expect("a warning names the ignored key");
    assert!(w.len() == 1 && w[0].as_str().unwrap().contains("settings.shape"), "{c}");
    let id = c["id"].as_str().unwrap();
    let plain = s.get(&format!("/v1/collections/{id}"), Some(&key)).json();
    assert!(plain.get("warnings").is_none(), "{plain}");
}

#[test]
fn documents_are_added_listed_read_paged_and_deleted() {
    let s = TestServer::start();
    let (_, key) = s.signup("docs@example.com");
    let col = create_collection(&s, &key, "Books");
    let created = add(
        &s,
        &key,
        &col,
        &json!({
            "title": "Field notes", "author": "A. Naturalist", "metadata": {"shelf": {"row": 3}, "date": "2024-03-14"},
            "text": "# Birds\n\nBirds have feathers.\n\n- robins\n- wrens\n\u{c}## Bees\n\nBees make honey in hives. ✓ naïve café"
        }),
    );
    assert_eq!((created["pages"].as_u64(), created["format"].as_str(), created["chunker"].as_str()), (Some(2), Some("markdown"), Some("prose")));
    let doc = created["id"].as_str().unwrap();
    let got = s.get(&format!("/v1/collections/{col}/documents/{doc}"), Some(&key)).json();
    assert_eq!(got["metadata"], json!({"shelf": {"row": 3}, "date": "2024-03-14"}));
    assert_eq!((got["title"].as_str(), got["chars"].as_u64()), (Some("Field notes"), created["chars"].as_u64()));
    let page = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/1"), Some(&key)).json();
    let text = page["page"]["text"].as_str().unwrap();
    for c in page["chunks"].as_array().unwrap() {
        let (start, end) = (c["start"].as_u64().unwrap() as usize, c["end"].as_u64().unwrap() as usize);
        let slice: String = text.chars().skip(start).take(end - start).collect();
        assert_eq!(slice, c["text"].as_str().unwrap(), "offsets count characters");
    }
    assert_eq!(page["page"]["heading"], "Bees");
    let r = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/2"), Some(&key));
    assert_eq!((r.status, r.code()), (404, "page_not_found".to_owned()));
    let r = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/x"), Some(&key));
    assert_eq!((r.status, r.code()), (400, "invalid_page".to_owned()));
    assert_eq!(s.get(&format!("/v1/collections/{col}/documents"), Some(&key)).json()["documents"].as_array().unwrap().len(), 1);
    let r = s.request("DELETE", &format!("/v1/collections/{col}/documents/{doc}"), Some(&key), None);
    assert_eq!((r.status, r.json()["deleted"].as_str()), (200, Some(doc)));
    assert_eq!(s.get(&format!("/v1/collections/{col}/documents/{doc}"), Some(&key)).code(), "document_not_found");
    let r = s.request("DELETE", &format!("/v1/collections/{col}/documents/{doc}"), Some(&key), None);
    assert_eq!(r.code(), "document_not_found");
}

#[test]
fn bad_documents_get_their_code_and_leave_nothing_behind() {
    let s = TestServer::with_config("[index]\nmax_document_bytes = 2048\n");
    let (_, key) = s.signup("bad@example.com");
    let col = create_collection(&s, &key, "c");
    let stored = s.get("/v1/account", Some(&key)).json()["usage"]["stored_chars"].clone();
    let path = format!("/v1/collections/{col}/documents");
    for body in [
        json!(5),
        json!({}),
        json!({"html": "<p hidden>x</p>"}),
        json!({"csv": "a,\"b"}),
        json!({"text": "  "}),
        json!({"text": "a", "title": 1}),
        json!({"pages": []}),
    ] {
        let r = post(&s, &path, &key, &body);
        assert_eq!((r.status, r.code()), (400, "invalid_document".to_owned()), "{body}: {}", r.text());
    }
    let r = s.request("POST", &path, Some(&key), Some("{\"text\": "));
    assert_eq!(r.code(), "invalid_json");
    let r = post(&s, &path, &key, &json!({"text": "word ".repeat(500)}));
    assert_eq!((r.status, r.code()), (413, "document_too_large".to_owned()));
    let got = s.get(&format!("/v1/collections/{col}"), Some(&key)).json();
    assert_eq!(got["documents"], 0);
    assert_eq!(s.get("/v1/account", Some(&key)).json()["usage"]["stored_chars"], stored, "only the collection's record");
}

#[test]
fn storage_beyond_the_plan_is_refused() {
    let s = TestServer::with_config("[plans.scribe]\nstored_chars = 1000\n");
    let (_, key) = s.signup("full@example.com");
    let col = create_collection(&s, &key, "c");
    // The collection's record is stored too; fill what is left but 30 characters (a
    // document also keeps its metadata, `{}`: 2 characters).
    let room = 1000 - s.get("/v1/account", Some(&key)).json()["usage"]["stored_chars"].as_u64().unwrap();
    add(&s, &key, &col, &json!("x".repeat(room as usize - 32)));
    let r = post(&s, &format!("/v1/collections/{col}/documents"), &key, &json!("And thirty more characters...."));
    assert_eq!((r.status, r.code()), (429, "storage_exceeded".to_owned()));
    assert_eq!(s.get(&format!("/v1/collections/{col}"), Some(&key)).json()["documents"], 1);
}

#[test]
fn another_accounts_collections_do_not_exist_for_you() {
    let s = TestServer::start();
    let (_, alice) = s.signup("alice@example.com");
    let (_, mallory) = s.signup("mallory@example.com");
    let col = create_collection(&s, &alice, "private");
    let doc = add(&s, &alice, &col, &json!("Alice's secret plans."))["id"].as_str().unwrap().to_owned();
    let paths = [
        ("GET", format!("/v1/collections/{col}"), None),
        ("PATCH", format!("/v1/collections/{col}"), Some(r#"{"name":"mine"}"#)),
        ("DELETE", format!("/v1/collections/{col}"), None),
        ("GET", format!("/v1/collections/{col}/documents"), None),
        ("POST", format!("/v1/collections/{col}/documents"), Some(r#""planted""#)),
        ("GET", format!("/v1/collections/{col}/documents/{doc}"), None),
        ("DELETE", format!("/v1/collections/{col}/documents/{doc}"), None),
        ("GET", format!("/v1/collections/{col}/documents/{doc}/pages/0"), None),
        ("POST", format!("/v1/collections/{col}/search"), Some(r#"{"query":"secret","mode":"keyword"}"#)),
    ];
    for (method, path, body) in &paths {
        let r = s.request(method, path, Some(&mallory), *body);
        assert_eq!((r.status, r.code()), (404, "collection_not_found".to_owned()), "{method} {path}");
    }
    assert!(s.get("/v1/collections", Some(&mallory)).json()["collections"].as_array().unwrap().is_empty());
    let c = s.get(&format!("/v1/collections/{col}"), Some(&alice)).json();
    assert_eq!((c["name"].as_str(), c["documents"].as_u64()), (Some("private"), Some(1)));
}
