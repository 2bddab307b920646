//! How strongly a text reads as legal: clause numbering, definitions, citations and legal
//! vocabulary, weighed against its length.
//!
//! A plain `1.` list is common in ordinary prose, so it counts little; `§`, `Section 2.1`,
//! `ARTICLE IV`, dotted numbers and `(a)` count more; and a text with no definition,
//! citation or legal word scores 0 whatever its numbering. Research abstracts (SciFact,
//! NFCorpus) stay below 1.0 (the tests hold ≥ 98% of them there).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::cite::citations;
use super::define::definitions;
use super::lines::{lines, LineKind, Number};

/// Only the start of a long document is read.
const READ_CHARS: usize = 60_000;
/// A legal word counts at most this many times.
const WORD_CAP: u32 = 5;

static VOCABULARY: LazyLock<Regex> = LazyLock::new(|| {
    let words = [
        "shall",
        "hereby",
        "herein",
        "hereof",
        "hereunder",
        "hereto",
        "hereinafter",
        "thereof",
        "therein",
        "thereunder",
        "whereas",
        "whereof",
        "pursuant to",
        "notwithstanding",
        "indemnify",
        "indemnification",
        "warranties",
        "liable",
        "governing law",
        "jurisdiction",
        "plaintiffs?",
        "defendants?",
        "appellants?",
        "appellees?",
        "petitioners?",
        "statutes?",
        "statutory",
        "enacted",
        "act of congress",
        "licensors?",
        "licensees?",
        "lessors?",
        "lessees?",
        "subsections?",
        "subparagraphs?",
        "counterparts",
        "assigns",
        "arbitration",
        "covenants?",
        "force majeure",
        "breach",
        "this agreement",
        "the parties",
        "confidential information",
        "effective date",
        "courts?",
        "amended",
    ];
    Regex::new(&format!(r"(?i)\b(?:{})\b", words.join("|"))).unwrap()
});

/// 1.0 or more means legal.
pub(super) fn signal(pages: &[&str]) -> f32 {
    let text = head(pages);
    let chars = text.chars().count();
    let (strong, plain) = clause_lines(&text);
    let defs = definitions(&text).len();
    let cites = citations(&text).len();
    let words = vocabulary(&text);
    if defs + cites == 0 && words == 0 {
        return 0.0;
    }
    let points = 0.4 * strong as f32 + 0.1 * plain as f32 + 0.5 * defs as f32 + 0.5 * cites as f32 + 0.12 * words as f32;
    points / (1.0 + chars as f32 / 4000.0)
}

/// The pages joined, up to [`READ_CHARS`].
fn head(pages: &[&str]) -> String {
    let mut out = String::new();
    for page in pages {
        if out.len() >= READ_CHARS {
            break;
        }
        let take = page.char_indices().nth(READ_CHARS - out.len()).map_or(page.len(), |(at, _)| at);
        out.push_str(&page[..take]);
        out.push_str("\n\n");
    }
    out
}

/// Lines that start clauses: (`§`, `Section`, `ARTICLE`, dotted, `(a)`) and plain `1.`.
fn clause_lines(text: &str) -> (usize, usize) {
    let (mut strong, mut plain) = (0, 0);
    for line in lines(text) {
        let LineKind::Clause(clause) = line.kind else { continue };
        let first = text[line.range.0..].trim_start_matches(['#', '*', ' ']).chars().next();
        match clause.number {
            Number::Section(n) if first.is_some_and(|c| c.is_ascii_digit()) && !n.contains('.') => plain += 1,
            _ => strong += 1,
        }
    }
    (strong, plain)
}

/// Legal words, each counted at most [`WORD_CAP`] times.
fn vocabulary(text: &str) -> u32 {
    let mut counts: HashMap<String, u32> = HashMap::new();
    for m in VOCABULARY.find_iter(text) {
        *counts.entry(m.as_str().to_lowercase()).or_default() += 1;
    }
    counts.values().map(|n| (*n).min(WORD_CAP)).sum()
}
