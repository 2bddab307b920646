//! The medical chunker against its hand-labelled clinical notes, its invariants and the samples.
//!
//! The medical chunker held to its bar: a hand-labelled set of clinical notes
//! (tests/data/chunkers/medical/, see its README), research abstracts that must stay
//! prose, the bundled samples (samples/medical/) and generated notes for the invariants.
//!
//! The scoring rule, per kind K (medication, lab, vital, diagnosis, plan, allergy):
//! - a chunk *predicts* K when its kinds contain K;
//! - a predicting chunk is a true positive when it overlaps (shares at least one char
//!   with) a span labelled K, so precision = true-positive chunks / predicting chunks;
//! - a labelled K span is *recalled* when some chunk carrying K overlaps it, so
//!   recall = recalled spans / labelled spans.
//!
//! Labels are exhaustive for the six kinds within each note, so a chunk that carries a
//! kind where no sentence of that kind is labelled counts against precision.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use quarry_index::chunk::{ChunkOptions, ChunkSpan, Chunker, Kind};
use serde_json::Value;

const KINDS: [Kind; 6] = [Kind::Medication, Kind::Lab, Kind::Vital, Kind::Diagnosis, Kind::Plan, Kind::Allergy];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read_json(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over
/// `max` chars, and every non-whitespace char of the page inside some chunk.
fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) -> Result<(), String> {
    let mut covered = vec![false; page.len()];
    let mut prev_end = (0, 0);
    // The byte offset of each char, and of the end: char offsets checked in O(1).
    let char_at: Vec<usize> = page.char_indices().map(|(at, _)| at).chain([page.len()]).collect();
    for c in chunks {
        let (bs, be) = (c.byte_start as usize, c.byte_end as usize);
        let s = page.get(bs..be).ok_or_else(|| format!("bad byte range {bs}..{be}"))?;
        if s.is_empty() || s != s.trim() {
            return Err(format!("empty or untrimmed chunk {s:?}"));
        }
        if (c.start, c.byte_start) < prev_end {
            return Err(format!("overlap at {s:?}"));
        }
        if c.start >= c.end || (c.end - c.start) as usize > max {
            return Err(format!("{s:?} is over {max} chars"));
        }
        let by_chars = match (char_at.get(c.start as usize), char_at.get(c.end as usize)) {
            (Some(&from), Some(&to)) => &page[from..to],
            _ => return Err(format!("char range {}..{} is off the page", c.start, c.end)),
        };
        if s != by_chars {
            return Err(format!("char and byte offsets disagree on {s:?}"));
        }
        if let Some(h) = &c.heading {
            if h.trim().is_empty() {
                return Err("blank heading".into());
            }
        }
        covered[bs..be].iter_mut().for_each(|b| *b = true);
        prev_end = (c.end, c.byte_end);
    }
    match page.char_indices().find(|&(at, ch)| !ch.is_whitespace() && !covered[at]) {
        Some((at, ch)) => Err(format!("{ch:?} at byte {at} is in no chunk")),
        None => Ok(()),
    }
}

struct Labelled {
    start: usize,
    end: usize,
    kinds: Vec<Kind>,
}

/// The case's spans as byte ranges: each span is found at or after the previous one's
/// start (spans are listed in the note's order, which settles repeated phrases).
fn labelled_spans(case: &Value) -> Vec<Labelled> {
    let text = case["text"].as_str().unwrap();
    let mut from = 0;
    let mut out = Vec::new();
    for span in case["spans"].as_array().unwrap() {
        let s = span["text"].as_str().unwrap();
        let at = text[from..].find(s).unwrap_or_else(|| panic!("{}: span {s:?} not found in order", case["id"])) + from;
        let kinds = span["kinds"].as_array().unwrap().iter().map(|k| Kind::parse(k.as_str().unwrap()).expect("a kind")).collect();
        out.push(Labelled { start: at, end: at + s.len(), kinds });
        from = at;
    }
    out
}

#[derive(Default, Clone, Copy)]
struct Tally {
    predicted: usize,
    true_positive: usize,
    labelled: usize,
    recalled: usize,
}

#[test]
fn labelled_set_precision_and_recall_per_kind() {
    let cases = read_json(&repo().join("tests/data/chunkers/medical/labelled.json"));
    let opts = ChunkOptions::default();
    let mut tally = [Tally::default(); KINDS.len()];
    let mut misses = Vec::new();
    for case in cases.as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(Chunker::detect(&[text]), Chunker::Medical, "{} detects as medical", case["id"]);
        let chunks = Chunker::Medical.chunk(text, &opts);
        check_invariants(text, &chunks, opts.max_chars).unwrap();
        let spans = labelled_spans(case);
        let overlaps = |c: &ChunkSpan, s: &Labelled| (c.byte_start as usize) < s.end && s.start < c.byte_end as usize;
        for (k, kind) in KINDS.iter().enumerate() {
            for c in chunks.iter().filter(|c| c.kinds.contains(*kind)) {
                tally[k].predicted += 1;
                if spans.iter().any(|s| s.kinds.contains(kind) && overlaps(c, s)) {
                    tally[k].true_positive += 1;
                } else {
                    misses.push(format!("{} FP {}: {:?}", case["id"], kind.as_str(), &text[c.byte_start as usize..c.byte_end as usize]));
                }
            }
            for s in spans.iter().filter(|s| s.kinds.contains(kind)) {
                tally[k].labelled += 1;
                if chunks.iter().any(|c| c.kinds.contains(*kind) && overlaps(c, s)) {
                    tally[k].recalled += 1;
                } else {
                    misses.push(format!("{} FN {}: {:?}", case["id"], kind.as_str(), &text[s.start..s.end]));
                }
            }
        }
    }
    for miss in &misses {
        println!("{miss}");
    }
    let mut failed = Vec::new();
    for (kind, t) in KINDS.iter().zip(tally) {
        let precision = t.true_positive as f64 / t.predicted.max(1) as f64;
        let recall = t.recalled as f64 / t.labelled.max(1) as f64;
        println!(
            "{:<10} precision {precision:.3} ({}/{})  recall {recall:.3} ({}/{})",
            kind.as_str(),
            t.true_positive,
            t.predicted,
            t.recalled,
            t.labelled
        );
        if t.labelled < 10 || precision < 0.9 || recall < 0.9 {
            failed.push(kind.as_str());
        }
    }
    assert!(failed.is_empty(), "below the bar (>= 10 labelled, precision and recall >= 0.9): {failed:?}");
}

/// The share of a BEIR corpus's documents whose medical signal stays below 1.0, read
/// as the text alone and as title + text.
fn prose_share(corpus: &str) -> (f64, usize) {
    let body = fs::read_to_string(repo().join(corpus)).unwrap();
    let (mut total, mut prose) = (0, 0);
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let doc: Value = serde_json::from_str(line).unwrap();
        let (title, text) = (doc["title"].as_str().unwrap_or(""), doc["text"].as_str().unwrap_or(""));
        let titled = format!("{title}\n\n{text}");
        for page in [text, titled.as_str()] {
            total += 1;
            if Chunker::detect(&[page]) == Chunker::Prose {
                prose += 1;
            }
        }
    }
    (prose as f64 / total as f64, total)
}

#[test]
fn research_abstracts_stay_prose() {
    for corpus in ["tests/data/scifact-500/corpus.jsonl", "tests/data/nfcorpus-300/corpus.jsonl"] {
        let (share, n) = prose_share(corpus);
        println!("{corpus}: {share:.4} of {n} read as prose");
        assert!(n >= 600, "{corpus}: the corpus is there");
        assert!(share >= 0.98, "{corpus}: only {share:.4} stay prose");
    }
}

fn sample_files() -> Vec<PathBuf> {
    let dir = repo().join("samples/medical");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// A sample's page texts: `text`, or each of `pages[].text`.
fn sample_pages(doc: &Value) -> Vec<String> {
    match (&doc["text"], &doc["pages"]) {
        (Value::String(t), _) => vec![t.clone()],
        (_, Value::Array(pages)) => pages.iter().map(|p| p["text"].as_str().unwrap().to_string()).collect(),
        _ => panic!("a sample holds text or pages"),
    }
}

#[test]
fn every_sample_detects_as_medical_and_keeps_the_invariants() {
    let files = sample_files();
    assert!((5..=10).contains(&files.len()), "5 to 10 samples, found {}", files.len());
    let mut total_bytes = 0;
    for file in &files {
        total_bytes += fs::metadata(file).unwrap().len();
        let doc = read_json(file);
        assert!(doc["title"].as_str().is_some_and(|t| !t.is_empty()), "{}: a title", file.display());
        assert!(doc["metadata"]["source"].is_string() && doc["metadata"]["license"].is_string(), "{}: source and license", file.display());
        let pages = sample_pages(&doc);
        let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
        // detect() answers Classical for Arabic script first, and Medical only when the
        // medical signal is >= 1.0 (and not below legal's).
        assert_eq!(Chunker::detect(&refs), Chunker::Medical, "{}", file.display());
        let mut with_chunks = Vec::new();
        for (opts, page) in
            [ChunkOptions::default(), ChunkOptions { target_chars: 200, max_chars: 300 }].iter().flat_map(|o| refs.iter().map(move |p| (o, p)))
        {
            let chunks = Chunker::Medical.chunk(page, opts);
            check_invariants(page, &chunks, opts.max_chars).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if opts.max_chars == ChunkOptions::default().max_chars {
                with_chunks.push((*page, chunks));
            }
        }
        let pages_with: Vec<(&str, &[ChunkSpan])> = with_chunks.iter().map(|(p, c)| (*p, c.as_slice())).collect();
        let meta = Chunker::Medical.document_meta(&pages_with);
        assert!(meta["sections"].as_array().is_some_and(|s| s.len() >= 3), "{}: sections {:?}", file.display(), meta.get("sections"));
    }
    assert!(total_bytes <= 300 * 1024, "samples total {total_bytes} bytes");
}

/// Lines a clinical note is made of, and the awkward text generated notes mix in.
const HEADERS: &[&str] = &[
    "CHIEF COMPLAINT",
    "HPI:",
    "Allergies: NKDA",
    "# Assessment and Plan",
    "## Plan",
    "**Medications:**",
    "VITALS",
    "Labs (03/28/2024):",
    "Results\n=======",
    "REVIEW OF SYSTEMS",
    "A/P:",
    "PHYSICAL EXAM",
];
const LINES: &[&str] = &[
    "Lisinopril 20 mg daily.",
    "BP 132/84, HR 88, SpO2 97% RA.",
    "- Metformin 500 mg PO BID",
    "| WBC | 11.2 K/uL |",
    "1. Hypertension (I10).",
    "Follow up in 2 weeks.",
    "• Medical Treatment: Increase Lasix to 80 mg daily.",
    "Patient denies history of seasonal allergies.",
    "Date of service: 2024-03-14",
    "________",
    "مُحَمَّدٌ رَسُولُ اللَّهِ 🩺",
    "🧪🧪 HbA1c 8.1% 💊",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(HEADERS).prop_map(str::to_string),
        4 => prop::sample::select(LINES).prop_map(str::to_string),
        1 => Just(String::new()),
        1 => Just("\r".to_string()),
        1 => (prop::sample::select(LINES), 5usize..60).prop_map(|(l, n)| format!("{l} ").repeat(n)),
        1 => (prop::sample::select(LINES), 20usize..120).prop_map(|(l, n)| l.replace(' ', "").repeat(n)),
        2 => prop::collection::vec(any::<char>(), 0..30).prop_map(String::from_iter),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]
    #[test]
    fn invariants_hold_on_generated_notes(
        pieces in prop::collection::vec(piece(), 0..40),
        crlf in any::<bool>(),
        target in 1usize..400,
        extra in 0usize..400,
    ) {
        let newline = if crlf { "\r\n" } else { "\n" };
        let page = pieces.join(newline);
        let opts = ChunkOptions { target_chars: target, max_chars: target + extra };
        let chunks = Chunker::Medical.chunk(&page, &opts);
        prop_assert!(check_invariants(&page, &chunks, opts.max_chars).is_ok(), "{:?}", check_invariants(&page, &chunks, opts.max_chars));
        let meta = Chunker::Medical.document_meta(&[(page.as_str(), chunks.as_slice())]);
        prop_assert_eq!(meta.get("kind").and_then(Value::as_str), Some("medical"));
        let _ = Chunker::detect(&[page.as_str()]);
    }
}
