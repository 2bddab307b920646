use super::*;

#[test]
fn an_excerpt_as_printed_is_exact_at_char_offsets() {
    let page = "Ünïcode first. Then the rule applies.";
    let at = locate(page, "Then the rule applies.").unwrap();
    assert_eq!(at, Located { matched: Match::Exact, start: 15, end: 37 });
}

#[test]
fn the_first_place_on_word_boundaries_wins() {
    let page = "in 13 days, or in 3 days";
    let at = locate(page, "3 days").unwrap();
    assert_eq!((at.start, at.end), (18, 24));
    assert_eq!(locate("the catalogue", "cat"), None);
    assert_eq!(locate("the catalogue", "Catalogue").map(|l| l.matched), Some(Match::NormalizedExact));
}

#[test]
fn a_match_never_ends_inside_a_characters_expansion_or_marks() {
    // ﬁ is one character: "ef" alone is not on the page.
    assert_eq!(locate("an eﬃcient plan", "an ef"), None);
    // A Latin accent is not set aside: "cafe" is not "café".
    assert_eq!(locate("le café noir", "le cafe"), None);
    assert_eq!(locate("le cafe\u{301} noir", "le cafe"), None);
}

#[test]
fn canonical_order_of_marks_does_not_matter() {
    // a + dot below + acute, against a + acute + dot below.
    let at = locate("x a\u{323}\u{301} y", "a\u{301}\u{323}").unwrap();
    assert_eq!((at.start, at.end, at.matched), (2, 5, Match::NormalizedExact));
}

#[test]
fn texts_without_a_letter_are_not_located() {
    assert_eq!(locate("a - b", "-"), None);
    assert_eq!(locate("a - b", ""), None);
}

#[test]
fn every_sentence_of_a_page_is_found_where_it_is() {
    let page = "First one here.\nSecond: “quoted” text.  Third with ﬁ ligature and طَالِبٌ word. 第四句。Fifth 🇫🇷 flag.";
    let p = Page::new(page);
    for s in ["First one here.", "Second: “quoted” text.", "Third with ﬁ ligature and طَالِبٌ word.", "第四句。", "Fifth 🇫🇷 flag."]
    {
        let at = p.locate(s).unwrap();
        assert_eq!(p.slice(&at), s);
        assert_eq!(at.matched, Match::Exact);
        assert_eq!(at.start as usize, page[..page.find(s).unwrap()].chars().count());
    }
    let at = p.locate("second: \"quoted\" text. third with fi ligature and طالب word.").unwrap();
    assert_eq!(p.slice(&at), "Second: “quoted” text.  Third with ﬁ ligature and طَالِبٌ word.");
}

mod property {
    use super::*;
    use proptest::prelude::*;

    const WORDS: &[&str] = &[
        "audit",
        "Provider",
        "30",
        "days",
        "“quoted”",
        "it’s",
        "قَالَ",
        "الأَعْمَالُ",
        "东京",
        "首都です。",
        "👨\u{200d}👩\u{200d}👧",
        "👍🏽",
        "café",
        "ﬁle",
        "1.5%",
        "e\u{301}t\u{e9}",
    ];
    const GAPS: &[&str] = &[" ", "\n", "  ", " \n\t", "\u{a0}"];

    fn page() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        (2usize..40).prop_flat_map(|n| (proptest::collection::vec(0..WORDS.len(), n), proptest::collection::vec(0..GAPS.len(), n)))
    }

    proptest! {
        /// Any run of whole words of a page is found: as printed, exactly where it is or
        /// earlier (the same words may come before); upper-cased with single spaces, at
        /// a span that normalises to the same text.
        #[test]
        fn every_run_of_words_is_found_as_printed_and_as_varied((words, gaps) in page(), a in 0usize..40, len in 1usize..8) {
            let mut text = String::new();
            let mut starts = Vec::new();
            for (i, &w) in words.iter().enumerate() {
                if i > 0 {
                    text.push_str(GAPS[gaps[i]]);
                }
                starts.push((text.chars().count(), text.len()));
                text.push_str(WORDS[w]);
            }
            let a = a % words.len();
            let b = (a + len).min(words.len()) - 1;
            let (from, from_byte) = starts[a];
            let to_byte = starts[b].1 + WORDS[words[b]].len();
            let printed = &text[from_byte..to_byte];
            // A text with no letter or digit (an emoji alone) is never located.
            prop_assume!(printed.chars().any(char::is_alphanumeric));
            let page = Page::new(&text);
            let at = page.locate(printed).expect("the printed run is found");
            prop_assert_eq!(at.matched, Match::Exact);
            prop_assert!(at.start as usize <= from);
            prop_assert_eq!(page.slice(&at), &text[text.char_indices().nth(at.start as usize).unwrap().0..][..printed.len()]);
            let varied: String = printed.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_uppercase();
            // Found as written later on the page, the exact place wins over an earlier
            // normalised one; either way the span reads the same once normalised.
            let at = page.locate(&varied).expect("the varied run is found");
            prop_assert_eq!(Normal::new(page.slice(&at)).text, Normal::new(&varied).text);
        }
    }
}
