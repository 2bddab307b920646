//! Section references: `§ 2.1`, `Section 2.1`, `Sec. 2.1` and `s. 2.1` name the same
//! section (plurals: `§§`, `Sections`, `Secs.`, `ss.`), so a query's one form adds the
//! others. The marker's shape is reporters-db's `section_marker`
//! (`((§§?)|([Ss]((ec)(tion)?)?s?\.?))`), except that a bare `s`/`ss` needs its period;
//! the number is a dotted one (1.2.3) with parenthesised parts (81(a)(2)(F)).

use std::sync::LazyLock;

use regex::Regex;

use super::lexicon::Rewrite;

static SECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(§§?|\b(?i:sections?|secs?)\b\.?|\b[Ss]s?\.)\s*(\d+[A-Za-z]?(?:[.\-]\d+[A-Za-z]?)*(?:\([A-Za-z0-9]{1,4}\))*)")
        .expect("the section pattern compiles")
});

/// The forms written: "s." is read but not written, since the analyser makes it the
/// term "s" that every possessive holds ("party's").
const SINGULAR: [&str; 3] = ["§", "Section", "Sec."];
const PLURAL: [&str; 3] = ["§§", "Sections", "Secs."];

/// Per section reference in `query`, the rewrites into each other marker.
pub fn rewrites(query: &str) -> Vec<Rewrite> {
    let mut out = Vec::new();
    for c in SECTION.captures_iter(query) {
        let (all, marker, number) = (c.get(0).expect("a match"), &c[1], &c[2]);
        let lower = marker.to_lowercase();
        let plural = lower.starts_with("§§") || lower.starts_with("ss") || lower.starts_with("sections") || lower.starts_with("secs");
        let used = canonical(&lower);
        for form in if plural { PLURAL } else { SINGULAR } {
            if canonical(&form.to_lowercase()) != used {
                out.push(Rewrite { start: all.start(), end: all.end(), with: format!("{form} {number}") });
            }
        }
    }
    out
}

/// The marker's family, whatever its case, period or number: §, section, sec, s.
fn canonical(marker: &str) -> &'static str {
    let m = marker.trim_end_matches('.');
    if m.starts_with('§') {
        "§"
    } else if m.starts_with("section") {
        "section"
    } else if m.starts_with("sec") {
        "sec"
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(q: &str) -> Vec<String> {
        rewrites(q).iter().map(|r| r.apply(q)).collect()
    }

    #[test]
    fn every_marker_adds_the_others() {
        assert_eq!(forms("notice under § 2.1"), ["notice under Section 2.1", "notice under Sec. 2.1"]);
        assert_eq!(forms("Section 81(a)(2)(F) of the Code"), ["§ 81(a)(2)(F) of the Code", "Sec. 81(a)(2)(F) of the Code"]);
        assert_eq!(forms("sec. 1.2.3")[0], "§ 1.2.3");
        assert_eq!(forms("s. 12")[0], "§ 12");
        assert_eq!(forms("§§ 4-5"), ["Sections 4-5", "Secs. 4-5"]);
        assert_eq!(forms("ss. 3"), ["§§ 3", "Sections 3", "Secs. 3"]);
    }

    #[test]
    fn words_that_only_look_like_markers_are_left_alone() {
        for q in ["its 2.1 release", "sections of the report", "Bess 2", "sec without a number", "s 2 of them", "chapter 3"] {
            assert!(rewrites(q).is_empty(), "{q}: {:?}", forms(q));
        }
    }
}
