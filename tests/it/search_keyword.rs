//! Keyword search through the API on a server without an embedder.
//!
//! Keyword search through the API on a server without an embedder: quoted words in a
//! long request weighed rather than enforced (and the answer says so), Unicode forms of
//! one word found alike.

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::TestServer;

fn search(s: &TestServer, key: &str, col: &str, query: &str) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &json!({"query": query, "mode": "keyword"}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn titles(r: &Value) -> Vec<String> {
    r["results"].as_array().unwrap().iter().map(|x| x["document"]["title"].as_str().unwrap_or("").to_owned()).collect()
}

const PAGES: &[(&str, &str)] = &[
    ("Trial", "Low-dose aspirin lowers the risk of heart attacks in older adults: a randomised trial."),
    ("Rats", "Cardioprotective diets in rats fed olive oil."),
    ("Cafe", "A small cafe\u{0301} near the station serves the \u{FB01}nal breakfast of the day."),
];

#[test]
fn search_long_requests_weigh_quoted_words_and_unicode_forms_match() {
    let s = TestServer::start();
    let (_, key) = s.signup("keyword@example.com");
    let col = create_collection(&s, &key, "kw");
    for (title, text) in PAGES {
        add(&s, &key, &col, &json!({"title": title, "text": text}));
    }
    let long = "I am writing a review for my lab and would like to find studies showing that aspirin lowers \
                the risk of heart attacks in older adults. Please include papers that mention \"cardioprotective\" effects.";
    let r = search(&s, &key, &col, long);
    assert_eq!(titles(&r)[..2], ["Trial", "Rats"], "{r}");
    assert_eq!(r["phrases"], json!([]), "no phrase had to match: {r}");
    assert_ne!(r["intent"], "phrase");
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("\"cardioprotective\"")), "{r}");
    // A short query with the same quotes is a filter, as the spec says.
    let r = search(&s, &key, &col, "aspirin \"cardioprotective\"");
    assert_eq!((titles(&r), r["phrases"].clone()), (vec!["Rats".to_owned()], json!(["cardioprotective"])));

    for q in ["café", "cafe\u{0301}", "final breakfast", "\"small café\""] {
        let r = search(&s, &key, &col, q);
        assert_eq!(titles(&r), ["Cafe"], "{q}: {r}");
    }
}
