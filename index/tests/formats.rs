//! Every format through every chunker: chunk offsets slice the stored page text.
//!
//! For every format and every chunker, each chunk's `[start, end)` (chars) and
//! `[byte_start, byte_end)` slice the stored page text to the same non-empty, trimmed
//! text, chunks in order and apart: over generated Markdown, HTML with nested
//! structure, CSV and TSV with quoted fields and newlines, JSON records, and text with
//! Arabic harakat, emoji and CRLF.

use proptest::prelude::*;
use quarry_index::chunk::{ChunkOptions, Chunker};
use quarry_index::format::Format;
use quarry_index::ingest::{prepare, DocDraft};

const WORDS: &[&str] = &[
    "tide",
    "Brest",
    "spring",
    "café",
    "2024-03-14",
    "U.S.C.",
    "§",
    "x.",
    "(1)",
    "—",
    "بِسْمِ",
    "اللَّهِ",
    "الرَّحْمَٰنِ",
    "حَدَّثَنَا",
    "قَالَ",
    "😀",
    "👩‍👩‍👧",
    "🇫🇷",
    "e\u{301}",
    "a|b",
    "\"quoted\"",
    "HPI:",
    "means",
    "1.",
    "-",
    "#",
];

fn words(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..max).prop_map(|w| w.join(" "))
}

fn eol() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["\n", "\r\n", "\n\n", "\r\n\r\n"][..])
}

fn markdown() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        words(12),
        words(5).prop_map(|w| format!("# {w}")),
        words(5).prop_map(|w| format!("### {w}")),
        words(6).prop_map(|w| format!("- {w}")),
        words(6).prop_map(|w| format!("  1. {w}")),
        (words(3), words(3)).prop_map(|(a, b)| format!("| {a} | {b} |")),
        Just("|---|---|".to_owned()),
        Just("```".to_owned()),
        Just("________".to_owned()),
        words(3).prop_map(|w| format!("--- page {} ---", w.len())),
        Just("\u{c}".to_owned()),
        words(200),
    ];
    prop::collection::vec((line, eol()), 1..30).prop_map(|ls| ls.into_iter().map(|(l, e)| l + e).collect())
}

fn html_node() -> impl Strategy<Value = String> {
    let text = words(8).prop_map(|w| w.replace('&', "&amp;").replace('<', "&lt;") + " &amp; &#x1F600; &eacute;");
    text.prop_recursive(4, 64, 6, |inner| {
        let kids = prop::collection::vec(inner, 1..5).prop_map(|k| k.concat());
        (
            prop::sample::select(
                &[
                    "p",
                    "div",
                    "ul",
                    "ol",
                    "li",
                    "table",
                    "tr",
                    "td",
                    "th",
                    "h1",
                    "h3",
                    "sup",
                    "b",
                    "span hidden",
                    "script",
                    "pre",
                    "section",
                    "blockquote",
                ][..],
            ),
            kids,
        )
            .prop_map(|(tag, kids)| {
                let name = tag.split(' ').next().unwrap();
                format!("<{tag}>{kids}</{name}>")
            })
    })
}

fn html() -> impl Strategy<Value = String> {
    prop::collection::vec(prop_oneof![html_node(), Just("<hr>".to_owned()), Just("<br>".to_owned())], 1..8)
        .prop_map(|nodes| format!("<!doctype html><html><head><title>t</title></head><body>{}</body></html>", nodes.concat()))
}

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        words(4),
        (words(3), words(3)).prop_map(|(a, b)| format!("{a},\r\n{b}")),
        words(2).prop_map(|w| format!("say \"{w}\"")),
        Just(String::new())
    ]
}

fn delimited(delimiter: char) -> impl Strategy<Value = String> {
    (2usize..5).prop_flat_map(move |cols| {
        prop::collection::vec(prop::collection::vec(field(), cols), 2..50).prop_map(move |rows| {
            let quote = |f: &String| format!("\"{}\"", f.replace('"', "\"\""));
            let lines: Vec<String> = rows.iter().map(|r| r.iter().map(quote).collect::<Vec<_>>().join(&delimiter.to_string())).collect();
            lines.join("\r\n")
        })
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        words(6).prop_map(serde_json::Value::from),
        any::<i32>().prop_map(serde_json::Value::from),
        any::<bool>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null)
    ];
    leaf.prop_recursive(3, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4).prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json() -> impl Strategy<Value = String> {
    let record = prop::collection::btree_map("[a-z]{1,6}", json_value(), 1..6).prop_map(|m| serde_json::Value::Object(m.into_iter().collect()));
    prop::collection::vec(record, 1..6).prop_map(|r| serde_json::Value::from(r).to_string())
}

/// Every chunk of every page, read by `format` and chunked by `chunker`, slices its page.
fn check(format: Format, input: &str, opts: &ChunkOptions) -> Result<(), TestCaseError> {
    let Ok(parsed) = format.read(input) else { return Ok(()) };
    for chunker in Chunker::ALL.into_iter().map(Some).chain([None]) {
        let draft = DocDraft { pages: parsed.pages.clone(), chunker, format: format.as_str().into(), ..DocDraft::default() };
        let b = prepare(draft, opts);
        for p in &b.pages {
            let chunks = &b.chunks[p.first_chunk as usize..(p.first_chunk + p.chunks) as usize];
            let mut last_end = 0;
            for c in chunks {
                let by_bytes = p.text.get(c.byte_start as usize..c.byte_end as usize);
                prop_assert!(by_bytes.is_some(), "{chunker:?} {format:?}: bytes {}..{} of {:?}", c.byte_start, c.byte_end, p.text);
                let by_bytes = by_bytes.unwrap();
                let by_chars: String = p.text.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
                prop_assert_eq!(by_chars.as_str(), by_bytes, "{:?} {:?}", chunker, format);
                prop_assert!(!by_bytes.is_empty() && by_bytes.trim() == by_bytes, "{chunker:?} {format:?}: {by_bytes:?}");
                prop_assert!(c.start >= last_end, "{chunker:?} {format:?}: chunks overlap");
                last_end = c.end;
            }
        }
    }
    Ok(())
}

fn opts() -> impl Strategy<Value = ChunkOptions> {
    (20usize..400, 0usize..600).prop_map(|(target, extra)| ChunkOptions { target_chars: target, max_chars: target + extra })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn text_and_markdown_chunks_slice_their_pages(doc in markdown(), opts in opts()) {
        check(Format::Text, &doc, &opts)?;
        check(Format::Markdown, &doc, &opts)?;
    }

    #[test]
    fn html_chunks_slice_their_pages(doc in html(), opts in opts()) {
        check(Format::Html, &doc, &opts)?;
    }

    #[test]
    fn csv_and_tsv_chunks_slice_their_pages(csv in delimited(','), tsv in delimited('\t'), opts in opts()) {
        prop_assert!(Format::Csv.read(&csv).is_ok(), "{csv:?}");
        check(Format::Csv, &csv, &opts)?;
        check(Format::Tsv, &tsv, &opts)?;
    }

    #[test]
    fn json_chunks_slice_their_pages(doc in json(), opts in opts()) {
        check(Format::Json, &doc, &opts)?;
        let as_string = serde_json::Value::from(doc.clone()).to_string();
        check(Format::Json, &as_string, &opts)?;
    }

    #[test]
    fn any_string_through_auto_detection(doc in prop_oneof![markdown(), html(), delimited(','), json()], opts in opts()) {
        check(Format::detect(&doc), &doc, &opts)?;
    }
}
