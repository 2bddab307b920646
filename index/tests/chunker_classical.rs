//! The classical chunker against its hand-labelled set, its invariants and the bundled archive corpus.
//!
//! The classical chunker against its hand-labelled set, its invariants on generated
//! pages, and the bundled `samples/archive/` corpus.
//!
//! The labelled set is `tests/data/chunkers/classical/cases.txt` (markup and sources in
//! the README there). Scoring, per kind K:
//! - a chunk *counts for K* when it carries K; it is a true positive when it overlaps a
//!   span labelled K; precision = true positives / chunks counting for K;
//! - recall = spans labelled K that some chunk carrying K overlaps / spans labelled K.
//!
//! Both must be ≥ 0.9 for each of hadith, grading, takhrij, verse, poetry, footnote,
//! heading, each labelled at least 10 times. Every labelled `footnoteOf` is checked
//! exactly: each chunk overlapping the footnote's span carries `footnote_of` = the pos of
//! a chunk that overlaps the span it points at and holds the footnote's marker; a chunk
//! overlapping no such labelled footnote has no link. A `page=N` label asks that the chunk
//! holding the span's start has `printedPage` N in its meta.

use std::path::PathBuf;

use proptest::prelude::*;
use quarry_index::chunk::{ChunkOptions, ChunkSpan, Chunker, Kind};
use serde_json::Value;

const KINDS: [Kind; 7] = [Kind::Hadith, Kind::Grading, Kind::Takhrij, Kind::Verse, Kind::Poetry, Kind::Footnote, Kind::Heading];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A labelled span: byte range of the page, kinds, and its id / the id it is a footnote of.
#[derive(Debug, Default)]
struct Span {
    range: (usize, usize),
    kinds: Vec<Kind>,
    id: Option<String>,
    footnote_of: Option<String>,
    page: Option<String>,
}

struct Case {
    name: String,
    page: String,
    spans: Vec<Span>,
}

/// `⟦kinds#id>ref,page=N|text⟧`, nestable; the page is the text with the markup removed.
fn parse_case(name: &str, marked: &str) -> Case {
    let mut page = String::new();
    let mut open: Vec<Span> = Vec::new();
    let mut spans = Vec::new();
    let mut rest = marked;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '⟦' => {
                let bar = rest.find('|').unwrap_or_else(|| panic!("{name}: ⟦ without |"));
                let mut span = Span { range: (page.len(), 0), ..Span::default() };
                for token in rest[..bar].split(',').filter(|t| !t.is_empty()) {
                    let (kind, mut tail) = token.split_at(token.find(['#', '>']).unwrap_or(token.len()));
                    while let Some(sigil) = tail.chars().next() {
                        let body = &tail[1..];
                        let end = body.find(['#', '>']).unwrap_or(body.len());
                        let value = Some(body[..end].to_string());
                        if sigil == '#' {
                            span.id = value
                        } else {
                            span.footnote_of = value
                        }
                        tail = &body[end..];
                    }
                    if let Some(n) = kind.strip_prefix("page=") {
                        span.page = Some(n.to_string());
                    } else if !kind.is_empty() {
                        span.kinds.push(Kind::parse(kind).unwrap_or_else(|| panic!("{name}: kind {kind:?}")));
                    }
                }
                open.push(span);
                rest = &rest[bar + 1..];
            }
            '⟧' => {
                let mut span = open.pop().unwrap_or_else(|| panic!("{name}: ⟧ without ⟦"));
                span.range.1 = page.len();
                spans.push(span);
            }
            c => page.push(c),
        }
    }
    assert!(open.is_empty(), "{name}: unclosed ⟦");
    Case { name: name.to_string(), page, spans }
}

fn cases() -> Vec<Case> {
    let path = repo().join("tests/data/chunkers/classical/cases.txt");
    let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for part in file.split("\n=== ").skip(1) {
        let (name, body) = part.split_once('\n').expect("a case has a name line");
        out.push(parse_case(name.trim(), body));
    }
    out
}

fn overlaps(c: &ChunkSpan, (s, e): (usize, usize)) -> bool {
    (c.byte_start as usize) < e && s < c.byte_end as usize
}

fn text<'a>(page: &'a str, c: &ChunkSpan) -> &'a str {
    &page[c.byte_start as usize..c.byte_end as usize]
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, within
/// `max_chars`, covering every non-whitespace char; footnotes link backwards to a body
/// chunk.
fn check_invariants(page: &str, chunks: &[ChunkSpan], max_chars: usize) -> Result<(), String> {
    let mut covered = vec![false; page.len()];
    let mut prev = (0, 0);
    for (pos, c) in chunks.iter().enumerate() {
        let (bs, be) = (c.byte_start as usize, c.byte_end as usize);
        let s = page.get(bs..be).ok_or(format!("chunk {pos}: bytes {bs}..{be} are not a slice"))?;
        if s.is_empty() || s != s.trim() {
            return Err(format!("chunk {pos} empty or untrimmed: {s:?}"));
        }
        if (c.start, c.byte_start) < prev || c.start >= c.end {
            return Err(format!("chunk {pos} out of order or overlapping"));
        }
        if (c.end - c.start) as usize > max_chars {
            return Err(format!("chunk {pos} has {} chars > {max_chars}", c.end - c.start));
        }
        let by_chars: String = page.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
        if by_chars != s {
            return Err(format!("chunk {pos}: char offsets give {by_chars:?}, bytes {s:?}"));
        }
        covered[bs..be].iter_mut().for_each(|b| *b = true);
        prev = (c.end, c.byte_end);
        if let Some(of) = c.footnote_of {
            let target = chunks.get(of as usize).ok_or(format!("chunk {pos} links past the end"))?;
            if of as usize >= pos || target.kinds.contains(Kind::Footnote) || !c.kinds.contains(Kind::Footnote) {
                return Err(format!("chunk {pos}: footnote_of {of} is not an earlier body chunk"));
            }
        }
    }
    match page.char_indices().find(|&(at, ch)| !ch.is_whitespace() && !covered[at]) {
        Some((at, ch)) => Err(format!("{ch:?} at byte {at} is in no chunk")),
        None => Ok(()),
    }
}

/// The marker a footnote's text opens with, digits folded to ASCII: `(١)` → "1".
fn marker_number(s: &str) -> Option<String> {
    let digits: String = s.trim_start().trim_start_matches(['(', '[']).chars().take_while(|c| c.is_numeric()).collect();
    let folded: String = digits.chars().map(|c| c.to_digit(10).unwrap_or_else(|| arabic_digit(c))).map(|d| char::from(b'0' + d as u8)).collect();
    (!folded.is_empty()).then_some(folded)
}

fn arabic_digit(c: char) -> u32 {
    match c {
        '٠'..='٩' => c as u32 - '٠' as u32,
        '۰'..='۹' => c as u32 - '۰' as u32,
        _ => 0,
    }
}

/// Whether `s` holds the marker `(N)` (in either digit script).
fn holds_marker(s: &str, n: &str) -> bool {
    let arabic: String = n.chars().map(|d| char::from_u32('٠' as u32 + d.to_digit(10).unwrap()).unwrap()).collect();
    s.contains(&format!("({n})")) || s.contains(&format!("({arabic})"))
}

#[derive(Default, Clone, Copy)]
struct Score {
    predicted: usize,
    predicted_right: usize,
    labelled: usize,
    labelled_found: usize,
}

#[test]
fn labelled_set_meets_the_bar() {
    let opts = ChunkOptions::default();
    let mut scores = [Score::default(); KINDS.len()];
    let mut link_errors = Vec::new();
    let mut links_checked = 0;
    let cases = cases();
    assert!(cases.len() >= 10, "{} cases", cases.len());
    for case in &cases {
        let page = case.page.as_str();
        assert_eq!(Chunker::detect(&[page]), Chunker::Classical, "{}", case.name);
        let chunks = Chunker::Classical.chunk(page, &opts);
        check_invariants(page, &chunks, opts.max_chars).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (score, kind) in scores.iter_mut().zip(KINDS) {
            let labelled: Vec<&Span> = case.spans.iter().filter(|s| s.kinds.contains(&kind)).collect();
            for c in chunks.iter().filter(|c| c.kinds.contains(kind)) {
                score.predicted += 1;
                if labelled.iter().any(|s| overlaps(c, s.range)) {
                    score.predicted_right += 1;
                } else {
                    eprintln!("{}: false {} {:?}", case.name, kind.as_str(), text(page, c));
                }
            }
            for s in &labelled {
                score.labelled += 1;
                if chunks.iter().any(|c| c.kinds.contains(kind) && overlaps(c, s.range)) {
                    score.labelled_found += 1;
                } else {
                    eprintln!("{}: missed {} {:?}", case.name, kind.as_str(), &page[s.range.0..s.range.1]);
                }
            }
        }
        links_checked += check_links(case, &chunks, &mut link_errors);
        check_pages(case, &chunks);
    }
    let mut failed = Vec::new();
    for (s, kind) in scores.iter().zip(KINDS) {
        let precision = s.predicted_right as f64 / s.predicted.max(1) as f64;
        let recall = s.labelled_found as f64 / s.labelled.max(1) as f64;
        eprintln!("{:<9} labelled {:>3}  predicted {:>3}  precision {precision:.3}  recall {recall:.3}", kind.as_str(), s.labelled, s.predicted);
        if s.labelled < 10 || precision < 0.9 || recall < 0.9 {
            failed.push(kind.as_str());
        }
    }
    eprintln!("footnoteOf: {links_checked} links checked, {} wrong", link_errors.len());
    assert!(link_errors.is_empty(), "{link_errors:#?}");
    assert!(links_checked >= 10, "only {links_checked} footnote links labelled");
    assert!(failed.is_empty(), "below the bar (≥ 10 labels, precision and recall ≥ 0.9): {failed:?}");
}

/// Every chunk over a labelled footnote links exactly where the label says; no other
/// chunk links at all. Returns the number of labelled links checked.
fn check_links(case: &Case, chunks: &[ChunkSpan], errors: &mut Vec<String>) -> usize {
    let page = case.page.as_str();
    let by_id = |id: &str| case.spans.iter().find(|s| s.id.as_deref() == Some(id));
    let mut checked = 0;
    for (pos, c) in chunks.iter().enumerate() {
        let label = case.spans.iter().find(|s| s.footnote_of.is_some() && overlaps(c, s.range));
        match (label, c.footnote_of) {
            (None, None) => {}
            (None, Some(of)) => errors.push(format!("{}: chunk {pos} links to {of} unlabelled", case.name)),
            (Some(label), got) => {
                checked += 1;
                let id = label.footnote_of.as_deref().unwrap();
                let target = by_id(id).unwrap_or_else(|| panic!("{}: no span #{id}", case.name));
                let n = marker_number(&page[label.range.0..label.range.1]).expect("a footnote label opens with its marker");
                let right = got.map(|of| &chunks[of as usize]).is_some_and(|t| overlaps(t, target.range) && holds_marker(text(page, t), &n));
                if !right {
                    errors.push(format!("{}: footnote ({n}) in chunk {pos} links to {got:?}", case.name));
                }
            }
        }
    }
    checked
}

fn check_pages(case: &Case, chunks: &[ChunkSpan]) {
    for span in case.spans.iter().filter(|s| s.page.is_some()) {
        let at = span.range.0 as u32;
        let chunk = chunks.iter().find(|c| c.byte_start <= at && at < c.byte_end).expect("a chunk holds the span");
        let got = chunk.meta.as_ref().and_then(|m| m.get("printedPage")).and_then(Value::as_str);
        assert_eq!(got, span.page.as_deref(), "{}: printed page", case.name);
    }
}

/// Fragments in the style of classical books, joined at random.
const FRAGMENTS: &[&str] = &[
    "بَابُ مَا جَاءَ فِي الطُّهُورِ",
    "## كتاب الصلاة",
    "### | فصل",
    "١ - حَدَّثَنَا قُتَيْبَةُ حَدَّثَنَا اللَّيْثُ عَنْ نَافِعٍ (١) قَالَ",
    "\u{200f} \u{200f}أَخْبَرَنَا \u{200f} \u{200f}سُلَيْمَانُ ثم تلا { ومنهم من عاهد الله }",
    "و حدثني يحيى عن مالك",
    "قال أبو عيسى هذا حديث حسن صحيح (٢)",
    "إسناده صحيح.",
    "أخرجه البخاري (١) ومسلم (١٩٠٧).",
    "قال الله تعالى: ﴿ وَأَقِيمُوا الصَّلَاةَ",
    "وَآتُوا الزَّكَاةَ ﴾ [البقرة: ٤٣]",
    "﴿",
    "﴾",
    "أَلا كُلُّ شَيءٍ ما خَلا اللَهَ باطِلُ … وَكُلُّ نَعيمٍ لا مَحالَةَ زائِلُ",
    "قفا نبك %~% بسقط اللوى",
    "سطر\tسطر",
    "(ص: ٢٠)",
    "[ج ١ ص ٣٥]",
    "PageV01P020",
    "__________",
    "ـــــــ",
    "* * *",
    "(١) أخرجه مسلم (٢٢٣).",
    "(2) إسناده ضعيف",
    "[3] انظر ما سبق",
    "4 - وهذا تعليق",
    "emoji 🎉 text 🚀",
    "حـــدثنا",
    "   ",
    "(",
    "(١",
    "…",
    "%~%",
];

fn page_strategy() -> impl Strategy<Value = String> {
    let separators = prop::sample::select(vec!["\n", "\n\n", "\r\n", "\r\n\r\n", " ", "\t", "  ", "", "\n \n"]);
    let piece = prop_oneof![
        6 => prop::sample::select(FRAGMENTS.to_vec()).prop_map(str::to_string),
        1 => "[\\s\\S]{0,40}",
        1 => (1usize..4).prop_map(|n| "حَدَّثَنَا عَنْ فُلَانٍ ".repeat(n * 30)),
    ];
    prop::collection::vec((piece, separators), 0..40).prop_map(|parts| parts.into_iter().map(|(p, s)| p + s).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_on_generated_pages(page in page_strategy(), target in 1usize..600, extra in 0usize..600) {
        let opts = ChunkOptions { target_chars: target, max_chars: target + extra };
        let chunks = Chunker::Classical.chunk(&page, &opts);
        if let Err(e) = check_invariants(&page, &chunks, opts.max_chars) {
            return Err(TestCaseError::fail(format!("{e} in {page:?}")));
        }
    }
}

fn samples() -> Vec<(String, Value)> {
    let dir = repo().join("samples/archive");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.display().to_string(), serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn page_texts(doc: &Value) -> Vec<&str> {
    match (doc.get("pages"), doc.get("text")) {
        (Some(Value::Array(pages)), None) => pages.iter().map(|p| p["text"].as_str().expect("a page has text")).collect(),
        (None, Some(Value::String(text))) => vec![text.as_str()],
        _ => panic!("a sample has exactly one of pages[] and text"),
    }
}

#[test]
fn every_archive_sample_is_classical_and_keeps_the_invariants() {
    let samples = samples();
    assert!((4..=10).contains(&samples.len()), "{} samples", samples.len());
    let bytes: u64 = samples.iter().map(|(p, _)| std::fs::metadata(p).unwrap().len()).sum();
    assert!(bytes <= 300 * 1024, "samples/archive holds {bytes} bytes");
    let opts = ChunkOptions::default();
    let mut seen = std::collections::HashSet::new();
    let mut links = 0;
    for (path, doc) in &samples {
        let title = doc["title"].as_str().unwrap_or_else(|| panic!("{path}: no title"));
        assert!(doc["metadata"]["source"].is_string() && doc["metadata"]["license"].is_string(), "{path}: source, license");
        let pages = page_texts(doc);
        assert_eq!(Chunker::detect(&pages), Chunker::Classical, "{title}");
        let mut chunked = Vec::new();
        for (n, page) in pages.iter().enumerate() {
            let chunks = Chunker::Classical.chunk(page, &opts);
            check_invariants(page, &chunks, opts.max_chars).unwrap_or_else(|e| panic!("{title} page {n}: {e}"));
            for c in &chunks {
                seen.extend(c.kinds.iter());
                links += c.footnote_of.is_some() as usize;
            }
            chunked.push((*page, chunks));
        }
        let views: Vec<(&str, &[ChunkSpan])> = chunked.iter().map(|(p, c)| (*p, c.as_slice())).collect();
        let meta = Chunker::Classical.document_meta(&views);
        assert_eq!(meta["kind"], "classical");
        assert!(meta["counts"].as_object().is_some_and(|c| !c.is_empty()), "{title}: {meta:?}");
    }
    for kind in KINDS {
        assert!(seen.contains(&kind), "no sample chunk is {}", kind.as_str());
    }
    assert!(links >= 5, "only {links} footnote links in the samples");
}
