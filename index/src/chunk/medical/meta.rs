//! What a whole note says about itself: when the encounter was, the dates and codes it
//! names, and the sections it has, in order.
//!
//! `encounterDate` is what `filters.date` should match a note by, so a labelled date
//! (`Date of service: …`, `DOS:`, `Visit date:`) wins over the first line's date (the
//! Synthea layout puts the encounter date alone on the first line).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::ChunkSpan;
use super::codes;
use crate::date::find_dates;

static DATE_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^[\s*_#-]*(?:date of (?:service|visit|encounter|exam|examination|admission|consultation)|dos|visit date|encounter date|service date|exam date|admission date|date)[\s*_]*[:\-][\s*_]*(.+)$",
    )
    .expect("valid pattern")
});

/// `encounterDate`, `dates`, `codes` and `sections` of a note (`kind` is added by the caller).
pub fn document_meta(pages: &[(&str, &[ChunkSpan])]) -> Map<String, Value> {
    let mut meta = Map::new();
    if let Some(day) = encounter_date(pages) {
        meta.insert("encounterDate".into(), Value::String(iso(day)));
    }
    let mut dates: Vec<i32> = Vec::new();
    for (text, _) in pages {
        for day in find_dates(text) {
            if !dates.contains(&day) {
                dates.push(day);
            }
        }
    }
    if !dates.is_empty() {
        meta.insert("dates".into(), Value::Array(dates.into_iter().map(|d| Value::String(iso(d))).collect()));
    }
    let mut found: Vec<codes::Code> = Vec::new();
    for (text, _) in pages {
        for code in codes::find(text) {
            if !found.iter().any(|c| c.system == code.system && c.code == code.code) {
                found.push(code);
            }
        }
    }
    if !found.is_empty() {
        meta.insert("codes".into(), Value::Array(found.iter().map(codes::Code::to_json).collect()));
    }
    let mut names: Vec<&str> = Vec::new();
    for heading in pages.iter().flat_map(|(_, chunks)| chunks.iter()).filter_map(|c| c.heading.as_deref()) {
        if !names.contains(&heading) {
            names.push(heading);
        }
    }
    if !names.is_empty() {
        meta.insert("sections".into(), Value::Array(names.into_iter().map(|n| Value::String(n.into())).collect()));
    }
    meta
}

/// The labelled date of service if there is one, else a date on the first non-blank line.
fn encounter_date(pages: &[(&str, &[ChunkSpan])]) -> Option<i32> {
    let labelled = pages.iter().find_map(|(text, _)| DATE_LABEL.captures_iter(text).find_map(|c| find_dates(&c[1]).first().copied()));
    labelled.or_else(|| {
        let first_line = pages.iter().flat_map(|(text, _)| text.lines()).find(|l| !l.trim().is_empty())?;
        find_dates(first_line).first().copied()
    })
}

/// `YYYY-MM-DD` of a day number (days since 1970-01-01), the inverse of
/// `date::days_from_civil` (Hinnant's algorithm over 400-year eras).
pub(crate) fn iso(days: i32) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i32::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::date::days_from_civil;

    #[test]
    fn iso_inverts_days_from_civil() {
        for (y, m, d) in [(1970, 1, 1), (2024, 2, 29), (2000, 3, 1), (1969, 12, 31), (2099, 12, 31), (1900, 2, 28)] {
            assert_eq!(iso(days_from_civil(y, m, d)), format!("{y:04}-{m:02}-{d:02}"));
        }
    }

    #[test]
    fn a_labelled_date_wins_over_the_first_line() {
        let page = "2023-01-05\nClinic note\nDate of service: 03/14/2024\nSeen 2024-03-10.";
        let meta = document_meta(&[(page, &[])]);
        assert_eq!(meta["encounterDate"], "2024-03-14");
        assert_eq!(meta["dates"], serde_json::json!(["2023-01-05", "2024-03-14", "2024-03-10"]));
        let meta = document_meta(&[("2023-01-05\n\n# Chief Complaint\nCough", &[])]);
        assert_eq!(meta["encounterDate"], "2023-01-05");
        assert!(document_meta(&[("Cough for 3 days.", &[])]).get("encounterDate").is_none());
    }
}
