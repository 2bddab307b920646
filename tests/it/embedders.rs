//! Per-collection embedders through the API: one server with both models, the choice recorded, refused and kept.
//!
//! Per-collection embedders: one server loading both models, each collection searched
//! and filled with the model it records, the choice refused when the server does not
//! load it, kept across restarts, and changeable only while the collection is empty.

use serde_json::{json, Value};

use super::collections::{add, post};
use super::server::{Options, TestServer};

const BOTH: &str = "embedders = [\"multilingual-e5-small\", \"all-MiniLM-L6-v2\"]\n[plans.scribe]\nrate_per_minute = 6000\nburst = 1000\n";

const ENGLISH: &[(&str, &str)] = &[
    ("Volcanoes", "A volcano erupts when magma rises through the crust. Lava flows can bury whole towns."),
    ("Tea", "Green tea is brewed from unoxidised leaves. Steep it briefly in water below boiling."),
    ("Cats", "Cats are small carnivorous mammals. A cat purrs when content and hunts mice at night."),
    ("Football", "The team won the final match with two goals in the last minute before a large crowd."),
];

/// The same four topics in Arabic.
const ARABIC: &[(&str, &str)] = &[
    ("البراكين", "يثور البركان عندما ترتفع الصهارة عبر القشرة الأرضية، وتدفن الحمم مدنا كاملة."),
    ("الشاي", "يحضر الشاي الأخضر من أوراق غير مؤكسدة، وينقع قليلا في ماء دون الغليان."),
    ("القطط", "القطط ثدييات صغيرة آكلة للحوم، تخرخر حين ترضى وتصطاد الفئران ليلا."),
    ("كرة القدم", "فاز الفريق بالمباراة النهائية بهدفين في الدقيقة الأخيرة أمام جمهور كبير."),
];

/// English questions about the Arabic documents: only a multilingual model answers them.
const ACROSS: &[(&str, &str)] = &[("lava and magma", "البراكين"), ("a pet that hunts mice", "القطط"), ("who scored the goals", "كرة القدم")];

fn both(shards: usize) -> TestServer {
    TestServer::with(Options { embedder: Some("multilingual-e5-small".into()), config: BOTH.into(), shards: Some(shards), ..Options::default() })
}

fn create(s: &TestServer, key: &str, body: Value) -> Value {
    let r = post(s, "/v1/collections", key, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn fill(s: &TestServer, key: &str, col: &str, docs: &[(&str, &str)]) {
    for (title, text) in docs {
        add(s, key, col, &json!({"title": title, "text": text}));
    }
}

/// The first result's title, searched in `mode`.
fn top(s: &TestServer, key: &str, col: &str, query: &str, mode: &str) -> String {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &json!({"query": query, "mode": mode, "k": 4}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["results"][0]["document"]["title"].as_str().unwrap_or("").to_owned()
}

fn embedder_of(s: &TestServer, key: &str, col: &str) -> String {
    s.get(&format!("/v1/collections/{col}"), Some(key)).json()["embedder"].as_str().unwrap().to_owned()
}

#[test]
fn one_server_searches_an_english_collection_on_minilm_and_an_arabic_one_on_e5() {
    let mut s = both(2);
    let h = s.get("/v1/health", None).json();
    assert_eq!(
        (h["embedder"].clone(), h["embedders"].clone()),
        (json!("multilingual-e5-small"), json!(["multilingual-e5-small", "all-MiniLM-L6-v2"]))
    );
    let (_, key) = s.signup("embedders@example.com");
    let en = create(&s, &key, json!({"name": "English", "settings": {"embedder": "all-MiniLM-L6-v2"}}));
    assert_eq!(en["embedder"], "all-MiniLM-L6-v2");
    super::spec::check("Collection", &en);
    let ar = create(&s, &key, json!({"name": "Arabic"}));
    assert_eq!(ar["embedder"], "multilingual-e5-small", "no setting: the server's default");
    // The control: the same Arabic documents embedded with the English model.
    let ar_minilm = create(&s, &key, json!({"name": "Arabic on MiniLM", "settings": {"embedder": "all-MiniLM-L6-v2"}}));
    let (en, ar, ar_minilm) = (en["id"].as_str().unwrap(), ar["id"].as_str().unwrap(), ar_minilm["id"].as_str().unwrap());
    fill(&s, &key, en, ENGLISH);
    let added = add(&s, &key, ar, &json!({"title": ARABIC[0].0, "text": ARABIC[0].1}));
    assert_eq!(added["embedder"], "multilingual-e5-small");
    fill(&s, &key, ar, &ARABIC[1..]);
    fill(&s, &key, ar_minilm, ARABIC);
    let sane = |s: &TestServer| {
        for (q, want) in [("feline pet", "Cats"), ("molten rock", "Volcanoes"), ("soccer championship", "Football")] {
            assert_eq!(top(s, &key, en, q, "semantic"), want, "{q} on the MiniLM collection");
        }
        assert_eq!(top(s, &key, ar, "حيوان أليف يصطاد الفئران", "semantic"), "القطط");
        for (q, want) in ACROSS {
            assert_eq!(top(s, &key, ar, q, "semantic"), *want, "{q} on the e5 collection");
        }
    };
    sane(&s);
    // Each search embeds with its collection's own model: on MiniLM the same Arabic
    // documents no longer answer English questions.
    let missed = ACROSS.iter().filter(|(q, want)| top(&s, &key, ar_minilm, q, "semantic") != *want).count();
    assert!(missed >= 2, "MiniLM answered {} of {} cross-lingual questions as e5 does", ACROSS.len() - missed, ACROSS.len());
    // Each collection keeps its model across a restart.
    s.terminate(std::time::Duration::from_secs(10));
    s.restart();
    assert_eq!((embedder_of(&s, &key, en), embedder_of(&s, &key, ar)), ("all-MiniLM-L6-v2".to_owned(), "multilingual-e5-small".to_owned()));
    sane(&s);
}

#[test]
fn an_embedder_is_chosen_among_the_loaded_and_changed_only_while_the_collection_is_empty() {
    let mut s = both(1);
    let (_, key) = s.signup("choice@example.com");
    let r = post(&s, "/v1/collections", &key, &json!({"name": "x", "settings": {"embedder": "bge-small"}}));
    assert_eq!((r.status, r.code()), (400, "unknown_embedder".to_owned()));
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("bge-small") && message.contains("multilingual-e5-small, all-MiniLM-L6-v2"), "{message}");
    let col = create(&s, &key, json!({"name": "notes"}))["id"].as_str().unwrap().to_owned();
    let patch = |body: Value| s.request("PATCH", &format!("/v1/collections/{col}"), Some(&key), Some(&body.to_string()));
    let r = patch(json!({"settings": {"embedder": "bge-small"}}));
    assert_eq!((r.status, r.code()), (400, "unknown_embedder".to_owned()));
    // Empty: the model may change.
    let r = patch(json!({"settings": {"embedder": "all-MiniLM-L6-v2"}}));
    assert_eq!((r.status, r.json()["embedder"].clone()), (200, json!("all-MiniLM-L6-v2")), "{}", r.text());
    add(&s, &key, &col, &json!({"title": "Quartz", "text": "Quartz is a hard mineral made of silica."}));
    // With a document: another model would mix two models' vectors, so it is refused,
    // and nothing else of the patch is applied.
    let r = patch(json!({"name": "renamed", "settings": {"embedder": "multilingual-e5-small"}}));
    assert_eq!((r.status, r.code()), (409, "embedder_locked".to_owned()), "{}", r.text());
    let got = s.get(&format!("/v1/collections/{col}"), Some(&key)).json();
    assert_eq!((got["name"].clone(), got["embedder"].clone()), (json!("notes"), json!("all-MiniLM-L6-v2")));
    let r = patch(json!({"settings": {"embedder": "all-MiniLM-L6-v2", "domain": "general"}}));
    assert_eq!(r.status, 200, "naming the model it has is no change: {}", r.text());
    // Evaluate names the collection's model, not the server's default.
    let body = json!({"k": 3, "questions": [{"query": "silica mineral", "relevant": [{"text": "Quartz is a hard mineral"}]}]});
    let r = post(&s, &format!("/v1/collections/{col}/evaluate"), &key, &body);
    assert_eq!((r.status, r.json()["embedder"].clone()), (200, json!("all-MiniLM-L6-v2")), "{}", r.text());
    // Restarted without MiniLM: semantic is the existing 409, hybrid falls back to
    // keywords with a warning (the answer's mode is the one asked, as without an
    // embedder), adds are refused, keyword search still works.
    s.set_embedder("multilingual-e5-small");
    s.terminate(std::time::Duration::from_secs(10));
    s.set_config(&BOTH.replace("embedders = [\"multilingual-e5-small\", \"all-MiniLM-L6-v2\"]", "embedders = []"));
    s.restart();
    assert_eq!(s.get("/v1/health", None).json()["embedders"], json!(["multilingual-e5-small"]));
    let search = |mode: &str| post(&s, &format!("/v1/collections/{col}/search"), &key, &json!({"query": "quartz mineral", "mode": mode}));
    let r = search("semantic");
    assert_eq!((r.status, r.code()), (409, "embedder_mismatch".to_owned()));
    let r = search("hybrid");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = r.json();
    assert_eq!((r["results"].as_array().unwrap().len(), r["results"][0]["retrievers"].clone()), (1, json!(["keyword"])), "{r}");
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("all-MiniLM-L6-v2")), "{r}");
    let r = post(&s, &format!("/v1/collections/{col}/documents"), &key, &json!("More text."));
    assert_eq!((r.status, r.code()), (409, "embedder_mismatch".to_owned()));
    assert_eq!(search("keyword").status, 200);
}

/// The product's default: the multilingual model, and MiniLM for English collections.
fn following(shards: usize) -> TestServer {
    TestServer::with(Options {
        embedder: Some("multilingual-e5-small".into()),
        config: "[plans.scribe]\nrate_per_minute = 6000\nburst = 1000\n".into(),
        shards: Some(shards),
        env: vec![("QUARRY_ENGLISH_EMBEDDER".into(), "all-MiniLM-L6-v2".into())],
        ..Options::default()
    })
}

fn language_of(s: &TestServer, key: &str, col: &str) -> Value {
    s.get(&format!("/v1/collections/{col}"), Some(key)).json()["language"].clone()
}

#[test]
fn a_collection_that_names_no_model_takes_the_one_its_language_chooses() {
    let mut s = following(2);
    let h = s.get("/v1/health", None).json();
    assert_eq!(
        (h["embedder"].clone(), h["english_embedder"].clone(), h["embedders"].clone()),
        (json!("multilingual-e5-small"), json!("all-MiniLM-L6-v2"), json!(["multilingual-e5-small", "all-MiniLM-L6-v2"]))
    );
    let (_, key) = s.signup("languages@example.com");
    // No model, no language: the first document decides; until then it says so.
    let en = create(&s, &key, json!({"name": "English"}));
    assert_eq!((en["embedder"].clone(), en.get("language")), (json!("auto"), None), "{en}");
    super::spec::check("Collection", &en);
    let en = en["id"].as_str().unwrap().to_owned();
    let r = post(&s, &format!("/v1/collections/{en}/search"), &key, &json!({"query": "molten rock", "mode": "semantic"}));
    assert_eq!((r.status, r.json()["results"].as_array().map(Vec::len)), (200, Some(0)), "an empty collection finds nothing: {}", r.text());
    let added = add(&s, &key, &en, &json!({"title": ENGLISH[0].0, "text": ENGLISH[0].1}));
    assert_eq!(added["embedder"], "all-MiniLM-L6-v2", "English text: the English model");
    fill(&s, &key, &en, &ENGLISH[1..]);
    assert_eq!((embedder_of(&s, &key, &en), language_of(&s, &key, &en)), ("all-MiniLM-L6-v2".to_owned(), json!("eng")));
    super::spec::check("Collection", &s.get(&format!("/v1/collections/{en}"), Some(&key)).json());
    let ar = create(&s, &key, json!({"name": "Arabic"}))["id"].as_str().unwrap().to_owned();
    fill(&s, &key, &ar, ARABIC);
    assert_eq!((embedder_of(&s, &key, &ar), language_of(&s, &key, &ar)), ("multilingual-e5-small".to_owned(), json!("ara")));
    let sane = |s: &TestServer| {
        for (q, want) in [("feline pet", "Cats"), ("molten rock", "Volcanoes"), ("soccer championship", "Football")] {
            assert_eq!(top(s, &key, &en, q, "semantic"), want, "{q} on the English collection");
        }
        for (q, want) in ACROSS {
            assert_eq!(top(s, &key, &ar, q, "semantic"), *want, "{q} on the Arabic collection");
        }
    };
    sane(&s);

    // A language given chooses at creation; a model named wins over it.
    let given = |settings: Value| {
        let c = create(&s, &key, json!({"name": "given", "settings": settings}));
        (c["embedder"].as_str().unwrap().to_owned(), c["language"].clone())
    };
    assert_eq!(given(json!({"language": "en-GB"})), ("all-MiniLM-L6-v2".to_owned(), json!("eng")));
    assert_eq!(given(json!({"language": "ja"})), ("multilingual-e5-small".to_owned(), json!("jpn")));
    assert_eq!(given(json!({"language": "mul"})), ("multilingual-e5-small".to_owned(), json!("mul")));
    assert_eq!(given(json!({"language": "en", "embedder": "multilingual-e5-small"})), ("multilingual-e5-small".to_owned(), json!("eng")));
    let r = post(&s, "/v1/collections", &key, &json!({"name": "x", "settings": {"language": "klingon"}}));
    assert_eq!((r.status, r.code()), (400, "invalid_settings".to_owned()), "{}", r.text());
    assert!(r.text().contains("settings.language"), "{}", r.text());
    // A patch may give the language while the collection is empty.
    let open = create(&s, &key, json!({"name": "later"}))["id"].as_str().unwrap().to_owned();
    let r = s.request("PATCH", &format!("/v1/collections/{open}"), Some(&key), Some(&json!({"settings": {"language": "ja"}}).to_string()));
    assert_eq!(
        (r.status, r.json()["embedder"].clone(), r.json()["language"].clone()),
        (200, json!("multilingual-e5-small"), json!("jpn")),
        "{}",
        r.text()
    );

    // Two first documents in two languages at once: one model for both.
    for round in 0..3 {
        let col = create(&s, &key, json!({"name": format!("race {round}")}))["id"].as_str().unwrap().to_owned();
        let embedders: Vec<String> = std::thread::scope(|t| {
            let a = t.spawn(|| add(&s, &key, &col, &json!({"title": ENGLISH[1].0, "text": ENGLISH[1].1}))["embedder"].as_str().unwrap().to_owned());
            let b = t.spawn(|| add(&s, &key, &col, &json!({"title": ARABIC[1].0, "text": ARABIC[1].1}))["embedder"].as_str().unwrap().to_owned());
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        assert_eq!(embedders[0], embedders[1], "round {round}: two models in one collection");
        assert_eq!(embedder_of(&s, &key, &col), embedders[0]);
    }

    // Kept across a restart.
    s.terminate(std::time::Duration::from_secs(10));
    s.restart();
    assert_eq!((embedder_of(&s, &key, &en), language_of(&s, &key, &en)), ("all-MiniLM-L6-v2".to_owned(), json!("eng")));
    sane(&s);
}
