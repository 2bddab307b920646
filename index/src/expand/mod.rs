//! Query expansion: deterministic rewrites of a query that name the same thing in
//! another form, each searched as its own keyword list and fused beside the query's.
//!
//! The sources, in order (an earlier source's match wins an overlapping span):
//! 1. the collection's glossary (the organisation's own shorthand), both directions;
//! 2. abbreviation lexicons, chosen by the domain ([`Domain`]):
//!    medical: the clinical list (data/clinical.tsv), both directions;
//!    legal: the Bluebook case-name abbreviations (reporters-db's
//!    case_name_abbreviations.json, BSD-2-Clause) and the contract list, both directions;
//!    general: the contract list both directions, and the clinical short forms marked
//!    unambiguous (`u`: "HTN", "COPD", never an English word) spelled out only;
//! 3. section references (section.rs), every domain;
//! 4. Arabic variant spellings the analyser does not fold (arabic_variants.tsv).
//!
//! A rewrite is kept only when its analysed terms differ from the query's and from every
//! kept one's: the analyser already makes hamza and alef forms, ta marbuta, alef maqsura,
//! harakat and tatweel one term, so such spellings never become expansions.
//! Pure and synchronous: the lexicons compile once, on first use.

mod glossary;
pub mod lexicon;
mod section;
#[cfg(test)]
mod tests;

use std::sync::LazyLock;

pub use glossary::Glossary;
use lexicon::{parse_tsv, Direction, Entry, Lexicon, Rewrite};

/// What an expansion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Abbreviation,
    Section,
    Variant,
    Llm,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Abbreviation => "abbreviation",
            Kind::Section => "section",
            Kind::Variant => "variant",
            Kind::Llm => "llm",
        }
    }
}

/// A rewritten query: searched as its own keyword list with `weight` × the keyword
/// list's weight in fusion.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    pub text: String,
    pub kind: Kind,
    pub weight: f64,
}

/// Which abbreviation lexicons apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    Medical,
    Legal,
    General,
}

impl Domain {
    /// A request's or collection's domain: "medical" and "legal" are theirs; anything
    /// else ("general", "auto", "classical") is general.
    pub fn parse(s: &str) -> Domain {
        match s {
            "medical" => Domain::Medical,
            "legal" => Domain::Legal,
            _ => Domain::General,
        }
    }
}

/// Weights: the organisation's glossary and exact equivalences (section markers,
/// spellings) count as the query itself; a built-in abbreviation may mean something
/// else in the collection's text, so it counts less; a model's paraphrase least.
pub const GLOSSARY_WEIGHT: f64 = 1.0;
pub const ABBREVIATION_WEIGHT: f64 = 0.8;
pub const SECTION_WEIGHT: f64 = 1.0;
pub const VARIANT_WEIGHT: f64 = 1.0;
pub const LLM_WEIGHT: f64 = 0.5;

/// At most this many expansions per query (each is a keyword search).
pub const MAX_EXPANSIONS: usize = 8;

static CLINICAL: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(clinical(|_| true), Direction::Both, false));
static CLINICAL_GENERAL: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(clinical(|f| f.contains('u')), Direction::ShortToLong, false));
static CONTRACT: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(parse_tsv(include_str!("data/contract.tsv"), |_| true), Direction::Both, false));
static CASE_NAMES: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(case_names(), Direction::Both, false));
static ARABIC: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(arabic_variants(), Direction::Both, true));

fn clinical(keep: impl Fn(&str) -> bool) -> Vec<Entry> {
    parse_tsv(include_str!("data/clinical.tsv"), keep)
}

/// reporters-db's `{abbreviation: [words]}`; the single letters of directions (E., N.,
/// S., W.) and `&` are left out: they would rewrite nearly every case name. Its short
/// forms are written capitalised in case names and many are also words ("No.", "All."),
/// so they match only as written.
fn case_names() -> Vec<Entry> {
    let map: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_str(include_str!("data/case_name_abbreviations.json")).expect("the bundled case-name abbreviations parse");
    map.into_iter()
        .filter(|(short, _)| short.chars().filter(|c| c.is_alphanumeric()).count() > 1)
        .map(|(short, longs)| Entry { short, longs, exact: true, ambiguous: false })
        .collect()
}

/// The variant spellings, both columns as the analyser folds them (queries are matched
/// folded too).
fn arabic_variants() -> Vec<Entry> {
    parse_tsv(include_str!("data/arabic_variants.tsv"), |_| true)
        .into_iter()
        .map(|e| Entry {
            short: crate::text::normalize_arabic(&e.short).into_owned(),
            longs: e.longs.iter().map(|l| crate::text::normalize_arabic(l).into_owned()).collect(),
            exact: false,
            ambiguous: false,
        })
        .collect()
}

fn has_arabic(s: &str) -> bool {
    s.chars().any(|c| ('\u{0600}'..='\u{06FF}').contains(&c))
}

/// The deterministic expansions of `query` (already without its quote marks) for
/// `domain`, the glossary's first; distinct by their index terms, at most
/// [`MAX_EXPANSIONS`].
pub fn expand(query: &str, domain: Domain, glossary: Option<&Glossary>) -> Vec<Expansion> {
    let mut taken: Vec<Rewrite> = Vec::new();
    let mut out: Vec<Expansion> = Vec::new();
    let mut add = |rewrites: Vec<Rewrite>, text: &str, kind: Kind, weight: f64, out: &mut Vec<Expansion>| {
        let fresh: Vec<Rewrite> = rewrites.into_iter().filter(|r| !taken.iter().any(|t| t.overlaps(r.start, r.end))).collect();
        for r in &fresh {
            out.push(Expansion { text: r.apply(text), kind, weight });
        }
        taken.extend(fresh);
    };
    if let Some(g) = glossary {
        add(g.rewrites(query), query, Kind::Abbreviation, GLOSSARY_WEIGHT, &mut out);
    }
    let lexicons: &[&Lexicon] = match domain {
        Domain::Medical => &[&CLINICAL],
        Domain::Legal => &[&CASE_NAMES, &CONTRACT],
        Domain::General => &[&CONTRACT, &CLINICAL_GENERAL],
    };
    for lex in lexicons {
        add(lex.rewrites(query), query, Kind::Abbreviation, ABBREVIATION_WEIGHT, &mut out);
    }
    add(section::rewrites(query), query, Kind::Section, SECTION_WEIGHT, &mut out);
    if has_arabic(query) {
        // Matched on the folded query, so the rewrite is of the folded text: the same
        // index terms as the query's but for the variant.
        let folded = crate::text::normalize_arabic(query);
        let rewrites = ARABIC.rewrites(&folded);
        out.extend(rewrites.iter().map(|r| Expansion { text: r.apply(&folded), kind: Kind::Variant, weight: VARIANT_WEIGHT }));
    }
    distinct(query, out, MAX_EXPANSIONS)
}

/// Of `candidates` in order, those whose index terms (as a set) are the query's by no
/// means and no earlier kept one's, at most `max`: a rewrite that searches the same
/// terms would only count the same list twice.
pub fn distinct(query: &str, candidates: Vec<Expansion>, max: usize) -> Vec<Expansion> {
    if candidates.is_empty() {
        return candidates;
    }
    let key = |s: &str| {
        let mut t = crate::text::terms(s);
        t.sort_unstable();
        t.dedup();
        t
    };
    let mut seen = vec![key(query)];
    let mut out = Vec::new();
    for c in candidates {
        if out.len() == max {
            break;
        }
        let k = key(&c.text);
        if k.is_empty() || seen.contains(&k) {
            continue;
        }
        seen.push(k);
        out.push(c);
    }
    out
}

/// How many entries each built-in lexicon holds (for tests and the docs).
pub fn sizes() -> [(&'static str, usize); 4] {
    [("clinical", CLINICAL.len()), ("contract", CONTRACT.len()), ("case names", CASE_NAMES.len()), ("arabic variants", ARABIC.len())]
}
