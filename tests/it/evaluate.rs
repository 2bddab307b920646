//! `POST /v1/collections/{id}/evaluate`: gold items resolved, scored, metered and refused.
//!
//! Evaluation through the API: gold items by citation, title and page, document id and
//! snippet; notes for what cannot be resolved or run; the costs; and every bad field,
//! other accounts and spent allowances refused before anything runs.

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::{Options, TestServer};

fn evaluate(s: &TestServer, key: &str, col: &str, body: &Value) -> super::client::Response {
    post(s, &format!("/v1/collections/{col}/evaluate"), key, body)
}

fn notes(r: &Value) -> Vec<String> {
    r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect()
}

fn has_note(r: &Value, needle: &str) -> bool {
    notes(r).iter().any(|n| n.contains(needle))
}

/// The per-question entry of question `query` in `variant`.
fn entry<'a>(r: &'a Value, query: &str, variant: &str) -> &'a Value {
    r["perQuestion"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["query"] == query && e["variant"] == variant)
        .unwrap_or_else(|| panic!("no {variant} entry for {query}: {r}"))
}

/// This month's searches (the account view leaves a zero count out).
fn usage(s: &TestServer, key: &str) -> u64 {
    let r = s.get("/v1/account", Some(key));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["usage"]["search"].as_u64().unwrap_or(0)
}

const WATER: &str = "Rivers belong to the state and every river crossing needs consent.\u{c}\
Wells need a permit from the district office.\u{c}\
Reservoir storage is limited to forty percent of the yearly inflow.";

#[test]
fn every_kind_of_relevant_item_is_scored_in_every_variant() {
    // One token a minute, so the rate headers show exactly what the call spent.
    let s = TestServer::with(Options {
        embedder: Some("all-MiniLM-L6-v2".into()),
        config: "[plans.scribe]\nrate_per_minute = 1\nburst = 100\n".into(),
        ..Options::default()
    });
    let (_, key) = s.signup("gold@example.com");
    let col = create_collection(&s, &key, "laws");
    let water = add(&s, &key, &col, &json!({"title": "Water law", "text": WATER}));
    assert_eq!(water["pages"], 3);
    add(&s, &key, &col, &json!({"title": "Audit rules", "text": "The contract permits one audit per year, with thirty days notice."}));
    let volcano = add(
        &s,
        &key,
        &col,
        &json!({"title": "Volcanoes", "text": "A volcano erupts when magma rises through the crust. Lava flows can bury whole towns."}),
    );
    let tea =
        add(&s, &key, &col, &json!({"title": "Tea", "text": "Green tea is brewed from unoxidised leaves. Steep it briefly in water below boiling."}));
    let page = |doc: &Value, n: u32| {
        let id = doc["id"].as_str().unwrap();
        s.get(&format!("/v1/collections/{col}/documents/{id}/pages/{n}"), Some(&key)).json()["page"]["citation"].as_str().unwrap().to_owned()
    };
    let volcano_page = page(&volcano, 0);
    let reservoir_page = page(&water, 2);
    let wells_page = page(&water, 1);
    let body = json!({
        "k": 5,
        "expand": false,
        "questions": [
            {"query": "volcano erupts magma", "relevant": [{"citation": volcano_page}]},
            {"query": "reservoir storage", "relevant": [{"document": "Water law", "page": 2}], "gains": [2]},
            {"query": "green tea brewed", "relevant": [{"document": tea["id"]}]},
            {"query": "audit per year", "relevant": [{"text": "permits ONE audit\n  per year"}]},
            {"query": "wells permit", "relevant": [{"document": "Water law", "page": 1}, {"citation": "AL-DEADBEEF"}]},
            {"query": "unicorns", "relevant": [{"text": "no page says this"}]}
        ]
    });
    let before = s.get("/v1/account", Some(&key));
    let r = evaluate(&s, &key, &col, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let spent: u64 =
        before.header("x-ratelimit-remaining").unwrap().parse::<u64>().unwrap() - r.header("x-ratelimit-remaining").unwrap().parse::<u64>().unwrap();
    assert_eq!(spent, 5, "an evaluation costs five rate tokens");
    // All four variants by default, in the spec's order; hybrid+rerank has no reranker.
    let text = r.text();
    let at = |v: &str| text.find(&format!("\"{v}\":{{")).unwrap_or_else(|| panic!("no {v} metrics: {text}"));
    assert!(at("keyword") < at("semantic") && at("semantic") < at("hybrid"), "{text}");
    let r = r.json();

    // The response has every field the spec requires.
    for field in ["n", "k", "embedder", "reranker", "variants", "perQuestion", "notes"] {
        assert!(r.get(field).is_some(), "{field}: {r}");
    }
    assert_eq!(
        (r["n"].as_u64(), r["k"].as_u64(), r["embedder"].as_str(), r["reranker"].clone()),
        (Some(5), Some(5), Some("all-MiniLM-L6-v2"), Value::Null)
    );
    assert_eq!(r["variants"].as_object().unwrap().len(), 3, "{r}");
    assert!(has_note(&r, "hybrid+rerank skipped: no reranker"), "{r}");
    // The unresolvable items are notes, and the question without any is not counted.
    assert!(has_note(&r, "questions[4].relevant[1] (AL-DEADBEEF): no page of this collection has this citation"), "{r}");
    assert!(has_note(&r, "questions[5].relevant[0] (no page says this): no page contains this text"), "{r}");
    assert!(has_note(&r, "questions[5] has no relevant item that names a page here; it is not counted in n"), "{r}");
    for (name, m) in r["variants"].as_object().unwrap() {
        for f in ["ndcg", "precision", "recall", "mrr", "map"] {
            let v = m[f].as_f64().unwrap_or_else(|| panic!("{name}.{f}: {r}"));
            assert!((0.0..=1.0).contains(&v), "{name}.{f} = {v}");
        }
        assert!(m["latency"]["p50"].as_f64().unwrap() <= m["latency"]["p95"].as_f64().unwrap());
        assert!(m["found"].as_u64().unwrap() <= 5);
    }

    // Each of the five keyword questions has its one gold page first: a perfect run, with
    // precision one hit in k = 5 — and the unresolvable citation in question 4 costs nothing.
    let keyword = &r["variants"]["keyword"];
    assert_eq!(
        [&keyword["ndcg"], &keyword["precision"], &keyword["recall"], &keyword["mrr"], &keyword["map"], &keyword["found"]],
        [&json!(1.0), &json!(0.2), &json!(1.0), &json!(1.0), &json!(1.0), &json!(5)],
        "{r}"
    );
    let q = entry(&r, "volcano erupts magma", "keyword");
    assert_eq!((q["ndcg"].as_f64(), q["firstHit"].as_u64(), q["missing"].clone()), (Some(1.0), Some(1), json!([])));
    assert_eq!(q["ranked"][0], volcano_page.as_str());
    assert_eq!(q["hits"], json!([{"item": volcano_page, "rank": 1, "citation": volcano_page}]));
    assert!(q["latencyMs"].as_f64().is_some());
    let q = entry(&r, "reservoir storage", "keyword");
    assert_eq!(q["hits"], json!([{"item": "Water law, page 2", "rank": 1, "citation": reservoir_page}]));
    let q = entry(&r, "audit per year", "keyword");
    assert_eq!((q["hits"][0]["item"].as_str(), q["firstHit"].as_u64()), (Some("permits ONE audit\n  per year"), Some(1)));
    let q = entry(&r, "wells permit", "keyword");
    assert_eq!((q["hits"][0]["citation"].as_str(), q["missing"].clone()), (Some(wells_page.as_str()), json!([])));
    assert_eq!(q["ndcg"], 1.0);
    assert_eq!(entry(&r, "volcano erupts magma", "hybrid")["firstHit"], 1, "{r}");
    assert!(r["perQuestion"].as_array().unwrap().iter().all(|e| e["query"] != "unicorns"));
    assert_eq!(r["perQuestion"].as_array().unwrap().len(), 5 * 3);
    assert_eq!(usage(&s, &key), 15, "one search of the allowance per question per variant");

    // Variants asked by name run in that order; an unknown one is a note. A question
    // whose page no keyword reaches scores 0 there and halves the means.
    let missed = json!({"query": "permit", "relevant": [{"document": "Water law", "page": 2}]});
    let r = evaluate(&s, &key, &col, &json!({"questions": [body["questions"][0], missed], "variants": ["semantic", "vector", "keyword"]}));
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.find("\"semantic\":{") < text.find("\"keyword\":{"), "{text}");
    let r = r.json();
    assert_eq!(r["variants"].as_object().unwrap().len(), 2, "{r}");
    assert_eq!(r["k"], 10);
    assert!(has_note(&r, "Unknown variant \"vector\""), "{r}");
    // keyword at k = 10: question 0 perfect, question 1 a miss.
    // nDCG (1 + 0)/2 = 0.5; precision (1/10 + 0)/2 = 0.05; recall, MRR, MAP (1 + 0)/2 = 0.5.
    let keyword = &r["variants"]["keyword"];
    assert_eq!(
        [&keyword["ndcg"], &keyword["precision"], &keyword["recall"], &keyword["mrr"], &keyword["map"], &keyword["found"]],
        [&json!(0.5), &json!(0.05), &json!(0.5), &json!(0.5), &json!(0.5), &json!(1)],
        "{r}"
    );
    assert!(!text.contains("-0.0"), "a miss scores 0, not -0: {text}");
    let q = entry(&r, "permit", "keyword");
    assert_eq!((q["ndcg"].as_f64(), q["firstHit"].clone(), q["hits"].clone()), (Some(0.0), Value::Null, json!([])));
    assert_eq!(q["missing"], json!(["Water law, page 2"]));
    assert!(!q["ranked"].as_array().unwrap().is_empty() && !q["ranked"].as_array().unwrap().contains(&json!(reservoir_page)), "{q}");
    assert_eq!(usage(&s, &key), 19);
}

#[test]
fn bad_requests_other_accounts_and_spent_allowances_change_nothing() {
    // No embedder; three searches a month.
    let s = TestServer::with_config("[plans.scribe]\nsearch = 3\nburst = 200\n");
    let (_, key) = s.signup("strict@example.com");
    let (_, mallory) = s.signup("mallory@example.com");
    let col = create_collection(&s, &key, "rules");
    add(&s, &key, &col, &json!({"title": "Audit rules", "text": "The contract permits one audit per year."}));
    let good = json!({"query": "audit per year", "relevant": [{"document": "Audit rules", "page": 0}]});

    let r = evaluate(&s, &key, &col, &json!({"questions": [good, {"query": "audit", "relevant": [{"document": "Audit rules", "page": "first"}]}]}));
    assert_eq!((r.status, r.code()), (400, "invalid_questions".to_owned()));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("questions[1].relevant[0].page"), "{}", r.text());
    let r = evaluate(&s, &key, &col, &json!({"questions": [good, {"query": " ", "relevant": []}]}));
    assert_eq!((r.status, r.code()), (400, "invalid_questions".to_owned()));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("questions[1].query"), "{}", r.text());
    let r = evaluate(&s, &key, &col, &json!({"questions": [good], "k": 51}));
    assert_eq!((r.status, r.code()), (400, "invalid_questions".to_owned()));
    let r = evaluate(&s, &key, &col, &json!({"questions": vec![good.clone(); 1001]}));
    assert_eq!((r.status, r.code()), (400, "invalid_questions".to_owned()));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("at most 1000"));
    assert_eq!(usage(&s, &key), 0, "a refused evaluation spends no search");

    let r = evaluate(&s, &mallory, &col, &json!({"questions": [good]}));
    assert_eq!((r.status, r.code()), (404, "collection_not_found".to_owned()));
    let r = s.request("GET", &format!("/v1/collections/{col}/evaluate"), Some(&key), None);
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));

    // Without an embedder only keyword runs; the others are notes.
    let r = evaluate(&s, &key, &col, &json!({"questions": [good, {"query": "per year", "relevant": [{"text": "ONE audit per year"}]}]}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = r.json();
    assert_eq!(r["variants"].as_object().unwrap().keys().collect::<Vec<_>>(), ["keyword"]);
    assert!(has_note(&r, "Variant semantic skipped: this server runs without an embedder"), "{r}");
    assert!(has_note(&r, "Variant hybrid skipped"), "{r}");
    assert_eq!((r["n"].as_u64(), r["embedder"].clone()), (Some(2), Value::Null));
    assert_eq!(r["variants"]["keyword"]["mrr"], 1.0, "{r}");
    assert_eq!(usage(&s, &key), 2);

    // Nothing resolvable: n is 0, nothing runs and nothing is spent.
    let r = evaluate(
        &s,
        &key,
        &col,
        &json!({"questions": [{"query": "audit", "relevant": [{"citation": "AL-DEADBEEF"}, {"document": "Audit rules", "page": 4}]}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = r.json();
    assert_eq!((r["n"].as_u64(), r["variants"].clone(), r["perQuestion"].clone()), (Some(0), json!({}), json!([])));
    assert!(has_note(&r, "questions[0].relevant[1] (Audit rules, page 4): the document has 1 page(s)"), "{r}");
    assert!(has_note(&r, "nothing was searched"), "{r}");
    assert_eq!(usage(&s, &key), 2);

    // Two more searches do not fit in the one left: 429 before anything runs.
    let r = evaluate(&s, &key, &col, &json!({"questions": [good, good], "variants": ["keyword"]}));
    assert_eq!((r.status, r.code()), (429, "allowance_exceeded".to_owned()));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("needs 2 searches"), "{}", r.text());
    assert_eq!(usage(&s, &key), 2);
    let r = evaluate(&s, &key, &col, &json!({"questions": [good], "variants": ["keyword"]}));
    assert_eq!(r.status, 200, "the last search still fits: {}", r.text());
    assert_eq!(usage(&s, &key), 3);
}
