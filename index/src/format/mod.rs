//! Document formats: what a payload is, and how it becomes pages of text.
//!
//! Every format ends as [`PageDraft`]s whose text the chunkers read and chunk offsets
//! index, so each keeps its structure in the page-text conventions the chunkers know
//! (Markdown-like: `# ` headings, `- ` items, `| … |` rows, `(n)` footnote markers,
//! `________` separators). A closed set: the name is part of the API (`format`) and of
//! what a segment stores per document. One file per format.

mod check;
mod csv;
mod detect;
mod error;
mod html;
mod json;
mod text;

pub use check::check_text;
pub use error::FormatError;

use crate::ingest::PageDraft;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Text,
    Markdown,
    Html,
    Csv,
    Tsv,
    Json,
    /// Pages given one by one (`pages[]`): nothing to parse, only to check.
    Pages,
}

/// What a payload became: its pages, and the title the document itself gives (an HTML
/// `<title>`), which a request's own title overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub pages: Vec<PageDraft>,
    pub title: Option<String>,
}

impl Format {
    pub const ALL: [Format; 7] = [Format::Text, Format::Markdown, Format::Html, Format::Csv, Format::Tsv, Format::Json, Format::Pages];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Json => "json",
            Format::Pages => "pages",
        }
    }

    /// The format named `name`, as the API spells it (`auto` is not a format: see
    /// [`Format::detect`]).
    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The format a string payload of unknown kind looks like (`format: auto`).
    pub fn detect(content: &str) -> Format {
        detect::detect(content)
    }

    /// Plain text or Markdown, whichever `text` looks like (a `text` payload).
    pub fn detect_text(text: &str) -> Format {
        if detect::looks_like_markdown(text) {
            Format::Markdown
        } else {
            Format::Text
        }
    }

    /// The pages of `input`, a payload in this format. [`Format::Pages`] has no single
    /// text: its pages go through [`check_pages`].
    pub fn read(self, input: &str) -> Result<Parsed, FormatError> {
        check_text(input)?;
        let parsed = match self {
            Format::Text | Format::Markdown => Parsed { pages: text::read(input), title: None },
            Format::Html => html::read(input),
            Format::Csv => csv::read(input, b',')?,
            Format::Tsv => csv::read(input, b'\t')?,
            Format::Json => json::read(input)?,
            Format::Pages => return Err(FormatError::PagesAsText),
        };
        if parsed.pages.iter().all(|p| p.text.trim().is_empty()) {
            return Err(FormatError::NoText { format: self });
        }
        Ok(parsed)
    }
}

/// `pages[]` as given: each page's text checked (the error names `pages[i].text`),
/// and at least one holding text.
pub fn check_pages(pages: &[PageDraft]) -> Result<(), FormatError> {
    if pages.is_empty() {
        return Err(FormatError::NoPages);
    }
    for (i, p) in pages.iter().enumerate() {
        check_text(&p.text).map_err(|e| FormatError::InPage { page: i, source: Box::new(e) })?;
    }
    if pages.iter().all(|p| p.text.trim().is_empty()) {
        return Err(FormatError::NoText { format: Format::Pages });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
