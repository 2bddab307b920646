//! Splitting a document's text into pages.
//!
//! Citations point at pages, so page boundaries from the source must survive extraction.
//! Extractors mark them with form feeds (`pdftotext`) or with `--- page N ---` lines that
//! also carry the printed page number (`xii`, `3a`), which a citation should show.

use super::blocks::first_heading;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageText {
    /// The page's text, trailing whitespace removed; chunk offsets point into it.
    pub text: String,
    /// The number from the `--- page N ---` line that began the page, if any.
    pub number: Option<String>,
    /// The page's first Markdown heading, without its `#`s.
    pub heading: Option<String>,
}

/// The pages of `text`: a form feed ends a page, and a `--- page N ---` line ends one and
/// begins page N (the line itself belongs to no page). Blank pages are dropped.
pub fn split_pages(text: &str) -> Vec<PageText> {
    let mut pages = Vec::new();
    let mut number = None;
    let mut start = 0;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let line_end = line_start + line.len();
        if let Some(n) = page_marker(line) {
            push_form_fed(&text[start..line_start], number.take(), &mut pages);
            number = Some(n.to_string());
            start = line_end;
        }
        line_start = line_end;
    }
    push_form_fed(&text[start..], number, &mut pages);
    pages
}

/// Pushes the pages of `text` split at form feeds; the first non-blank one gets `number`.
fn push_form_fed(text: &str, mut number: Option<String>, pages: &mut Vec<PageText>) {
    for part in text.split('\x0C') {
        let part = part.trim_end();
        if !part.trim_start().is_empty() {
            let (text, heading, number) = (part.to_string(), first_heading(part), number.take());
            pages.push(PageText { text, number, heading });
        }
    }
}

/// N in a `--- page N ---` line (any case, flexible spaces, three or more dashes).
fn page_marker(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix("---")?.strip_suffix("---")?;
    let inner = inner.trim_matches('-').trim();
    let word = inner.get(..4).filter(|w| w.eq_ignore_ascii_case("page"))?;
    let number = inner[word.len()..].strip_prefix(char::is_whitespace)?.trim();
    let single_token = !number.is_empty() && !number.contains(char::is_whitespace);
    single_token.then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pages: &[PageText]) -> Vec<(&str, Option<&str>)> {
        pages.iter().map(|p| (p.text.as_str(), p.number.as_deref())).collect()
    }

    #[test]
    fn splits_at_form_feeds() {
        let pages = split_pages("one\n\x0Ctwo  \n\x0C \n\x0Cthree");
        assert_eq!(texts(&pages), [("one", None), ("two", None), ("three", None)]);
    }

    #[test]
    fn splits_at_page_markers_and_keeps_their_numbers() {
        let text = "front matter\n--- page xii ---\n# Preface\nwords\r\n  ---PAGE   3a---  \r\nmore\n--- Page 4 ---\n";
        let pages = split_pages(text);
        assert_eq!(texts(&pages), [("front matter", None), ("# Preface\nwords", Some("xii")), ("more", Some("3a"))]);
        assert_eq!(pages[1].heading.as_deref(), Some("Preface"));
        assert_eq!(pages[0].heading, None);
    }

    #[test]
    fn keeps_leading_text_exactly_and_drops_blank_prefix() {
        let pages = split_pages("  \n--- page 1 ---\n  indented\n\nbody \n");
        assert_eq!(texts(&pages), [("  indented\n\nbody", Some("1"))]);
    }

    #[test]
    fn empty_documents_have_no_pages() {
        assert!(split_pages("").is_empty());
        assert!(split_pages(" \n\x0C\t\n").is_empty());
        assert!(split_pages("--- page 1 ---\n--- page 2 ---").is_empty());
        let after_feed = split_pages("--- page 7 ---\n\x0Cseven\x0Ceight");
        assert_eq!(texts(&after_feed), [("seven", Some("7")), ("eight", None)]);
    }

    #[test]
    fn ignores_lines_that_only_look_like_markers() {
        for line in ["--- page ---", "--- pages 3 ---", "--- page 3 4 ---", "-- page 3 --", "--- page3 ---"] {
            let pages = split_pages(&format!("a\n{line}\nb"));
            assert_eq!(pages.len(), 1, "{line}");
        }
    }
}
