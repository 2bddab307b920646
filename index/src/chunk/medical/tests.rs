use super::*;

const NOTE: &str = "2024-03-14\n\
CHIEF COMPLAINT\n\n\
Cough for 3 days.\n\n\
HPI: 45 y/o male with hypertension on lisinopril 20 mg daily presents with cough.\n\n\
ALLERGIES:\n\
Penicillin (hives).\n\n\
VITALS\n\
BP 132/84, HR 88, Temp 99.1 F, SpO2 97% RA.\n\n\
LABS\n\
| test | value |\n|---|---|\n| WBC | 11.2 |\n| Hgb | 13.9 g/dL |\n\n\
ASSESSMENT AND PLAN\n\
1. Acute bronchitis (J20.9).\n\
- Start benzonatate 100 mg TID PRN.\n\
- Follow up in 1 week.\n";

fn chunk_default(page: &str) -> Vec<ChunkSpan> {
    let chunks = chunk(page, &ChunkOptions::default());
    check_invariants(page, &chunks, ChunkOptions::default().max_chars);
    chunks
}

fn text<'a>(page: &'a str, c: &ChunkSpan) -> &'a str {
    &page[c.byte_start as usize..c.byte_end as usize]
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over
/// `max` chars, and every non-whitespace char of the page inside some chunk.
pub(super) fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) {
    let mut covered = vec![false; page.len()];
    let mut prev_end = (0, 0);
    for c in chunks {
        let s = text(page, c);
        assert!(!s.is_empty(), "empty chunk in {page:?}");
        assert_eq!(s, s.trim(), "untrimmed chunk {s:?}");
        assert!((c.start, c.byte_start) >= prev_end, "overlap at {s:?}");
        assert!(c.start < c.end && c.end - c.start <= max as u32, "{s:?} over {max}");
        let by_chars: String = page.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
        assert_eq!(s, by_chars, "char and byte offsets disagree");
        covered[c.byte_start as usize..c.byte_end as usize].iter_mut().for_each(|b| *b = true);
        prev_end = (c.end, c.byte_end);
    }
    for (at, ch) in page.char_indices() {
        assert!(ch.is_whitespace() || covered[at], "{ch:?} at {at} not covered in {page:?}");
    }
}

fn kinds_of<'a>(page: &'a str, chunks: &'a [ChunkSpan]) -> Vec<(Option<&'a str>, Vec<&'static str>)> {
    let _ = page;
    chunks.iter().map(|c| (c.heading.as_deref(), c.kinds.names())).collect()
}

#[test]
fn one_chunk_per_section_with_its_kinds() {
    let chunks = chunk_default(NOTE);
    let got = kinds_of(NOTE, &chunks);
    let want: Vec<(Option<&str>, Vec<&str>)> = vec![
        (None, vec!["date"]),
        (Some("CHIEF COMPLAINT"), vec!["heading"]),
        (Some("HPI"), vec!["heading", "medication", "diagnosis"]),
        (Some("ALLERGIES"), vec!["heading", "allergy"]),
        (Some("VITALS"), vec!["heading", "vital"]),
        (Some("LABS"), vec!["heading", "table", "lab"]),
        (Some("ASSESSMENT AND PLAN"), vec!["heading", "list", "medication", "diagnosis", "plan"]),
    ];
    assert_eq!(got, want);
    assert_eq!(text(NOTE, &chunks[3]), "ALLERGIES:\nPenicillin (hives).");
    let meta = chunks[6].meta.as_ref().expect("meta");
    assert_eq!(meta["section"], "Assessment and Plan");
    assert_eq!(meta["codes"], serde_json::json!([{"system": "ICD-10-CM", "code": "J20.9"}]));
}

#[test]
fn a_chunk_never_spans_two_sections() {
    let page = "Meds: metformin 500 mg BID\nAllergies: NKDA\nPlan: recheck A1c in 3 months";
    let chunks = chunk_default(page);
    let texts: Vec<&str> = chunks.iter().map(|c| text(page, c)).collect();
    assert_eq!(texts, ["Meds: metformin 500 mg BID", "Allergies: NKDA", "Plan: recheck A1c in 3 months"]);
    let kinds: Vec<Vec<&str>> = chunks.iter().map(|c| c.kinds.names()).collect();
    assert_eq!(kinds, [vec!["heading", "medication"], vec!["heading", "allergy"], vec!["heading", "plan"]]);
}

#[test]
fn long_sections_split_within_the_section() {
    let body = "Continue lisinopril 20 mg daily and monitor blood pressure at home. ".repeat(40);
    let page = format!("PLAN\n{body}\nSOCIAL HISTORY\nNonsmoker.");
    let opts = ChunkOptions { target_chars: 300, max_chars: 500 };
    let chunks = chunk(&page, &opts);
    check_invariants(&page, &chunks, 500);
    assert!(chunks.len() > 5);
    let last = chunks.last().expect("chunks");
    assert_eq!(text(&page, last), "SOCIAL HISTORY\nNonsmoker.");
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c.heading.as_deref() == Some("PLAN") && c.kinds.contains(Kind::Plan)));
}

#[test]
fn tiny_limits_and_empty_pages_keep_the_invariants() {
    assert!(chunk_default("").is_empty());
    assert!(chunk_default(" \r\n\t\n").is_empty());
    let opts = ChunkOptions { target_chars: 3, max_chars: 5 };
    let chunks = chunk(NOTE, &opts);
    check_invariants(NOTE, &chunks, 5);
}

#[test]
fn document_meta_collects_sections_dates_and_codes() {
    let chunks = chunk_default(NOTE);
    let meta = document_meta(&[(NOTE, &chunks)]);
    assert_eq!(meta["encounterDate"], "2024-03-14");
    assert_eq!(meta["sections"], serde_json::json!(["CHIEF COMPLAINT", "HPI", "ALLERGIES", "VITALS", "LABS", "ASSESSMENT AND PLAN"]));
    assert_eq!(meta["codes"], serde_json::json!([{"system": "ICD-10-CM", "code": "J20.9"}]));
}

#[test]
fn signal_fires_on_notes_not_on_prose_or_abstracts() {
    assert!(signal(&[NOTE]) >= 1.0, "{}", signal(&[NOTE]));
    assert!(signal(&["Meds: metformin 500 mg BID\nAllergies: NKDA\nBP 120/80"]) >= 1.0);
    let abstract_ = "OBJECTIVE: To compare metformin 500 mg twice daily with placebo. RESULTS: HbA1c fell by 0.8% \
                     (p < 0.01); blood pressure 130/80 mmHg at 12 weeks. CONCLUSIONS: Metformin lowered HbA1c.";
    assert!(signal(&[abstract_]) < 1.0, "{}", signal(&[abstract_]));
    assert!(signal(&["# Results\n\nThe plan worked.\n\n# Discussion\nPatients liked it."]) < 1.0);
    assert_eq!(signal(&[""]), 0.0);
}
