//! Long pages embedded in windows: a one-page Markdown file found by its last paragraph, also after a crash; a page found only by meaning shows the window that matched.
//!
//! Long pages embedded in windows (issue 22): a Markdown file without page breaks is
//! one page, far longer than the embedder's window; a question only its last paragraph
//! answers is found by semantic search, and still after a kill -9 replays the WAL.

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::{Options, TestServer};

/// Nothing flushes by itself: the long page stays in the WAL until the kill.
const CONFIG: &str = r#"
[index]
flush_batches = 1000
flush_interval = "1h"
"#;

const LONG_TITLE: &str = "Harbour district annual budget report";

/// About 30,000 characters of budget prose, one page, then the only paragraph about
/// the storm, the cat and who rescued it.
fn long_markdown() -> String {
    markdown_with_story_after(80)
}

const STORY: &str = "## Appendix: the night of the great storm\n\nDuring the great storm of 1998 the harbour pilot, Maren Holt, rowed out \
         to the rocks in the dark and rescued Biscuit, the lighthouse keeper's cat, who had been trapped on the lantern gallery \
         by the waves.\n";

/// 80 sections of budget prose with the storm paragraph after the first `at` of them.
fn markdown_with_story_after(at: usize) -> String {
    let items =
        ["road resurfacing", "street lighting", "school meals", "library books", "park benches", "water mains", "bus shelters", "refuse collection"];
    let mut md = format!("# {LONG_TITLE}\n\n");
    for i in 0..80 {
        if i == at {
            md.push_str(STORY);
            md.push('\n');
        }
        let item = items[i % items.len()];
        md.push_str(&format!(
            "## Line {i}: {item}\n\nThe council allocated {} thousand euros to {item} in quarter {}. Spending on {item} \
             was audited against the approved ledger, and invoices, receipts and tax adjustments were reconciled by the \
             finance office. The variance of {} percent was carried forward to the next fiscal year under rule {}.\n\n",
            100 + 7 * i,
            1 + i % 4,
            i % 9,
            300 + i
        ));
    }
    if at >= 80 {
        md.push_str(STORY);
    }
    md
}

/// Short pages close to the question, each missing its answer.
const NEAR: &[(&str, &str)] = &[
    ("Cats", "Cats sleep for most of the day and like warm, dry places indoors."),
    ("Storms at sea", "A storm at sea brings high waves and strong winds that endanger small boats and their crews."),
    ("Lighthouses", "A lighthouse keeper tends the lamp that guides ships past the rocks at night."),
    ("Lifeboats", "Lifeboat crews are volunteers who put to sea to help sailors in trouble."),
];

fn semantic(s: &TestServer, key: &str, col: &str, query: &str) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &json!({"query": query, "mode": "semantic", "k": 5}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn titles(r: &Value) -> Vec<String> {
    r["results"].as_array().unwrap().iter().map(|x| x["document"]["title"].as_str().unwrap_or("").to_owned()).collect()
}

#[test]
fn a_question_answered_only_by_the_tail_of_a_long_page_is_found_and_survives_kill_9() {
    let mut s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), config: CONFIG.into(), ..Options::default() });
    let (_, key) = s.signup("windows@example.com");
    let col = create_collection(&s, &key, "long pages");
    for (title, text) in NEAR {
        add(&s, &key, &col, &json!({"title": title, "text": text}));
    }
    let md = long_markdown();
    assert!(md.len() > 25_000 && !md.contains('\u{c}'));
    let created = add(&s, &key, &col, &json!({"title": LONG_TITLE, "text": md, "format": "markdown"}));
    assert_eq!(created["pages"], 1, "no page breaks: one page, {created}");

    let question = "Who rescued the lighthouse keeper's cat during the great storm?";
    let check = |s: &TestServer, when: &str| {
        let r = semantic(s, &key, &col, question);
        assert_eq!(titles(&r)[0], LONG_TITLE, "{when}: {r}");
        let top = &r["results"][0];
        assert_eq!(top["retrievers"], json!(["semantic"]), "{when}");
        r
    };
    let before = check(&s, "after the add");
    // The head of the page still answers questions about the head.
    let r = semantic(&s, &key, &col, "council spending on road resurfacing audited by the finance office");
    assert_eq!(titles(&r)[0], LONG_TITLE, "{r}");

    s.kill9();
    s.restart();
    let after = check(&s, "after kill -9 and the WAL's replay");
    assert_eq!(after["results"], before["results"]);
}

/// Lowercase words of letters, for checking that two texts share none.
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A page found only by its vector (semantic mode, or a hybrid search whose keyword list
/// misses it) shows the window whose vector matched, not its first chunks: the question
/// shares no word with the page, and the answer sits in the middle of ~30,000 characters.
#[test]
fn a_page_found_only_by_meaning_shows_its_best_window_as_passages() {
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), ..Options::default() });
    let (_, key) = s.signup("window-passages@example.com");
    let col = create_collection(&s, &key, "meaning");
    for (title, text) in NEAR {
        add(&s, &key, &col, &json!({"title": title, "text": text}));
    }
    let md = markdown_with_story_after(40);
    let created = add(&s, &key, &col, &json!({"title": LONG_TITLE, "text": md, "format": "markdown"}));
    assert_eq!(created["pages"], 1, "{created}");
    let question = "Which brave sailor saved a kitten stranded amid a hurricane?";
    let shared: Vec<String> = words(question).intersection(&words(&md)).cloned().collect();
    assert!(shared.is_empty(), "the question must share no word with the page: {shared:?}");

    for mode in ["semantic", "hybrid"] {
        let body = json!({"query": question, "mode": mode, "k": 5, "passages": 10});
        let r = post(&s, &format!("/v1/collections/{col}/search"), &key, &body);
        assert_eq!(r.status, 200, "{}", r.text());
        let r = r.json();
        let hit = r["results"].as_array().unwrap().iter().find(|x| x["document"]["title"] == LONG_TITLE).unwrap_or_else(|| panic!("{mode}: {r}"));
        assert_eq!(hit["retrievers"], json!(["semantic"]), "{mode}: {hit}");
        let passages = hit["passages"].as_array().unwrap();
        assert!(!passages.is_empty(), "{mode}: {hit}");
        // The window's chunks come first, in page order, from the middle of the page.
        let first = &passages[0];
        assert!(first["pos"].as_u64().unwrap() > 0, "{mode}: the passages start at the window, not the page head: {hit}");
        let window: Vec<&Value> = passages.iter().take_while(|p| p["pos"].as_u64().unwrap() >= first["pos"].as_u64().unwrap()).collect();
        let text: String = window.iter().map(|p| p["text"].as_str().unwrap()).collect::<Vec<_>>().join("\n");
        assert!(text.contains("rescued Biscuit"), "{mode}: the matched window holds the answer: {hit}");
        let mut last_end = 0;
        for p in &window {
            // No term matched: no highlights; the offsets are the passage's characters in
            // the page, one after another.
            assert_eq!((p["matched"].clone(), p["highlights"].clone()), (json!([]), json!([])), "{mode}: {p}");
            let (start, end) = (p["offsets"]["start"].as_u64().unwrap(), p["offsets"]["end"].as_u64().unwrap());
            assert_eq!(end - start, p["text"].as_str().unwrap().chars().count() as u64, "{mode}: offsets of {p}");
            assert!(start >= last_end && start > 0, "{mode}: offsets of {p}");
            last_end = end;
        }
    }
}
