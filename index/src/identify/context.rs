//! The checks every detector shares: whether a match stands alone (not a piece of a
//! longer token: a GUID, a version, a longer number), and whether a cue word sits just
//! before it ("MRN:", "DOB", "passport no.").

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;

/// Compiles an identifier pattern with ASCII classes and word boundaries: `\d`, `\s`,
/// `\w` and `\b` as ASCII, so that the lazy DFA runs on any text (a Unicode `\b`
/// sends non-ASCII haystacks to the slower engines) and Arabic-Indic digits are not
/// read as numbers.
pub fn compile(pattern: &str) -> Regex {
    let p = pattern.replace(r"\b", r"(?-u:\b)").replace(r"\d", "[0-9]").replace(r"\s", r"[\t\n\x0B\x0C\r ]").replace(r"\w", "[0-9A-Za-z_]");
    Regex::new(&p).unwrap_or_else(|e| panic!("the identifier pattern {pattern} compiles: {e}"))
}

/// Which of the rare cues a text holds at all, found in one pass: the detectors that
/// need one (MRN, passport, case parties) skip their pattern's pass over a text without.
#[derive(Debug, Clone, Copy, Default)]
pub struct Present {
    pub mrn: bool,
    pub passport: bool,
    pub versus: bool,
}

/// The MRN pattern's cues as phrases (a single space between words): "patient" or
/// "hospital" alone would open the pattern's pass on most clinical prose.
const MRN_CUES: &[&str] = &[
    "mrn",
    "m.r.n",
    "mr#",
    "mr no",
    "mrno",
    "med rec",
    "medical rec",
    "chart no",
    "chart number",
    "chart #",
    "hospital no",
    "hospital number",
    "hospital #",
    "patient id",
    "patient no",
    "patient number",
    "patient #",
    "pt id",
    "pt. id",
];

static CUES: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let all = MRN_CUES.iter().chain(&["passport"]);
    // A DFA: one table look-up a byte, the fastest of the kinds for a few short words.
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(all)
        .expect("the cue words build")
});

/// The rare cues `text` holds. An MRN or a passport number has five digits or more
/// (a hyphen between them at most): a text without such a run needs no pass for their
/// cues, and most prose has none.
pub fn present(text: &str) -> Present {
    let mut p = Present { versus: memchr::memmem::find(text.as_bytes(), b" v. ").is_some(), ..Present::default() };
    if !digit_run(text.as_bytes(), 5) {
        return p;
    }
    for m in CUES.find_iter(text) {
        match m.pattern().as_usize() {
            i if i < MRN_CUES.len() => p.mrn = true,
            _ => p.passport = true,
        }
        if p.mrn && p.passport {
            break;
        }
    }
    p
}

/// Whether `b` holds `n` digits in a row, hyphens between them allowed.
fn digit_run(b: &[u8], n: usize) -> bool {
    let mut count = 0;
    let mut i = next_digit(b, 0);
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c.is_ascii_digit() {
            count += 1;
            if count >= n {
                return true;
            }
        } else if !(c == b'-' && count > 0 && b.get(i).is_some_and(u8::is_ascii_digit)) {
            // No run goes on: straight to the next digit.
            count = 0;
            i = next_digit(b, i);
        }
    }
    false
}

/// The places of `text` that may hold a long number: runs of seven digits or more in
/// groups at most three bytes apart (the widest separator a phone number has: " - "),
/// each widened to the whitespace around it (an international prefix, a parenthesis, an
/// extension: "+44 20 …", "(415) 555-0132 ext. 12"), merged. Every SSN, card, NPI and
/// phone number lies in one, so their patterns run only there: prose holds few, and a
/// pattern's pass over all of it cost more than the rest of those detectors' work.
pub fn long_numbers(text: &str) -> Vec<(usize, usize)> {
    const MIN_DIGITS: usize = 7;
    const MAX_GAP: usize = 3;
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut run: Option<(usize, usize, usize)> = None; // start, end, digits
    let mut i = 0;
    while i <= b.len() {
        let digit = i < b.len() && b[i].is_ascii_digit();
        if digit {
            run = match run {
                Some((s, e, n)) if i - e <= MAX_GAP => Some((s, i + 1, n + 1)),
                Some((s, e, n)) => {
                    if n >= MIN_DIGITS {
                        push_window(text, s, e, &mut out);
                    }
                    Some((i, i + 1, 1))
                }
                None => Some((i, i + 1, 1)),
            };
        } else if i == b.len() {
            if let Some((s, e, n)) = run {
                if n >= MIN_DIGITS {
                    push_window(text, s, e, &mut out);
                }
            }
        } else {
            // Nothing happens until the next digit (or the end, which closes a run).
            i = next_digit(b, i);
            continue;
        }
        i += 1;
    }
    out
}

/// The digit run `s..e` widened to the whitespace before it (at most 32 bytes back)
/// and to the whitespace after an extension's room (24 bytes), merged into `out`.
fn push_window(text: &str, s: usize, e: usize, out: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut from = s;
    while from > 0 && s - from < 32 && !b[from - 1].is_ascii_whitespace() {
        from -= 1;
    }
    let mut to = (e + 24).min(b.len());
    while to < b.len() && !b[to].is_ascii_whitespace() {
        to += 1;
    }
    while !text.is_char_boundary(from) {
        from += 1;
    }
    match out.last_mut() {
        Some(last) if last.1 >= from => last.1 = last.1.max(to),
        _ => out.push((from, to)),
    }
}

/// The places of `text` around its runs of digits: from `before` bytes before a run to
/// `after` bytes after it, each end widened to the whitespace there (at most 64 bytes
/// further), merged. Every date and every look-alike zone holds a digit, so their
/// patterns run only there: prose has long stretches without one.
pub fn digit_windows(text: &str, before: usize, after: usize) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut i = next_digit(b, 0);
    while i < b.len() {
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if out.last().is_some_and(|last| last.1 >= i + after) {
            i = next_digit(b, i);
            continue;
        }
        let (mut from, mut to) = (s.saturating_sub(before), (i + after).min(b.len()));
        let (floor, ceiling) = (from.saturating_sub(64), (to + 64).min(b.len()));
        while from > floor && !b[from - 1].is_ascii_whitespace() {
            from -= 1;
        }
        while to < ceiling && !b[to].is_ascii_whitespace() {
            to += 1;
        }
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        while !text.is_char_boundary(to) {
            to += 1;
        }
        match out.last_mut() {
            Some(last) if last.1 >= from => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
        i = next_digit(b, i);
    }
    out
}

/// The index of the first ASCII digit of `b` at `from` or after it (`b.len()` if none):
/// 32 bytes at a time while none is one, which the compiler makes a few vector
/// instructions (prose has long stretches without a digit).
pub fn next_digit(b: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = b.get(from..from + 32) {
        if chunk.iter().fold(false, |any, c| any | c.is_ascii_digit()) {
            break;
        }
        from += 32;
    }
    b.get(from..).and_then(|rest| rest.iter().position(u8::is_ascii_digit)).map_or(b.len(), |p| from + p)
}

/// The matches of `re` inside the `windows` of `text`, as byte ranges of `text`.
pub fn find_in<'a>(re: &'a Regex, text: &'a str, windows: &'a [(usize, usize)]) -> impl Iterator<Item = (usize, usize)> + 'a {
    windows.iter().flat_map(move |&(from, to)| re.find_iter(&text[from..to]).map(move |m| (from + m.start(), from + m.end())))
}

/// Whether `text[start..end]` is a token of its own on the left: no letter, digit or
/// underscore before it, and no `-`, `.` or `/` glued to one (`4f2a-425…`, `1.425…`).
pub fn free_left(text: &str, start: usize) -> bool {
    let b = text.as_bytes();
    if start == 0 {
        return true;
    }
    let c = b[start - 1];
    if word_byte(c) {
        return false;
    }
    !(matches!(c, b'-' | b'.' | b'/' | b'_') && start >= 2 && b[start - 2].is_ascii_alphanumeric())
}

/// Whether it is a token of its own on the right: no letter, digit or underscore after
/// it, and no `-`, `.`, `/` or `,` followed by a letter or digit (`…-1297901ea002`,
/// `….4`, `…,500`). A sentence's full stop (followed by a space or the end) is fine.
pub fn free_right(text: &str, end: usize) -> bool {
    let b = text.as_bytes();
    if end >= b.len() {
        return true;
    }
    let c = b[end];
    if word_byte(c) {
        return false;
    }
    !(matches!(c, b'-' | b'.' | b'/' | b',' | b'_') && b.get(end + 1).is_some_and(|n| n.is_ascii_alphanumeric()))
}

pub fn free(text: &str, start: usize, end: usize) -> bool {
    free_left(text, start) && free_right(text, end)
}

/// A byte that continues a word: ASCII letters and digits, `_`, and any byte of a
/// non-ASCII character (a letter of another script glued on).
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The `window` bytes before `start` (cut back to a character boundary).
pub fn before(text: &str, start: usize, window: usize) -> &str {
    let mut from = start.saturating_sub(window);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..start]
}

/// Whether `cue` (anchored at the end, e.g. `(?i)\bnpi\W*$`) matches the window before
/// `start`.
pub fn cue_before(text: &str, start: usize, window: usize, cue: &Regex) -> bool {
    cue.is_match(before(text, start, window))
}

/// The digits of `s`, as numbers.
pub fn digits(s: &str) -> Vec<u8> {
    s.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
}

/// The Luhn check over `digits` (the last is the check digit).
pub fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = d as u32;
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                d
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// Whether `[start, end)` overlaps one of the sorted, disjoint `zones`.
pub fn overlaps(zones: &[(usize, usize)], start: usize, end: usize) -> bool {
    let i = zones.partition_point(|z| z.1 <= start);
    zones.get(i).is_some_and(|z| z.0 < end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_takes_the_known_numbers() {
        assert!(luhn(&digits("4012 8888 8888 1881")));
        assert!(!luhn(&digits("4012 8888 8888 1882")));
        assert!(luhn(&digits("79927398713")));
    }

    #[test]
    fn tokens_glued_to_others_are_not_free() {
        let t = "id 110bcd25-a55d-453a-8046-1297901ea002 v1.425 882 9090, 12,500";
        let at = |s: &str| t.find(s).unwrap();
        assert!(!free_left(t, at("1297901")));
        assert!(!free_left(t, at("425 882")));
        assert!(free_right(t, at("9090") + 4));
        assert!(!free_right(t, at("12,500") + 2));
        assert!(free(t, 0, 2));
    }

    #[test]
    fn long_numbers_are_windows_around_seven_digits() {
        let t = "in 1999 and 2004, call +44 20 7946 0958 ext. 12 or (415) 555-0132; p = 0.05";
        let w: Vec<&str> = long_numbers(t).into_iter().map(|(s, e)| &t[s..e]).collect();
        assert!(w.iter().any(|x| x.contains("+44 20 7946 0958 ext. 12")), "{w:?}");
        assert!(w.iter().any(|x| x.contains("(415) 555-0132")), "{w:?}");
        assert!(w.iter().all(|x| !x.contains("1999")), "{w:?}");
        assert!(long_numbers("p < 0.05 in 12 of 345 cases").is_empty());
    }

    #[test]
    fn digit_windows_hold_a_date_around_its_digits() {
        let t = "Nothing here is a number at all. Seen on September 15, 2024 at 09:00 UTC by staff.";
        let w: Vec<&str> = digit_windows(t, 24, 48).into_iter().map(|(s, e)| &t[s..e]).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("September 15, 2024 at 09:00 UTC") && !w[0].contains("Nothing"), "{w:?}");
        assert!(digit_windows("no digits in this text", 24, 48).is_empty());
    }

    #[test]
    fn zones_overlap_by_range() {
        let z = [(5, 10), (20, 30)];
        assert!(overlaps(&z, 9, 12) && overlaps(&z, 0, 6) && overlaps(&z, 25, 26));
        assert!(!overlaps(&z, 10, 20) && !overlaps(&z, 0, 5) && !overlaps(&z, 30, 40));
    }
}
