use super::*;

fn chunk(page: &str, target: usize, max: usize) -> Vec<ChunkSpan> {
    let chunks = chunk_prose(page, &ChunkOptions { target_chars: target, max_chars: max });
    check_invariants(page, &chunks, max);
    chunks
}

fn text<'a>(page: &'a str, c: &ChunkSpan) -> &'a str {
    &page[c.byte_start as usize..c.byte_end as usize]
}

fn texts<'a>(page: &'a str, chunks: &[ChunkSpan]) -> Vec<&'a str> {
    chunks.iter().map(|c| text(page, c)).collect()
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over
/// `max` chars, and every non-whitespace char of the page inside some chunk.
fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) {
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

#[test]
fn empty_pages_have_no_chunks() {
    assert!(chunk("", 100, 200).is_empty());
    assert!(chunk(" \n\r\n\t ", 100, 200).is_empty());
}

#[test]
fn packs_paragraphs_and_attaches_the_heading() {
    let page = "# Dosage\n\nTake one tablet.\n\nDo not exceed four a day.\n";
    let chunks = chunk(page, 1000, 2000);
    assert_eq!(texts(page, &chunks), [page.trim()]);
    assert_eq!(chunks[0].kinds.names(), ["heading"]);
    assert_eq!(chunks[0].heading.as_deref(), Some("Dosage"));
}

#[test]
fn headings_start_sections() {
    let page = "Preamble text.\n\n# One\nFirst section.\n\nSecond\n------\n\nSecond section.\n\n## Last";
    let chunks = chunk(page, 1000, 2000);
    let got: Vec<(&str, Option<&str>)> = chunks.iter().map(|c| (text(page, c), c.heading.as_deref())).collect();
    assert_eq!(
        got,
        [
            ("Preamble text.", None),
            ("# One\nFirst section.", Some("One")),
            ("Second\n------\n\nSecond section.", Some("Second")),
            ("## Last", Some("Last")),
        ]
    );
}

#[test]
fn splits_long_paragraphs_at_sentences() {
    let page = "This is a sentence of some length. ".repeat(30) + "Is it over? Yes! Done.";
    let chunks = chunk(&page, 100, 200);
    assert!(chunks.len() > 5);
    for c in &chunks {
        assert!(text(&page, c).ends_with(['.', '?', '!']), "{:?}", text(&page, c));
    }
}

#[test]
fn splits_arabic_at_arabic_question_marks() {
    let sentence = "ما حكم الصلاة في السفر؟ ";
    let page = sentence.repeat(20);
    for c in chunk(&page, 40, 60) {
        assert!(text(&page, &c).ends_with('؟'));
    }
}

#[test]
fn falls_back_to_whitespace_then_to_slices() {
    let page = "word ".repeat(100);
    assert!(chunk(&page, 30, 50).iter().all(|c| text(&page, c).ends_with("word")));
    let page = "x".repeat(120);
    let chunks = chunk(&page, 30, 50);
    assert_eq!(chunks.iter().map(|c| c.end - c.start).collect::<Vec<_>>(), [50, 50, 20]);
}

#[test]
fn tables_and_lists_get_their_own_chunks() {
    let rows: String = (0..20).map(|i| format!("| drug {i} | {i}0 mg |\n")).collect();
    let page = format!("Intro paragraph.\n\n{rows}\nClosing paragraph.");
    let chunks = chunk(&page, 1000, 2000);
    assert_eq!(texts(&page, &chunks), ["Intro paragraph.", rows.trim(), "Closing paragraph."]);
    assert_eq!(chunks[1].kinds.names(), ["table"]);

    let page = "Bring:\n- water\n- a hat\n\nThen walk.";
    let chunks = chunk(page, 1000, 2000);
    assert_eq!(texts(page, &chunks), [page]);
    assert_eq!(chunks[0].kinds.names(), ["list"]);
}

#[test]
fn large_tables_split_at_rows() {
    let rows: String = (0..40).map(|i| format!("name {i}\tvalue {i}\tunit\n")).collect();
    let chunks = chunk(&rows, 100, 200);
    assert!(chunks.len() > 1);
    for c in &chunks {
        let t = text(&rows, c);
        assert!(t.starts_with("name ") && t.ends_with("unit"), "{t:?}");
        assert!(c.kinds.contains(Kind::Table));
    }
}

#[test]
fn marks_chunks_with_dates() {
    let page = "Admitted on March 3, 2024 with chest pain.\n\n# Plan\n\nReview in two weeks.";
    let chunks = chunk(page, 30, 60);
    assert_eq!(chunks[0].kinds.names(), ["date"]);
    assert_eq!(chunks[1].kinds.names(), ["heading"]);
}

#[test]
fn offsets_count_chars_not_bytes() {
    let page = "مرحبا بكم.\n\nSecond paragraph here.";
    let chunks = chunk(page, 12, 25);
    assert_eq!((chunks[0].start, chunks[0].end), (0, 10));
    assert_eq!((chunks[0].byte_start, chunks[0].byte_end), (0, 18));
    assert_eq!(chunks[1].start, 12);
}

/// A small deterministic generator (SplitMix64), so the property test needs no crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const FRAGMENTS: &[&str] = &[
    "# Heading one",
    "## Section ##",
    "Title\n=====",
    "Sub\n---",
    "#",
    "####### not a heading",
    "A short sentence.",
    "Another one? Yes! And more.",
    "قال رسول الله صلى الله عليه وسلم: إنما الأعمال بالنيات.",
    "هل هذا صحيح؟ نعم۔ انتهى.",
    "- item one\n- item two\n  continued",
    "1. first\n2) second\na) third",
    "• bullet",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "x\ty\tz\n1\t2\t3",
    "col\tcol",
    "\u{a0}nbsp\u{a0}",
    "Seen 2024-03-14 and 03/15/2024.",
    "emoji 🎉 text 🚀",
    "\t\tindented code",
    "averyveryverylongwordwithoutanyspacesatallinsideitatall",
    "--- not a marker",
    "*",
    "-",
    "   ",
    "end.",
    "(quoted.) \"Yes.\" Next",
];

const SEPARATORS: &[&str] = &["\n", "\n\n", "\r\n", "\r\n\r\n", " ", "\t", "\n \n", ""];

fn random_page(rng: &mut Rng) -> String {
    let mut page = String::new();
    for _ in 0..rng.below(40) {
        page.push_str(rng.pick(FRAGMENTS));
        page.push_str(rng.pick(SEPARATORS));
    }
    page
}

#[test]
fn invariants_hold_over_varied_pages() {
    let mut rng = Rng(42);
    for case in 0..3000 {
        let page = random_page(&mut rng);
        let max = 1 + rng.below(300);
        let target = 1 + rng.below(max + 50);
        let chunks = chunk_prose(&page, &ChunkOptions { target_chars: target, max_chars: max });
        let limit = max;
        std::panic::catch_unwind(|| check_invariants(&page, &chunks, limit))
            .unwrap_or_else(|_| panic!("case {case}: target {target}, max {max}, page {page:?}"));
    }
}

#[test]
fn invariants_hold_with_default_options_on_long_pages() {
    let mut rng = Rng(7);
    for _ in 0..50 {
        let page: String = (0..8).map(|_| random_page(&mut rng)).collect::<Vec<_>>().join("\n\n");
        let page = page + &"Long paragraph sentence number one. ".repeat(120);
        check_invariants(&page, &chunk_prose(&page, &ChunkOptions::default()), 2000);
    }
}
