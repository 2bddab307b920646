//! `POST /v1/collections/{id}/extract` against a scripted model: excerpts verified and every error answered.
//!
//! `POST /v1/collections/{id}/extract` against a scripted OpenAI-compatible reader on
//! loopback: genuine excerpts kept at their offsets in the page text (which
//! `GET …/pages/{n}` returns), a fabricated one rejected and counted, `all`, a masked
//! collection, every error (503 without a model, 502 when the model fails, 400s, 404
//! across accounts, 429 when the allowance is spent) and the meter never half-spent.

use serde_json::{json, Value};

use super::collections::{add, post};
use super::scripted_llm::{reading, Reply, Scripted};
use super::server::{Options, TestServer};

const MSA: &str = "2. Audit\n\n2.1 Provider shall permit one audit per year on reasonable notice.\n2.2 The Customer\u{2019}s auditors may inspect the \u{201c}Service Records\u{201d} for up to 30 days after each audit.";
const SUPPORT: &str = "The customer support line is open on weekdays; the provider answers within one day.";
const QUESTION: &str = "How often may the customer audit the provider?";

fn server(up: &Scripted, extra: &str) -> TestServer {
    TestServer::with_config(&format!("{}[extract]\nmodel = \"fake/reader\"\n{extra}", up.provider_config()))
}

/// An account with a collection holding the MSA and the support note: (key, collection, MSA's id).
fn corpus(s: &TestServer, settings: Value) -> (String, String, String) {
    let (_, key) = s.signup("reader@example.com");
    let r = post(s, "/v1/collections", &key, &json!({ "name": "contracts", "settings": settings }));
    assert_eq!(r.status, 201, "{}", r.text());
    let col = r.json()["id"].as_str().unwrap().to_owned();
    let msa = add(s, &key, &col, &json!({ "title": "MSA", "text": MSA }))["id"].as_str().unwrap().to_owned();
    add(s, &key, &col, &json!({ "title": "Support", "text": SUPPORT }));
    (key, col, msa)
}

fn extract(s: &TestServer, key: &str, col: &str, body: &Value) -> super::client::Response {
    post(s, &format!("/v1/collections/{col}/extract"), key, body)
}

fn page_text(s: &TestServer, key: &str, col: &str, doc: &str) -> String {
    let r = s.get(&format!("/v1/collections/{col}/documents/{doc}/pages/0"), Some(key));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["page"]["text"].as_str().unwrap().to_owned()
}

fn chars(text: &str, offset: &Value) -> String {
    let (a, b) = (offset["start"].as_u64().unwrap() as usize, offset["end"].as_u64().unwrap() as usize);
    text.chars().skip(a).take(b - a).collect()
}

fn extracts_spent(s: &TestServer, key: &str) -> u64 {
    s.get("/v1/account", Some(key)).json()["usage"]["extract"].as_u64().unwrap_or(0)
}

/// The MSA's reading: one excerpt as printed, one with straight quotes and lower case,
/// one the page does not hold.
fn script(up: &Scripted) {
    up.on(
        "permit one audit",
        reading(
            true,
            "States the audit frequency.",
            &[
                "2.1 Provider shall permit one audit per year on reasonable notice.",
                "the customer's auditors may inspect the \"Service Records\" for up to 30 days after each audit.",
                "Provider shall permit two audits per year on reasonable notice.",
            ],
        ),
    )
    .on("support line", reading(false, "About support hours, not audits.", &[]));
}

#[test]
fn genuine_excerpts_are_kept_at_their_offsets_and_a_fabricated_one_is_rejected() {
    let up = Scripted::start();
    script(&up);
    let s = server(&up, "");
    let (key, col, msa) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    super::spec::check("ExtractResponse", &j);
    assert_eq!(j["question"], QUESTION);
    assert_eq!((j["kept"].as_u64(), j["rejectedExcerpts"].as_u64()), (Some(1), Some(1)), "{j}");
    assert_eq!((j["model"].as_str(), j["masked"].as_bool()), (Some("fake/reader"), Some(false)));
    assert_eq!(j["usage"], json!({ "input_tokens": 200, "output_tokens": 40 }), "two pages read");
    let pages = j["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 1, "only the relevant page: {j}");
    let p = &pages[0];
    assert_eq!((p["relevant"].as_bool(), p["rejected"].as_u64(), p["note"].as_str()), (Some(true), Some(1), Some("States the audit frequency.")));
    assert_eq!((p["document"]["id"].as_str(), p["document"]["title"].as_str(), p["page"]["n"].as_u64()), (Some(msa.as_str()), Some("MSA"), Some(0)));
    assert!(p["citation"].as_str().unwrap().starts_with("AL-"));
    let text = page_text(&s, &key, &col, &msa);
    let ex = p["excerpts"].as_array().unwrap();
    assert_eq!(ex.len(), 2, "{p}");
    assert_eq!(
        (ex[0]["match"].as_str(), ex[0]["text"].as_str()),
        (Some("exact"), Some("2.1 Provider shall permit one audit per year on reasonable notice."))
    );
    assert_eq!(ex[0]["offset"], json!({ "start": 10, "end": 76 }));
    let printed = "The Customer\u{2019}s auditors may inspect the \u{201c}Service Records\u{201d} for up to 30 days after each audit.";
    assert_eq!((ex[1]["match"].as_str(), ex[1]["text"].as_str()), (Some("normalized_exact"), Some(printed)), "the page's own text comes back");
    for e in ex {
        assert_eq!(chars(&text, &e["offset"]), e["text"].as_str().unwrap(), "offsets point at the excerpt in the page text");
    }
    assert!(!r.text().contains("two audits"), "a rejected excerpt is never returned");
    assert_eq!(extracts_spent(&s, &key), 2, "one extract per page read");
    // The reader was given the question and the page, as the prompt files word it.
    let bodies = up.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies.iter().all(|b| b["model"] == "reader" && b.to_string().contains(QUESTION)), "{bodies:?}");
}

#[test]
fn all_also_returns_the_pages_judged_not_relevant() {
    let up = Scripted::start();
    script(&up);
    let s = server(&up, "");
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword", "all": true, "k": 5 }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    super::spec::check("ExtractResponse", &j);
    let pages = j["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "{j}");
    let other = pages.iter().find(|p| p["document"]["title"] == "Support").unwrap();
    assert_eq!((other["relevant"].as_bool(), other["note"].as_str()), (Some(false), Some("About support hours, not audits.")));
    assert_eq!((other["excerpts"].as_array().unwrap().len(), other["rejected"].as_u64()), (0, Some(0)));
    assert_eq!(j["kept"], 1);
}

#[test]
fn an_unreadable_answer_is_a_page_not_relevant_with_a_note_not_an_error() {
    let up = Scripted::start();
    up.otherwise(Reply::Text("I think the page is about audits, probably.".into(), 50, 10));
    let s = server(&up, "");
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword", "all": true }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!((j["kept"].as_u64(), j["pages"].as_array().unwrap().len()), (Some(0), 2));
    assert!(j["pages"][0]["note"].as_str().unwrap().contains("could not be read"), "{j}");
}

#[test]
fn under_mask_identifiers_the_reader_sees_masked_text_and_offsets_are_the_stored_pages() {
    let up = Scripted::start();
    up.on("[PHONE-1]", reading(true, "Gives the number to call.", &["Call the clinic at [PHONE-1] before the visit."]));
    let s = server(&up, "");
    let (_, key) = s.signup("masked@example.com");
    let r = post(&s, "/v1/collections", &key, &json!({ "name": "notes", "settings": { "mask_identifiers": true } }));
    let col = r.json()["id"].as_str().unwrap().to_owned();
    let note = "Referral note.\nCall the clinic at (617) 555-0143 before the visit. Bring the insurance card.";
    let doc = add(&s, &key, &col, &json!({ "title": "Referral", "text": note }))["id"].as_str().unwrap().to_owned();
    let r = extract(&s, &key, &col, &json!({ "question": "When should the patient call the clinic?", "mode": "keyword" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    super::spec::check("ExtractResponse", &j);
    assert_eq!((j["masked"].as_bool(), j["kept"].as_u64()), (Some(true), Some(1)), "{j}");
    let bodies = up.bodies().iter().map(Value::to_string).collect::<String>();
    assert!(bodies.contains("[PHONE-1]") && !bodies.contains("555-0143"), "the reader saw only the masked page: {bodies}");
    let e = &j["pages"][0]["excerpts"][0];
    let stored = page_text(&s, &key, &col, &doc);
    assert_eq!(e["text"], "Call the clinic at (617) 555-0143 before the visit.", "{e}");
    assert_eq!(chars(&stored, &e["offset"]), e["text"].as_str().unwrap());
    assert_eq!(e["offset"]["start"], 15);
}

#[test]
fn without_a_model_extract_is_503_llm_not_configured() {
    for config in ["[llm.local]\nenabled = false\n", "[llm.local]\nenabled = false\n[llm.providers.other]\nmanifest = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = [\"m\"]\n"] {
        let s = TestServer::with_config(config);
        let (key, col, _) = corpus(&s, json!({}));
        let r = extract(&s, &key, &col, &json!({ "question": QUESTION }));
        assert_eq!(r.status, 503, "{}", r.text());
        assert_eq!(r.json()["error"]["code"], "llm_not_configured");
        assert_eq!(extracts_spent(&s, &key), 0);
    }
}

#[test]
fn a_failing_model_is_502_and_nothing_is_metered() {
    let up = Scripted::start();
    up.on("permit one audit", reading(true, "x", &["2.1 Provider shall permit one audit per year on reasonable notice."]))
        .otherwise(Reply::Fail(500));
    let s = server(&up, "");
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword" }));
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "llm_error");
    assert_eq!(extracts_spent(&s, &key), 0, "a failed extraction gives back every extract it spent");
}

#[test]
fn bad_fields_are_400_and_another_accounts_collection_is_404() {
    let up = Scripted::start();
    let s = server(&up, "");
    let (key, col, _) = corpus(&s, json!({}));
    for (body, code) in [
        (json!({}), "invalid_question"),
        (json!({ "question": "" }), "invalid_question"),
        (json!({ "question": "q", "k": 21 }), "invalid_question"),
        (json!({ "question": "q", "all": 1 }), "invalid_question"),
        (json!({ "question": "q", "mode": "fuzzy" }), "invalid_question"),
        (json!({ "question": "q", "kinds": "table" }), "invalid_filter"),
        (json!({ "question": "q", "filters": { "date": { "from": "soon" } } }), "invalid_filter"),
    ] {
        let r = extract(&s, &key, &col, &body);
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], code, "{body}: {}", r.text());
    }
    let (_, other) = s.signup("other@example.com");
    let r = extract(&s, &other, &col, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "collection_not_found");
    assert!(up.bodies().is_empty(), "no model call for a refused request");
    assert_eq!(extracts_spent(&s, &key), 0);
}

#[test]
fn a_spent_allowance_is_429_with_retry_after_and_nothing_is_metered_or_read() {
    let up = Scripted::start();
    script(&up);
    let plan = "[plans.tiny]\nname = \"Tiny\"\nprice = 0\nstored_chars = 100000\nsearch = 100\nextract = 1\nresearch = 1\nrate_per_minute = 600\nburst = 100\n[auth]\ndefault_plan = \"tiny\"\n";
    let s = server(&up, plan);
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword" }));
    assert_eq!(r.status, 429, "two pages need two extracts: {}", r.text());
    assert_eq!(r.json()["error"]["code"], "allowance_exceeded");
    assert!(r.header("retry-after").and_then(|v| v.parse::<u64>().ok()).is_some_and(|v| v > 0), "{:?}", r.headers);
    assert_eq!(extracts_spent(&s, &key), 0);
    assert!(up.bodies().is_empty(), "no page was read");
    // One page fits.
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword", "k": 1 }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(extracts_spent(&s, &key), 1);
}

#[test]
fn arabic_with_harakat_cjk_and_emoji_excerpts_are_found_at_their_char_offsets() {
    let up = Scripted::start();
    up.on(
        "Field notes",
        reading(
            true,
            "Three quotations.",
            &["انما الاعمال بالنيات", "東京は日本の首都です。", "the team 👨\u{200d}👩\u{200d}👧 LOVED it.", "東京は日本の首都ではない。"],
        ),
    );
    let s = server(&up, "");
    let (_, key) = s.signup("scripts@example.com");
    let col = post(&s, "/v1/collections", &key, &json!({ "name": "mixed" })).json()["id"].as_str().unwrap().to_owned();
    let text = "Field notes 👍🏽\n\u{0625}\u{0650}\u{0646}\u{0651}\u{064e}\u{0645}\u{064e}\u{0627} \u{0627}\u{0644}\u{0623}\u{064e}\u{0639}\u{0652}\u{0645}\u{064e}\u{0627}\u{0644}\u{064f} \u{0628}\u{0650}\u{0627}\u{0644}\u{0646}\u{0651}\u{0650}\u{064a}\u{0651}\u{064e}\u{0627}\u{062a}\u{0650}\u{060c} 東京は日本の首都です。The team 👨\u{200d}👩\u{200d}👧 loved it.";
    let doc = add(&s, &key, &col, &json!({ "title": "Notes", "text": text }))["id"].as_str().unwrap().to_owned();
    let r = extract(&s, &key, &col, &json!({ "question": "What do the field notes say about the team?", "mode": "keyword" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    super::spec::check("ExtractResponse", &j);
    assert_eq!(j["rejectedExcerpts"], 1, "{j}");
    let stored = page_text(&s, &key, &col, &doc);
    let ex = j["pages"][0]["excerpts"].as_array().unwrap();
    let got: Vec<(&str, &str)> = ex.iter().map(|e| (e["match"].as_str().unwrap(), e["text"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            ("normalized_exact", "\u{0625}\u{0650}\u{0646}\u{0651}\u{064e}\u{0645}\u{064e}\u{0627} \u{0627}\u{0644}\u{0623}\u{064e}\u{0639}\u{0652}\u{0645}\u{064e}\u{0627}\u{0644}\u{064f} \u{0628}\u{0650}\u{0627}\u{0644}\u{0646}\u{0651}\u{0650}\u{064a}\u{0651}\u{064e}\u{0627}\u{062a}\u{0650}"),
            ("exact", "東京は日本の首都です。"),
            ("normalized_exact", "The team 👨\u{200d}👩\u{200d}👧 loved it."),
        ]
    );
    for e in ex {
        assert_eq!(chars(&stored, &e["offset"]), e["text"].as_str().unwrap());
    }
    assert_eq!(ex[0]["offset"]["start"], 15, "counted in characters: the emoji and its modifier are two");
}

#[test]
fn pages_are_read_concurrently_up_to_the_configured_bound() {
    let up = Scripted::start();
    up.otherwise(Reply::Slow(std::time::Duration::from_millis(300), Box::new(reading(false, "Not it.", &[]))));
    let s = server(&up, "concurrency = 2\n");
    let (_, key) = s.signup("many@example.com");
    let col = post(&s, "/v1/collections", &key, &json!({ "name": "many" })).json()["id"].as_str().unwrap().to_owned();
    for i in 0..5 {
        add(&s, &key, &col, &json!({ "title": format!("Audit note {i}"), "text": format!("Audit note {i}: the provider was audited.") }));
    }
    let r = extract(&s, &key, &col, &json!({ "question": "audit", "mode": "keyword", "all": true }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["pages"].as_array().unwrap().len(), 5);
    assert_eq!(up.bodies().len(), 5);
    assert_eq!(up.most_in_flight(), 2, "two pages at a time, never more");
}

/// `[llm.local]` on the fake local model (tests/llm/fake_local.py, a real process
/// serving OpenAI's wire format; it answers "ok"), "loading" for `delay` seconds;
/// enabled in so many words, since .cargo/config.toml turns the local model off for tests.
fn local_model(delay: &str) -> TestServer {
    let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/llm/fake_local.py");
    let out = std::process::Command::new("sh").args(["-c", "command -v python3"]).output().expect("sh runs");
    let python = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let config =
        format!("[llm.local]\nenabled = true\nruntime = \"{python}\"\nlauncher = \"{fake}\"\nmodel = \"{fake}\"\nname = \"fake-1b\"\nnice = 0\n");
    TestServer::with(Options {
        config,
        env: vec![("FAKE_LOCAL_MODEL_DELAY".into(), delay.into()), ("QUARRY_LLM__LOCAL__ENABLED".into(), "true".into())],
        ..Options::default()
    })
}

#[test]
fn the_local_model_reads_by_default_and_while_it_starts_extract_is_503_llm_busy() {
    let s = local_model("600");
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword" }));
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "llm_busy");
    assert_eq!(r.header("retry-after"), Some("5"));
    assert_eq!(extracts_spent(&s, &key), 0);
    drop(s);

    let s = local_model("0.1");
    let started = std::time::Instant::now();
    while s.get("/v1/health", None).json()["llm"] != true {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the fake local model never became ready");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (key, col, _) = corpus(&s, json!({}));
    let r = extract(&s, &key, &col, &json!({ "question": QUESTION, "mode": "keyword", "all": true }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    super::spec::check("ExtractResponse", &j);
    assert_eq!(j["model"], "local/fake-1b", "{j}");
    // Its "ok" is no reading: each page is not relevant, with a note, and still metered.
    assert_eq!((j["kept"].as_u64(), j["pages"].as_array().unwrap().len()), (Some(0), 2), "{j}");
    assert!(j["pages"].as_array().unwrap().iter().all(|p| p["relevant"] == false && p["note"].as_str().unwrap().contains("could not be read")));
    assert_eq!(extracts_spent(&s, &key), 2);
}
