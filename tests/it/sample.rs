//! `POST /v1/collections/{id}/sample`: each bundled corpus indexed through the add path.
//!
//! `POST /v1/collections/{id}/sample`: each bundled corpus indexes through the add path
//! (its documents listed, chunked by their domain's chunker, metered), bad domains are
//! refused and change nothing, and another account's collection does not exist.

use serde_json::{json, Value};

use super::collections::{create_collection, post};
use super::server::TestServer;

fn documents(s: &TestServer, key: &str, col: &str) -> Vec<Value> {
    let r = s.get(&format!("/v1/collections/{col}/documents"), Some(key));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["documents"].as_array().unwrap().clone()
}

#[test]
fn every_domain_sample_indexes_through_the_add_path_with_its_chunker() {
    let s = TestServer::start();
    let (_, key) = s.signup("sample@example.org");
    let mut total_pages = 0;
    for (domain, chunker) in [("medical", "medical"), ("legal", "legal"), ("archive", "classical")] {
        let col = create_collection(&s, &key, domain);
        let r = post(&s, &format!("/v1/collections/{col}/sample"), &key, &json!({ "domain": domain }));
        assert_eq!(r.status, 201, "{domain}: {}", r.text());
        let out = r.json();
        super::spec::check("SampleResponse", &out);
        let docs = documents(&s, &key, &col);
        assert!(docs.len() >= 3, "{domain}: only {} documents", docs.len());
        assert_eq!(out["documents"], json!(docs.len()), "{domain}");
        let pages: u64 = docs.iter().map(|d| d["pages"].as_u64().unwrap()).sum();
        let chunks: u64 = docs.iter().map(|d| d["chunks"].as_u64().unwrap()).sum();
        assert_eq!((out["pages"].as_u64().unwrap(), out["chunks"].as_u64().unwrap()), (pages, chunks), "{domain}");
        total_pages += pages;
        for d in &docs {
            assert_eq!(d["chunker"], chunker, "{domain}: {} was chunked as {}", d["title"], d["chunker"]);
            assert_eq!(d["meta"]["kind"], chunker, "{domain}");
        }
        let c = s.get(&format!("/v1/collections/{col}"), Some(&key)).json();
        assert_eq!(c["domain"], chunker, "{domain}: the collection's domain is its documents' chunker");
    }
    // Metered like adds: every page indexed, every char stored.
    let account = s.get("/v1/account", Some(&key)).json();
    assert_eq!(account["usage"]["pages_indexed"].as_u64(), Some(total_pages), "{account}");
    assert!(account["usage"]["stored_chars"].as_u64().unwrap() > 0, "{account}");
}

#[test]
fn bad_domains_are_refused_and_change_nothing() {
    let s = TestServer::start();
    let (_, key) = s.signup("sample-bad@example.org");
    let col = create_collection(&s, &key, "empty");
    for body in [json!({ "domain": "poetry" }), json!({}), json!({ "domain": 3 }), json!({ "domain": "medical", "extra": 1 })] {
        let r = post(&s, &format!("/v1/collections/{col}/sample"), &key, &body);
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], "invalid_domain", "{body}");
    }
    assert!(documents(&s, &key, &col).is_empty());

    let (_, other) = s.signup("sample-other@example.org");
    let r = post(&s, &format!("/v1/collections/{col}/sample"), &other, &json!({ "domain": "legal" }));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "collection_not_found");
    assert!(documents(&s, &key, &col).is_empty());
}
