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
