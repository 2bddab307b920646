//! Citations in legal text, found and written in one normalised form so a document's list
//! can be deduplicated and searched.
//!
//! Forms (normalised as shown): `42 U.S.C. § 1983` (also `USC`, `U. S. C.`, no `§`,
//! `§§ 1981-1983`, `section 7 of title 28`), `48 C.F.R. § 38.48` and `40 C.F.R. Part 60`,
//! `Pub. L. No. 111-148` (also `Pub. L. 117–228` with an en dash, `Public Law 111-148`),
//! `61 Stat. 633`, case reporters `347 U.S. 483` (the pin cite and the `(1954)`
//! parenthetical dropped; U.S., S. Ct., L. Ed., F., F.2d–F.4th, F. Supp., F. App'x, the
//! regional reporters), a bare `§ 2(a)` / `§§ 101-103`, and the short forms `Id.`,
//! `Id. at 495`, `Brown, supra`. Dashes inside numbers become `-`, spacing is one space.
//! The patterns follow the shapes of reporters-db (BSD-2) and eyecite; the code is ours.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// The case reporters recognised, in their standard spelling.
const REPORTERS: &[&str] = &[
    "U.S.",
    "S. Ct.",
    "L. Ed. 2d",
    "L. Ed.",
    "F.4th",
    "F.3d",
    "F.2d",
    "F. Supp. 3d",
    "F. Supp. 2d",
    "F. Supp.",
    "F. App'x",
    "F.",
    "A.3d",
    "A.2d",
    "N.E.3d",
    "N.E.2d",
    "N.W.2d",
    "P.3d",
    "P.2d",
    "So. 3d",
    "So. 2d",
    "S.E.2d",
    "S.W.3d",
    "S.W.2d",
    "Cal. Rptr. 3d",
    "Cal. Rptr. 2d",
    "N.Y.S.3d",
    "N.Y.S.2d",
    "B.R.",
    "Fed. Cl.",
    "T.C.",
];

const SECTION_NO: &str = r"\d+[A-Za-z]{0,3}(?:[.\-–—:]\d+[A-Za-z]{0,3})*(?:\([A-Za-z0-9]{1,4}\))*";

static USC: LazyLock<Regex> = LazyLock::new(|| {
    let re = format!(
        r"\b(\d{{1,2}})\s+(?:U\.\s?S\.\s?C\.|USC)(?:A\.|S\.)?\s*(§§?|[Ss]ec(?:tions?|s?\.))?\s*({SECTION_NO}(?:\s*[-–—]\s*\d+[A-Za-z]{{0,3}})?)"
    );
    Regex::new(&re).unwrap()
});
static USC_WORDS: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!(r"\b[Ss]ection\s+({SECTION_NO})\s+of\s+[Tt]itle\s+(\d{{1,2}})\b")).unwrap());
static CFR: LazyLock<Regex> = LazyLock::new(|| {
    let re = format!(r"\b(\d{{1,2}})\s+(?:C\.\s?F\.\s?R\.|CFR)\s*(?:(§§?|[Pp]arts?|pt\.)\s*)?({SECTION_NO})");
    Regex::new(&re).unwrap()
});
static PUB_L: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:Pub\.\s?L\.|Public\s+Law|P\.\s?L\.)\s*(?:No\.\s*)?(\d{1,3})\s*[-–—]\s*(\d{1,4})\b").unwrap());
static STAT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(\d{1,3})\s+Stat\.\s+(\d{1,5})\b").unwrap());
static CASE: LazyLock<Regex> = LazyLock::new(|| {
    let mut names: Vec<&str> = REPORTERS.to_vec();
    names.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let alternatives: Vec<String> = names.iter().map(|r| reporter_pattern(r)).collect();
    Regex::new(&format!(r"\b(\d{{1,4}})\s+({})\s+(\d{{1,5}}|_{{2,}})\b", alternatives.join("|"))).unwrap()
});
static SECTION_SIGN: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!(r"(§§?)\s*({SECTION_NO}(?:\s*[-–—]\s*\d+[A-Za-z]{{0,3}})?)")).unwrap());
static ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:(?:Id|Ibid)\.(?:,?\s+at\s+(\d+(?:\s*[-–]\s*\d+)?))?|id\.,?\s+at\s+(\d+(?:\s*[-–]\s*\d+)?))").unwrap());
static SUPRA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([A-Z][A-Za-z'’\-]+),?\s+supra\b(?:,?\s+at\s+(\d+))?").unwrap());

/// `S. Ct.` → `S\.\s?Ct\.`: each `.` may be followed by a space or not.
fn reporter_pattern(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().filter(|c| *c != ' ') {
        out.push_str(&regex::escape(&c.to_string()));
        if c == '.' {
            out.push_str(r"\s?");
        }
    }
    out.replace('\'', "['’]")
}

/// A citation found: byte range in the text searched, its normalised form and family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Citation {
    pub start: usize,
    pub end: usize,
    pub text: String,
    pub family: Family,
}

/// What a citation cites (the document's `form` weighs these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// U.S.C., Pub. L., Stat.
    Statute,
    /// C.F.R.
    Regulation,
    /// A case reporter.
    Case,
    /// A bare `§`, `Id.`, `supra`.
    Other,
}

/// The citations of `text`, in order; where two overlap the one starting first (then the
/// longer) wins, so `42 U.S.C. § 1983` is not also a bare `§ 1983`.
pub(super) fn citations(text: &str) -> Vec<Citation> {
    let mut found = Vec::new();
    collect(&mut found, &USC, Family::Statute, text, |c| format!("{} U.S.C. {} {}", &c[1], marker(c.get(2).map(|m| m.as_str())), section(&c[3])));
    collect(&mut found, &USC_WORDS, Family::Statute, text, |c| format!("{} U.S.C. § {}", &c[2], section(&c[1])));
    collect(&mut found, &CFR, Family::Regulation, text, |c| match c.get(2).map(|m| m.as_str()) {
        Some(p) if p.starts_with(['P', 'p']) => format!("{} C.F.R. Part {}", &c[1], section(&c[3])),
        m => format!("{} C.F.R. {} {}", &c[1], marker(m), section(&c[3])),
    });
    collect(&mut found, &PUB_L, Family::Statute, text, |c| format!("Pub. L. No. {}-{}", &c[1], &c[2]));
    collect(&mut found, &STAT, Family::Statute, text, |c| format!("{} Stat. {}", &c[1], &c[2]));
    collect(&mut found, &CASE, Family::Case, text, |c| format!("{} {} {}", &c[1], reporter(&c[2]), &c[3]));
    collect(&mut found, &ID, Family::Other, text, |c| c.get(1).or(c.get(2)).map_or("Id.".into(), |at| format!("Id. at {}", section(at.as_str()))));
    collect(&mut found, &SUPRA, Family::Other, text, |c| match c.get(2) {
        Some(at) => format!("{}, supra, at {}", &c[1], at.as_str()),
        None => format!("{}, supra", &c[1]),
    });
    for c in SECTION_SIGN.captures_iter(text) {
        let m = c.get(0).expect("match");
        if !is_clause_number(text, m.start(), m.end()) {
            let text = format!("{} {}", &c[1], section(&c[2]));
            found.push(Citation { start: m.start(), end: m.end(), text, family: Family::Other });
        }
    }
    found.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
    let mut out: Vec<Citation> = Vec::with_capacity(found.len());
    for c in found {
        if out.last().is_none_or(|last| c.start >= last.end) {
            out.push(c);
        }
    }
    out
}

fn collect(out: &mut Vec<Citation>, re: &Regex, family: Family, text: &str, norm: impl Fn(&Captures) -> String) {
    for c in re.captures_iter(text) {
        let m = c.get(0).expect("match");
        out.push(Citation { start: m.start(), end: m.end(), text: norm(&c), family });
    }
}

/// `§ 1.` or `§ 90.1 Scope` at a line start (after `#`s or `**`) numbers the section; it
/// cites nothing. (`§§ 101-103 and …` at a line start still cites.)
fn is_clause_number(text: &str, start: usize, end: usize) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let at_line_start = text[line_start..start].trim_start_matches(['#', '*', ' ', '\t']).is_empty();
    let after = text[end..].trim_start_matches('.');
    let caption_next = after.trim_start().chars().next().is_none_or(|c| c.is_uppercase() || "“\"*".contains(c));
    at_line_start && !text[start..end].starts_with("§§") && (text[end..].starts_with('.') || caption_next)
}

fn marker(m: Option<&str>) -> &'static str {
    match m {
        Some("§§") => "§§",
        Some(s) if s.ends_with('s') || s.ends_with("s.") => "§§",
        _ => "§",
    }
}

/// A section number with dashes as `-`, spaces around them dropped, a final `.` cut.
fn section(s: &str) -> String {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).map(|c| if matches!(c, '–' | '—') { '-' } else { c }).collect();
    s.trim_end_matches('.').to_string()
}

/// The standard spelling of a reporter as matched (spacing varies).
fn reporter(matched: &str) -> &'static str {
    let key: String = matched.chars().filter(|c| !c.is_whitespace()).map(|c| if c == '’' { '\'' } else { c }).collect();
    REPORTERS.iter().find(|r| r.replace(' ', "") == key).copied().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(text: &str) -> Vec<String> {
        citations(text).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn statutes_and_regulations() {
        assert_eq!(norm("under 42 U.S.C. § 1983 and 5 USC 552(a)(4)."), ["42 U.S.C. § 1983", "5 U.S.C. § 552(a)(4)"]);
        assert_eq!(norm("see 42 U. S. C. §§ 1981–1983"), ["42 U.S.C. §§ 1981-1983"]);
        assert_eq!(norm("enacting section 1738C of title 28"), ["28 U.S.C. § 1738C"]);
        assert_eq!(norm("48 C.F.R. § 38.48 and 40 CFR Part 60"), ["48 C.F.R. § 38.48", "40 C.F.R. Part 60"]);
        assert_eq!(norm("40 C.F.R. Part 60, subpart A"), ["40 C.F.R. Part 60"]);
        assert_eq!(
            norm("Pub. L. No. 111-148, Pub. L. 117–228, Public Law 104—199"),
            ["Pub. L. No. 111-148", "Pub. L. No. 117-228", "Pub. L. No. 104-199"]
        );
        assert_eq!(norm("ch. 388, § 1, 61 Stat. 633"), ["§ 1", "61 Stat. 633"]);
        assert_eq!(norm("§§ 101–103 and § 2(a)"), ["§§ 101-103", "§ 2(a)"]);
    }

    #[test]
    fn cases_and_short_forms() {
        assert_eq!(norm("Brown v. Board of Education, 347 U.S. 483, 495 (1954)."), ["347 U.S. 483"]);
        assert_eq!(norm("123 F.3d 456 (9th Cir. 1997); 98 S.Ct. 2733; 10 F. Supp. 2d 77"), ["123 F.3d 456", "98 S. Ct. 2733", "10 F. Supp. 2d 77"]);
        assert_eq!(norm("Id. at 495. See id. at 12; Ibid."), ["Id. at 495", "Id. at 12", "Id."]);
        assert_eq!(norm("Brown, supra, at 494"), ["Brown, supra, at 494"]);
        assert_eq!(norm("999 F. App’x 12"), ["999 F. App'x 12"]);
    }

    #[test]
    fn section_numbers_and_prose_are_not_citations() {
        assert!(norm("§ 1. Words denoting number\n## § 2. County\n§ 90.1 Scope.").is_empty());
        assert!(norm("We studied 347 US adults over 12 years; valid. Idaho.").is_empty());
        assert!(norm("Patients (n = 12) received 5 mg. F. tularensis was 3 P. 2 strains.").is_empty());
    }
}
