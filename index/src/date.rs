//! Calendar dates as day numbers, parsed from the forms people write.
//!
//! Filters (`date >= 2024-03-01`) and the `date` chunk kind both need to turn text into a
//! comparable number without a time-zone library: a date is the count of days since
//! 1970-01-01, and a partial date (`2024`, `March 2024`) is the inclusive range of days it
//! covers. The engine never needs times of day, so none are kept.

/// An inclusive range of days since 1970-01-01; a full date has `from == to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DayRange {
    pub from: i32,
    pub to: i32,
}

const MONTHS: [&str; 12] = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/// Days since 1970-01-01 of a proleptic Gregorian date (negative before 1970).
///
/// Counts whole 400-year eras (146 097 days each) from 0000-03-01, so that the leap day
/// falls at the end of the counted year and needs no special case.
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let month_from_march = (m as i32 + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + d as i32 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

pub fn is_leap_year(y: i32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        2 if is_leap_year(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The day number of a valid date; `None` for a month or day out of range.
fn day(y: i32, m: u32, d: u32) -> Option<i32> {
    let valid = (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m);
    valid.then(|| days_from_civil(y, m, d))
}

fn month_range(y: i32, m: u32) -> Option<DayRange> {
    let from = day(y, m, 1)?;
    Some(DayRange { from, to: from + days_in_month(y, m) as i32 - 1 })
}

fn year_range(y: i32) -> DayRange {
    DayRange { from: days_from_civil(y, 1, 1), to: days_from_civil(y, 12, 31) }
}

/// Parses a whole string as a date or a partial date.
///
/// Accepted: `2024-03-14`, an RFC 3339 timestamp (its date part), `03/14/2024` (US order),
/// `14 Mar 2024`, `14 March 2024`, `March 14, 2024`, `Mar 14 2024`, `2024-03` and
/// `March 2024` (the whole month), and `2024` (the whole year). Impossible dates are `None`.
pub fn parse_date(s: &str) -> Option<DayRange> {
    let s = s.trim();
    if let Some(d) = rfc3339_date(s) {
        return Some(DayRange { from: d, to: d });
    }
    let tokens = tokenize(s);
    if !gaps_are_separators(s, &tokens) || tokens.last().is_some_and(|t| t.end != s.len()) {
        return None;
    }
    let words: Vec<&str> = tokens.iter().map(|t| &s[t.start..t.end]).collect();
    match words.as_slice() {
        [one] => single_token(one),
        [a, b] => month_year(a, b),
        [a, b, c] => written_day(a, b, c).map(|d| DayRange { from: d, to: d }),
        _ => None,
    }
}

/// Day numbers of the full dates written in `text`, in order of appearance (repeats kept).
///
/// Only forms naming a day count; bare years and months are too noisy in prose.
pub fn find_dates(text: &str) -> Vec<i32> {
    let tokens = tokenize(text);
    let words: Vec<&str> = tokens.iter().map(|t| &text[t.start..t.end]).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(d) = numeric_day(words[i]) {
            out.push(d);
            i += 1;
        } else if let Some(d) = written_day_at(text, &tokens, &words, i) {
            out.push(d);
            i += 3;
        } else {
            i += 1;
        }
    }
    out
}

fn written_day_at(text: &str, tokens: &[Token], words: &[&str], i: usize) -> Option<i32> {
    let window = tokens.get(i..i + 3)?;
    if !gaps_are_separators(&text[window[0].start..window[2].end], &shift(window)) {
        return None;
    }
    written_day(words[i], words[i + 1], words[i + 2])
}

/// The tokens re-based to start at the first one, for checking the gaps between them.
fn shift(tokens: &[Token]) -> Vec<Token> {
    let base = tokens[0].start;
    tokens.iter().map(|t| Token { start: t.start - base, end: t.end - base }).collect()
}

#[derive(Clone, Copy, Debug)]
struct Token {
    start: usize,
    end: usize,
}

/// Runs of alphanumerics, `-` and `/`, as byte ranges.
fn tokenize(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        let inside = c.is_alphanumeric() || c == '-' || c == '/';
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(st)) => {
                out.push(Token { start: st, end: i });
                start = None;
            }
            _ => {}
        }
    }
    if let Some(st) = start {
        out.push(Token { start: st, end: s.len() });
    }
    out
}

/// True when what lies before, between and after `tokens` is only whitespace, commas and
/// full stops (`14 Mar. 2024`, `March 14, 2024`).
fn gaps_are_separators(s: &str, tokens: &[Token]) -> bool {
    let mut prev = 0;
    for t in tokens {
        if !is_separator(&s[prev..t.start]) {
            return false;
        }
        prev = t.end;
    }
    is_separator(&s[prev..])
}

fn is_separator(gap: &str) -> bool {
    gap.chars().all(|c| c.is_whitespace() || c == ',' || c == '.')
}

fn single_token(w: &str) -> Option<DayRange> {
    if let Some(d) = numeric_day(w) {
        return Some(DayRange { from: d, to: d });
    }
    match split_digits(w, '-').as_deref() {
        Some([y, m]) if y.len() == 4 && m.len() == 2 => month_range(num(y)?, num(m)? as u32),
        Some(_) => None,
        None => year(w).map(year_range),
    }
}

fn month_year(a: &str, b: &str) -> Option<DayRange> {
    month_range(year(b)?, month(a)?)
}

/// `2024-03-14` or `03/14/2024` (and `3/14/2024`).
fn numeric_day(w: &str) -> Option<i32> {
    if let Some(parts) = split_digits(w, '-') {
        if let [y, m, d] = parts.as_slice() {
            let widths = y.len() == 4 && m.len() == 2 && d.len() == 2;
            return widths.then(|| day(num(y)?, num(m)? as u32, num(d)? as u32))?;
        }
    }
    let parts = split_digits(w, '/')?;
    let [m, d, y] = parts.as_slice() else {
        return None;
    };
    let widths = m.len() <= 2 && d.len() <= 2 && y.len() == 4;
    widths.then(|| day(num(y)?, num(m)? as u32, num(d)? as u32))?
}

/// `14 March 2024` or `March 14 2024` (the commas and dots are gaps, checked by the caller).
fn written_day(a: &str, b: &str, c: &str) -> Option<i32> {
    let y = year(c)?;
    if let (Some(d), Some(m)) = (day_of_month(a), month(b)) {
        return day(y, m, d);
    }
    day(y, month(a)?, day_of_month(b)?)
}

/// `w` split at `sep` when every part is a non-empty run of ASCII digits.
fn split_digits(w: &str, sep: char) -> Option<Vec<&str>> {
    let parts: Vec<&str> = w.split(sep).collect();
    let digits = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (parts.len() > 1 && parts.iter().all(digits)).then_some(parts)
}

fn num(s: &str) -> Option<i32> {
    s.parse().ok()
}

/// A four-digit year from 1000 to 9999.
fn year(w: &str) -> Option<i32> {
    let four_digits = w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit());
    four_digits.then(|| num(w)).flatten().filter(|y| *y >= 1000)
}

/// `14`, `04` or `14th`; one or two digits.
fn day_of_month(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..].to_ascii_lowercase();
    let ok_suffix = matches!(suffix.as_str(), "" | "st" | "nd" | "rd" | "th");
    let ok_digits = (1..=2).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    (ok_suffix && ok_digits).then(|| digits.parse().ok()).flatten()
}

/// A month's full English name or an abbreviation of at least three letters (`Sept`).
fn month(w: &str) -> Option<u32> {
    if w.len() < 3 || !w.is_ascii() {
        return None;
    }
    let w = w.to_ascii_lowercase();
    let index = MONTHS.iter().position(|name| name.starts_with(w.as_str()))?;
    Some(index as u32 + 1)
}

/// The date part of an RFC 3339 timestamp such as `2024-03-14T09:30:00Z`.
fn rfc3339_date(s: &str) -> Option<i32> {
    let (date, rest) = (s.get(..10)?, s.get(10..)?);
    let time = rest.strip_prefix(['T', 't', ' '])?;
    is_rfc3339_time(time).then(|| numeric_day(date)).flatten()
}

/// `HH:MM:SS`, an optional fraction, then `Z` or `±HH:MM`.
fn is_rfc3339_time(t: &str) -> bool {
    let b = t.as_bytes();
    let hms = b.len() >= 8 && b[2] == b':' && b[5] == b':';
    if !hms || ![0, 1, 3, 4, 6, 7].iter().all(|&i| b[i].is_ascii_digit()) {
        return false;
    }
    let rest = t[8..].trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = rest.strip_prefix(['+', '-']).map(str::as_bytes);
    rest.eq_ignore_ascii_case("z") || offset.is_some_and(is_utc_offset)
}

/// `HH:MM` after the sign of a UTC offset.
fn is_utc_offset(o: &[u8]) -> bool {
    let digits = [0, 1, 3, 4].iter().all(|&i| o.get(i).is_some_and(u8::is_ascii_digit));
    o.len() == 5 && o[2] == b':' && digits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(y: i32, m: u32, d: u32) -> Option<DayRange> {
        let n = days_from_civil(y, m, d);
        Some(DayRange { from: n, to: n })
    }

    #[test]
    fn day_numbers_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 3, 14), 19_796);
        assert_eq!(days_from_civil(1900, 3, 1) - days_from_civil(1900, 2, 28), 1);
        assert_eq!(days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 28), 2);
    }

    #[test]
    fn parses_every_day_form() {
        let want = one(2024, 3, 14);
        for s in [
            "2024-03-14",
            "03/14/2024",
            "3/14/2024",
            "14 Mar 2024",
            "14 March 2024",
            "March 14, 2024",
            "Mar 14 2024",
            "mar. 14, 2024",
            "14th March 2024",
            "2024-03-14T09:30:00Z",
            "2024-03-14t09:30:00.25+05:30",
            " 2024-03-14 ",
        ] {
            assert_eq!(parse_date(s), want, "{s}");
        }
    }

    #[test]
    fn parses_months_and_years_as_ranges() {
        let march = DayRange { from: days_from_civil(2024, 3, 1), to: days_from_civil(2024, 3, 31) };
        assert_eq!(parse_date("2024-03"), Some(march));
        assert_eq!(parse_date("March 2024"), Some(march));
        let feb = parse_date("Feb 2024").unwrap();
        assert_eq!(feb.to - feb.from, 28);
        let year = parse_date("2024").unwrap();
        assert_eq!((year.from, year.to - year.from), (days_from_civil(2024, 1, 1), 365));
    }

    #[test]
    fn knows_leap_years() {
        assert!(parse_date("2024-02-29").is_some());
        assert!(parse_date("2000-02-29").is_some());
        assert!(parse_date("2023-02-29").is_none());
        assert!(parse_date("1900-02-29").is_none());
    }

    #[test]
    fn rejects_what_is_not_a_date() {
        for s in [
            "2024-02-30",
            "2024-13-01",
            "2024-00-10",
            "13/01/2024",
            "32 March 2024",
            "",
            "hello",
            "2024-3-14",
            "12345",
            "999",
            "Marchh 2024",
            "2024-03-14T25",
            "March 14 2024 extra",
            "Ma 14 2024",
        ] {
            assert_eq!(parse_date(s), None, "{s}");
        }
    }

    #[test]
    fn finds_day_dates_in_prose_but_not_bare_years() {
        let text = "Seen on 2024-03-14 and again March 15, 2024 (follow-up 16 Mar 2024); \
                    next visit 04/01/2024. Born in 1980, in May 2001.";
        let want: Vec<i32> = [(2024, 3, 14), (2024, 3, 15), (2024, 3, 16), (2024, 4, 1)].iter().map(|&(y, m, d)| days_from_civil(y, m, d)).collect();
        assert_eq!(find_dates(text), want);
        assert!(find_dates("in 2024 and 2024-02-30 and page 12/2024").is_empty());
    }
}
