//! Phone numbers, as people write them in any country: a run of digit groups (with
//! `+`, `00` or `011` before an international one, and an extension after: `x4587`,
//! `ext. 12`), then libphonenumber's metadata (the `phonenumber` crate) says whether it
//! is a number some country issues. An international number is parsed as written; a
//! national one as a North American number, then (when it opens with the trunk prefix
//! `0`, or a phone cue stands before it) in the numbering plans of the countries in
//! [`REGIONS`]. A bare run of digits needs a cue ("phone:", "call"), and a run shaped
//! like a date is a date's.

use std::sync::LazyLock;

use phonenumber::country::Id;
use regex::Regex;

use super::context::{compile, cue_before, find_in};
use super::{IdentifierKind as K, Span};

/// Digit groups joined by one separator each (space, `-`, `.`, `/`, parentheses), or
/// seven digits and more, the international prefix before them and an extension after
/// (a lone short number is never a candidate: prose is full of them).
static CANDIDATE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?:\+|\b00|\b011)?[ ]?(?:(?:\(\d{1,5}\)[ .-]?)?\d{1,15}(?:(?:[ ]?[-./][ ]?|[ ]|\)[ ]?|[ ]?\()\d{1,8}){1,6}|\(\d{1,5}\)[ .-]?\d{1,15}|\d{7,15})(?:[ ]?(?i:x|ext\.?|extn\.?|extension|ext#)[ ]?\d{1,6})?",
    )
});

/// How North American numbers are written: 3-3-4 (an area in parentheses, a leading
/// 1 allowed), 3 then 7, or ten digits.
static NANP_SHAPE: LazyLock<Regex> = LazyLock::new(|| compile(r"^(?:1[-. ]?)?(?:\(\d{3}\)[ ]?|\d{3}[-. ])\d{3}[-. ]\d{4}$|^\d{3} \d{7}$|^1?\d{10}$"));

static CUE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)\b(?:phone|ph|tel|telephone|cell|cellphone|mobile|mob|fax|call|text|contact|reach(?: me)?(?: at)?|pager|beeper|tél|telefon|telefono|teléfono|handy|numéro|nummer|número)\b\.?\W{0,4}(?:is\s+|at\s+|on\s+|no\.?\s*|#\s*)?$",
    )
});

/// A date, an SSN or an IP address written with a phone's separators.
static DATE_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^\d{3}[- .]\d{2}[- .]\d{4}$|^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}([-./])\d{1,2}[-./]\d{2,4})(?:[ T]\d{1,2})?$|^\d{1,3}(?:\.\d{1,3}){3}$",
    )
});

/// The numbering plans a national number (one not in North America's) is tried in, the
/// most populous and most written first.
const REGIONS: &[Id] = {
    use Id::*;
    &[
        GB, DE, FR, IT, ES, NL, BE, CH, AT, AU, IN, IE, NZ, ZA, SE, NO, DK, FI, PL, PT, CZ, HU, RO, GR, TR, RU, UA, RS, HR, SI, SK, BG, IL, BR, MX,
        AR, CL, CO, PE, JP, KR, CN, PH, MY, ID, TH, VN, PK, NG, EG, KE, MA, SA, AE,
    ]
};

/// The phone numbers in the `long` windows of `text` ([`super::context::long_numbers`]).
pub fn find(text: &str, long: &[(usize, usize)], ok: &impl Fn(usize, usize) -> bool, out: &mut Vec<Span>) {
    for (s, e) in find_in(&CANDIDATE, text, long) {
        let m = &text[s..e];
        let t = m.trim();
        let at = s + (m.len() - m.trim_start().len());
        if let Some((s, e)) = longest(text, at, t, ok) {
            out.push(Span { kind: K::Phone, start: s, end: e, counted: true });
        }
    }
}

/// The longest phone number at the start of the candidate `t` at `at`: a run of groups
/// may hold a number and a count after it ("415-555-0132 12 times"). The number starts
/// where the run does: a run that starts inside a token (an IBAN's digits after "DE89")
/// holds none.
fn longest(text: &str, at: usize, t: &str, ok: &impl Fn(usize, usize) -> bool) -> Option<(usize, usize)> {
    let runs = digit_runs(t);
    let mut digits: usize = runs.iter().map(|r| r.1 - r.0).sum();
    for b in (0..runs.len()).rev() {
        if digits < 7 {
            break;
        }
        let to = runs[b].1 + usize::from(t[runs[b].1..].starts_with(')') && t[..runs[b].1].contains('('));
        let c = &t[..to];
        if digits <= 20 && !DATE_LIKE.is_match(c) && ok(at, at + to) && valid(text, at, c) {
            return Some((at, at + to));
        }
        digits -= runs[b].1 - runs[b].0;
    }
    None
}

/// Whether a token with a digit stands just before `s`, one space apart: the candidate
/// is then the tail of a longer code.
fn after_code(text: &str, s: usize) -> bool {
    let Some(head) = text[..s].strip_suffix(' ') else { return false };
    // The space found may be wider than a byte (U+00A0, U+202F): the token starts after it.
    let token = &head[head.char_indices().rev().find(|(_, c)| c.is_whitespace()).map_or(0, |(i, c)| i + c.len_utf8())..];
    token.bytes().any(|b| b.is_ascii_digit())
}

/// The byte ranges of the digit runs of `t`.
fn digit_runs(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Whether the candidate `t` at `s` is a phone number: one a country issues, or a
/// punctuated North American one. A bare run of digits or slashes ("425/882/9090") need
/// a cue, and the tail of a code ("1Z 999 AA1 01 2345 6784") is none.
fn valid(text: &str, s: usize, t: &str) -> bool {
    let bare = t.bytes().all(|b| b.is_ascii_digit());
    let cued = || cue_before(text, s, 24, &CUE);
    if (bare || t.contains('/')) && !cued() || after_code(text, s) || decimal(before_extension(t)) {
        return false;
    }
    if let Some(rest) = t.strip_prefix('+') {
        return !rest.starts_with('0') && (parses(None, t) || rest.starts_with('1') && nanp(before_extension(rest), false));
    }
    if let Some(rest) = t.strip_prefix("011").or_else(|| t.strip_prefix("00")) {
        return parses(None, &format!("+{}", rest.trim_start_matches([' ', '-', '.'])));
    }
    // libphonenumber is asked only about what could be one of its numbers: a North
    // American one has ten digits (eleven with the 1 before them).
    let national = before_extension(t).bytes().filter(u8::is_ascii_digit).count();
    if nanp(before_extension(t), bare) || matches!(national, 10 | 11) && parses(Some(Id::US), t) {
        return true;
    }
    if (t.starts_with('0') || t.starts_with("(0") || cued()) && REGIONS.iter().any(|&r| parses(Some(r), t)) {
        return true;
    }
    // Any other country's national number: laid out as phone numbers are and not as
    // counts, years or codes are, its digits a number that country issues, and in the
    // groups that country writes it in (libphonenumber's national format: "21 61 23 45"
    // in the Central African Republic), so that a run of clinical values or a code's
    // groups ("12 700 50", "4521-889-2210") is not read as one.
    // The whole run of groups, not its first groups (a card's "7000 1234 5678 9127").
    let number = before_extension(t);
    let after = &text[s + t.len()..];
    let rest = after.trim_start_matches([' ', '-', '.']);
    let continues = after.len() - rest.len() <= 3 && rest.starts_with(|c: char| c.is_ascii_digit());
    !continues && phone_layout(number) && EVERY_REGION.iter().any(|&r| grouped_as(r, number))
}

/// Whether `t` is a valid national number of `region` written in the digit groups of
/// that region's national format.
fn grouped_as(region: Id, t: &str) -> bool {
    let Ok(n) = phonenumber::parse(Some(region), t) else { return false };
    if !phonenumber::is_valid(&n) {
        return false;
    }
    let national = n.format().mode(phonenumber::Mode::National).to_string();
    let lengths = |s: &str| digit_runs(s).iter().map(|r| r.1 - r.0).collect::<Vec<_>>();
    lengths(&national) == lengths(t)
}

/// Every region of libphonenumber's metadata.
static EVERY_REGION: LazyLock<Vec<Id>> = LazyLock::new(|| phonenumber::metadata::DATABASE.iter().filter_map(|m| m.id().parse::<Id>().ok()).collect());

/// Whether a national number without a trunk prefix or a cue is laid out as phone
/// numbers are: 7 to 12 digits in two to five groups of at most six, one separator
/// between them throughout (a space, `-` or `.`; the first group may be in
/// parentheses), and not as other numbers are: a count with its thousands apart ("212
/// 345 678", every group after the first of three digits), a range or a decimal (two
/// groups joined by `-` or `.`: "1735-1741", "2106.09685"), a year and a count ("1986
/// 945"), a list of rising numbers ("12 14 17 21 25") or a code ending in a check group
/// shorter than all the others ("1234-5678-90"; a phone number's short groups come
/// first).
fn phone_layout(t: &str) -> bool {
    let runs = digit_runs(t);
    let digits: usize = runs.iter().map(|r| r.1 - r.0).sum();
    if !(7..=12).contains(&digits) || !(2..=5).contains(&runs.len()) || runs.iter().any(|r| r.1 - r.0 > 6) {
        return false;
    }
    // What lies between two groups, a closing parenthesis left out: "", " ", "-" or "."
    // (spaces around a dash or a dot do not count).
    let seps: Vec<&str> = runs
        .windows(2)
        .map(|w| {
            let gap = t[w[0].1..w[1].0].trim_start_matches(')');
            if gap.is_empty() || !gap.trim().is_empty() {
                gap.trim()
            } else {
                " "
            }
        })
        .collect();
    let one = seps.iter().all(|s| *s == seps[0]) && matches!(seps[0], "" | " " | "-" | ".");
    let thousands = runs[0].1 - runs[0].0 <= 3 && runs[1..].iter().all(|r| r.1 - r.0 == 3);
    let len = |r: &(usize, usize)| r.1 - r.0;
    let year = |r: &(usize, usize)| len(r) == 4 && (t[r.0..].starts_with("19") || t[r.0..].starts_with("20"));
    let value = |r: &(usize, usize)| t[r.0..r.1].parse::<u64>().unwrap_or(0);
    let pair = runs.len() == 2 && (matches!(seps[0], "-" | ".") || runs.iter().any(year) || seps[0].is_empty() && !t.starts_with('('));
    let rising = runs.len() >= 3 && runs.windows(2).all(|w| value(&w[0]) < value(&w[1]));
    let last = len(&runs[runs.len() - 1]);
    let check_group = runs[..runs.len() - 1].iter().all(|r| len(r) > last);
    one && !thousands && !runs.iter().all(year) && !pair && !rising && !check_group
}

/// Whether the candidate reads as decimal numbers ("0.19-66.89", "0.53 (0.27"): it
/// opens with "0." or mixes a dot with other separators.
fn decimal(t: &str) -> bool {
    t.starts_with("0.") || t.contains('.') && t.contains([' ', '-', '(', '/'])
}

/// The part of a candidate before its extension ("x4587", "ext. 12").
fn before_extension(t: &str) -> &str {
    t.find(|c: char| c.is_ascii_alphabetic() || c == '#').map_or(t, |i| t[..i].trim_end())
}

/// A North American number written as people write one (`555-123-4567`, `(415)
/// 555-0132`, `+1 415 555 0132`): ten digits (an optional leading 1), the area from 2
/// and no N11 service code; in the loose forms (bare digits, spaces only) the exchange
/// from 2 as well. A written `555-123-4567` is a phone number to its reader whatever the
/// numbering plan says, so the punctuated forms keep any exchange.
fn nanp(t: &str, bare: bool) -> bool {
    if !NANP_SHAPE.is_match(t) {
        return false;
    }
    let d: Vec<u8> = t.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    let loose = bare || !t.contains(['-', '.', '(']);
    let d = match d.len() {
        11 if d[0] == 1 => &d[1..],
        10 => &d[..],
        _ => return false,
    };
    d[0] >= 2 && (!loose || d[3] >= 2) && !(d[1] == 1 && d[2] == 1)
}

fn parses(region: Option<Id>, t: &str) -> bool {
    phonenumber::parse(region, t).is_ok_and(|n| phonenumber::is_valid(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(t, &super::super::context::long_numbers(t), &|s, e| super::super::context::free(t, s, e), &mut out);
        out.iter().map(|s| &t[s.start..s.end]).collect()
    }

    #[test]
    fn numbers_of_every_plan() {
        for (t, want) in [
            ("call 0490 75 40 81 now", "0490 75 40 81"),
            ("London: +44 20 7946 0958.", "+44 20 7946 0958"),
            ("dial 001-518-640-0854", "001-518-640-0854"),
            ("ext 345-899-3560x4587 then", "345-899-3560x4587"),
            ("Ring (415) 555-0132", "(415) 555-0132"),
            ("or +1 415 555 0132", "+1 415 555 0132"),
            ("Tel. 030 12345678", "030 12345678"),
            ("+33 1 42 68 53 00", "+33 1 42 68 53 00"),
            ("(212) 555-0188 ext. 12", "(212) 555-0188 ext. 12"),
            // Written with dots, and national numbers of plans outside REGIONS laid out
            // as phone numbers are (Estonia, the Central African Republic, Oman).
            ("at +47.40.61.23.45 today", "+47.40.61.23.45"),
            ("at 01.23.45.67.89 today", "01.23.45.67.89"),
            ("listed 5123 4567 today", "5123 4567"),
            ("listed 21 61 23 45 today", "21 61 23 45"),
            ("listed 9212 3456 today", "9212 3456"),
        ] {
            assert_eq!(found(t), [want], "{t}");
        }
    }

    #[test]
    fn a_code_after_a_wide_space_is_read_whole() {
        // A no-break or narrow no-break space (two and three bytes) before the code's
        // first token: the token starts after the whole space.
        for t in ["Ref\u{a0}1Z 555 123 4567 today", "Ref\u{202f}1Z 555 123 4567 today"] {
            assert!(found(t).is_empty(), "{t}: {:?}", found(t));
        }
    }

    #[test]
    fn dates_counts_and_bare_digits_are_not_phones() {
        for t in [
            "on 2000-04-16 at noon",
            "12-14-2020",
            "4012 8888 8888 1881",
            "ref 4155550132",
            "10.0.0.1 is a host",
            "in 1999 and 2004",
            // A range, a decimal, a year and a count, rising numbers, a check group,
            // thousands: laid out as other numbers are.
            "pages 1735-1741 and 3211-3216",
            "arXiv 2106.09685",
            "since 1986 945 cases",
            "scores 12 14 17 21 25 30",
            "part 1234-5678-90",
            "for 212 345 678 people",
        ] {
            assert!(found(t).is_empty(), "{t}: {:?}", found(t));
        }
        assert_eq!(found("call 4155550132"), ["4155550132"]);
    }
}
