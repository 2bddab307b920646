//! `format: auto` for a string payload: HTML when it opens with markup, JSON when it
//! parses as an array or object, TSV or CSV when its first rows agree on a field
//! count, else Markdown or plain text.

use super::Format;

/// How many leading records the CSV and TSV sniff reads.
const SNIFF_RECORDS: usize = 10;

pub(super) fn detect(content: &str) -> Format {
    let head = content.trim_start_matches('\u{feff}').trim_start();
    if looks_like_html(head) {
        return Format::Html;
    }
    if head.starts_with(['[', '{']) && serde_json::from_str::<serde::de::IgnoredAny>(content).is_ok() {
        return Format::Json;
    }
    if sniff_delimited(head, b'\t') {
        return Format::Tsv;
    }
    if !looks_like_markdown(head) && sniff_delimited(head, b',') {
        return Format::Csv;
    }
    Format::detect_text(content)
}

/// Opens with a tag, a comment or a doctype.
fn looks_like_html(head: &str) -> bool {
    let mut rest = head.chars().skip_while(|&c| c == '<');
    head.starts_with('<') && rest.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '!')
}

/// At least three records (a header and two rows), all with the same number of
/// fields, two or more.
fn sniff_delimited(head: &str, delimiter: u8) -> bool {
    let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(head.as_bytes());
    let mut record = csv::ByteRecord::new();
    let (mut count, mut fields) = (0, None);
    while count < SNIFF_RECORDS && reader.read_byte_record(&mut record).unwrap_or(false) {
        if *fields.get_or_insert(record.len()) != record.len() {
            return false;
        }
        count += 1;
    }
    count >= 3 && fields.is_some_and(|n| n >= 2)
}

/// A heading, a fence or a pipe row on some line.
pub(super) fn looks_like_markdown(s: &str) -> bool {
    s.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("# ") || l.starts_with("## ") || l.starts_with("```") || (l.starts_with('|') && l.trim_end().ends_with('|'))
    })
}
