//! Every document format through `/v1/chunk` and adds: pages, chunks and offsets agree, malformed input is refused.
//!
//! Every document format through the API: `/v1/chunk` previews exactly what an add
//! stores (the page view shows the same pages and chunks), offsets slice the stored
//! page text, and malformed input is 400 `invalid_document` naming its place, with
//! nothing stored.

use serde_json::{json, Value};

use super::collections::create_collection;
use super::server::TestServer;

fn csv_rows(n: usize, sep: &str) -> String {
    let mut s = format!("drug{sep}dose{sep}note\r\n");
    for i in 1..=n {
        let note = if sep == "," { format!("\"take with food,\nthen \"\"rest\"\" 😴 {i}\"") } else { format!("rest {i}") };
        s.push_str(&format!("aspirin {i}{sep}{i} mg{sep}{note}\r\n"));
    }
    s
}

/// One body per payload and format the spec lists (and a forced chunker or two).
fn bodies() -> Vec<(&'static str, Value)> {
    vec![
        ("bare string", json!("The tide reaches the steps.\n--- page 4 ---\nTwice a month, on 2024-03-14.")),
        ("text", json!({"text": "Plain words, a list:\n- one\n- two\u{c}Second page.", "title": "Plain"})),
        (
            "markdown",
            json!({"text": "# Tides\n\nThe spring tide.\n\n## Heights\n\n| port | m |\n|---|---|\n| Brest | 7 |\n\n```\n# not a heading\n```"}),
        ),
        (
            "html",
            json!({"html": "<html><head><title>Tide tables</title><script>x()</script></head><body><h1>Tides &amp; times</h1><p>Spring tide<sup>1</sup> at Brest.</p><p hidden>secret</p><ul><li>one</li><li>two</li></ul><table><tr><th>port</th><th>m</th></tr><tr><td>Brest</td><td>7</td></tr></table><hr><p>(1) Measured 2024.</p></body></html>"}),
        ),
        ("csv", json!({"csv": csv_rows(45, ",")})),
        ("tsv", json!({"tsv": csv_rows(3, "\t")})),
        ("json records", json!({"json": [{"title": "Lyon", "zip": 69000, "geo": {"lat": 45.7}}, {"title": "Brest", "tags": ["port", "tide"]}]})),
        ("json object", json!({"json": {"name": "Acme", "address": {"city": "Paris"}}})),
        ("json string", json!({"json": "[{\"k\": \"a value\"}, {\"k\": \"another\"}]"})),
        ("pages", json!({"pages": ["Front matter.", {"text": "# Preface\n\nWords.", "number": "xii", "volume": 2, "heading": "Preface"}]})),
        ("content auto html", json!({"content": "<p>An <b>HTML</b> fragment.</p>"})),
        ("content csv", json!({"content": "a,b\n1,2\n", "format": "csv"})),
        ("content pages", json!({"content": ["one", "two"]})),
        ("arabic classical", json!({"text": "بَابُ الْعِلْمِ\n\nحَدَّثَنَا قُتَيْبَةُ قَالَ حَدَّثَنَا اللَّيْثُ عَنْ نَافِعٍ (1)\n\n________\n(1) صحيح.", "chunker": "classical"})),
        ("legal chunker", json!({"text": "1. Definitions. \"Agreement\" means this agreement.\n2. Term. See 42 U.S.C. § 1983.", "chunker": "legal"})),
    ]
}

/// A request with the key, waiting out `429` (a new plan allows a burst of 20, then
/// one a second; this test makes more).
fn keyed(s: &TestServer, method: &str, path: &str, key: &str, body: Option<&str>) -> super::client::Response {
    loop {
        let r = s.request(method, path, Some(key), body);
        if r.status != 429 {
            return r;
        }
        let wait: u64 = r.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(1);
        std::thread::sleep(std::time::Duration::from_secs(wait));
    }
}

fn chars_slice(text: &str, start: u64, end: u64) -> String {
    text.chars().skip(start as usize).take((end - start) as usize).collect()
}

#[test]
fn chunk_preview_equals_what_the_page_view_shows_after_adding_for_every_format() {
    let s = TestServer::start();
    let (_, key) = s.signup("formats@example.com");
    let col = create_collection(&s, &key, "Formats");
    for (name, body) in bodies() {
        let r = s.request("POST", "/v1/chunk", None, Some(&body.to_string()));
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let preview = r.json();
        super::spec::check("ChunkPreview", &preview);
        let created = keyed(&s, "POST", &format!("/v1/collections/{col}/documents"), &key, Some(&body.to_string()));
        assert_eq!(created.status, 201, "{name}: {}", created.text());
        let created = created.json();
        super::spec::check("DocumentCreated", &created);
        let doc = created["id"].as_str().unwrap();
        assert_eq!(
            (&created["chunker"], &created["format"], &created["meta"]),
            (&preview["chunker"], &preview["format"], &preview["meta"]),
            "{name}"
        );
        let pages = preview["pages"].as_array().unwrap();
        assert_eq!(created["pages"].as_u64(), Some(pages.len() as u64), "{name}");
        for p in pages {
            let n = p["n"].as_u64().unwrap();
            let got = keyed(&s, "GET", &format!("/v1/collections/{col}/documents/{doc}/pages/{n}"), &key, None);
            assert_eq!(got.status, 200, "{name}: {}", got.text());
            let got = got.json();
            for field in ["n", "number", "volume", "heading", "meta"] {
                assert_eq!(got["page"][field], p[field], "{name}: page {n} {field}");
            }
            assert_eq!(got["chunks"], p["chunks"], "{name}: page {n} chunks");
            let text = got["page"]["text"].as_str().unwrap();
            assert_eq!(p["chars"].as_u64(), Some(text.chars().count() as u64), "{name}");
            for c in p["chunks"].as_array().unwrap() {
                let (start, end) = (c["start"].as_u64().unwrap(), c["end"].as_u64().unwrap());
                assert_eq!(chars_slice(text, start, end), c["text"].as_str().unwrap(), "{name}: page {n}");
            }
        }
    }
}

#[test]
fn every_format_reads_as_its_structure() {
    let s = TestServer::start();
    let preview = |body: &Value| {
        let r = s.request("POST", "/v1/chunk", None, Some(&body.to_string()));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let by_name: std::collections::HashMap<_, _> = bodies().into_iter().collect();
    let html = preview(&by_name["html"]);
    assert_eq!(html["format"], "html");
    let page = &html["pages"][0];
    assert_eq!(page["heading"], "Tides & times");
    let text: String = page["chunks"].as_array().unwrap().iter().map(|c| c["text"].as_str().unwrap()).collect::<Vec<_>>().join("\n");
    for want in ["# Tides & times", "Spring tide(1) at Brest.", "- one\n- two", "| port | m |", "| Brest | 7 |", "________"] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    assert!(!text.contains("secret") && !text.contains("x()"), "{text}");
    let csv = preview(&by_name["csv"]);
    let pages = csv["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 3, "45 rows, 20 a page");
    assert_eq!(pages[1]["meta"], json!({"columns": ["drug", "dose", "note"], "rows": [21, 40]}));
    for c in pages[1]["chunks"].as_array().unwrap() {
        assert_eq!(c["heading"], "drug | dose | note", "every chunk sits under the header");
        assert!(c["kinds"].as_array().unwrap().contains(&json!("table")) || c["kinds"].as_array().unwrap().contains(&json!("heading")), "{c}");
    }
    let json_doc = preview(&by_name["json records"]);
    assert_eq!(json_doc["pages"][1]["meta"], json!({"record": 1}));
    assert_eq!(json_doc["pages"][0]["heading"], "Lyon");
    assert_eq!(json_doc["pages"][0]["chunks"][0]["text"], "geo.lat: 45.7\ntitle: Lyon\nzip: 69000", "json! sorts the keys it sends");
    let arabic = preview(&by_name["arabic classical"]);
    assert_eq!(arabic["chunker"], "classical");
}

#[test]
fn malformed_documents_are_refused_naming_the_place_and_nothing_is_stored() {
    let s = TestServer::start();
    let (_, key) = s.signup("malformed@example.com");
    let col = create_collection(&s, &key, "Malformed");
    let cases: Vec<(String, &str)> = vec![
        (json!({"csv": "a,b\n1,2\n3,\"four\n5,6\n"}).to_string(), "csv: the quoted field that starts at line 3, column 3 has no closing quote"),
        (json!({"tsv": "a\tb\n1\t2\t3\n"}).to_string(), "tsv: row 1 (line 2) has 3 fields; the header has 2"),
        (json!({"csv": "a,b\n"}).to_string(), "csv: has a header row but no rows"),
        (json!({"json": "[{\"a\": 1},\n {\"b\": }]"}).to_string(), "json: does not parse as JSON: expected value at line 2, column"),
        (json!({"json": [{"a": 1}, 2]}).to_string(), "json: [1] is a number, not an object"),
        (json!({"content": "[{\"a\": 1}, \"x\"]", "format": "json"}).to_string(), "content (json): [1] is a string, not an object"),
        (json!({"json": true}).to_string(), "json: must be an array of records or an object, not a boolean"),
        (json!({"text": "line one\nab\u{0}c"}).to_string(), "text: holds the control character U+0000 at line 2, column 3"),
        (json!({"html": "<p>\u{7}</p>"}).to_string(), "html: holds the control character U+0007 at line 1, column 4"),
        (json!({"pages": ["fine", {"text": "\u{1}"}]}).to_string(), "pages[1].text: holds the control character U+0001"),
        (
            "{\"text\": \"caf\u{e9}\"}".replace('\u{e9}', "\u{fffd}").replace('\u{fffd}', "\u{ffff}"),
            "text: holds the noncharacter U+FFFF at line 1, column 4",
        ),
        (json!({"text": "  \n\u{c} "}).to_string(), "The document has no text"),
        (json!({"html": "<script>only()</script><div style='display:none'>x</div>"}).to_string(), "The document has no text"),
        (json!({"json": []}).to_string(), "The document has no text"),
        (json!({"pages": []}).to_string(), "pages: must hold at least one page"),
        (json!({"text": "a", "html": "<p>b</p>"}).to_string(), "exactly one payload; it has text, html"),
        (json!({"csv": "a,b", "format": "json"}).to_string(), "format json does not match the csv payload"),
        (json!({"text": "a", "chunker": "poetry"}).to_string(), "chunker must be one of classical, medical, legal, prose"),
    ];
    let mut bodies: Vec<(Vec<u8>, &str)> = cases.iter().map(|(b, n)| (b.clone().into_bytes(), *n)).collect();
    bodies.push((b"{\"text\": \"bin\xff\xfe\"}".to_vec(), "not UTF-8 at byte 13"));
    let documents = format!("/v1/collections/{col}/documents");
    let auth = format!("Bearer {key}");
    for (body, needle) in &bodies {
        for (path, headers) in [("/v1/chunk", vec![]), (documents.as_str(), vec![("authorization", auth.as_str())])] {
            let r = loop {
                let r = s.conn().send("POST", path, &headers, Some(body));
                if r.status != 429 {
                    break r;
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
            };
            assert_eq!((r.status, r.code()), (400, "invalid_document".to_owned()), "{path} {}: {}", String::from_utf8_lossy(body), r.text());
            let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
            assert!(message.contains(needle), "{path}: {message:?} should say {needle:?}");
        }
    }
    let listed = keyed(&s, "GET", &documents, &key, None).json();
    assert_eq!(listed["documents"], json!([]), "nothing was stored");
    let c = keyed(&s, "GET", &format!("/v1/collections/{col}"), &key, None).json();
    assert_eq!(c["documents"].as_u64(), Some(0));
    // A valid add afterwards still works: the refusals left nothing half-written.
    let added = keyed(&s, "POST", &documents, &key, Some(&json!({"csv": "a,b\n1,2"}).to_string()));
    assert_eq!(added.status, 201, "{}", added.text());
    assert_eq!(keyed(&s, "GET", &documents, &key, None).json()["documents"].as_array().unwrap().len(), 1);
}

#[test]
fn chunk_takes_no_key_and_keeps_the_document_size_limit() {
    let s = TestServer::with_config("[index]\nmax_document_bytes = 1024\n");
    let small = s.request("POST", "/v1/chunk", None, Some(&json!({"text": "short"}).to_string()));
    assert_eq!(small.status, 200, "{}", small.text());
    let big = s.request("POST", "/v1/chunk", None, Some(&json!({"text": "word ".repeat(400)}).to_string()));
    assert_eq!((big.status, big.code()), (413, "document_too_large".to_owned()), "{}", big.text());
}
