//! Search through the API with the real embedder: modes, phrases, filters, passages, stable citations.
//!
//! Search through the API with the real embedder: modes, phrases, filters, passages
//! with offsets, stable citations across restarts, and the same answer every time.

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::{Options, TestServer};

fn search(s: &TestServer, key: &str, col: &str, body: Value) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn docs_of(r: &Value) -> Vec<String> {
    r["results"].as_array().unwrap().iter().map(|x| x["document"]["title"].as_str().unwrap_or("").to_owned()).collect()
}

const CORPUS: &[(&str, &str, &str)] = &[
    ("Cats", "2023-05-01", "Cats are small carnivorous mammals. A cat purrs when content and hunts mice at night."),
    ("Dogs", "2024-02-10", "Dogs are loyal companions. The dog barks at strangers and loves long walks in the park."),
    ("Volcanoes", "2024-03-14", "A volcano erupts when magma rises through the crust. Lava flows can bury whole towns."),
    ("Tea", "2022-11-30", "Green tea is brewed from unoxidised leaves. Steep it briefly in water below boiling."),
    ("Cats again", "2021-01-01", "Cats are small carnivorous mammals. A cat purrs when content and hunts mice at night."),
];

fn corpus(s: &TestServer) -> (String, String) {
    let (_, key) = s.signup("search@example.com");
    let col = create_collection(s, &key, "animals");
    for (title, date, text) in CORPUS {
        add(
            s,
            &key,
            &col,
            &json!({"title": title, "text": text, "metadata": {"date": date, "topic": {"kind": if title.starts_with("Cat") || *title == "Dogs" { "pets" } else { "other" }}}}),
        );
    }
    (key, col)
}

#[test]
fn every_mode_finds_what_a_reader_would_and_says_why() {
    let mut s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), ..Options::default() });
    let (key, col) = corpus(&s);
    let r = search(&s, &key, &col, json!({"query": "molten rock coming out of a mountain", "mode": "semantic", "expand": false}));
    assert_eq!(docs_of(&r)[0], "Volcanoes", "{r}");
    assert_eq!(r["results"][0]["retrievers"], json!(["semantic"]));
    let r = search(&s, &key, &col, json!({"query": "barking dog", "mode": "keyword", "expand": false}));
    assert_eq!(docs_of(&r), ["Dogs"]);
    let first = &r["results"][0];
    assert_eq!(first["passages"][0]["matched"], json!(["bark", "dog"]));
    assert!(first["citation"].as_str().unwrap().starts_with("AL-"));
    let r = search(&s, &key, &col, json!({"query": "why do cats purr?", "expand": false}));
    assert_eq!((r["mode"].as_str(), r["intent"].as_str()), (Some("hybrid"), Some("question")));
    let top = &r["results"][0];
    assert_eq!((top["duplicates"].as_u64(), top["alsoIn"].as_u64()), (Some(1), Some(1)), "the two cat pages fold: {r}");
    assert_eq!(top["retrievers"], json!(["keyword", "semantic"]));
    for t in ["keywordMs", "embedMs", "semanticMs", "totalMs"] {
        assert!(r["timings"][t].as_f64().is_some(), "{t}: {r}");
    }
    assert!(r["considered"].as_u64().unwrap() >= 2);
    assert_eq!(r["reranker"], Value::Null);

    // The same request gives the same answer, and citations survive a restart.
    let again = search(&s, &key, &col, json!({"query": "why do cats purr?", "expand": false}));
    assert_eq!(again["results"], r["results"]);
    let citations = |r: &Value| r["results"].as_array().unwrap().iter().map(|x| x["citation"].clone()).collect::<Vec<_>>();
    let before = citations(&r);
    s.terminate(std::time::Duration::from_secs(10));
    s.restart();
    let after = search(&s, &key, &col, json!({"query": "why do cats purr?", "expand": false}));
    assert_eq!(citations(&after), before);
}

#[test]
fn phrases_filters_and_warnings_behave_as_the_spec_says() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), ..Options::default() });
    let (key, col) = corpus(&s);
    let r = search(&s, &key, &col, json!({"query": "\"long walks\" animals", "mode": "hybrid", "expand": false}));
    assert_eq!((docs_of(&r), r["phrases"].clone(), r["intent"].as_str()), (vec!["Dogs".to_owned()], json!(["long walks"]), Some("phrase")));
    let r = search(&s, &key, &col, json!({"query": "\"purple elephants\" cats", "mode": "keyword"}));
    let warnings = r["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("purple elephants")), "{r}");
    // Regression (the expansion warning on every search): nothing is said about it, and
    // the spec's default (true) ran.
    assert!(!warnings.iter().any(|w| w.as_str().unwrap().contains("xpansion")), "{r}");
    assert_eq!(r["expand"], true);
    let r = search(&s, &key, &col, json!({"query": "cats", "mode": "keyword", "expand": true}));
    assert!(r["warnings"].as_array().unwrap().is_empty(), "{r}");
    assert_eq!((&r["expand"], &r["expansions"]), (&json!(true), &json!([])), "nothing to expand in \"cats\"");
    let r = search(
        &s,
        &key,
        &col,
        json!({"query": "animals", "mode": "semantic", "filters": {"metadata": {"topic.kind": "pets"}, "date": {"from": "2023", "to": "March 1, 2024"}}}),
    );
    let mut got = docs_of(&r);
    got.sort();
    assert_eq!(got, ["Cats", "Dogs"], "{r}");
    assert_eq!(r["filters"]["date"], json!({"from": "2023", "to": "March 1, 2024"}));
    let r = search(&s, &key, &col, json!({"query": "animals", "kinds": ["table", "unicorn"]}));
    assert_eq!(r["filters"]["kinds"], json!(["table"]));
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("unicorn")));
    let bad = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "x", "filters": {"date": {"from": "soon"}}}));
    assert_eq!((bad.status, bad.code()), (400, "invalid_filter".to_owned()));
    let bad = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "x".repeat(4001)}));
    assert_eq!((bad.status, bad.code()), (400, "query_too_long".to_owned()));
}

#[test]
fn a_collection_built_with_another_embedder_still_answers_keyword_searches() {
    let mut s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), shards: Some(1), ..Options::default() });
    let (_, key) = s.signup("mismatch@example.com");
    let col = create_collection(&s, &key, "minilm");
    add(&s, &key, &col, &json!("Quartz is a hard mineral."));
    s.set_embedder("none");
    s.terminate(std::time::Duration::from_secs(10));
    s.restart();
    let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "quartz", "mode": "semantic"}));
    assert_eq!((r.status, r.code()), (409, "embedder_mismatch".to_owned()));
    let r = post(&s, &format!("/v1/collections/{col}/documents"), &key, &json!("More text."));
    assert_eq!(r.code(), "embedder_mismatch");
    let r = search(&s, &key, &col, json!({"query": "quartz", "mode": "keyword"}));
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
}

/// Each passage's `highlights` are the words that hold its matched terms, at character
/// offsets into the page text (as the passage's own offsets are): what the console marks.
#[test]
fn highlights_are_the_matched_words_at_page_offsets() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), ..Options::default() });
    let (key, col) = corpus(&s);
    let r = search(&s, &key, &col, json!({"query": "barking dogs", "mode": "keyword", "expand": false}));
    let top = &r["results"][0];
    let p = &top["passages"][0];
    let doc = top["document"]["id"].as_str().unwrap();
    let page = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/0"), Some(&key)).json();
    let text: Vec<char> = page["page"]["text"].as_str().unwrap().chars().collect();
    let at = |h: &Value| -> String { text[h["start"].as_u64().unwrap() as usize..h["end"].as_u64().unwrap() as usize].iter().collect() };
    let words: Vec<(String, &str)> = p["highlights"].as_array().unwrap().iter().map(|h| (at(h), h["term"].as_str().unwrap())).collect();
    assert_eq!(words, [("Dogs".to_owned(), "dog"), ("dog".to_owned(), "dog"), ("barks".to_owned(), "bark")], "{p}");
    let (start, end) = (p["offsets"]["start"].as_u64().unwrap(), p["offsets"]["end"].as_u64().unwrap());
    assert!(p["highlights"].as_array().unwrap().iter().all(|h| h["start"].as_u64().unwrap() >= start && h["end"].as_u64().unwrap() <= end));

    // A client that does not read them says so and does not pay for them: the same
    // answer without the field.
    let without = search(&s, &key, &col, json!({"query": "barking dogs", "mode": "keyword", "expand": false, "highlights": false}));
    let strip = |mut r: Value| {
        r["timings"] = Value::Null;
        for hit in r["results"].as_array_mut().unwrap() {
            for p in hit["passages"].as_array_mut().unwrap() {
                p.as_object_mut().unwrap().remove("highlights");
            }
        }
        r
    };
    assert!(without["results"][0]["passages"][0].get("highlights").is_none(), "{without}");
    assert_eq!(strip(without), strip(r));
    let bad = post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "dogs", "highlights": "no"}));
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(bad.json()["error"]["code"], "invalid_query");
    assert!(bad.json()["error"]["message"].as_str().unwrap().contains("highlights"), "{}", bad.text());
}
