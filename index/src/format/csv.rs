//! CSV and TSV: a header row, then rows. A page holds up to [`PAGE_ROWS`] rows (fewer
//! when they would pass [`PAGE_CHARS`]), written as a `# ` heading of the column names
//! and one pipe row per record, so every chunk of the page sits under the header (its
//! `heading`) and no chunk cuts a row. The page's meta says which columns and rows it
//! holds: `{"columns": […], "rows": [first, last]}`, rows counted from 1 after the header.
//!
//! Why 20 rows: a page is what a citation names and what gets one embedding vector, from
//! the first 256–512 tokens of its text. Twenty rows of a typical record (60–100 chars)
//! are 1.2–2 KB, about what the embedder reads and one or two chunks at the default
//! chunk sizes; the char cap keeps pages of long rows within that too.

use serde_json::{json, Map, Value};

use super::check::line_column;
use super::{FormatError, Parsed};
use crate::ingest::PageDraft;

pub const PAGE_ROWS: usize = 20;
pub const PAGE_CHARS: usize = 2000;

pub(super) fn read(input: &str, delimiter: u8) -> Result<Parsed, FormatError> {
    let input = input.strip_prefix('\u{feff}').unwrap_or(input);
    let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(input.as_bytes());
    let mut record = csv::StringRecord::new();
    let mut last_start = 0;
    let mut pages = Pages::default();
    while read_record(&mut reader, &mut record)? {
        let pos = record.position().expect("a read record has a position");
        last_start = pos.byte() as usize;
        if pages.columns.is_empty() {
            pages.header(&record);
            continue;
        }
        if record.len() != pages.columns.len() {
            return Err(FormatError::FieldCount { row: pos.record(), line: pos.line(), found: record.len(), expected: pages.columns.len() });
        }
        pages.row(&record, pos.record());
    }
    check_closed(input, last_start, delimiter)?;
    if pages.columns.is_empty() {
        return Ok(Parsed::default());
    }
    pages.finish()
}

fn read_record(reader: &mut csv::Reader<&[u8]>, record: &mut csv::StringRecord) -> Result<bool, FormatError> {
    // The input is a &str and the reader is flexible: its only error left is bad UTF-8
    // in a field, which a &str cannot hold.
    Ok(reader.read_record(record).unwrap_or(false))
}

/// A quoted field with no closing quote runs to the end of the input, so it can only be
/// in the last record: its fields are walked as the reader does (a quote opens a field
/// only at its start; `""` inside is a quote).
fn check_closed(input: &str, last_start: usize, delimiter: u8) -> Result<(), FormatError> {
    let bytes = input.as_bytes();
    let mut at = last_start;
    let mut field_start = true;
    while at < bytes.len() {
        let b = bytes[at];
        if field_start && b == b'"' {
            let open = at;
            at += 1;
            loop {
                match memchr::memchr(b'"', &bytes[at..]) {
                    None => {
                        let (line, column) = line_column(input, open);
                        return Err(FormatError::UnclosedQuote { line, column });
                    }
                    Some(i) if bytes.get(at + i + 1) == Some(&b'"') => at += i + 2,
                    Some(i) => {
                        at += i + 1;
                        break;
                    }
                }
            }
            field_start = false;
            continue;
        }
        field_start = b == delimiter || b == b'\n' || b == b'\r';
        at += 1;
    }
    Ok(())
}

#[derive(Default)]
struct Pages {
    columns: Vec<String>,
    heading: String,
    out: Vec<PageDraft>,
    text: String,
    rows: Option<(u64, u64)>,
    in_page: usize,
}

impl Pages {
    fn header(&mut self, record: &csv::StringRecord) {
        self.columns = record.iter().enumerate().map(|(i, c)| column_name(c, i)).collect();
        self.heading = self.columns.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ");
    }

    fn row(&mut self, record: &csv::StringRecord, n: u64) {
        let mut line = String::with_capacity(record.as_slice().len() + 4 * record.len());
        line.push('|');
        for field in record.iter() {
            line.push(' ');
            line.push_str(&cell(field));
            line.push_str(" |");
        }
        let full = self.in_page >= PAGE_ROWS || (self.in_page > 0 && self.text.len() + line.len() > PAGE_CHARS);
        if full {
            self.end_page();
        }
        if self.in_page == 0 {
            self.text.push_str("# ");
            self.text.push_str(&self.heading);
            self.text.push_str("\n\n");
        } else {
            self.text.push('\n');
        }
        self.text.push_str(&line);
        self.in_page += 1;
        self.rows = Some((self.rows.map_or(n, |r| r.0), n));
    }

    fn end_page(&mut self) {
        let Some((first, last)) = self.rows.take() else { return };
        let mut meta = Map::new();
        meta.insert("columns".into(), json!(self.columns));
        meta.insert("rows".into(), Value::Array(vec![first.into(), last.into()]));
        let text = std::mem::take(&mut self.text);
        self.out.push(PageDraft { text, number: None, volume: None, heading: Some(self.heading.clone()), meta: Some(meta) });
        self.in_page = 0;
    }

    fn finish(mut self) -> Result<Parsed, FormatError> {
        self.end_page();
        if self.out.is_empty() {
            return Err(FormatError::NoRows);
        }
        Ok(Parsed { pages: self.out, title: None })
    }
}

fn column_name(c: &str, i: usize) -> String {
    let c = c.trim();
    if c.is_empty() {
        format!("column {}", i + 1)
    } else {
        c.to_owned()
    }
}

/// A field as a pipe-table cell: on one line, trimmed, `|` escaped.
fn cell(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut space = false;
    for c in field.trim().chars() {
        match c {
            '\r' | '\n' => space = true,
            '|' => {
                flush_space(&mut out, &mut space);
                out.push_str("\\|");
            }
            c => {
                flush_space(&mut out, &mut space);
                out.push(c);
            }
        }
    }
    out
}

fn flush_space(out: &mut String, space: &mut bool) {
    if std::mem::take(space) && !out.ends_with(' ') {
        out.push(' ');
    }
}
