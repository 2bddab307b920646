//! `POST /v1/scan`: identifiers counted and masked, never echoed back.
//!
//! `POST /v1/scan` over HTTP: counts by kind, the masked preview, `kinds`, refusals in
//! AgentLex's shape, and no identifier ever echoed back.

use serde_json::{json, Value};

use super::collections::post;
use super::server::TestServer;
use super::spec;

fn scan(s: &TestServer, key: &str, body: &Value) -> Value {
    let r = post(s, "/v1/scan", key, body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("x-ratelimit-remaining").is_some(), "an authenticated answer carries the rate headers");
    let j = r.json();
    spec::check("ScanResponse", &j);
    j
}

fn refused(s: &TestServer, key: &str, body: &str) -> (u16, String, String) {
    let r = s.request("POST", "/v1/scan", Some(key), Some(body));
    let j = r.json();
    (r.status, j["error"]["code"].as_str().unwrap_or("").to_owned(), j["error"]["message"].as_str().unwrap_or("").to_owned())
}

#[test]
fn the_specs_example_counts_three_and_masks_all_but_the_date() {
    let s = TestServer::start();
    let (_, key) = s.signup("scan@example.com");
    let j = scan(&s, &key, &json!({"text": "Call 555-123-4567 or write to ada@example.com about the 2024-01-15 visit."}));
    assert_eq!(
        j,
        json!({"total": 3, "counts": {"phone": 1, "email": 1, "date": 1}, "kinds": ["phone", "email", "date"],
               "masked_preview": "Call [PHONE-1] or write to [EMAIL-1] about the 2024-01-15 visit."})
    );
}

/// The identifiers of a note, every one of a kind masked by default.
const NOTE: &str = "Patient: Maria Garcia, MRN: 00482913, DOB: 04/12/1961, SSN 512-44-7832. \
Call (617) 555-0143 or l.garcia@example.com. Card 4111 1111 1111 1111. NPI 1467560003. \
Passport No. X40781255. Lives at 18 Beacon Street, Boston, MA 02108. Login from 198.51.100.23.";
const VALUES: &[&str] = &[
    "Maria",
    "Garcia",
    "00482913",
    "04/12/1961",
    "512-44-7832",
    "512447832",
    "617",
    "555-0143",
    "l.garcia",
    "example.com",
    "4111",
    "1467560003",
    "X40781255",
    "Beacon",
    "02108",
    "198.51.100.23",
];

#[test]
fn no_identifier_value_appears_anywhere_in_the_response() {
    let s = TestServer::start();
    let (_, key) = s.signup("echo@example.com");
    let r = post(&s, "/v1/scan", &key, &json!({"text": NOTE}));
    assert_eq!(r.status, 200, "{}", r.text());
    let whole = format!("{:?}\n{}", r.headers, r.text());
    for v in VALUES {
        assert!(!whole.contains(v), "{v:?} is echoed in {whole}");
    }
    let j = r.json();
    assert_eq!(j["total"], 11, "{j}");
    for kind in ["person", "mrn", "dob", "ssn", "phone", "email", "credit_card", "npi", "passport", "address", "ip"] {
        assert!(j["counts"][kind].as_u64() >= Some(1), "{kind} not counted: {j}");
    }
    assert!(j.get("spans").is_none() && !r.text().contains("\"start\""), "spans are never returned");
    // The preview is the first 300 characters of the masked text.
    let preview = j["masked_preview"].as_str().unwrap();
    assert!(preview.starts_with("Patient: [NAME-1], MRN: [MRN-1], DOB: [DOB-1], SSN [SSN-1]."), "{preview}");
}

#[test]
fn names_phones_and_addresses_of_other_countries_are_masked_whole_and_an_advertised_ssn_is_not_counted() {
    let s = TestServer::start();
    let (_, key) = s.signup("intl@example.com");
    let text = "Mr. Pavlović rang +44 20 7946 0958 from Kálmán Imre u. 12.; the card said SSN 078-05-1120.";
    let j = scan(&s, &key, &json!({"text": text}));
    assert_eq!(j["counts"], json!({"person": 1, "phone": 1, "address": 1}), "{j}");
    assert_eq!(j["masked_preview"], "Mr. [NAME-1] rang [PHONE-1] from [ADDRESS-1]; the card said SSN [SSN-1].");
}

#[test]
fn kinds_limit_what_is_counted_and_masked() {
    let s = TestServer::start();
    let (_, key) = s.signup("kinds@example.com");
    let text = "SSN 512-44-7832, phone 617-555-0143, seen 2024-01-15, https://example.org/x";
    let j = scan(&s, &key, &json!({"text": text, "kinds": ["ssn"]}));
    assert_eq!((j["total"].clone(), j["counts"].clone()), (json!(1), json!({"ssn": 1})));
    assert_eq!(j["masked_preview"], "SSN [SSN-1], phone 617-555-0143, seen 2024-01-15, https://example.org/x");
    // Named, date and url are masked too; unknown names are ignored, as the spec says.
    let j = scan(&s, &key, &json!({"text": text, "kinds": ["date", "url", "phone", "zip_code"]}));
    assert_eq!(j["masked_preview"], "SSN 512-44-7832, phone [PHONE-1], seen [DATE-1], [URL-1]");
    assert_eq!(j["kinds"], json!(["phone", "url", "date"]));
    // Without kinds everything is counted, and date and url stay in the preview.
    let j = scan(&s, &key, &json!({"text": text}));
    assert_eq!(j["total"], 4);
    assert_eq!(j["masked_preview"], "SSN [SSN-1], phone [PHONE-1], seen 2024-01-15, https://example.org/x");
}

#[test]
fn a_long_text_is_counted_whole_and_previewed_from_its_start() {
    let s = TestServer::start();
    let (_, key) = s.signup("long@example.com");
    let line = "Reach Dr. Okafor at 617-555-0143 about claim 2024. ";
    let text = line.repeat(2000);
    let j = scan(&s, &key, &json!({"text": text}));
    assert_eq!(j["counts"], json!({"person": 2000, "phone": 2000}));
    let preview = j["masked_preview"].as_str().unwrap();
    assert_eq!(preview.chars().count(), 300);
    assert!(preview.starts_with("Reach Dr. [NAME-1] at [PHONE-1] about claim 2024. Reach Dr. [NAME-1] at [PHONE-1]"), "{preview}");
}

#[test]
fn bad_input_is_refused_with_a_stable_code() {
    let s = TestServer::start();
    let (_, key) = s.signup("bad@example.com");
    assert_eq!(refused(&s, &key, "{}"), (400, "invalid_text".into(), "text is required.".into()));
    assert_eq!(refused(&s, &key, r#"{"text": 42}"#), (400, "invalid_text".into(), "text must be a string, not a number.".into()));
    let (status, code, _) = refused(&s, &key, r#"{"text": "x", "kinds": "ssn"}"#);
    assert_eq!((status, code.as_str()), (400, "invalid_text"));
    let (status, code, _) = refused(&s, &key, r#"{"text": "x", "kinds": [7]}"#);
    assert_eq!((status, code.as_str()), (400, "invalid_text"));
    let long = json!({"text": "a".repeat(1_000_001)}).to_string();
    assert_eq!(refused(&s, &key, &long), (400, "invalid_text".into(), "text is 1000001 characters; at most 1000000.".into()));
    assert_eq!(refused(&s, &key, "{\"text\": ").1, "invalid_json");
    let r = s.request("POST", "/v1/scan", None, Some(r#"{"text": "x"}"#));
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (401, json!("missing_key")));
}
