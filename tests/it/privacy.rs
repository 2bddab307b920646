//! Identifiers under a collection's `redact_storage` and `mask_identifiers` settings, end to end.
//!
//! Identifiers under a collection's settings, through HTTP: `redact_storage` stores only
//! the masked form (no original identifier anywhere under the data directory or in the
//! server's log, even after `kill -9`), `mask_identifiers` masks only what the embedder
//! reads, a document's identifiers are counted, and changing either setting on a
//! collection that holds documents says what happens to them.

use serde_json::{json, Value};

use super::collections::{add, post};
use super::server::{Options, TestServer};

/// A note full of identifiers of every structured kind and the originals a test looks for.
const NOTE: &str = "Patient: Maria Garcia  MRN: 00482913  DOB: 04/12/1961\n\n\
    Contact daughter at (617) 555-0143 or l.garcia@example.com; lives at 18 Beacon Street, Boston, MA 02108.\n\n\
    The Employee (Robert Chen, SSN 512-44-7832) was paid by card 4111 1111 1111 1111 from 198.51.100.23; \
    referred by Dr. Okafor (NPI 1467560003).\n\n\
    Her cousin Mr. Pavlović (+44 20 7946 0958, mobile 0490 75 40 81) lives at Kálmán Imre u. 12., \
    1054 Budapest; Anđa Tomić rang from 345-899-3560x4587 and wrote from Ringvej 144; \
    Mrs. Barbara Yudina Apt. 675 signed.";
/// The originals a test looks for, international ones among them; each also stands for
/// its parts (a name cut at its first non-ASCII letter would leave "Pavlovi" + "ć").
const ORIGINALS: [&str; 22] = [
    "Maria Garcia",
    "00482913",
    "04/12/1961",
    "555-0143",
    "l.garcia@example.com",
    "18 Beacon Street",
    "Robert Chen",
    "512-44-7832",
    "4111 1111 1111 1111",
    "198.51.100.23",
    "Okafor",
    "1467560003",
    "avlovi",
    "7946 0958",
    "0490 75 40 81",
    "Kálmán",
    "Imre u",
    "Anđa",
    "Tomić",
    "3560x4587",
    "Ringvej",
    "Yudina",
];

fn collection(s: &TestServer, key: &str, settings: Value) -> String {
    let r = post(s, "/v1/collections", key, &json!({ "name": "private", "settings": settings }));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

/// Every file under `dir`, read as bytes.
fn files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn redact_storage_writes_no_original_anywhere_even_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let mut s = TestServer::with(Options { log: Some(log.clone()), config: "[log]\nlevel = \"debug\"\n".into(), ..Options::default() });
    let (_, key) = s.signup("redact@example.org");
    let col = collection(&s, &key, json!({ "redact_storage": true }));
    let created = add(&s, &key, &col, &json!({ "title": "Note on Maria Garcia", "author": "Dr. Okafor", "text": NOTE }));
    assert_eq!(created["meta"]["redacted"], true, "{created}");
    assert!(created["identifiers"]["total"].as_u64().unwrap() >= 10, "{created}");
    assert_eq!(created["meta"]["identifiers"], created["identifiers"], "{created}");
    for kind in ["ssn", "phone", "email", "mrn", "dob", "credit_card", "ip", "npi", "person", "address"] {
        assert!(created["identifiers"]["counts"][kind].as_u64().unwrap_or(0) >= 1, "{kind} not counted: {created}");
    }
    // A bad document on the same collection: refused, and its identifiers are not logged either.
    let r = post(&s, &format!("/v1/collections/{col}/documents"), &key, &json!({ "text": NOTE, "html": NOTE }));
    assert_eq!(r.status, 400, "{}", r.text());
    let doc = created["id"].as_str().unwrap();
    let page = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/0"), Some(&key)).json();
    let shown = page.to_string();
    assert!(shown.contains("[SSN-1]") && shown.contains("[NAME-1]"), "the page shows the masked form: {shown}");
    let got = s.get(&format!("/v1/collections/{col}/documents/{doc}"), Some(&key)).json();
    assert!(!got.to_string().contains("Garcia") && !got.to_string().contains("Okafor"), "title and author are masked: {got}");
    let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({ "query": "512-44-7832 Garcia", "mode": "keyword" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let results = r.json()["results"].to_string();
    assert!(!results.contains("Garcia") && !results.contains("512-44-7832"), "results hold only the masked form: {results}");
    let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({ "query": "daughter contact", "mode": "keyword" }));
    let results = r.json()["results"].to_string();
    assert!(results.contains("[PHONE-1]") && !results.contains("555-0143"), "{results}");

    s.kill9();
    s.restart();
    assert_eq!(s.get(&format!("/v1/collections/{col}/documents/{doc}"), Some(&key)).status, 200, "the document survived kill -9");
    s.kill9();

    let mut all = Vec::new();
    files(s.data(), &mut all);
    all.push((log.clone(), std::fs::read(&log).unwrap()));
    assert!(all.len() > 3, "the data directory and the log were read");
    for (path, bytes) in &all {
        for original in ORIGINALS {
            assert!(!contains(bytes, original), "{original:?} is stored in {}", path.display());
        }
    }
}

#[test]
fn mask_identifiers_masks_what_the_embedder_reads_and_keeps_the_stored_text() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), ..Options::default() });
    let (_, key) = s.signup("mask@example.org");
    let masked = collection(&s, &key, json!({ "mask_identifiers": true }));
    let plain = collection(&s, &key, json!({}));
    let text = "Call Maria Garcia at (617) 555-0143 about the invoice.";
    let a = add(&s, &key, &masked, &json!({ "text": text }));
    let b = add(&s, &key, &plain, &json!({ "text": text }));
    assert_eq!(a["identifiers"], b["identifiers"], "counted whatever the settings");
    assert!(a["identifiers"]["counts"]["phone"].as_u64() == Some(1), "{a}");
    assert!(a["meta"].get("redacted").is_none(), "{a}");

    // The stored text and what search returns keep the original.
    let doc = a["id"].as_str().unwrap();
    let page = s.get(&format!("/v1/collections/{masked}/documents/{doc}/pages/0"), Some(&key)).json();
    assert!(page.to_string().contains("Maria Garcia"), "{page}");

    // What the embedder read. Both collections also hold G, the masked text with one word
    // changed. Asked for the masked text M itself: where the embedder read the note masked,
    // its vector is M's own and it ranks first; where it read the original, G (nearly M)
    // does.
    let m = "Call [NAME-1] at [PHONE-1] about the invoice.";
    let g_text = "Call [NAME-1] at [PHONE-1] about the bill.";
    let ga = add(&s, &key, &masked, &json!({ "text": g_text }));
    let gb = add(&s, &key, &plain, &json!({ "text": g_text }));
    assert_eq!(ga["identifiers"]["total"], 0, "placeholders are not identifiers: {ga}");
    let first = |col: &str| -> String {
        let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({ "query": m, "mode": "semantic", "expand": false }));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["results"][0]["document"]["id"].as_str().unwrap().to_owned()
    };
    assert_eq!(first(&masked), doc, "the masked collection embedded the note masked");
    assert_eq!(first(&plain), gb["id"].as_str().unwrap(), "the plain collection embedded the note as written");
    // And its stored text, in search results, is the original.
    let r = post(&s, &format!("/v1/collections/{masked}/search"), &key, &json!({ "query": "Garcia invoice", "mode": "keyword" }));
    assert!(r.text().contains("Maria Garcia") && r.text().contains("555-0143"), "{}", r.text());
}

#[test]
fn changing_a_setting_on_a_collection_with_documents_says_what_happens_to_them() {
    let s = TestServer::start();
    let (_, key) = s.signup("change@example.org");
    let col = collection(&s, &key, json!({}));
    let patch = |settings: Value| {
        let r = s.request("PATCH", &format!("/v1/collections/{col}"), Some(&key), Some(&json!({ "settings": settings }).to_string()));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let out = patch(json!({ "redact_storage": true }));
    assert!(out.get("warnings").is_none_or(|w| w == &json!([])), "nothing to say with no documents: {out}");
    patch(json!({ "redact_storage": false }));
    add(&s, &key, &col, &json!({ "text": "SSN 512-44-7832 on file." }));
    let out = patch(json!({ "redact_storage": true, "mask_identifiers": true }));
    let warnings = out["warnings"].to_string();
    assert!(warnings.contains("redact_storage is now on") && warnings.contains("1 document already indexed"), "{out}");
    assert!(warnings.contains("mask_identifiers is now on"), "{out}");
    assert_eq!((out["settings"]["redact_storage"].as_bool(), out["settings"]["mask_identifiers"].as_bool()), (Some(true), Some(true)));
    // The document already indexed is untouched, as the spec says; new ones are redacted.
    let docs = s.get(&format!("/v1/collections/{col}/documents"), Some(&key)).json();
    let first = docs["documents"][0]["id"].as_str().unwrap().to_owned();
    let page = s.get(&format!("/v1/collections/{col}/documents/{first}/pages/0"), Some(&key)).json();
    assert!(page.to_string().contains("512-44-7832"), "{page}");
    let second = add(&s, &key, &col, &json!({ "text": "SSN 512-44-7832 on file." }));
    assert_eq!(second["meta"]["redacted"], true);
    let bad = s.request("PATCH", &format!("/v1/collections/{col}"), Some(&key), Some(r#"{"settings":{"redact_storage":"yes"}}"#));
    assert_eq!((bad.status, bad.code()), (400, "invalid_settings".to_owned()));
}
