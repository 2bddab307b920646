//! Persons, from two signals. A cue: an honorific or title ("Dr. Okafor", "Mrs. Ada
//! Lovelace") or a label ("Patient: Maria Garcia", "Attending: …") takes the
//! capitalised words after it. The lexicon: a given name followed by a surname (a
//! middle initial between them allowed), both in the 1990 US Census lists vendored in
//! `data/` (public domain, by way of the MIT-licensed PyPI package `names`; see
//! NOTICE), or "Surname, Given". A lexicon match followed by an institution's word
//! ("George Washington University", "Grant Street") is not a person.
//!
//! Words are looked up in hash sets: a lexicon of whole capitalised words is a set
//! membership question, so an automaton over the text would do more work than the one
//! token pattern that finds the capitalised words anyway.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::context::{compile, overlaps, Present};
use super::{IdentifierKind as K, Span};

static GIVEN: LazyLock<HashSet<&'static str>> = LazyLock::new(|| include_str!("data/first_names.txt").lines().collect());
static SURNAMES: LazyLock<HashSet<&'static str>> = LazyLock::new(|| include_str!("data/surnames.txt").lines().collect());

/// A capitalised word: `Smith`, `O'Brien`, `McDonald`, `Smith-Jones`.
const WORD: &str = r"[A-Z][a-z]+(?:['’-][A-Z]?[a-z]+)?|[A-Z][a-z]?[A-Z][a-z]+";

static CUED: LazyLock<Regex> = LazyLock::new(|| {
    let honorific = r"(?:Mr|Mrs|Ms|Mx|Dr|Prof|Rev|Hon|Sen|Rep|Gov|Capt|Sgt|Lt|Col|Gen|Atty|Fr|Sr|Sra)\.?|Miss|Mister|Madam|Doctor|Professor|Judge|Justice|Nurse|Officer|Detective|Sister|Brother";
    let label = r"(?:Patient|Pt|Name|Full name|Patient name|Client|Resident|Member|Insured|Guarantor|Subscriber|Attending|Physician|Provider|Surgeon|Referring|Signed|Signed by|Electronically signed by|Witness|Plaintiff|Defendant|Petitioner|Respondent|Appellant|Appellee|Employee|Contact|Next of kin|Emergency contact|Spouse|Mother|Father|Guardian)\s*:";
    compile(&format!(r"\b(?:{honorific}|{label})[ \t]+(?P<name>(?:{WORD})(?:[ \t]+[A-Z]\.)?(?:[ \t]+(?:{WORD})){{0,2}})"))
});

/// The parties of a case name: "Smith v. Jones".
static VERSUS: LazyLock<Regex> = LazyLock::new(|| compile(&format!(r"\b(?P<a>{WORD}) v\. (?P<b>{WORD})\b")));

static WORDS: LazyLock<Regex> =
    LazyLock::new(|| compile(&format!(r"\b(?:{WORD})(?:[ \t]+(?:[A-Z]\.[ \t]+)?(?:{WORD}))+|\b(?:{WORD}),[ \t]+(?:{WORD})\b")));

/// Words after a name that make it an institution's or a place's.
static INSTITUTION: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^[ \t]+(?:University|College|School|Hospital|Clinic|Center|Centre|Institute|Foundation|Memorial|Medical|Health|Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Drive|Lane|Park|Bridge|County|City|Inc|Corp|LLC|Ltd|Company|Co|Group|Hall|Library|Museum|Airport|Station|Building|Tower|Act|Law|Award|Prize|Fund|Trust|Bank)\b",
    )
});

/// Surnames in the Census list that, after a given name, name a place or a body
/// ("Virginia Beach", "Carter Center").
const PLACE_WORDS: &[&str] = &[
    "Center", "Centre", "Beach", "Harbor", "Harbour", "Valley", "River", "Mountain", "Hills", "Street", "County", "City", "Island", "Bay", "Falls",
    "Springs", "Creek", "Forest", "Point", "Heights", "Square", "Bridge", "Station", "Port", "Grove", "Lakes", "Town", "Gardens", "Court",
];

/// Capitalised words that are in the name lists but, at the head of a pair, are far more
/// often something else.
const NOT_GIVEN: &[&str] = &[
    "will",
    "may",
    "june",
    "april",
    "august",
    "christian",
    "major",
    "long",
    "young",
    "king",
    "page",
    "hope",
    "grant",
    "chase",
    "dean",
    "frank",
    "mark",
    "bill",
    "case",
    "chance",
    "rich",
    "sky",
    "summer",
    "winter",
    "autumn",
    "dr",
    "in",
    "so",
    "an",
    "see",
    "lane",
    "ray",
    "miles",
    "guy",
    "art",
    "joy",
    "faith",
    "angel",
    "precious",
    "golden",
    "sunny",
    "star",
    "rock",
];

pub fn find(text: &str, cues: Present, out: &mut Vec<Span>) {
    let mut taken = Vec::new();
    for c in CUED.captures_iter(text) {
        let n = c.name("name").expect("the name group");
        let (s, e) = trim_trailing_common(text, n.start(), n.end() - possessive(n.as_str()));
        if e > s {
            out.push(Span { kind: K::Person, start: s, end: e });
            taken.push((s, e));
        }
    }
    if cues.versus {
        versus(text, &mut taken, out);
    }
    taken.sort_unstable();
    for m in WORDS.find_iter(text) {
        if overlaps(&taken, m.start(), m.end()) {
            continue;
        }
        let run = &m.as_str()[..m.len() - possessive(m.as_str())];
        if let Some((s, e)) = lexicon_name(text, m.start(), run) {
            out.push(Span { kind: K::Person, start: s, end: e });
        }
    }
}

/// The parties of "Smith v. Jones" that are surnames.
fn versus(text: &str, taken: &mut Vec<(usize, usize)>, out: &mut Vec<Span>) {
    for c in VERSUS.captures_iter(text) {
        for g in ["a", "b"] {
            let w = c.name(g).expect("both parties");
            if is_surname(w.as_str()) && !common(w.as_str()) && !taken.iter().any(|&(s, e)| s < w.end() && w.start() < e) {
                out.push(Span { kind: K::Person, start: w.start(), end: w.end() });
                taken.push((w.start(), w.end()));
            }
        }
    }
}

/// The person in a run of capitalised words, if a given name is followed by a surname
/// (or "Surname, Given").
fn lexicon_name(text: &str, at: usize, run: &str) -> Option<(usize, usize)> {
    if let Some((last, first)) = run.split_once(',') {
        let first = first.trim();
        return (is_surname(last) && is_given(first) && !common(last)).then(|| (at, at + run.len()));
    }
    let words: Vec<(usize, &str)> =
        run.split([' ', '\t']).filter(|w| !w.is_empty()).map(|w| (w.as_ptr() as usize - run.as_ptr() as usize, w)).collect();
    for i in 0..words.len() {
        let (off, w) = words[i];
        if !is_given(w) || NOT_GIVEN.contains(&lower(w).as_str()) {
            continue;
        }
        let mut j = i + 1;
        if words.get(j).is_some_and(|(_, x)| x.len() == 2 && x.ends_with('.')) {
            j += 1;
        }
        let Some(&(loff, last)) = words.get(j) else { continue };
        if !is_surname(last) || PLACE_WORDS.contains(&last) {
            continue;
        }
        let (s, e) = (at + off, at + loff + last.len());
        if INSTITUTION.is_match(&text[e..]) {
            return None;
        }
        return Some((s, e));
    }
    None
}

/// A cued name without the capitalised common words a sentence may go on with
/// ("Dr. Okafor Reviewed" is cut at "Reviewed" only if it is no name in the lists).
fn trim_trailing_common(text: &str, s: usize, mut e: usize) -> (usize, usize) {
    while let Some(sp) = text[s..e].rfind([' ', '\t']) {
        let last = &text[s + sp + 1..e];
        if is_given(last) || is_surname(last) || !common(last) {
            break;
        }
        e = s + sp;
    }
    (s, e)
}

/// The bytes of a final "'s" (a possessive is not part of the name).
fn possessive(w: &str) -> usize {
    ["'s", "’s"].iter().find(|p| w.ends_with(*p)).map_or(0, |p| p.len())
}

fn lower(w: &str) -> String {
    w.chars().filter(|c| c.is_ascii_alphabetic() || *c == '\'' || *c == '-').collect::<String>().to_ascii_lowercase()
}

fn is_given(w: &str) -> bool {
    GIVEN.contains(lower(w).as_str())
}

fn is_surname(w: &str) -> bool {
    let l = lower(w);
    SURNAMES.contains(l.as_str()) || l.split('-').count() == 2 && l.split('-').all(|p| SURNAMES.contains(p))
}

/// Capitalised words a sentence may carry on with after a cued name.
fn common(w: &str) -> bool {
    const COMMON: &[&str] = &[
        "The",
        "This",
        "That",
        "Reviewed",
        "Presented",
        "Reports",
        "Reported",
        "Notes",
        "Noted",
        "Was",
        "Is",
        "Has",
        "Had",
        "And",
        "Or",
        "On",
        "At",
        "In",
        "Today",
        "Yesterday",
        "Patient",
        "Plan",
        "Assessment",
        "Date",
        "Phone",
        "Signed",
        "Mr",
        "Mrs",
        "Ms",
        "Dr",
        "Court",
        "Street",
    ];
    COMMON.contains(&w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(t, super::super::context::present(t), &mut out);
        out.sort_by_key(|s| s.start);
        out.iter().map(|s| &t[s.start..s.end]).collect()
    }

    #[test]
    fn cues_and_the_lexicon_find_persons() {
        assert_eq!(found("Seen by Dr. Okafor today."), ["Okafor"]);
        assert_eq!(found("Patient: Maria Garcia, 54"), ["Maria Garcia"]);
        assert_eq!(found("then John Q. Smith signed"), ["John Q. Smith"]);
        assert_eq!(found("Smith, John was present"), ["Smith, John"]);
    }

    #[test]
    fn institutions_and_words_are_not_persons() {
        assert!(found("at George Washington University").is_empty());
        assert!(found("The Supreme Court held").is_empty());
        assert!(found("Will Power prevailed").is_empty());
    }
}
