//! Frozen data directories of earlier on-disk formats, opened by today's server and answering as they did.
//!
//! Frozen data directories of earlier on-disk formats (`tests/data/compat/vN/`): today's
//! server must open each one and answer the requests recorded when it was written
//! exactly as it answered them then. A format change that cannot read old data fails
//! here instead of silently breaking a user's data directory.
//!
//! `make_compat_fixture` (ignored; run by hand, see tests/data/compat/v1/README.md)
//! writes a new fixture folder; it refuses to write over an existing one.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::{Options, TestServer};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/compat");
const EMBEDDER: &str = "all-MiniLM-L6-v2";

/// The configuration the generator runs with, stored in `expected.json` for the test
/// to start its server with: a flush at 8 waiting documents and never by age (so the
/// WAL tail stays a tail), the precision pinned (query vectors must be made as the
/// stored ones were), and room for every request within the rate limit.
const CONFIG: &str = r#"
[models]
precision = "int8"

[index]
flush_batches = 8
flush_interval = "1h"

[plans.scribe]
rate_per_minute = 6000
burst = 1000
"#;

/// Keys whose values legitimately change from one run to the next.
const VARYING: &[&str] = &["timings", "usage"];

/// Numbers must match up to JSON's decimal round trip. Scores included: every mode's
/// score is reciprocal-rank fusion of ranks (1/61, 1/62, ...), so nothing legitimately
/// moves them but a change of order, which is a change of answer.
const EXACT: f64 = 1e-12;

#[test]
fn compat_v1_data_directory_opens_and_answers_the_same() {
    opens_and_answers_the_same("v1");
}

/// Format 2: chunks with their meta and footnote links, pages with their format's meta.
#[test]
fn compat_v2_data_directory_opens_and_answers_the_same() {
    opens_and_answers_the_same("v2");
}

/// Format 3: vectors are rows of windows; the bird notes' ringing log is several.
#[test]
fn compat_v3_data_directory_opens_and_answers_the_same() {
    opens_and_answers_the_same("v3");
}

fn opens_and_answers_the_same(version: &str) {
    let fixture = Path::new(FIXTURES).join(version);
    let expected: Value = serde_json::from_slice(&fs::read(fixture.join("expected.json")).expect("expected.json")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    copy_dir(&fixture.join("data"), &data);
    // The configuration the fixture was written with travels with it.
    let config = expected["config"].as_str().unwrap().to_owned();
    // Queries are embedded in fp32: int8 kernels differ between CPUs (AVX-512 VNNI or
    // AVX2), enough to swap two near-tied semantic results, and the answers recorded
    // must be the same on every machine. The documents' vectors are the fixture's own.
    let env = vec![("QUARRY_MODELS__PRECISION".to_owned(), "fp32".to_owned())];
    let s = TestServer::with_data(data, Options { config, embedder: Some(EMBEDDER.into()), env, ..Options::default() });
    let key = expected["key"].as_str().unwrap();
    let answers = expected["answers"].as_array().unwrap();
    assert!(answers.len() >= 20, "the fixture records its answers");
    let deleted: Vec<&str> = expected["deleted"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    for a in answers {
        let name = a["name"].as_str().unwrap();
        let (status, got) = send(&s, key, a);
        assert_eq!(status, a["status"].as_u64().unwrap() as u16, "{name}: {got}");
        if let Err(at) = same(&a["response"], &got, "$") {
            panic!("{name}: the answer differs at {at}\nexpected: {}\ngot: {got}", a["response"]);
        }
        let text = got.to_string();
        for d in deleted.iter().filter(|_| status == 200) {
            assert!(!text.contains(d), "{name}: the deleted document {d} is back: {text}");
        }
    }
}

/// Writes a new fixture folder from today's format. Run by hand, never in CI:
/// `COMPAT_FIXTURE_OUT=tests/data/compat/v2 cargo nextest run -p quarry --test it
/// --run-ignored only make_compat_fixture` (after `cargo build --bin quarry`).
#[test]
#[ignore = "writes a new fixture folder; run by hand for a new format version"]
fn make_compat_fixture() {
    let out = std::env::var("COMPAT_FIXTURE_OUT")
        .expect("COMPAT_FIXTURE_OUT (not QUARRY_*: the server reads those) names the new folder, e.g. tests/data/compat/v2");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join(out);
    assert!(!out.exists(), "{} exists: a fixture is never regenerated in place; a new format gets a new folder", out.display());

    // A collection made without an embedder answers keyword searches only; it is
    // created on a server without one, before the server gets its model.
    // fp32, as the test embeds its queries (see `opens_and_answers_the_same`).
    let env = vec![("QUARRY_MODELS__PRECISION".to_owned(), "fp32".to_owned())];
    let mut s = TestServer::with(Options { config: CONFIG.into(), embedder: Some("none".into()), env, ..Options::default() });
    let (_, key) = s.signup("compat@example.com");
    let keyword = create(&s, &key, "Keyword only");
    let kw_ids = add_flushed(&s, &key, &keyword, &CORPUS[..9]);
    assert!(s.terminate(Duration::from_secs(10)).success());

    s.set_embedder(EMBEDDER);
    s.restart();
    let library = create(&s, &key, "Library");
    let ids = add_flushed(&s, &key, &library, CORPUS);
    // One tombstone over a flushed segment, one over the WAL tail.
    let deleted = [ids[3].clone(), ids[10].clone()];
    for d in &deleted {
        let r = s.request("DELETE", &format!("/v1/collections/{library}/documents/{d}"), Some(&key), None);
        assert_eq!(r.status, 200, "{}", r.text());
    }

    let answers: Vec<Value> = requests(&keyword, &kw_ids, &library, &ids)
        .into_iter()
        .map(|(name, method, path, body)| {
            let mut a = json!({"name": name, "method": method, "path": path, "body": body});
            let (status, response) = send(&s, &key, &a);
            assert!(status < 500, "{name}: {response}");
            a["status"] = json!(status);
            a["response"] = response;
            a
        })
        .collect();
    let status = s.terminate(Duration::from_secs(20));
    assert!(status.success(), "quarry stops cleanly: {status:?}");

    copy_dir(s.data(), &out.join("data"));
    let commit = std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    let expected = json!({
        "written_by_commit": String::from_utf8_lossy(&commit.stdout).trim(),
        "key": key,
        "collections": {"keyword": keyword, "library": library},
        "documents": {"keyword": kw_ids, "library": ids},
        "deleted": deleted,
        "config": CONFIG,
        "answers": answers,
    });
    fs::write(out.join("expected.json"), serde_json::to_string_pretty(&expected).unwrap() + "\n").unwrap();
}

/// The fixed requests whose answers a fixture records: (name, method, path, body).
fn requests(keyword: &str, kw_ids: &[String], library: &str, ids: &[String]) -> Vec<(String, &'static str, String, Value)> {
    let lib = format!("/v1/collections/{library}");
    let kw = format!("/v1/collections/{keyword}");
    let mut out = vec![
        ("account".to_owned(), "GET", "/v1/account".to_owned(), Value::Null),
        ("collections".into(), "GET", "/v1/collections".into(), Value::Null),
        ("library".into(), "GET", lib.clone(), Value::Null),
        ("library documents".into(), "GET", format!("{lib}/documents"), Value::Null),
        ("keyword documents".into(), "GET", format!("{kw}/documents"), Value::Null),
        ("a flushed document".into(), "GET", format!("{lib}/documents/{}", ids[0]), Value::Null),
        ("a document in the WAL".into(), "GET", format!("{lib}/documents/{}", ids[11]), Value::Null),
        ("a deleted flushed document".into(), "GET", format!("{lib}/documents/{}", ids[3]), Value::Null),
        ("a deleted document in the WAL".into(), "GET", format!("{lib}/documents/{}", ids[10]), Value::Null),
    ];
    for (doc, page) in [(0, 0), (0, 1), (0, 2), (2, 0), (4, 1), (7, 2), (9, 0), (11, 0)] {
        out.push((format!("library doc {doc} page {page}"), "GET", format!("{lib}/documents/{}/pages/{page}", ids[doc]), Value::Null));
    }
    // The documents format 2 added (the generator of v1 had twelve).
    for doc in (12..ids.len()).filter(|_| ids.len() > 12) {
        out.push((format!("library doc {doc} page 0"), "GET", format!("{lib}/documents/{}/pages/0", ids[doc]), Value::Null));
    }
    for (doc, page) in [(0, 1), (8, 0)] {
        out.push((format!("keyword-only doc {doc} page {page}"), "GET", format!("{kw}/documents/{}/pages/{page}", kw_ids[doc]), Value::Null));
    }
    let queries = [
        "how do bees pollinate flowers",
        "molten rock erupting from a mountain",
        "green tea water temperature",
        "ice moving slowly down a valley",
        "\"hollow bones\" birds",
        "withdrawn memo about the budget",
        // Format 3: answered only by the tail of a page longer than the window.
        "who ringed the last swift of the season at Cape Clear",
    ];
    for q in queries {
        for mode in ["keyword", "semantic", "hybrid"] {
            let body = json!({"query": q, "mode": mode, "expand": false, "k": 5});
            out.push((format!("library {mode}: {q}"), "POST", format!("{lib}/search"), body));
        }
    }
    let filtered = [
        json!({"query": "history of writing", "mode": "hybrid", "expand": false, "k": 5, "filters": {"date": {"from": "1990", "to": "2000"}}}),
        json!({"query": "animals", "mode": "semantic", "expand": false, "k": 5, "filters": {"metadata": {"topic.kind": "nature"}}}),
        json!({"query": "temperature", "mode": "keyword", "expand": false, "k": 5, "kinds": ["table"]}),
    ];
    for body in filtered {
        out.push((format!("library filtered: {body}"), "POST", format!("{lib}/search"), body));
    }
    for (q, mode) in [("birds feathers", "keyword"), ("tea", "keyword"), ("paper", "hybrid"), ("paper", "semantic")] {
        let body = json!({"query": q, "mode": mode, "expand": false, "k": 5});
        out.push((format!("keyword-only {mode}: {q}"), "POST", format!("{kw}/search"), body));
    }
    out
}

/// Sends the request an answer records; returns the status and the JSON body.
fn send(s: &TestServer, key: &str, a: &Value) -> (u16, Value) {
    let body = (!a["body"].is_null()).then(|| a["body"].to_string());
    let r = s.request(a["method"].as_str().unwrap(), a["path"].as_str().unwrap(), Some(key), body.as_deref());
    (r.status, r.json())
}

/// Whether `got` equals `want`, except the [`VARYING`] keys, numbers within [`EXACT`];
/// the error names where they part.
fn same(want: &Value, got: &Value, at: &str) -> Result<(), String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            // The data decides the values of the fields recorded; the API may have
            // grown fields since (an answer gains keys), but none may go missing.
            let keys = |m: &serde_json::Map<String, Value>| m.keys().filter(|k| !VARYING.contains(&k.as_str())).cloned().collect::<Vec<_>>();
            if let Some(k) = keys(w).iter().find(|k| !g.contains_key(k.as_str())) {
                return Err(format!("{at}: key {k} went missing: {:?} became {:?}", keys(w), keys(g)));
            }
            keys(w).iter().try_for_each(|k| same(&w[k], &g[k], &format!("{at}.{k}")))
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                return Err(format!("{at}: {} items became {}", w.len(), g.len()));
            }
            w.iter().zip(g).enumerate().try_for_each(|(i, (w, g))| same(w, g, &format!("{at}[{i}]")))
        }
        (Value::Number(w), Value::Number(g)) if !(w.is_f64() || g.is_f64()) => (w == g).then_some(()).ok_or_else(|| format!("{at}: {w} became {g}")),
        (Value::Number(w), Value::Number(g)) => {
            let (w, g) = (w.as_f64().unwrap(), g.as_f64().unwrap());
            ((w - g).abs() <= EXACT * w.abs().max(1.0)).then_some(()).ok_or_else(|| format!("{at}: {w} became {g}"))
        }
        _ => (want == got).then_some(()).ok_or_else(|| format!("{at}: {want} became {got}")),
    }
}

fn create(s: &TestServer, key: &str, name: &str) -> String {
    let r = s.request("POST", "/v1/collections", Some(key), Some(&json!({"name": name}).to_string()));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

/// Adds `docs` in order, waiting after the 8th (`index.flush_batches`) until the
/// background flush has written them as a segment, so the rest stay in the WAL.
fn add_flushed(s: &TestServer, key: &str, col: &str, docs: &[fn() -> Value]) -> Vec<String> {
    let mut ids = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let r = s.request("POST", &format!("/v1/collections/{col}/documents"), Some(key), Some(&doc().to_string()));
        assert_eq!(r.status, 201, "{}", r.text());
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
        if i == 7 {
            wait_for_segment(&s.data().join("collections").join(col));
        }
    }
    ids
}

fn wait_for_segment(dir: &Path) {
    let start = Instant::now();
    loop {
        let manifest: Option<Value> = fs::read(dir.join("MANIFEST")).ok().and_then(|b| serde_json::from_slice(&b).ok());
        if manifest.is_some_and(|m| m["segments"].as_array().is_some_and(|s| !s.is_empty())) {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no segment was flushed in {}", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Copies a directory tree, except lock files (tantivy's empty `.tantivy-*.lock`):
/// they belong to a process that had the index open, not to the data.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap();
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_name().to_string_lossy().ends_with(".lock") {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// From format 3 on, the bird notes' third page: a ringing log far longer than the
/// embedder's window (several windows), whose last line alone says who ringed the last
/// swift; fixtures v1 and v2 were written without it.
fn ringing_log() -> String {
    let mut log = String::from("\u{c}## Ringing log\n\n");
    let species = ["robin", "wren", "blackbird", "chaffinch", "great tit", "dunnock"];
    for day in 1..=40 {
        let bird = species[day % species.len()];
        log.push_str(&format!(
            "Day {day}: nets opened at dawn in the hedge by the east field; one {bird} ringed, weighed at {} grams and released; wind from the west, light rain after noon.\n\n",
            10 + day % 7
        ));
    }
    log.push_str("Last entry: the last swift of the season was ringed by Ada Lovell at the Cape Clear observatory on 3 November.");
    log
}

/// Fifteen small documents: titles, authors, metadata with dates and nested keys,
/// Markdown pages with headings, lists and tables, printed pages with numbers; from
/// format 2 on also a legal text, a CSV and a classical page with a footnote.
const CORPUS: &[fn() -> Value] = &[
    || {
        json!({
            "title": "Field notes on birds", "author": "A. Naturalist",
            "metadata": {"date": "2024-03-14", "topic": {"kind": "nature"}, "tags": ["birds", "field"]},
            "text": format!("# Birds\n\nBirds have feathers and hollow bones, which keep them light in flight.\n\n- robins\n- wrens\n- swifts\n\u{c}## Migration\n\nMany birds fly south in autumn and return in spring, following the same routes each year.{}", ringing_log())
        })
    },
    || {
        json!({
            "title": "Volcanoes", "metadata": {"date": "2023-06-01", "topic": {"kind": "earth"}},
            "text": "A volcano erupts when magma rises through the crust. Lava flows can bury whole towns, and ash clouds ground aircraft for days."
        })
    },
    || {
        json!({
            "title": "Tea brewing guide", "author": "The Tea Room",
            "metadata": {"date": "2022-11-30", "topic": {"kind": "food"}, "rating": 4.5},
            "text": "# Brewing tea\n\nWater temperature matters more than the leaves.\n\n| Tea | Water | Minutes |\n|---|---|---|\n| Green | 80 °C | 2 |\n| Black | 95 °C | 4 |\n| Oolong | 90 °C | 3 |\n\nSteep green tea briefly in water below boiling."
        })
    },
    || {
        json!({
            "title": "Draft memo (withdrawn)", "metadata": {"date": "2021-01-05", "status": "draft"},
            "text": "This withdrawn memo proposed cutting the travel budget by half. It was never adopted."
        })
    },
    || {
        json!({
            "title": "The history of paper", "author": "C. Historian",
            "metadata": {"date": "1999", "topic": {"kind": "history"}},
            "pages": [
                {"number": "1", "volume": "I", "heading": "Origins", "text": "Paper was first made in China from mulberry bark and hemp, around the second century."},
                {"number": "2", "volume": "I", "heading": "Spread", "text": "The craft of writing on paper spread along trade routes to Samarkand, Baghdad and later Europe."}
            ]
        })
    },
    || {
        json!({
            "title": "Bees and pollination", "metadata": {"date": "2024-05-20", "topic": {"kind": "nature"}},
            "text": "## Bees\n\nBees carry pollen from flower to flower while they gather nectar, which lets plants make seeds.\n\n1. scout\n2. forage\n3. return to the hive"
        })
    },
    || {
        json!({
            "title": "Ownership in Rust", "metadata": {"date": "2025-01-10", "topic": {"kind": "software"}},
            "text": "# Ownership\n\nEvery value has one owner. When the owner goes out of scope the value is dropped.\n\n- moves transfer ownership\n- borrows lend it for a while"
        })
    },
    || {
        json!({
            "title": "Ocean tides", "metadata": {"date": "2020-08-08", "topic": {"kind": "earth"}},
            "text": "--- page 1 ---\nTides rise and fall twice a day.\n--- page 2 ---\nThe Moon's gravity pulls the oceans into a bulge.\n--- page 3 ---\nSpring tides come when the Sun and Moon line up."
        })
    },
    || {
        json!({
            "title": "Cats", "metadata": {"date": "2023-05-01", "topic": {"kind": "nature"}},
            "text": "Cats are small carnivorous mammals. A cat purrs when content and hunts mice at night."
        })
    },
    || {
        json!({
            "title": "Mountain weather", "metadata": {"date": "2024-12-01", "topic": {"kind": "earth"}},
            "text": "# Mountain weather\n\nThe air cools as it rises.\n\n| Altitude | Temperature |\n|---|---|\n| 0 m | 15 °C |\n| 2000 m | 2 °C |\n\nStorms build quickly over high peaks in the afternoon."
        })
    },
    || {
        json!({
            "title": "Shopping list", "metadata": {"date": "2025-02-02"},
            "text": "Milk, eggs, flour and a bag of green tea."
        })
    },
    || {
        json!({
            "title": "Glaciers", "author": "D. Geologist", "metadata": {"date": "2019-04-04", "topic": {"kind": "earth"}},
            "text": "# Glaciers\n\nA glacier is a persistent body of dense ice that moves slowly downhill under its own weight, carving valleys as it goes."
        })
    }, // From format 2 on: a domain chunker's chunk meta, a format's page meta, footnote links.
    || {
        json!({
            "title": "Supply terms", "chunker": "legal",
            "text": "1. Definitions.\n\n\"Goods\" means the products listed in Schedule A.\n\n2. Delivery.\n\nThe Supplier shall deliver the Goods as 15 U.S.C. § 2301 requires."
        })
    },
    || json!({ "title": "Rainfall", "csv": "month,rain_mm\nJanuary,78\nFebruary,61\nMarch,55\n" }),
    || {
        json!({
            "title": "باب العلم", "pages": [{
                "text": "باب فضل العلم\n\nحدثنا قتيبة قال حدثنا الليث عن نافع أن العلم نور (١)\n\n________\n(١) أخرجه الترمذي (٢٦٤٥).",
                "number": "١٢", "volume": "١"
            }]
        })
    },
];
