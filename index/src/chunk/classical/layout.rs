//! A page's blocks: the body's headings, hadith, gradings, takhrij, verses, poems and
//! paragraphs, then, after a separator line, its footnotes.
//!
//! A block is a run of whole lines; what its first line starts decides its role (see
//! [`cues::line_start`]); a line that starts nothing continues the block before it,
//! except that a blank line ends every body block and a verse ends with its last ﴾.

use super::cues::{self, Start};
use super::skeleton::Skeleton;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Heading,
    Hadith,
    Grading,
    Takhrij,
    Verse,
    Poetry,
    Text,
    PageNumber,
    Footnote,
}

#[derive(Clone, Debug)]
pub(super) struct Block {
    pub role: Role,
    /// Line indices `[from, to)`.
    pub lines: (usize, usize),
    pub title: Option<String>,
    /// A footnote's number, and the line its own text starts on (after the separator).
    pub marker: Option<(u32, usize)>,
}

impl Block {
    fn new(role: Role, line: usize) -> Block {
        Block { role, lines: (line, line + 1), title: None, marker: None }
    }
}

/// The blocks of the page in order.
pub(super) fn blocks(page: &str, sk: &Skeleton) -> Vec<Block> {
    let separator = footnote_separator(page, sk);
    let body_end = separator.unwrap_or(sk.lines.len());
    let mut out = body(page, sk, body_end);
    if let Some(sep) = separator {
        footnotes(page, sk, sep, &mut out);
    }
    out
}

fn page_line<'a>(page: &'a str, sk: &Skeleton, i: usize) -> &'a str {
    let (s, e) = sk.lines[i].page;
    &page[s..e]
}

/// The last separator line whose next non-blank line opens a footnote.
fn footnote_separator(page: &str, sk: &Skeleton) -> Option<usize> {
    let mut next_is_note = false;
    for i in (0..sk.lines.len()).rev() {
        let line = page_line(page, sk, i);
        if line.trim().is_empty() {
            continue;
        }
        if next_is_note && cues::is_separator(line) {
            return Some(i);
        }
        next_is_note = cues::footnote_start(sk.line(&sk.lines[i])).is_some();
    }
    None
}

fn body(page: &str, sk: &Skeleton, end: usize) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut unclosed_verse = 0i32;
    for i in 0..end {
        let line = page_line(page, sk, i);
        if line.trim().is_empty() {
            out.extend(open.take());
            continue;
        }
        let start = cues::line_start(line, sk.line(&sk.lines[i]));
        if start == Start::Text {
            if let Some(b) = open.as_mut().filter(|b| b.role != Role::Verse || unclosed_verse > 0) {
                b.lines.1 = i + 1;
                unclosed_verse += verse_balance(line);
                continue;
            }
        }
        out.extend(open.take());
        let role = match start {
            Start::Heading(title) => {
                out.push(Block { title: Some(title), ..Block::new(Role::Heading, i) });
                continue;
            }
            Start::PageNumber => Role::PageNumber,
            Start::Poetry => Role::Poetry,
            Start::Hadith => Role::Hadith,
            Start::Grading => Role::Grading,
            Start::Takhrij => Role::Takhrij,
            Start::Verse => Role::Verse,
            Start::Text => Role::Text,
        };
        if matches!(role, Role::PageNumber | Role::Poetry) {
            out.push(Block::new(role, i));
        } else {
            unclosed_verse = verse_balance(line);
            open = Some(Block::new(role, i));
        }
    }
    out.extend(open);
    out
}

/// ﴿ opened minus ﴾ closed on `line`.
fn verse_balance(line: &str) -> i32 {
    line.chars().map(|c| (c == '﴿') as i32 - (c == '﴾') as i32).sum()
}

/// One footnote per marker line, with its continuation lines (blank lines included);
/// the separator line belongs to the first.
fn footnotes(page: &str, sk: &Skeleton, sep: usize, out: &mut Vec<Block>) {
    let mut first = true;
    for i in sep + 1..sk.lines.len() {
        if let Some((n, _)) = cues::footnote_start(sk.line(&sk.lines[i])) {
            let from = if first { sep } else { i };
            first = false;
            out.push(Block { marker: Some((n, i)), lines: (from, i + 1), ..Block::new(Role::Footnote, from) });
        } else if let Some(last) = out.last_mut().filter(|b| b.role == Role::Footnote) {
            last.lines.1 = i + 1;
        } else {
            debug_assert!(page_line(page, sk, i).trim().is_empty(), "the separator is followed by a footnote");
        }
    }
}
