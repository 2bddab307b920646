//! Why a payload could not be read, naming the line, column, record or field.

use super::Format;

/// A refused payload. Lines and columns count from 1 (columns in characters); CSV
/// records count data rows from 1 (the header is row 0); JSON records are array
/// indices from 0, written as the payload's path (`[3]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("the document has no text.")]
    NoText { format: Format },
    #[error("must hold at least one page.")]
    NoPages,
    #[error("[{page}].text: {source}")]
    InPage { page: usize, source: Box<FormatError> },
    #[error("holds the control character U+{code:04X} at line {line}, column {column}: binary data is not a document.")]
    Binary { code: u32, line: usize, column: usize },
    #[error("holds the noncharacter U+{code:04X} at line {line}, column {column}: the text was not decoded correctly.")]
    Noncharacter { code: u32, line: usize, column: usize },
    #[error("the quoted field that starts at line {line}, column {column} has no closing quote.")]
    UnclosedQuote { line: usize, column: usize },
    #[error("row {row} (line {line}) has {found} fields; the header has {expected}.")]
    FieldCount { row: u64, line: u64, found: usize, expected: usize },
    #[error("has a header row but no rows.")]
    NoRows,
    #[error("does not parse as JSON: {reason} at line {line}, column {column}.")]
    Json { reason: String, line: usize, column: usize },
    #[error("must be an array of records or an object, not {found}.")]
    NotRecords { found: &'static str },
    #[error("[{record}] is {found}, not an object: each record of the array must be an object.")]
    NotARecord { record: usize, found: &'static str },
    #[error("pages are sent as pages[], not as one text.")]
    PagesAsText,
}
