//! Keyword search as the server runs it, on small collections written per case.
//!
//! Keyword search as the server runs it (the query parsed, then the engine's search) on
//! small collections written for each case: quoted words in long requests, queries of
//! many terms, Unicode forms of the same word.

use quarry_index::chunk::ChunkOptions;
use quarry_index::collection::{Collection, Options};
use quarry_index::ingest::{self, DocDraft, PageDraft};
use quarry_index::search::{self, Mode, Query, Results};
use quarry_index::text;

fn collection(docs: &[(&str, &str)]) -> (tempfile::TempDir, Collection) {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_kw", dir.path(), Options::default()).unwrap();
    for (id, body) in docs {
        let page = PageDraft { text: (*body).to_owned(), ..PageDraft::default() };
        let draft = DocDraft { id: (*id).to_owned(), format: "text".into(), embedder: "none".into(), pages: vec![page], ..DocDraft::default() };
        c.add(ingest::prepare(draft, &ChunkOptions::default())).unwrap();
    }
    c.flush().unwrap();
    (dir, c)
}

/// The query parsed as the server parses it, searched in keyword mode.
fn ask(c: &Collection, q: &str) -> (Vec<String>, Results) {
    let parsed = text::parse(q);
    let query = Query { phrases: parsed.phrases, emphasis: parsed.emphasis, ..Query::new(parsed.text, Mode::Keyword) };
    let snap = c.snapshot();
    let r = search::search(&snap, &query);
    let ids = r.hits.iter().map(|h| snap.hit_view(h).doc.id.to_owned()).collect();
    (ids, r)
}

const HEART: &[(&str, &str)] = &[
    ("trial", "Low-dose aspirin lowers the risk of heart attacks in older adults: a randomised trial of 19,000 patients."),
    ("rats", "Cardioprotective diets in rats fed olive oil."),
    ("gardens", "Gardens of older houses in the city."),
];

#[test]
fn a_quoted_word_in_a_long_request_is_emphasis_and_drops_no_page() {
    let (_d, c) = collection(HEART);
    let q = "I am writing a review for my lab and would like to find studies showing that aspirin lowers \
             the risk of heart attacks in older adults. Please include papers that mention \"cardioprotective\" effects.";
    let (ids, r) = ask(&c, q);
    // The old rule kept only the pages holding "cardioprotective": the rat diet.
    assert_eq!(ids[0], "trial", "{ids:?}");
    assert!(ids.contains(&"rats".to_owned()), "{ids:?}");
    assert!(r.warnings.iter().any(|w| w.contains("emphasis") && w.contains("\"cardioprotective\"")), "{:?}", r.warnings);
    assert!(text::parse(q).phrases.is_empty());
}

#[test]
fn emphasis_ranks_the_page_holding_the_quoted_word_higher() {
    // Same lengths, each query word in one page: "heart" twice beats "stroke" once...
    let docs = [("heart", "Aspirin heart heart adults."), ("stroke", "Aspirin stroke brain adults.")];
    let (_d, c) = collection(&docs);
    let (ids, r) = ask(&c, "We would like to read the studies on aspirin for adults, and we want to know about heart and stroke.");
    assert_eq!(ids, ["heart", "stroke"]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // ...until the request quotes "stroke": the same words, one stressed.
    let (ids, r) = ask(&c, "We would like to read the studies on aspirin for adults, and we want to know about heart and \"stroke\".");
    assert_eq!(ids, ["stroke", "heart"], "{:?}", r.warnings);
}

#[test]
fn quotes_in_a_short_query_or_around_several_words_still_filter() {
    let (_d, c) = collection(HEART);
    let (ids, r) = ask(&c, "aspirin \"cardioprotective\"");
    assert_eq!(ids, ["rats"]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let long = "I am writing a review for my lab and would like to find studies showing that aspirin lowers \
                the risk in older adults, in particular \"heart attacks\".";
    assert_eq!(text::parse(long).phrases, ["heart attacks"]);
    assert_eq!(ask(&c, long).0, ["trial"]);
}

#[test]
fn a_query_of_more_than_31_distinct_terms_scores_and_shows_every_term() {
    let words: Vec<String> = (0..40).map(|i| format!("w{i}x")).collect();
    let (_d, c) = collection(&[("early", "w0x w1x filler"), ("late", "w36x w37x w38x w39x filler"), ("none", "nothing here")]);
    let (ids, r) = ask(&c, &words.join(" "));
    assert_eq!(r.terms.len(), 40);
    // Terms past the 31st still score: the page holding four of them ranks first.
    assert_eq!(ids, ["late", "early"]);
    let snap = c.snapshot();
    let late = snap.hit_view(&r.hits[0]);
    assert_eq!(late.passages[0].1.matched, ["w36x", "w37x", "w38x", "w39x"]);
}

const UNICODE: &[(&str, &str)] = &[
    ("decomposed", "A small cafe\u{0301} near the station serves breakfast."),
    ("ligature", "The \u{FB01}nal report of the committee."),
    ("city", "Notes from a visit to Kraków in winter."),
    ("greek", "Ἀλήθεια as a word of the philosophers."),
];

#[test]
fn a_precomposed_query_finds_text_written_with_a_combining_mark() {
    let (_d, c) = collection(UNICODE);
    let (ids, r) = ask(&c, "café");
    assert_eq!(ids, ["decomposed"]);
    assert_eq!(r.terms, ["cafe"]);
    // The passage shows the term it matched, and a quoted phrase holds too.
    let snap = c.snapshot();
    assert_eq!(snap.hit_view(&r.hits[0]).passages[0].1.matched, ["cafe"]);
    assert_eq!(ask(&c, "\"small café\"").0, ["decomposed"]);
    assert_eq!(ask(&c, "cafe\u{0301}").0, ["decomposed"]);
}

#[test]
fn a_ligature_is_the_letters_it_joins() {
    let (_d, c) = collection(UNICODE);
    assert_eq!(ask(&c, "final report").0, ["ligature"]);
    assert_eq!(ask(&c, "\"final report\"").0, ["ligature"]);
    let (ids, r) = ask(&c, "\u{FB01}nal");
    assert_eq!((ids, r.terms), (vec!["ligature".to_owned()], vec!["final".to_owned()]));
}

#[test]
fn latin_diacritics_fold_and_other_scripts_keep_their_marks() {
    let (_d, c) = collection(UNICODE);
    assert_eq!(ask(&c, "krakow").0, ["city"]);
    assert_eq!(ask(&c, "KRAKÓW").0, ["city"]);
    assert_eq!(ask(&c, "\"visit to krakow\"").0, ["city"]);
    let snap = c.snapshot();
    let (_, r) = ask(&c, "Krakow winter");
    assert_eq!(snap.hit_view(&r.hits[0]).passages[0].1.matched, ["krakow", "winter"]);
    // Greek breathings and accents are part of the spelling: kept.
    assert_eq!(ask(&c, "ἀλήθεια").0, ["greek"]);
    assert!(ask(&c, "αληθεια").0.is_empty());
}
