use super::*;
use serde_json::json;

fn texts(p: &Parsed) -> Vec<&str> {
    p.pages.iter().map(|p| p.text.as_str()).collect()
}

#[test]
fn names_round_trip() {
    for f in Format::ALL {
        assert_eq!(Format::parse(f.as_str()), Some(f));
    }
    assert_eq!(Format::parse("auto"), None);
}

#[test]
fn text_splits_pages_as_before() {
    let p = Format::Text.read("One.\n--- page 7 ---\nTwo.\u{c}Three.").unwrap();
    assert_eq!(texts(&p), ["One.", "Two.", "Three."]);
    assert_eq!(p.pages[1].number.as_deref(), Some("7"));
}

#[test]
fn html_keeps_structure_in_the_page_conventions() {
    let html = r#"<!doctype html><html><head><title> Tide  tables </title><style>p{color:red}</style><script>var x = "<p>no</p>";</script></head>
<body>
<h1>Tides &amp; currents</h1>
<p>The spring   tide<sup>1</sup> reaches the
   steps.</p>
<div hidden>secret one</div><span aria-hidden="true">secret two</span><p style="display: none">secret three</p>
<template><p>secret four</p></template><noscript>secret five</noscript>
<ul><li>first</li><li>second<ul><li>inner</li></ul></li></ul>
<ol start="3"><li>three</li><li>four</li></ol>
<table><tr><th>port</th><th>height</th></tr><tr><td>Brest</td><td>7.2 m</td></tr><tr><td>a|b</td><td><table><tr><td>nested</td></tr></table></td></tr></table>
<hr>
<p>1. Measured at &lt;spring&gt; tide.</p>
<pre>fn main() {
    tide();
}</pre>
<p>after<br>break</p>
</body></html>"#;
    let p = Format::Html.read(html).unwrap();
    assert_eq!(p.title.as_deref(), Some("Tide tables"));
    let expected = "# Tides & currents\n\n\
The spring tide(1) reaches the steps.\n\n\
- first\n- second\n  - inner\n\n\
3. three\n4. four\n\n\
| port | height |\n|---|---|\n| Brest | 7.2 m |\n| a\\|b | nested |\n\n\
________\n\n\
1. Measured at <spring> tide.\n\n\
```\nfn main() {\n    tide();\n}\n```\n\n\
after\nbreak";
    assert_eq!(texts(&p), [expected]);
    assert!(!p.pages[0].text.contains("secret"));
    assert_eq!(p.pages[0].heading.as_deref(), Some("Tides & currents"));
}

#[test]
fn html_without_visible_text_is_empty() {
    let e = Format::Html.read("<html><script>x()</script><p hidden>h</p></html>").unwrap_err();
    assert_eq!(e, FormatError::NoText { format: Format::Html });
}

#[test]
fn csv_pages_keep_the_header_and_name_their_rows() {
    let mut csv = String::from("name,dose\r\n");
    for i in 1..=45 {
        csv.push_str(&format!("\"drug {i}, \"\"generic\"\"\",\"{i} mg\nonce\"\r\n"));
    }
    let p = Format::Csv.read(&csv).unwrap();
    assert_eq!(p.pages.len(), 3);
    let first = &p.pages[0];
    assert!(first.text.starts_with("# name | dose\n\n| drug 1, \"generic\" | 1 mg once |\n| drug 2"), "{}", first.text);
    assert_eq!(first.heading.as_deref(), Some("name | dose"));
    assert_eq!(first.meta, Some(json!({"columns": ["name", "dose"], "rows": [1, 20]}).as_object().unwrap().clone()));
    assert_eq!(p.pages[2].meta.as_ref().unwrap()["rows"], json!([41, 45]));
    let tsv = Format::Tsv.read("a\tb\n1\t2\n").unwrap();
    assert_eq!(texts(&tsv), ["# a | b\n\n| 1 | 2 |"]);
}

#[test]
fn malformed_csv_names_the_place() {
    assert_eq!(Format::Csv.read("a,b\n1,2\n3,\"four\n5,6\n"), Err(FormatError::UnclosedQuote { line: 3, column: 3 }));
    assert_eq!(Format::Csv.read("a,\"b\n"), Err(FormatError::UnclosedQuote { line: 1, column: 3 }));
    assert_eq!(Format::Csv.read("a,b\n1,2\n\"x\"\"y\",2\n3,4,5\n"), Err(FormatError::FieldCount { row: 3, line: 4, found: 3, expected: 2 }));
    assert_eq!(Format::Csv.read("a,b\n"), Err(FormatError::NoRows));
    assert!(Format::Csv.read("a,b\n1,\"2\"\"\"\n").is_ok());
}

#[test]
fn json_records_become_pages_in_their_key_order() {
    let input = r#"[{"title": "Lyon", "zip": 69000, "geo": {"lat": 45.7, "tags": ["a", "b"]}, "none": null, "people": [{"n": "x"}]}, {"b": true}]"#;
    let p = Format::Json.read(input).unwrap();
    assert_eq!(texts(&p), ["title: Lyon\nzip: 69000\ngeo.lat: 45.7\ngeo.tags: a, b\npeople[0].n: x", "b: true"]);
    assert_eq!(p.pages[0].heading.as_deref(), Some("Lyon"));
    assert_eq!(p.pages[1].meta.as_ref().unwrap()["record"], json!(1));
    let as_string = Format::Json.read(&serde_json::to_string(&json!("{\"k\": \"v\"}")).unwrap()).unwrap();
    assert_eq!(texts(&as_string), ["k: v"]);
    assert_eq!(as_string.pages[0].meta, None);
}

#[test]
fn malformed_json_names_the_place() {
    match Format::Json.read("[{\"a\": 1},\n {\"b\": }]") {
        Err(FormatError::Json { line: 2, column, .. }) => assert!(column > 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(Format::Json.read(r#"[{"a": 1}, 5]"#), Err(FormatError::NotARecord { record: 1, found: "a number" }));
    assert_eq!(Format::Json.read("3"), Err(FormatError::NotRecords { found: "a number" }));
    assert_eq!(Format::Json.read("[]"), Err(FormatError::NoText { format: Format::Json }));
}

#[test]
fn binary_and_empty_input_are_refused() {
    assert_eq!(Format::Text.read("ok\nab\u{0}c"), Err(FormatError::Binary { code: 0, line: 2, column: 3 }));
    assert_eq!(Format::Html.read("<p>\u{1}</p>"), Err(FormatError::Binary { code: 1, line: 1, column: 4 }));
    assert_eq!(Format::Text.read("é\u{FFFF}"), Err(FormatError::Noncharacter { code: 0xFFFF, line: 1, column: 2 }));
    assert!(Format::Text.read("tab\tcr\r\nff\x0c ﻷ ok").is_ok());
    assert_eq!(Format::Text.read(" \n\x0c"), Err(FormatError::NoText { format: Format::Text }));
    let pages = [PageDraft { text: "a".into(), ..PageDraft::default() }, PageDraft { text: "\u{7f}".into(), ..PageDraft::default() }];
    let e = check_pages(&pages).unwrap_err();
    assert_eq!(e.to_string(), "[1].text: holds the control character U+007F at line 1, column 1: binary data is not a document.");
}

#[test]
fn auto_detection() {
    assert_eq!(Format::detect("  <!DOCTYPE html><p>x"), Format::Html);
    assert_eq!(Format::detect("<div>x</div>"), Format::Html);
    assert_eq!(Format::detect("[{\"a\": 1}]"), Format::Json);
    assert_eq!(Format::detect("[not json"), Format::Text);
    assert_eq!(Format::detect("a,b\n1,2\n3,4\n"), Format::Csv);
    assert_eq!(Format::detect("a\tb\n1\t2\n3\t4\n"), Format::Tsv);
    assert_eq!(Format::detect("Hello, world.\nBye now.\n"), Format::Text);
    assert_eq!(Format::detect("# Title\n\nSome, text, here\nand, more, here\nyes, and, this"), Format::Markdown);
    assert_eq!(Format::detect("a < b and c > d"), Format::Text);
}
