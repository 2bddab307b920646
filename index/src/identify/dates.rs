//! Dates, and dates of birth (a date after a cue: "DOB", "date of birth", "born").
//! A date is a date only if it exists: month 1–12, a day its month has (29 February in
//! leap years only), a four-digit year from 1800 to 2199, a time of day below 24:00;
//! a time after the date is the date's ("2000-04-16 11:34:35" is one date).
//! Numeric forms must keep one separator (`5/20/2021`, not `5/20-2021`), and a dotted
//! form with a one-digit day and a two-digit year (`1.2.21`) is taken for a version.
//!
//! A month and day without a year (`7/22`) is as often a ratio, a dose or a score, so
//! it is a date only where its context says so: a preposition of time before it ("on",
//! "since", "from", "until", "through", "dated", "as of", …), a date label ("date:"),
//! a weekday beside it ("Mon 7/22"), or a time of day beside it ("7/22 14:30", "7/22 at
//! 3 pm", "09:00 7/22").

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::context::{before, compile, digit_windows, free, overlaps};
use super::{IdentifierKind as K, Span};

const MONTH: &str = r"(?i:jan(?:uary|\.)?|feb(?:ruary|\.)?|mar(?:ch|\.)?|apr(?:il|\.)?|may|june?|july?|aug(?:ust|\.)?|sep(?:t(?:ember)?)?\.?|oct(?:ober|\.)?|nov(?:ember|\.)?|dec(?:ember|\.)?)";

static DATE: LazyLock<Regex> = LazyLock::new(|| {
    let iso = r"(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})(?:T(?P<hh>\d{2}):(?P<mi>\d{2})(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?";
    let numeric = r"(?P<a>\d{1,2})(?P<s1>[/.-])(?P<b>\d{1,2})(?P<s2>[/.-])(?P<y>\d{4}|\d{2})";
    // After `numeric` in the alternation: a year, when there is one, is the date's.
    let yearless = r"(?P<ya>\d{1,2})/(?P<yb>\d{1,2})";
    let day_month = format!(r"(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?(?:[- ]|\s+of\s+)(?P<dm>{MONTH})(?:,?[- ](?P<dy>\d{{4}}|\d{{2}}))?");
    let month_day = format!(r"(?P<md>{MONTH})[- ](?P<mdd>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s(?P<mdy>\d{{4}}))?");
    let month_year = format!(r"(?P<mym>{MONTH})[- ](?P<myy>\d{{4}})");
    // A time of day after the date is the date's: "2000-04-16 11:34:35", "5/20/2021,
    // 3:15 PM", "January 15, 2024 at 09:00 UTC".
    let time = r"(?P<time>(?:,?[ \t]+(?i:at[ \t]+)?)(?P<th>\d{1,2}):(?P<tm>\d{2})(?::(?P<ts>\d{2})(?:[.,]\d{1,9})?)?(?:[ \t]?(?P<ampm>[AaPp]\.?[Mm]\.?))?(?:[ \t]?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}))?)?";
    compile(&format!(r"(?:{iso}|{numeric}|{yearless}|{month_year}|{day_month}|{month_day}){time}"))
});

/// What, just before a month and day without a year, says it is a date: a preposition
/// of time, a date label, a weekday, or a time of day.
static YEARLESS_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    let weekday = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?";
    compile(&format!(
        r"(?i)(?:\b(?:on|since|from|until|till|through|thru|dated|as of|starting|beginning|effective|date)|\b{weekday}\.?|\d{{1,2}}:\d{{2}}(?:\s?[ap]\.?m\.?)?|\b\d{{1,2}}\s?[ap]\.?m\.?)[:,]?\s{{1,3}}$"
    ))
});

/// The same just after it: a weekday or a time of day ("7/22 at 3 pm", "7/22 (Tue)").
static YEARLESS_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"(?i)^,?\s{1,3}(?:at\s+|@\s*)?(?:\d{1,2}(?::\d{2})?\s?[ap]\.?m\.?\b|\d{1,2}:\d{2}\b|\(?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b)")
});

/// A cue for a date of birth, ending where the date begins.
static DOB_CUE: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"(?i)(?:\bdob|\bd\.o\.b\.?|date of birth|\bbirth\s?date|\bbirthday|\bborn(?: on)?|\bb\.)\W{0,4}(?:is\s+|was\s+|on\s+|of\s+)?$")
});

/// The dates of `text`. Every date holds a digit: the pattern reads only the places
/// around digits, 24 bytes before (a month's name: "September 15") and 48 after (a
/// year and a time: ", 2024 at 09:00 UTC").
pub fn find(text: &str, excluded: &[(usize, usize)], out: &mut Vec<Span>) {
    for (from, to) in digit_windows(text, 24, 48) {
        for c in DATE.captures_iter(&text[from..to]) {
            push_date(text, from, &c, excluded, out);
        }
    }
}

/// The date captured at `from` + `c`'s offsets, if it is one.
fn push_date(text: &str, from: usize, c: &Captures, excluded: &[(usize, usize)], out: &mut Vec<Span>) {
    let m = c.get(0).expect("the whole match");
    // A time that does not exist is left out, the date kept.
    let end = if time_valid(c) { m.end() } else { c.name("time").map_or(m.end(), |t| t.start()) };
    let (s, e) = (from + m.start(), from + end);
    if !free(text, s, e) || overlaps(excluded, s, e) || !date_valid(c) {
        return;
    }
    if c.name("ya").is_some() && c.name("th").is_none() && !yearless_in_context(text, s, e) {
        return;
    }
    let kind = if DOB_CUE.is_match(before(text, s, 28)) { K::Dob } else { K::Date };
    out.push(Span { kind, start: s, end: e, counted: true });
}

/// Whether the context of a month and day without a year at `s..e` says date.
fn yearless_in_context(text: &str, s: usize, e: usize) -> bool {
    let after = &text[e..(e + 24).min(text.len())];
    let after = &after[..(0..=after.len()).rev().find(|&i| after.is_char_boundary(i)).unwrap_or(0)];
    YEARLESS_BEFORE.is_match(before(text, s, 28)) || YEARLESS_AFTER.is_match(after)
}

fn num(c: &Captures, name: &str) -> Option<u32> {
    c.name(name).and_then(|m| m.as_str().parse().ok())
}

/// A time of day that exists: hours below 24 (1 to 12 before AM or PM), minutes and
/// seconds below 60 (a leap second's 60 allowed).
fn time_valid(c: &Captures) -> bool {
    let Some(h) = num(c, "th") else { return true };
    let hours = if c.name("ampm").is_some() { (1..=12).contains(&h) } else { h < 24 };
    hours && num(c, "tm").is_some_and(|m| m < 60) && num(c, "ts").is_none_or(|s| s <= 60)
}

fn date_valid(c: &Captures) -> bool {
    if let Some(y) = num(c, "iy") {
        let time_ok = num(c, "hh").is_none_or(|h| h < 24) && num(c, "mi").is_none_or(|m| m < 60);
        return exists(y, num(c, "im").unwrap_or(0), num(c, "id").unwrap_or(0)) && time_ok;
    }
    if let Some(a) = num(c, "a") {
        if c["s1"] != c["s2"] {
            return false;
        }
        let (b, ytext) = (num(c, "b").unwrap_or(0), &c["y"]);
        if &c["s1"] == "." && c["a"].len() == 1 && ytext.len() == 2 {
            return false;
        }
        let y = year(ytext);
        return exists(y, a, b) || exists(y, b, a);
    }
    if let (Some(m), Some(d)) = (num(c, "ya"), num(c, "yb")) {
        return exists(2000, m, d);
    }
    if let Some(y) = num(c, "myy") {
        return capitalised(c, "mym") && (1800..2200).contains(&y);
    }
    if let Some(d) = num(c, "dd") {
        let y = c.name("dy").map_or(2000, |m| year(m.as_str()));
        return capitalised(c, "dm") && exists(y, month(&c["dm"]), d);
    }
    if let Some(d) = num(c, "mdd") {
        let y = c.name("mdy").map_or(2000, |m| year(m.as_str()));
        return capitalised(c, "md") && exists(y, month(&c["md"]), d);
    }
    false
}

/// A month written with a capital (`May 2021`, `MAY`), not the verb "may".
fn capitalised(c: &Captures, name: &str) -> bool {
    c[name].starts_with(|ch: char| ch.is_ascii_uppercase())
}

fn year(s: &str) -> u32 {
    let y: u32 = s.parse().unwrap_or(0);
    if s.len() == 2 {
        2000 + y
    } else {
        y
    }
}

fn month(name: &str) -> u32 {
    let n = name.to_ascii_lowercase();
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .iter()
        .position(|m| n.starts_with(m))
        .map_or(0, |i| i as u32 + 1)
}

/// Whether the day exists.
fn exists(y: u32, m: u32, d: u32) -> bool {
    if !(1800..2200).contains(&y) || !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m as usize - 1];
    d <= days
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<(K, &str)> {
        let mut out = Vec::new();
        find(t, &super::super::exclude::zones(t), &mut out);
        out.iter().map(|s| (s.kind, &t[s.start..s.end])).collect()
    }

    #[test]
    fn dates_that_exist() {
        for d in [
            "5-20-2021",
            "5/20/2021",
            "2021-05-21",
            "21.5.2021",
            "21.5.21",
            "5-May-2021",
            "05/21/21",
            "21/05/21",
            "May-2021",
            "January 15, 2024",
            "15 January 2024",
            "2024-03-15T14:30:00Z",
            "2000-04-16 11:34:35",
            "5/20/2021, 3:15 PM",
            "January 15, 2024 at 09:00 UTC",
            "15 January 2024 14:30",
        ] {
            assert_eq!(found(d), [(K::Date, d)], "{d}");
        }
    }

    #[test]
    fn dates_that_do_not() {
        assert_eq!(found("2000-04-16 25:34"), [(K::Date, "2000-04-16")], "no hour 25");
        for d in ["2023-02-29", "13/45/2020", "2024-13-01", "00/00/0000", "5/20-2021", "1.2.21", "31.04.2021", "you may 2021", "2024-03-15T25:00"] {
            assert!(found(d).iter().all(|(k, _)| *k != K::Date), "{d}: {:?}", found(d));
        }
    }

    #[test]
    fn a_month_and_day_without_a_year_only_where_the_context_says_date() {
        for (t, d) in [
            ("seen on 7/22 for", "7/22"),
            ("pain since 3/14.", "3/14"),
            ("from 12/24 until 1/2", "12/24"),
            ("Mon 7/22 she called", "7/22"),
            ("dated 11/30 by", "11/30"),
            ("labs 7/22 14:30 were", "7/22 14:30"),
            ("called 7/22 at 3 pm", "7/22"),
            ("at 09:00 7/22 the", "7/22"),
        ] {
            assert!(found(t).contains(&(K::Date, d)), "{t}: {:?}", found(t));
        }
        for t in ["a ratio of 3/4 was", "BP 120/80 today", "pain 7/10 on exertion", "given 1/2 tab", "on 13/45 days", "scored 2/3 on"] {
            assert!(found(t).iter().all(|(k, _)| *k != K::Date), "{t}: {:?}", found(t));
        }
    }

    #[test]
    fn a_cue_makes_a_date_of_birth() {
        assert_eq!(found("DOB: 03/14/1962"), [(K::Dob, "03/14/1962")]);
        assert_eq!(found("date of birth is 14 March 1962"), [(K::Dob, "14 March 1962")]);
        assert_eq!(found("seen 03/14/2022"), [(K::Date, "03/14/2022")]);
    }
}
