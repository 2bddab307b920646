//! The number-shaped kinds but phones (`phones.rs`): ssn, credit_card, npi, passport and
//! mrn. Each shape is a pattern; what makes it that identifier is the check after it:
//! SSA's rules for SSNs (no area 000, 666 or 9xx, no group 00, no serial 0000; a number
//! the SSA lists as advertised is masked but not counted), Luhn for cards (12 to 19
//! digits: an issuer's prefix, a card's grouping or a card cue besides), Luhn over
//! `80840` + the number for NPIs, and a cue word for the kinds with no shape of their
//! own (passport, MRN, a bare 9-digit SSN).

use std::sync::LazyLock;

use regex::Regex;

use super::context::{before, compile, cue_before, digits, find_in, free, long_numbers, luhn, overlaps, Present};
use super::{IdentifierKind as K, Span};

fn re(p: &str) -> Regex {
    compile(p)
}

/// `ddd-dd-dddd`, `ddd dd dddd`, `ddd.dd.dddd`, or nine digits.
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"\d{3}[- .]?\d{2}[- .]?\d{4}"));
static SSN_CUE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?:\bssn|\bss#|\bsocial security(?: number| no\.?| #)?|\bsoc\.? sec\.?(?: no\.?| #)?)\W{0,4}(?:is\s+|was\s+)?$"));

/// 12 to 19 digits, bare or in 4-grouped or Amex/Diners forms.
static CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\d{4}-\d{4}-\d{4}-\d{1,7}|\d{4} \d{4} \d{4} \d{1,7}|\d{4}-\d{4}-\d{4}|\d{4} \d{4} \d{4}|\d{4}[- ]\d{6}[- ]\d{4,5}|\d{12,19}")
});
static CARD_CUE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:card|cc|visa|mastercard|master card|amex|american express|discover|maestro|diners|jcb|unionpay|debit|credit|kreditkarte|carte|tarjeta|carta)\b[^\n]{0,20}$",
    )
});

/// Ten digits, bare or `dddd-ddd-ddd`.
static NPI: LazyLock<Regex> = LazyLock::new(|| re(r"[12]\d{3}[- ]?\d{3}[- ]?\d{3}"));
static NPI_CUE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:npi|national provider(?: identifier)?|provider(?: id| identifier| number| no\.?)?|prescriber|taxonomy)\b"));
static OTHER_ID_CUE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:order|invoice|account|acct|tracking|ref|reference|isbn|serial|ticket|confirmation|claim|policy|phone|tel|fax|call|cell|mobile|mrn|ssn|routing|case|file)\b[^.\n]{0,12}$",
    )
});

/// A passport number after its cue: "Passport No.: X1234567", "passport number is 912803456".
static PASSPORT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i:\bpassport(?:\s+(?:no\.?|number|num\.?|#|id))?)\s*(?:[:#]\s*)?(?i:(?:is|was|of)\s+)?([A-Z]{0,2}\d{6,9}|\d{9})(?-u:\b)")
});

/// A medical record number after its cue: "MRN: 00123456", "Medical Record #A-4452190".
static MRN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i:\b(?:mrn|m\.r\.n\.|mr#|mr\s?no\.?|med(?:ical)?\s+rec(?:ord)?(?:\s+(?:number|no\.?|#))?|medical\s+record(?:\s+(?:number|no\.?|#))?|chart\s+(?:number|no\.?|#)|hospital\s+(?:number|no\.?|#)|patient\s+(?:id|number|no\.?|#)|pt\.?\s+id))\s*(?:[:#]\s*)?(?i:(?:is|was)\s+)?#?([A-Z]{0,3}-?\d[\d-]{3,13}\d)(?-u:\b)",
    )
});

pub fn find(text: &str, excluded: &[(usize, usize)], cues: Present, out: &mut Vec<Span>) {
    let ok = |s: usize, e: usize| free(text, s, e) && !overlaps(excluded, s, e);
    let long = long_numbers(text);
    ssns(text, &long, &ok, out);
    super::phones::find(text, &long, &ok, out);
    cards(text, &long, &ok, out);
    npis(text, &long, &ok, out);
    if cues.passport {
        cued(text, &PASSPORT, K::Passport, &ok, out);
    }
    if cues.mrn {
        cued(text, &MRN, K::Mrn, &ok, out);
    }
}

/// The separators of a number-shaped match: none, or the same one twice
/// (`078-05-1123`, not `693-09.4444` or `078-051123`).
fn consistent(t: &str) -> bool {
    let mut seps = t.bytes().filter(|b| !b.is_ascii_digit());
    match (seps.next(), seps.next(), seps.next()) {
        (None, _, _) => true,
        (Some(a), Some(b), None) => a == b,
        _ => false,
    }
}

fn ssns(text: &str, long: &[(usize, usize)], ok: &impl Fn(usize, usize) -> bool, out: &mut Vec<Span>) {
    for (s, e) in find_in(&SSN, text, long) {
        let t = &text[s..e];
        if !consistent(t) || !ok(s, e) {
            continue;
        }
        if t.len() == 9 && !cue_before(text, s, 32, &SSN_CUE) {
            continue;
        }
        let d: String = t.chars().filter(char::is_ascii_digit).collect();
        if valid_ssn(&d[..3], &d[3..5], &d[5..]) {
            let counted = !ADVERTISED.contains(&d.as_str());
            out.push(Span { kind: K::Ssn, start: s, end: e, counted });
        }
    }
}

/// The numbers the SSA lists as printed in advertising and examples (078-05-1120, the
/// wallet card's) and the like: valid in shape, no one's.
const ADVERTISED: &[&str] = &["078051120", "219099999", "123456789", "457555462"];

/// SSA's rules: a number no SSN can have is not one.
fn valid_ssn(area: &str, group: &str, serial: &str) -> bool {
    let whole = format!("{area}{group}{serial}");
    let same = whole.bytes().all(|b| b == whole.as_bytes()[0]);
    let impossible = area == "000" || area == "666" || area.starts_with('9') || group == "00" || serial == "0000";
    !impossible && !same
}

fn cards(text: &str, long: &[(usize, usize)], ok: &impl Fn(usize, usize) -> bool, out: &mut Vec<Span>) {
    for (s, e) in find_in(&CARD, text, long) {
        if !ok(s, e) {
            continue;
        }
        let d = digits(&text[s..e]);
        let grouped = text[s..e].contains(['-', ' ']);
        let vouched = || issuer(&d) || grouped || cue_before(text, s, 40, &CARD_CUE);
        if (12..=19).contains(&d.len()) && luhn(&d) && !d.iter().all(|&x| x == d[0]) && vouched() {
            out.push(Span { kind: K::CreditCard, start: s, end: e, counted: true });
        }
    }
}

/// Whether the first digits are a card issuer's (Visa, Mastercard, Amex, Discover,
/// Diners, JCB, UnionPay, Maestro, UATP) at a length it issues. A bare run of digits
/// needs this (or a cue); a grouped one passes on Luhn alone, since issuers outside the
/// table print cards of 12 to 19 digits in groups too.
fn issuer(d: &[u8]) -> bool {
    let p2 = d[0] as u32 * 10 + d[1] as u32;
    let p4 = p2 * 100 + d[2] as u32 * 10 + d[3] as u32;
    let n = d.len();
    match d[0] {
        1 => n == 15,
        2 => (2221..=2720).contains(&p4) && n == 16,
        3 => matches!(p2, 34 | 37) && n == 15 || matches!(p2, 30 | 36 | 38 | 39) && (14..=19).contains(&n) || (3528..=3589).contains(&p4),
        4 => matches!(n, 13 | 16 | 19),
        5 => (51..=55).contains(&p2) && n == 16 || matches!(p2, 50 | 56..=59) && (12..=19).contains(&n),
        6 => (16..=19).contains(&n),
        _ => false,
    }
}

fn npis(text: &str, long: &[(usize, usize)], ok: &impl Fn(usize, usize) -> bool, out: &mut Vec<Span>) {
    for (s, e) in find_in(&NPI, text, long) {
        if !consistent(&text[s..e]) || !ok(s, e) {
            continue;
        }
        let d = digits(&text[s..e]);
        let mut prefixed = vec![8, 0, 8, 4, 0];
        prefixed.extend_from_slice(&d);
        let degenerate = d[..9].iter().all(|&x| x == d[0]);
        if !luhn(&prefixed) || degenerate {
            continue;
        }
        let window = before(text, s, 40);
        if OTHER_ID_CUE.is_match(window) && !NPI_CUE.is_match(window) {
            continue;
        }
        out.push(Span { kind: K::Npi, start: s, end: e, counted: true });
    }
}

/// A kind found only after its cue: the span is the value (group 1).
fn cued(text: &str, re: &Regex, kind: K, ok: &impl Fn(usize, usize) -> bool, out: &mut Vec<Span>) {
    for c in re.captures_iter(text) {
        let v = c.get(1).expect("the value group");
        let digits = v.as_str().bytes().filter(u8::is_ascii_digit).count();
        if digits >= 5 && ok(v.start(), v.end()) {
            out.push(Span { kind, start: v.start(), end: v.end(), counted: true });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_in(t: &str) -> Vec<(K, &str)> {
        let mut out = Vec::new();
        find(t, &super::super::exclude::zones(t), super::super::context::present(t), &mut out);
        out.sort_by_key(|s| s.start);
        out.iter().map(|s| (s.kind, &t[s.start..s.end])).collect()
    }

    #[test]
    fn ssns_follow_the_ssa_rules() {
        assert_eq!(kinds_in("SSN 078-05-1123"), [(K::Ssn, "078-05-1123")]);
        for bad in ["000-12-3456", "666-12-3456", "912-34-5678", "123-00-4567", "123-45-0000", "693-09.4444"] {
            assert!(kinds_in(bad).iter().all(|(k, _)| *k != K::Ssn), "{bad}");
        }
        assert_eq!(kinds_in("SSN: 078051121"), [(K::Ssn, "078051121")]);
        assert!(kinds_in("078051121").is_empty(), "nine bare digits need a cue");
    }

    #[test]
    fn an_advertised_ssn_is_masked_but_not_counted() {
        let mut out = Vec::new();
        let t = "SSN 078-05-1120";
        find(t, &[], super::super::context::present(t), &mut out);
        assert_eq!(out.iter().map(|s| (s.kind, &t[s.start..s.end], s.counted)).collect::<Vec<_>>(), [(K::Ssn, "078-05-1120", false)]);
    }

    #[test]
    fn cards_need_luhn_and_an_issuer() {
        assert_eq!(kinds_in("4012-8888-8888-1881"), [(K::CreditCard, "4012-8888-8888-1881")]);
        assert!(kinds_in("4012-8888-8888-1882").is_empty());
        assert!(kinds_in("36168002586008").is_empty(), "bare digits outside the table need a cue");
        assert_eq!(kinds_in("card no. 88001234567819"), [(K::CreditCard, "88001234567819")]);
        assert_eq!(kinds_in("7000 1234 5678 9127"), [(K::CreditCard, "7000 1234 5678 9127")], "grouped, outside the table");
    }

    #[test]
    fn npis_take_luhn_over_the_80840_prefix() {
        assert_eq!(kinds_in("NPI: 1234567893"), [(K::Npi, "1234567893")]);
        assert!(kinds_in("NPI: 1234567890").is_empty());
        assert!(kinds_in("Order 1245319599").is_empty(), "another identifier's cue");
    }
}
