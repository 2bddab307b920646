//! The verifier against its fixture set: genuine excerpts found, near misses refused.
//!
//! The verifier against its fixture set (tests/data/verify/excerpts.json): every genuine
//! excerpt (as printed, or with whitespace, case, quote, hyphenation, compatibility and
//! Arabic mark variations) is found at the right offsets with the right match kind;
//! every near miss (a word changed, dropped or added, a number changed, clauses
//! reordered, a cut inside a word) is refused.

use quarry_index::verify::{Match, Page};
use serde_json::Value;

fn fixtures() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/verify/excerpts.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_genuine_excerpt_is_found_at_its_offsets() {
    let f = fixtures();
    let genuine = f["genuine"].as_array().unwrap();
    assert!(genuine.len() >= 20);
    for g in genuine {
        let text = f["pages"][g["page"].as_str().unwrap()].as_str().unwrap();
        let expect = g["expect"].as_str().unwrap();
        let start = text[..text.find(expect).unwrap()].chars().count() as u32;
        let end = start + expect.chars().count() as u32;
        let page = Page::new(text);
        let at = page.locate(g["excerpt"].as_str().unwrap()).unwrap_or_else(|| panic!("not found ({}): {g}", g["why"]));
        assert_eq!((at.start, at.end), (start, end), "{}: {g}", g["why"]);
        assert_eq!(page.slice(&at), expect, "{}", g["why"]);
        let want = if g["match"] == "exact" { Match::Exact } else { Match::NormalizedExact };
        assert_eq!(at.matched, want, "{}: {g}", g["why"]);
    }
}

#[test]
fn every_near_miss_is_refused() {
    let f = fixtures();
    let near = f["near_miss"].as_array().unwrap();
    assert!(near.len() >= 20);
    for n in near {
        let text = f["pages"][n["page"].as_str().unwrap()].as_str().unwrap();
        let found = Page::new(text).locate(n["excerpt"].as_str().unwrap());
        assert_eq!(found, None, "{} was accepted: {n}", n["why"]);
    }
}
