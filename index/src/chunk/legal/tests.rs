use super::*;

fn chunks(page: &str) -> Vec<ChunkSpan> {
    let opts = ChunkOptions::default();
    let out = chunk(page, &opts);
    check_invariants(page, &out, opts.max_chars);
    out
}

fn text<'a>(page: &'a str, c: &ChunkSpan) -> &'a str {
    &page[c.byte_start as usize..c.byte_end as usize]
}

fn meta<'a>(c: &'a ChunkSpan, key: &str) -> Option<&'a Value> {
    c.meta.as_ref().and_then(|m| m.get(key))
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over `max`
/// chars, every non-whitespace char inside some chunk.
pub(super) fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) {
    let mut covered = vec![false; page.len()];
    let mut prev_end = (0, 0);
    for c in chunks {
        let s = text(page, c);
        assert!(!s.is_empty() && s == s.trim(), "untrimmed or empty chunk {s:?}");
        assert!((c.start, c.byte_start) >= prev_end, "overlap at {s:?}");
        assert!(c.start < c.end && (c.end - c.start) as usize <= max, "{s:?} over {max}");
        let by_chars: String = page.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
        assert_eq!(s, by_chars, "char and byte offsets disagree");
        covered[c.byte_start as usize..c.byte_end as usize].iter_mut().for_each(|b| *b = true);
        prev_end = (c.end, c.byte_end);
    }
    for (at, ch) in page.char_indices() {
        assert!(ch.is_whitespace() || covered[at], "{ch:?} at {at} not covered");
    }
}

const CONTRACT: &str = "# Services Agreement\n\nThis Services Agreement (the \"Agreement\") is made on March 3, 2025.\n\n\
1. **Definitions**. \"Services\" means the work in Schedule A.\n\n\
2. Fees\n(a) Customer shall pay the fees monthly.\n(b) Late fees accrue at 1% a month.\n\n\
ARTICLE IV\nTERMINATION\n\nSection 4.1 Termination for Cause. Either Party may terminate under 11 U.S.C. § 365.\n";

#[test]
fn clause_chunks_start_at_their_numbers() {
    let out = chunks(CONTRACT);
    let got: Vec<(&str, Option<&str>, Option<&str>)> =
        out.iter().map(|c| (text(CONTRACT, c), meta(c, "clause").and_then(Value::as_str), c.heading.as_deref())).collect();
    assert_eq!(got[0].0, "# Services Agreement\n\nThis Services Agreement (the \"Agreement\") is made on March 3, 2025.");
    assert_eq!(got[1], ("1. **Definitions**. \"Services\" means the work in Schedule A.", Some("1"), Some("Definitions")));
    assert!(got[2].0.starts_with("2. Fees\n(a)") && got[2].0.ends_with("a month."), "{:?}", got[2]);
    assert_eq!((got[2].1, got[2].2), (Some("2"), Some("Fees")));
    assert_eq!(got[3], ("ARTICLE IV\nTERMINATION", Some("IV"), Some("TERMINATION")));
    assert_eq!(got[4].1, Some("4.1"));
    assert_eq!(got[4].2, Some("Termination for Cause"));
    assert_eq!(out.len(), 5);
    assert_eq!(out[0].kinds.names(), ["heading", "definition", "date"]);
    assert_eq!(out[1].kinds.names(), ["definition", "clause"]);
    assert_eq!(out[3].kinds.names(), ["heading", "clause"]);
    assert_eq!(out[4].kinds.names(), ["citation", "clause"]);
    assert_eq!(meta(&out[4], "citations"), Some(&serde_json::json!(["11 U.S.C. § 365"])));
    assert_eq!(meta(&out[1], "terms"), Some(&serde_json::json!(["Services"])));
}

#[test]
fn a_heading_before_a_clause_stands_alone() {
    let page = "# Standard Terms\n\n1. **Introduction**. This MNDA (“**MNDA**”) allows each party.";
    let out = chunks(page);
    assert_eq!(text(page, &out[0]), "# Standard Terms");
    assert!(text(page, &out[1]).starts_with("1. "));
}

#[test]
fn nested_clauses_split_off_when_the_parent_is_full() {
    let body = "The Supplier shall keep records of the work done. ".repeat(5);
    let page = format!("§ 7. Records\n\n(a) {body}\n\n(b) {body}\n\n(1) {body}");
    let opts = ChunkOptions { target_chars: 300, max_chars: 600 };
    let out = chunk(&page, &opts);
    check_invariants(&page, &out, 600);
    let clauses: Vec<&str> = out.iter().filter_map(|c| meta(c, "clause").and_then(Value::as_str)).collect();
    assert_eq!(clauses, ["7", "7(b)", "7(b)(1)"]);
    assert!(out.iter().all(|c| c.kinds.contains(Kind::Clause)));
    assert!(out.iter().all(|c| c.heading.as_deref() == Some("Records")));
}

#[test]
fn long_clauses_split_at_sentences_not_citations() {
    let sentence = "The claim arises under 42 U.S.C. § 1983 and Pub. L. No. 111-148 as amended. ";
    let page = format!("3. {}", sentence.repeat(40));
    let out = chunk(&page, &ChunkOptions { target_chars: 500, max_chars: 1000 });
    check_invariants(&page, &out, 1000);
    assert!(out.len() > 2);
    assert!(out[0].kinds.contains(Kind::Clause) && !out[1].kinds.contains(Kind::Clause));
    for c in &out {
        assert_eq!(meta(c, "citations"), Some(&serde_json::json!(["42 U.S.C. § 1983", "Pub. L. No. 111-148"])));
        assert_eq!(meta(c, "clause").and_then(Value::as_str), Some("3"));
    }
}

#[test]
fn document_meta_collects_form_terms_citations_and_sections() {
    let out = chunks(CONTRACT);
    let meta = document_meta(&[(CONTRACT, &out)]);
    assert_eq!(meta["form"], "contract");
    assert_eq!(meta["terms"], serde_json::json!(["Agreement", "Services"]));
    assert_eq!(meta["citations"], serde_json::json!(["11 U.S.C. § 365"]));
    assert_eq!(
        meta["sections"],
        serde_json::json!([
            {"clause": "1", "heading": "Definitions"},
            {"clause": "2", "heading": "Fees"},
            {"clause": "IV", "heading": "TERMINATION"},
            {"clause": "4.1", "heading": "Termination for Cause"},
        ])
    );
}

#[test]
fn forms() {
    let statute = "§ 1. Words denoting number\n\nIn determining the meaning of any Act of Congress—\n\n(Pub. L. 112–231, § 2(a), 126 Stat. 1619.)\n\n§ 2. County\n\nThe word “county” includes a parish.";
    assert_eq!(form::form(statute), form::Form::Statute);
    let regulation = "PART 60—STANDARDS\n\n§ 60.1 Applicability.\n\nThis part applies under 40 C.F.R. § 60.2 and 40 C.F.R. § 60.4.";
    assert_eq!(form::form(regulation), form::Form::Regulation);
    let opinion = "The court held in Brown v. Board of Education, 347 U.S. 483 (1954), that the plaintiffs prevail. Id. at 495. We affirm.";
    assert_eq!(form::form(opinion), form::Form::Opinion);
    assert_eq!(form::form("A walk in the park."), form::Form::Other);
}

#[test]
fn signal_fires_on_legal_text_only() {
    assert!(signal(&[CONTRACT]) >= 1.0, "{}", signal(&[CONTRACT]));
    let prose = "How to bake bread\n\n1. Mix the flour and water.\n2. Knead the dough for ten minutes.\n3. Let it rise for an hour.\n4. Bake at 220 degrees.\n\nThe loaf keeps for three days.";
    assert!(signal(&[prose]) < 1.0, "{}", signal(&[prose]));
    assert_eq!(signal(&[""]), 0.0);
}

#[test]
fn crlf_emoji_and_arabic_keep_the_invariants() {
    let page = "1. Scope 🙂\r\n(a) يُحَدِّثُنَا the Party shall \r\n\r\n\r\n§ 2. “X” means 🙂🙂\r\n";
    let out = chunks(page);
    assert_eq!(out.len(), 2);
    assert_eq!(meta(&out[1], "terms"), Some(&serde_json::json!(["X"])));
    for max in 1..12 {
        let out = chunk(page, &ChunkOptions { target_chars: max, max_chars: max });
        check_invariants(page, &out, max);
    }
}

#[test]
fn a_nested_clause_does_not_leave_its_body_behind() {
    let body = "The matter set forth in the edition current at any time shall be evidence. ".repeat(8);
    let page = format!("§ 204. Codes\n\n(a) United States Code.—\n\n{body}\n\n(b) District of Columbia Code.—\n\n{body}");
    let out = chunks(&page);
    let starts: Vec<String> = out.iter().map(|c| text(&page, c).chars().take(3).collect()).collect();
    assert_eq!(starts, ["§ 2", "(b)"]);
    assert_eq!(meta(&out[1], "clause").and_then(Value::as_str), Some("204(b)"));
    assert_eq!(out[1].heading.as_deref(), Some("District of Columbia Code"));
}
