//! The block structure of a page: paragraphs, headings, lists and tables.
//!
//! Chunking must not cut a table row or a list item in half, and must know which heading a
//! passage sits under. This reads the Markdown-like structure that text extraction
//! leaves behind (ATX and setext headings, bullet and numbered items, pipe tables, and
//! tab-separated rows from spreadsheets and PDFs) without parsing full Markdown: those
//! line shapes are what PDFs, spreadsheets and the HTML format leave, and CommonMark
//! reads several of them otherwise (`a)` items, pipe rows with no delimiter row, tabs).
//! Fenced code blocks are the exception, found by pulldown-cmark's offset iterator
//! (fence lengths, `~~~`, info strings): a fence is one block, and a `# ` line inside it
//! is code, not a heading.

/// A byte range of the page, trimmed of whitespace at both ends.
pub(crate) type Range = (usize, usize);

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    Heading {
        range: Range,
        text: String,
    },
    Paragraph {
        range: Range,
    },
    /// One range per item, each with its continuation lines.
    List {
        items: Vec<Range>,
    },
    /// One range per row.
    Table {
        rows: Vec<Range>,
    },
}

/// The blocks of `text` in order. Blank lines separate blocks; inside a run of non-blank
/// lines, headings, lists and tables start new blocks where they begin.
/// A closed fenced code block is one paragraph.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut from = 0;
    for fence in fences(text) {
        runs_into(text, from, fence.0, &mut out);
        out.extend(trim(text, fence).map(|range| Block::Paragraph { range }));
        from = fence.1;
    }
    runs_into(text, from, text.len(), &mut out);
    out
}

fn runs_into(text: &str, from: usize, to: usize, out: &mut Vec<Block>) {
    let lines = lines(text, from, to);
    for run in lines.split(|&(s, e)| is_blank(&text[s..e])) {
        if !run.is_empty() {
            Run { text, lines: run }.parse_into(out);
        }
    }
}

/// The whole lines of each closed fenced code block outside lists and quotes, in order.
fn fences(text: &str) -> Vec<Range> {
    use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
    if !text.contains("```") && !text.contains("~~~") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut depth = 0u32;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::List(_) | Tag::Item | Tag::BlockQuote(_)) => depth += 1,
            Event::End(TagEnd::List(_) | TagEnd::Item | TagEnd::BlockQuote(_)) => depth = depth.saturating_sub(1),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) if depth == 0 => out.extend(closed_fence(text, range)),
            _ => {}
        }
    }
    out
}

/// `range` widened to whole lines, when its last line closes the fence.
fn closed_fence(text: &str, range: std::ops::Range<usize>) -> Option<Range> {
    let start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let end = match text[..range.end].strip_suffix('\n') {
        Some(kept) => kept.len(),
        None => text[range.end..].find('\n').map_or(text.len(), |i| range.end + i),
    };
    let body = text[start..end].trim_end();
    let last = body.rsplit('\n').next().unwrap_or("").trim();
    let closes = body.contains('\n') && (last.starts_with("```") || last.starts_with("~~~"));
    closes.then_some((start, end))
}

/// The first heading's text, if the page has one.
pub(crate) fn first_heading(text: &str) -> Option<String> {
    blocks(text).into_iter().find_map(|b| match b {
        Block::Heading { text, .. } => Some(text),
        _ => None,
    })
}

/// Byte ranges of the lines of `text[from..to]`, without their `\n`.
fn lines(text: &str, from: usize, to: usize) -> Vec<Range> {
    let mut start = from;
    let mut out: Vec<Range> = memchr::memchr_iter(b'\n', &text.as_bytes()[from..to])
        .map(|at| {
            let line = (start, from + at);
            start = from + at + 1;
            line
        })
        .collect();
    out.push((start, to));
    out
}

fn is_blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

/// `range` shrunk to exclude whitespace at both ends; `None` if nothing is left.
pub(crate) fn trim(text: &str, (start, end): Range) -> Option<Range> {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let trimmed = s.trim();
    (!trimmed.is_empty()).then(|| (start + lead, start + lead + trimmed.len()))
}

/// `# Title` (1–6 `#`, then a space): the title without the `#`s, closing ones included.
fn atx_heading(line: &str) -> Option<String> {
    let line = line.trim();
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    (!title.is_empty()).then(|| title.to_string())
}

/// A line of only `=` or only `-` (at least two) under a line of text.
fn is_setext_underline(line: &str) -> bool {
    let line = line.trim();
    line.len() >= 2 && (line.bytes().all(|b| b == b'=') || line.bytes().all(|b| b == b'-'))
}

/// `- item`, `* item`, `+ item`, `• item`, `1. item`, `1) item`, `a) item`.
fn is_list_item(line: &str) -> bool {
    let line = line.trim_start();
    let after = |marker_len: usize| line[marker_len..].starts_with(char::is_whitespace);
    if line.starts_with(['-', '*', '+', '•']) {
        return after(line.chars().next().map_or(1, char::len_utf8));
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if (1..=9).contains(&digits) && line[digits..].starts_with(['.', ')']) {
        return after(digits + 1);
    }
    let letter = line.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
    letter && line[1..].starts_with(')') && after(2)
}

fn is_pipe_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// `|---|:--:|` or `--- | ---`: the row under a pipe table's header.
fn is_delimiter_row(line: &str) -> bool {
    let line = line.trim();
    line.contains('|') && line.contains('-') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Tabs between a line's first and last non-whitespace characters.
fn inner_tabs(line: &str) -> usize {
    line.trim().matches('\t').count()
}

struct Run<'a> {
    text: &'a str,
    lines: &'a [Range],
}

impl Run<'_> {
    fn line(&self, i: usize) -> &str {
        let (s, e) = self.lines[i];
        &self.text[s..e]
    }

    /// The trimmed range from line `from` through line `to - 1`.
    fn range(&self, from: usize, to: usize) -> Range {
        let span = (self.lines[from].0, self.lines[to - 1].1);
        trim(self.text, span).expect("a run's lines are not blank")
    }

    fn parse_into(&self, out: &mut Vec<Block>) {
        let mut i = 0;
        while i < self.lines.len() {
            let (block, next) = self.block_at(i);
            out.push(block);
            i = next;
        }
    }

    /// The block starting at line `i` and the line after it.
    fn block_at(&self, i: usize) -> (Block, usize) {
        if let Some(text) = atx_heading(self.line(i)) {
            return (Block::Heading { range: self.range(i, i + 1), text }, i + 1);
        }
        if self.is_setext_heading(i) {
            let text = self.line(i).trim().to_string();
            return (Block::Heading { range: self.range(i, i + 2), text }, i + 2);
        }
        let n_rows = self.table_rows(i);
        if n_rows >= 2 {
            let rows = (i..i + n_rows).map(|r| self.range(r, r + 1)).collect();
            return (Block::Table { rows }, i + n_rows);
        }
        if is_list_item(self.line(i)) {
            return self.list_at(i);
        }
        let end = (i + 1..self.lines.len()).find(|&j| self.starts_block(j) || is_list_item(self.line(j)));
        let end = end.unwrap_or(self.lines.len());
        (Block::Paragraph { range: self.range(i, end) }, end)
    }

    fn list_at(&self, i: usize) -> (Block, usize) {
        let end = (i + 1..self.lines.len()).find(|&j| self.starts_block(j)).unwrap_or(self.lines.len());
        let mut starts: Vec<usize> = (i..end).filter(|&j| is_list_item(self.line(j))).collect();
        starts.push(end);
        let items = starts.windows(2).map(|w| self.range(w[0], w[1])).collect();
        (Block::List { items }, end)
    }

    /// True where a heading or a table begins (which ends a paragraph or a list).
    fn starts_block(&self, j: usize) -> bool {
        atx_heading(self.line(j)).is_some() || self.is_setext_heading(j) || self.table_rows(j) >= 2
    }

    fn is_setext_heading(&self, i: usize) -> bool {
        let underlined = i + 1 < self.lines.len() && is_setext_underline(self.line(i + 1));
        underlined && !is_list_item(self.line(i)) && !is_setext_underline(self.line(i))
    }

    /// How many table rows start at line `i` (0 or 1 when none do).
    fn table_rows(&self, i: usize) -> usize {
        let n = self.lines.len();
        let count_from = |f: &dyn Fn(&str) -> bool| (i..n).take_while(|&j| f(self.line(j))).count();
        let piped = count_from(&is_pipe_row);
        if piped >= 2 {
            return piped;
        }
        if i + 1 < n && self.line(i).contains('|') && is_delimiter_row(self.line(i + 1)) {
            return count_from(&|l: &str| l.contains('|'));
        }
        let tabs = inner_tabs(self.line(i));
        if tabs == 0 {
            return 0;
        }
        count_from(&|l: &str| inner_tabs(l) == tabs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        blocks(text)
            .iter()
            .map(|b| match b {
                Block::Heading { .. } => "heading",
                Block::Paragraph { .. } => "paragraph",
                Block::List { .. } => "list",
                Block::Table { .. } => "table",
            })
            .collect()
    }

    #[test]
    fn finds_headings_of_both_styles() {
        assert_eq!(first_heading("intro\n\n## Dosage ##\ntext"), Some("Dosage".into()));
        assert_eq!(first_heading("Results\r\n=======\r\nbody"), Some("Results".into()));
        assert_eq!(first_heading("#hashtag\n####### seven"), None);
        assert_eq!(kinds("# A\ntext\nmore\n\nSub\n---\nbody"), ["heading", "paragraph", "heading", "paragraph"]);
    }

    #[test]
    fn finds_lists_and_their_items() {
        let text = "Take:\n- one\n  still one\n* two\n\n1. first\n2) second\na) third\n• fourth";
        assert_eq!(kinds(text), ["paragraph", "list", "list"]);
        let Block::List { items } = &blocks(text)[1] else { panic!() };
        let items: Vec<&str> = items.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(items, ["- one\n  still one", "* two"]);
        assert_eq!(kinds("-not a list\n1.5 mg"), ["paragraph"]);
    }

    #[test]
    fn a_fenced_block_is_one_paragraph_and_holds_no_headings() {
        let text = "# Real\n\n```rust\n# not a heading\n\nfn x() {}\n```\nafter\n\n~~~~\n- not a list\n~~~~";
        assert_eq!(kinds(text), ["heading", "paragraph", "paragraph", "paragraph"]);
        let Block::Paragraph { range } = &blocks(text)[1] else { panic!() };
        assert_eq!(&text[range.0..range.1], "```rust\n# not a heading\n\nfn x() {}\n```");
        assert_eq!(first_heading("```\n# code\n```\n# Title"), Some("Title".into()));
        // An unclosed fence, and fences inside list items, are read line by line.
        assert_eq!(kinds("```\n# Open\ntext"), ["paragraph", "heading", "paragraph"]);
        assert_eq!(kinds("- item\n\n  ```\n  code\n  ```"), ["list", "paragraph"]);
        assert_eq!(kinds("a\r\n```\r\n# c\r\n```\r\nb"), ["paragraph", "paragraph", "paragraph"]);
    }

    #[test]
    fn finds_pipe_and_tab_tables() {
        let text = "Lab results\n| test | value |\n|---|---|\n| Hb | 13 |\nafter\n\na\tb\tc\n1\t2\t3\n\nx\ty\n";
        assert_eq!(kinds(text), ["paragraph", "table", "paragraph", "table", "paragraph"]);
        let Block::Table { rows } = &blocks(text)[1] else { panic!() };
        assert_eq!(rows.len(), 3);
        assert_eq!(kinds("name | dose\n--- | ---\naspirin | 81 mg"), ["table"]);
    }
}
