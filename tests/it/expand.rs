//! Query expansion through the API on the shipped set: each expansion kind finds its page, bad values are refused.
//!
//! Query expansion through the API, on the set shipped in tests/data/expand/set.json:
//! each query uses one form (an abbreviation, a section marker, a spelling, a glossary
//! term) and its relevant page the other. Keyword mode, so the query as typed has no way
//! to the page but through its expansions; the distractors share the queries' other
//! words, so "in the top 10" is a ranking, not a match. And the refusals: bad `expand`
//! values and bad glossaries are 400s in the AgentLex shape.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::collections::{add, post};
use super::server::TestServer;

/// A plan whose rate allows loading the set at once.
const LIBRARY: &str = "[auth]\ndefault_plan = \"library\"\n";

fn set() -> Value {
    serde_json::from_str(include_str!("../data/expand/set.json")).unwrap()
}

fn search(s: &TestServer, key: &str, col: &str, body: Value) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    super::spec::check("SearchResponse", &v);
    v
}

fn top10(r: &Value) -> Vec<&str> {
    r["results"].as_array().unwrap().iter().take(10).map(|x| x["document"]["title"].as_str().unwrap()).collect()
}

/// Creates the set's collections with their documents: (id, the collection's entry).
fn load(s: &TestServer, key: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for c in set()["collections"].as_array().unwrap() {
        let settings = json!({"domain": c["domain"], "glossary": c.get("glossary").cloned().unwrap_or(Value::Null)});
        let r = post(s, "/v1/collections", key, &json!({"name": c["name"], "settings": settings}));
        assert_eq!(r.status, 201, "{}", r.text());
        let id = r.json()["id"].as_str().unwrap().to_owned();
        for d in c["documents"].as_array().unwrap() {
            add(s, key, &id, d);
        }
        out.push((id, c.clone()));
    }
    out
}

#[test]
fn expansion_finds_the_page_the_query_as_typed_misses_for_every_kind() {
    let s = TestServer::with_config(LIBRARY);
    let (_, key) = s.signup("expand@example.com");
    let mut kinds = BTreeSet::new();
    for (col, c) in load(&s, &key) {
        for q in c["queries"].as_array().unwrap() {
            let (query, kind, relevant) = (q["query"].as_str().unwrap(), q["kind"].as_str().unwrap(), q["relevant"].as_str().unwrap());
            let off = search(&s, &key, &col, json!({"query": query, "mode": "keyword", "expand": false}));
            assert!(!top10(&off).contains(&relevant), "{query}: found without expansion: {off}");
            assert_eq!((&off["expand"], &off["expansions"]), (&json!(false), &json!([])));
            assert!(off["timings"].get("expandMs").is_none());
            // `expand` defaults to true.
            let on = search(&s, &key, &col, json!({"query": query, "mode": "keyword"}));
            assert_eq!(on["expand"], true);
            let at = top10(&on).iter().position(|t| *t == relevant).unwrap_or_else(|| panic!("{query}: {relevant} not in the top 10: {on}"));
            let expansions = on["expansions"].as_array().unwrap();
            assert!(expansions.iter().any(|e| e["kind"] == kind), "{query}: no {kind} expansion: {expansions:?}");
            let glossary = q.get("glossary").is_some();
            if glossary {
                assert!(
                    expansions.iter().any(|e| e["weight"] == 1.0 && e["text"].as_str().unwrap().contains("Software Services Agreement")),
                    "{expansions:?}"
                );
            }
            assert!(on["timings"]["expandMs"].as_f64().unwrap() >= 0.0);
            // The page is reached through an expansion's terms, and its passage says which.
            let hit = &on["results"][at];
            assert_eq!(hit["retrievers"], json!(["keyword"]));
            assert!(!hit["passages"][0]["matched"].as_array().unwrap().is_empty(), "{hit}");
            kinds.insert(if glossary { "glossary".to_owned() } else { format!("{kind} ({})", c["domain"].as_str().unwrap()) });
        }
    }
    let want = ["abbreviation (legal)", "abbreviation (medical)", "glossary", "section (legal)", "variant (classical)"];
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), want);
}

#[test]
fn the_request_domain_steers_the_lexicons_and_llm_without_a_model_warns() {
    let s = TestServer::with_config(LIBRARY);
    let (_, key) = s.signup("expand-domain@example.com");
    let cols = load(&s, &key);
    let clinic = &cols[0].0;
    // "SOB" is a word outside medicine: a general search leaves it as typed.
    let general = search(&s, &key, clinic, json!({"query": "SOB", "mode": "keyword", "domain": "general"}));
    assert_eq!((general["domain"].as_str(), &general["expansions"], &general["expand"]), (Some("general"), &json!([]), &json!(true)));
    let sob = search(&s, &key, clinic, json!({"query": "SOB", "mode": "keyword"}));
    assert_eq!(sob["expansions"][0]["text"], "shortness of breath");
    // An expansion whose words the collection does not hold is not searched nor listed.
    let r = search(&s, &key, clinic, json!({"query": "COPD", "mode": "keyword"}));
    assert_eq!(r["expansions"], json!([]));
    let medical = search(&s, &key, clinic, json!({"query": "HTN", "mode": "keyword"}));
    assert_eq!(medical["domain"], "medical");
    assert_eq!(medical["expansions"], json!([{"text": "hypertension", "kind": "abbreviation", "weight": 0.8}]));
    // No model configured: the deterministic expansions run, and the answer says so.
    let r = search(&s, &key, clinic, json!({"query": "HTN", "mode": "keyword", "expand": "llm"}));
    assert_eq!(r["expand"], true);
    assert_eq!(r["expansions"], medical["expansions"]);
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("No model is configured")), "{r}");
}

#[test]
fn bad_expand_values_and_bad_glossaries_are_400s() {
    let s = TestServer::with_config(LIBRARY);
    let (_, key) = s.signup("expand-bad@example.com");
    let r = post(&s, "/v1/collections", &key, &json!({"name": "g"}));
    let col = r.json()["id"].as_str().unwrap().to_owned();
    for bad in [json!("yes"), json!("LLM"), json!(1), json!(null), json!(["llm"]), json!({})] {
        let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "x", "expand": bad}));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        let e = &r.json()["error"];
        assert_eq!(e["code"], "invalid_query", "{bad}: {e}");
        assert!(e["message"].as_str().unwrap().contains("expand"), "{e}");
    }
    let long = "x".repeat(121);
    let many: serde_json::Map<String, Value> = (0..301).map(|i| (format!("T{i}"), json!("t"))).collect();
    let bads = [
        json!({"A": 3}),
        json!({"A": long}),
        json!({"A": []}),
        json!({"A": ["a", "b", "c", "d", "e", "f"]}),
        json!({"A": ["ok", 2]}),
        json!({"A": ["ok", long]}),
        json!({"A": null}),
        Value::Object(many),
        json!(["A"]),
        json!("A"),
    ];
    for g in &bads {
        let body = json!({"settings": {"glossary": g}});
        let r = s.request("PATCH", &format!("/v1/collections/{col}"), Some(&key), Some(&body.to_string()));
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (400, Some("invalid_settings")), "{g}: {}", r.text());
        let r = post(&s, "/v1/collections", &key, &json!({"name": "h", "settings": {"glossary": g}}));
        assert_eq!(r.status, 400, "create {g}: {}", r.text());
    }
    let ok: serde_json::Map<String, Value> = (0..300).map(|i| (format!("T{i}"), json!(["y".repeat(120), "z", "w", "v", "u"]))).collect();
    let body = json!({"settings": {"glossary": ok}});
    let r = s.request("PATCH", &format!("/v1/collections/{col}"), Some(&key), Some(&body.to_string()));
    assert_eq!(r.status, 200, "the spec's limits are allowed: {}", r.text());
}
