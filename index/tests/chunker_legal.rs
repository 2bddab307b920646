//! The legal chunker against its hand-labelled set, its invariants and the bundled legal samples.
//!
//! The legal chunker held to a hand-labelled set, its invariants on generated pages, every
//! bundled legal sample, and detection on research abstracts.
//!
//! The labelled set (`tests/data/chunkers/legal/cases.json`, sources in its README): each
//! case is a page text and labelled spans `{text, kinds, nth?}`, `text` an exact substring
//! (its `nth` occurrence, 0-based, when it occurs more than once). The rule, per kind K of clause, definition, citation: a chunk carrying
//! K is a true positive when it overlaps a span labelled K (precision = true positives /
//! chunks carrying K); a span labelled K is found when some chunk carrying K overlaps it
//! (recall = spans found / spans labelled K). Every clause start, definition and citation
//! in the texts is labelled, so a chunk that wrongly carries K has no span to overlap.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use quarry_index::chunk::{ChunkOptions, ChunkSpan, Chunker, Kind};
use serde_json::Value;

const KINDS: [Kind; 3] = [Kind::Clause, Kind::Definition, Kind::Citation];

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over `max`
/// chars, every non-whitespace char inside some chunk.
fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) -> Result<(), String> {
    let mut covered = vec![false; page.len()];
    let mut prev_end = (0, 0);
    for c in chunks {
        let (bs, be) = (c.byte_start as usize, c.byte_end as usize);
        let s = page.get(bs..be).ok_or_else(|| format!("bad byte range {bs}..{be}"))?;
        if s.is_empty() || s != s.trim() {
            return Err(format!("empty or untrimmed chunk {s:?}"));
        }
        if (c.start, c.byte_start) < prev_end {
            return Err(format!("overlap or disorder at {s:?}"));
        }
        if c.start >= c.end || (c.end - c.start) as usize > max {
            return Err(format!("{s:?} spans {}..{} (max {max})", c.start, c.end));
        }
        let by_chars: String = page.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
        if s != by_chars {
            return Err(format!("char offsets give {by_chars:?}, bytes {s:?}"));
        }
        covered[bs..be].iter_mut().for_each(|b| *b = true);
        prev_end = (c.end, c.byte_end);
    }
    match page.char_indices().find(|&(at, ch)| !ch.is_whitespace() && !covered[at]) {
        Some((at, ch)) => Err(format!("{ch:?} at byte {at} is in no chunk")),
        None => Ok(()),
    }
}

#[derive(Default)]
struct Tally {
    chunks: usize,
    true_chunks: usize,
    spans: usize,
    found: usize,
}

#[test]
fn labelled_set_precision_and_recall_per_kind() {
    let set = read_json(data("tests/data/chunkers/legal/cases.json"));
    let opts = ChunkOptions::default();
    let mut tally: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for case in set["cases"].as_array().expect("cases") {
        let (name, text) = (case["name"].as_str().unwrap(), case["text"].as_str().unwrap());
        let chunks = Chunker::Legal.chunk(text, &opts);
        check_invariants(text, &chunks, opts.max_chars).unwrap_or_else(|e| panic!("{name}: {e}"));
        let spans: Vec<((usize, usize), Vec<Kind>)> = case["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let t = s["text"].as_str().unwrap();
                let nth = s["nth"].as_u64().unwrap_or(0) as usize;
                let at = text.match_indices(t).nth(nth).unwrap_or_else(|| panic!("{name}: label {t:?} #{nth} not in the text")).0;
                let kinds = s["kinds"].as_array().unwrap().iter().map(|k| Kind::parse(k.as_str().unwrap()).expect("kind")).collect();
                ((at, at + t.len()), kinds)
            })
            .collect();
        let overlaps = |c: &ChunkSpan, (s, e): (usize, usize)| (c.byte_start as usize) < e && s < c.byte_end as usize;
        for kind in KINDS {
            let t = tally.entry(kind.as_str()).or_default();
            let labelled: Vec<(usize, usize)> = spans.iter().filter(|(_, k)| k.contains(&kind)).map(|(r, _)| *r).collect();
            for c in chunks.iter().filter(|c| c.kinds.contains(kind)) {
                t.chunks += 1;
                if labelled.iter().any(|r| overlaps(c, *r)) {
                    t.true_chunks += 1;
                } else {
                    misses.push(format!("{name}: {} chunk with no label: {:?}", kind.as_str(), &text[c.byte_start as usize..c.byte_end as usize]));
                }
            }
            for r in &labelled {
                t.spans += 1;
                if chunks.iter().any(|c| c.kinds.contains(kind) && overlaps(c, *r)) {
                    t.found += 1;
                } else {
                    misses.push(format!("{name}: {} label not found: {:?}", kind.as_str(), &text[r.0..r.1]));
                }
            }
        }
    }
    for m in &misses {
        println!("{m}");
    }
    for (kind, t) in &tally {
        let precision = t.true_chunks as f64 / t.chunks.max(1) as f64;
        let recall = t.found as f64 / t.spans.max(1) as f64;
        println!("{kind:<10} labelled {:>3}  chunks {:>3}  precision {precision:.3}  recall {recall:.3}", t.spans, t.chunks);
        assert!(t.spans >= 10, "{kind}: only {} labelled spans", t.spans);
        assert!(t.true_chunks >= 10, "{kind}: only {} labelled chunks found", t.true_chunks);
        assert!(precision >= 0.9 && recall >= 0.9, "{kind}: precision {precision:.3}, recall {recall:.3}");
    }
}

#[test]
fn labelled_set_meta_names_clauses_terms_and_citations() {
    let set = read_json(data("tests/data/chunkers/legal/cases.json"));
    let case = set["cases"].as_array().unwrap().iter().find(|c| c["name"] == "statute-excerpt").expect("statute case");
    let text = case["text"].as_str().unwrap();
    let chunks = Chunker::Legal.chunk(text, &ChunkOptions::default());
    let clauses: Vec<&str> =
        chunks.iter().filter(|c| c.kinds.contains(Kind::Clause)).filter_map(|c| c.meta.as_ref()?.get("clause")?.as_str()).collect();
    assert_eq!(clauses, ["1", "2", "3"], "nested clauses that fit join their parent's chunk");
    let meta = Chunker::Legal.document_meta(&[(text, &chunks)]);
    assert_eq!(meta["form"], "statute");
    assert_eq!(meta["terms"], serde_json::json!(["Administrator", "rural clinic"]));
    let citations: Vec<&str> = meta["citations"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(citations.contains(&"Pub. L. No. 117-328") && citations.contains(&"42 U.S.C. § 1395x(aa)"), "{citations:?}");
    let sections: Vec<&str> = meta["sections"].as_array().unwrap().iter().map(|s| s["clause"].as_str().unwrap()).collect();
    assert_eq!(sections, ["1", "2", "2(1)", "2(2)", "3", "3(a)", "3(b)", "3(c)"]);
}

/// Every bundled legal sample: a valid document body, detected as legal, chunked within
/// the invariants, and its `form` the one its metadata states.
#[test]
fn every_legal_sample_detects_as_legal_and_keeps_the_invariants() {
    let dir = data("samples/legal");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir).expect("samples/legal").map(|e| e.unwrap().path()).collect();
    names.sort();
    let (mut count, mut bytes) = (0, 0);
    for path in names.iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        bytes += std::fs::metadata(path).unwrap().len();
        count += 1;
        let doc = read_json(path.clone());
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(doc["title"].is_string() && doc["metadata"]["source"].is_string() && doc["metadata"]["license"].is_string(), "{name}");
        let text = doc["text"].as_str().unwrap_or_else(|| panic!("{name}: no text"));
        assert_eq!(Chunker::detect(&[text]), Chunker::Legal, "{name}");
        for opts in [ChunkOptions::default(), ChunkOptions { target_chars: 200, max_chars: 300 }] {
            let chunks = Chunker::Legal.chunk(text, &opts);
            check_invariants(text, &chunks, opts.max_chars).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let chunks = Chunker::Legal.chunk(text, &ChunkOptions::default());
        let meta = Chunker::Legal.document_meta(&[(text, &chunks)]);
        assert_eq!(meta["form"], doc["metadata"]["form"], "{name}");
        assert!(chunks.iter().any(|c| KINDS.iter().any(|k| c.kinds.contains(*k))), "{name}");
    }
    assert!((4..=8).contains(&count), "{count} legal samples");
    assert!(bytes <= 300_000, "legal samples take {bytes} bytes");
}

/// Research abstracts are not legal texts: at least 98% of SciFact and NFCorpus stay
/// below the legal signal's threshold.
#[test]
fn research_abstracts_do_not_read_as_legal() {
    for corpus in ["tests/data/scifact-500/corpus.jsonl", "tests/data/nfcorpus-300/corpus.jsonl"] {
        let text = std::fs::read_to_string(data(corpus)).expect(corpus);
        let (mut total, mut legal) = (0, 0);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let doc: Value = serde_json::from_str(line).expect("jsonl");
            let page = format!("{}\n\n{}", doc["title"].as_str().unwrap_or(""), doc["text"].as_str().unwrap_or(""));
            total += 1;
            if Chunker::detect(&[&page]) == Chunker::Legal {
                legal += 1;
                println!("{corpus}: {} reads as legal", doc["_id"]);
            }
        }
        let share = legal as f64 / total as f64;
        println!("{corpus}: {legal} of {total} read as legal");
        assert!(total >= 300 && share <= 0.02, "{corpus}: {legal} of {total} read as legal");
    }
}

#[test]
fn ordinary_prose_does_not_read_as_legal() {
    let pages = [
        "How to bake bread\n\n1. Mix the flour, salt and water.\n2. Knead the dough for ten minutes.\n3. Let it rise for an hour.\n4. Bake at 220 degrees for forty minutes.\n\nThe loaf keeps for three days in a paper bag.",
        "The river rises in the hills and runs south for two hundred miles. Towns grew up where it could be forded, and mills were built on its falls in the 1800s. Today the valley is known for its orchards (see \"Apples\" below) and for a festival held every October.",
        "Minutes of the garden club, May 3, 2024\n\n- Treasurer's report accepted.\n- The plant sale raised $420.\n- Next meeting: June 7 at the library.\n\nQuestions to the secretary, please.",
    ];
    for page in pages {
        assert_eq!(Chunker::detect(&[page]), Chunker::Prose, "{page:?}");
    }
}

/// A line of a legal page: clause numbers of every form, definitions, citations, and the
/// awkward text the invariants must survive (CRLF, emoji, Arabic harakat, long lines).
fn legal_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("the Party shall".to_string()),
        Just("\"Services\" means".to_string()),
        Just("(the “Agreement”)".to_string()),
        Just("42 U.S.C. § 1983".to_string()),
        Just("Pub. L. 117–228".to_string()),
        Just("347 U.S. 483 (1954)".to_string()),
        Just("Id. at 5.".to_string()),
        Just("🙂🙂".to_string()),
        Just("يُحَدِّثُنَا".to_string()),
        Just("**Term**.".to_string()),
        Just("—".to_string()),
        "[a-zA-Z]{1,12}",
        "[ \t]{1,3}",
    ];
    let start = prop_oneof![
        Just(String::new()),
        Just("1. ".to_string()),
        Just("2.1 ".to_string()),
        Just("(a) ".to_string()),
        Just("(iv) ".to_string()),
        Just("ARTICLE IV ".to_string()),
        Just("Section 3.2 ".to_string()),
        Just("§\u{202f}7. ".to_string()),
        Just("# ".to_string()),
        Just("SCHEDULE A".to_string()),
        Just("________".to_string()),
    ];
    let long = "[a-z ]{0,3}".prop_map(|s| format!("{s}{}", "x".repeat(2500)));
    let line = (start, prop::collection::vec(word, 0..12)).prop_map(|(s, w)| format!("{s}{}", w.join(" ")));
    prop_oneof![8 => line, 1 => long, 1 => Just(String::new())]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_on_generated_legal_pages(
        lines in prop::collection::vec(legal_line(), 0..30),
        crlf in any::<bool>(),
        target in 1usize..400,
        extra in 0usize..400,
    ) {
        let page = lines.join(if crlf { "\r\n" } else { "\n" });
        let opts = ChunkOptions { target_chars: target, max_chars: target + extra };
        let chunks = Chunker::Legal.chunk(&page, &opts);
        prop_assert!(check_invariants(&page, &chunks, opts.max_chars).is_ok(), "{:?}", check_invariants(&page, &chunks, opts.max_chars));
        let _ = Chunker::Legal.document_meta(&[(&page, &chunks)]);
    }
}
