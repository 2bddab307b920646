//! Clinical codes written in a note: ICD-10-CM, LOINC, RxNorm, SNOMED CT and NPI.
//!
//! Codes are how a note links to the rest of a record, so they go into chunk and
//! document meta. Bare digits are everywhere in a note (doses, dates, phone numbers), so
//! each system is taken only where its shape and its check hold: ICD-10 with its dot (or
//! in brackets, or after a cue), LOINC by its mod-10 check digit, RxNorm and SNOMED only
//! after their name (SNOMED also by its Verhoeff check digit), NPI by the Luhn check over
//! the `80840` prefix, as the NPI standard defines it.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Code {
    pub system: &'static str,
    pub code: String,
    /// Byte offset in the text searched, for ordering.
    pub at: usize,
}

impl Code {
    pub(crate) fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("system".into(), Value::String(self.system.into()));
        map.insert("code".into(), Value::String(self.code.clone()));
        Value::Object(map)
    }
}

/// Word boundaries are ASCII ones (`(?-u:\b)`): the Unicode kind keeps the regex engine
/// off its fast DFA paths on any text with a non-ASCII char, and notes' cue words are ASCII.
fn re(pattern: &str) -> Regex {
    Regex::new(&pattern.replace(r"\b", r"(?-u:\b)")).expect("the code patterns are valid")
}

static ICD10: LazyLock<[Regex; 3]> = LazyLock::new(|| {
    [
        re(r"\b([A-Z]\d[0-9A-Z]\.[0-9A-Z]{1,4})\b"),
        re(r"\(([A-Z]\d\d)\)"),
        re(r"(?i:\bicd(?:-?10)?(?:-?cm)?(?: codes?)?)\s*[:#]?\s*([A-Z]\d[0-9A-Z](?:\.[0-9A-Z]{1,4})?)\b"),
    ]
});
static LOINC: LazyLock<Regex> = LazyLock::new(|| re(r"\b(\d{1,7})-(\d)\b"));
static LOINC_CUE: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bloinc\b"));
static RXNORM: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:rxnorm|rxcui|rx cui)\b(?: code)?\s*[:#]?\s*(\d{1,7})\b"));
static SNOMED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:snomed(?:[- ]?ct)?|sctid)\b(?: code)?\s*[:#]?\s*(\d{6,18})\b"));
static NPI: LazyLock<Regex> = LazyLock::new(|| re(r"\b([12]\d{9})\b"));

/// Every code in `text`, in order of appearance, each once.
pub(crate) fn find(text: &str) -> Vec<Code> {
    let mut out: Vec<Code> = Vec::new();
    out.extend(icd10_at(text).into_iter().map(|(at, code)| Code { system: "ICD-10-CM", code, at }));
    out.extend(loinc_at(text).into_iter().map(|(at, code)| Code { system: "LOINC", code, at }));
    for (regex, system) in [(&*RXNORM, "RxNorm"), (&*SNOMED, "SNOMED CT")] {
        for c in regex.captures_iter(text) {
            let m = c.get(1).expect("group 1");
            if system == "RxNorm" || verhoeff_valid(m.as_str()) {
                out.push(Code { system, code: m.as_str().into(), at: m.start() });
            }
        }
    }
    for m in NPI.find_iter(text) {
        if npi_valid(m.as_str()) && !bordered_by_number_marks(text, m.start(), m.end()) {
            out.push(Code { system: "NPI", code: m.as_str().into(), at: m.start() });
        }
    }
    out.sort_by_key(|c| c.at);
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert((c.system, c.code.clone())));
    out
}

pub(crate) fn icd10(text: &str) -> Vec<String> {
    icd10_at(text).into_iter().map(|(_, c)| c).collect()
}

fn icd10_at(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for regex in ICD10.iter() {
        for c in regex.captures_iter(text) {
            let m = c.get(1).expect("group 1");
            if !out.iter().any(|(at, _)| *at == m.start()) {
                out.push((m.start(), m.as_str().into()));
            }
        }
    }
    out.sort();
    out
}

pub(crate) fn loinc(text: &str) -> Vec<String> {
    loinc_at(text).into_iter().map(|(_, c)| c).collect()
}

/// `NNNN-C` whose check digit holds: three digits or more before the dash, or any
/// length on a line that says LOINC (`3-4 times a day` is no code).
fn loinc_at(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for c in LOINC.captures_iter(text) {
        let (whole, body, check) = (c.get(0).expect("match"), &c[1], &c[2]);
        if bordered_by_number_marks(text, whole.start(), whole.end()) || mod10(body) != u32::from(check.as_bytes()[0] - b'0') {
            continue;
        }
        if body.len() >= 3 || LOINC_CUE.is_match(line_of(text, whole.start())) {
            out.push((whole.start(), whole.as_str().to_string()));
        }
    }
    out
}

/// A `-`, `/`, `.` or digit right before or after: part of a longer number (a phone
/// number, a date, a range), not a code.
fn bordered_by_number_marks(text: &str, start: usize, end: usize) -> bool {
    let mark = |c: char| matches!(c, '-' | '/' | '.' | '–') || c.is_ascii_digit();
    let before = text[..start].chars().next_back().is_some_and(mark);
    let after = text[end..].chars().next().is_some_and(|c| mark(c) && (c != '.' || followed_by_digit(&text[end..])));
    before || after
}

fn followed_by_digit(rest: &str) -> bool {
    rest.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
}

fn line_of(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    &text[start..end]
}

/// The mod-10 (Luhn) check digit of `digits`: every other digit from the right doubled,
/// starting with the rightmost.
pub(crate) fn mod10(digits: &str) -> u32 {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 0 {
                let x = d * 2;
                x / 10 + x % 10
            } else {
                d
            }
        })
        .sum();
    (10 - sum % 10) % 10
}

/// An NPI's last digit is the Luhn check digit of `80840` and its first nine.
fn npi_valid(npi: &str) -> bool {
    let (body, check) = npi.split_at(9);
    mod10(&format!("80840{body}")) == u32::from(check.as_bytes()[0] - b'0')
}

const VERHOEFF_D: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];
const VERHOEFF_P: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 8, 7, 6, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];

/// A SNOMED CT identifier ends in a Verhoeff check digit.
fn verhoeff_valid(digits: &str) -> bool {
    let c = digits.bytes().rev().enumerate().fold(0u8, |c, (i, b)| VERHOEFF_D[c as usize][VERHOEFF_P[i % 8][(b - b'0') as usize] as usize]);
    c == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(&'static str, String)> {
        find(text).into_iter().map(|c| (c.system, c.code)).collect()
    }

    #[test]
    fn check_digits() {
        assert_eq!(mod10("2345"), 7); // LOINC 2345-7, glucose
        assert_eq!(mod10("4548"), 4); // LOINC 4548-4, hemoglobin A1c
        assert!(npi_valid("1234567893")); // the CMS example NPI
        assert!(!npi_valid("1234567890"));
        assert!(verhoeff_valid("38341003")); // SNOMED CT: hypertensive disorder
        assert!(verhoeff_valid("73211009")); // diabetes mellitus
        assert!(!verhoeff_valid("38341004"));
    }

    #[test]
    fn each_system_in_its_shape() {
        let text = "Type 2 diabetes (E11.9), essential hypertension (I10). HbA1c LOINC 4548-4; glucose 2345-7, \
                    not 2345-8. Metformin RxNorm: 860975. SNOMED CT 73211009. Dr. Lee, NPI 1234567893. Call 1234567890.";
        assert_eq!(
            found(text),
            [
                ("ICD-10-CM", "E11.9".into()),
                ("ICD-10-CM", "I10".into()),
                ("LOINC", "4548-4".into()),
                ("LOINC", "2345-7".into()),
                ("RxNorm", "860975".into()),
                ("SNOMED CT", "73211009".into()),
                ("NPI", "1234567893".into()),
            ]
        );
    }

    #[test]
    fn numbers_that_are_not_codes() {
        let text = "Drinks 1-2 times a year, 3-4 cups, BP 120/80, on 2024-03-14, call 555-123-4567, B12 and A1c, v1.2, SNOMED 38341004.";
        assert!(found(text).is_empty(), "{:?}", found(text));
    }
}
