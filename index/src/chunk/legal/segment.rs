//! A legal page as units (paragraphs that begin at a clause number, heading lines, plain
//! paragraphs), then packed into chunks.
//!
//! The rules: a clause chunk starts at its number. A top-level clause (`ARTICLE`, `§`,
//! `Section`, `1.`, `1.2`) starts a new group, so nothing before it joins its chunk; a
//! nested clause (`(a)`, `(iv)`) stays in its parent's group and joins the parent's chunk
//! while the chunk stays within `target_chars`, else starts its own chunk. A heading joins
//! the text after it unless that text starts a clause (then the heading stands alone, so
//! the clause chunk still starts at its number). A unit longer than `max_chars` is cut at
//! sentence ends that are not abbreviations (`U.S.C.`, `No.`, `v.`), else at spaces.

use super::super::blocks::{trim, Range};
use super::super::prose::split_at;
use super::lines::{lines, ClauseStart, LineKind, Number};

/// The options with `1 <= target <= max`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub target: usize,
    pub max: usize,
}

/// A packed chunk (or, before packing, one unit). Legal text packs by its own rules
/// ([`pack`]: nested clauses, headings), so only the shared spans read it.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    pub range: Range,
    pub chars: usize,
    group: u32,
    /// The piece begins at a clause number.
    pub starts_clause: bool,
    /// The piece holds a heading line (or a clause line that is only number and caption).
    pub has_heading: bool,
    /// The piece is heading lines only (it may still absorb the text after it).
    only_headings: bool,
    /// The clause in force where the piece starts (`2.1`, `7(a)(2)`), an index in `clauses`.
    pub clause: Option<usize>,
    /// The heading in force, an index in `headings`.
    pub heading: Option<usize>,
}

impl crate::chunk::unit::Unit for Piece {
    fn range(&self) -> Range {
        self.range
    }

    fn chars(&self) -> usize {
        self.chars
    }
}

/// What one pass over a page found.
pub(super) struct Segmented {
    pub pieces: Vec<Piece>,
    /// Every clause started on the page: its path and caption, in order.
    pub clauses: Vec<(String, Option<String>, bool)>,
    pub headings: Vec<String>,
}

/// The numbering in force: the top-level number, then the nested `(…)` parts.
#[derive(Default)]
struct Numbering {
    base: Option<String>,
    /// Each nested level: its style and number, with its caption.
    nested: Vec<(Style, String, Option<String>)>,
    base_caption: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Lower,
    Upper,
    Digit,
    LowerRoman,
    UpperRoman,
}

impl Numbering {
    fn enter(&mut self, clause: &ClauseStart) -> String {
        match &clause.number {
            Number::Article(n) | Number::Section(n) => {
                self.base = Some(n.clone());
                self.base_caption = clause.caption.clone();
                self.nested.clear();
            }
            Number::Paren(n) => {
                let style = self.style_of(n);
                if let Some(at) = self.nested.iter().position(|(s, _, _)| *s == style) {
                    self.nested.truncate(at);
                }
                self.nested.push((style, n.clone(), clause.caption.clone()));
            }
        }
        self.path()
    }

    fn path(&self) -> String {
        let mut out = self.base.clone().unwrap_or_default();
        for (_, n, _) in &self.nested {
            out.push('(');
            out.push_str(n);
            out.push(')');
        }
        out
    }

    /// The innermost caption in force.
    fn caption(&self) -> Option<&String> {
        self.nested.iter().rev().find_map(|(_, _, c)| c.as_ref()).or(self.base_caption.as_ref())
    }

    /// `(i)` after `(h)` is a letter; otherwise `i`, `v`, `x` (and longer runs of them)
    /// are roman numerals.
    fn style_of(&self, n: &str) -> Style {
        let roman = |c: char| "ivxlc".contains(c.to_ascii_lowercase());
        let upper = n.chars().all(|c| c.is_ascii_uppercase());
        if n.chars().all(|c| c.is_ascii_digit()) {
            return Style::Digit;
        }
        let letter_style = if upper { Style::Upper } else { Style::Lower };
        let sibling_letter = self.nested.iter().any(|(s, prev, _)| *s == letter_style && is_next_letter(prev, n));
        if n.chars().all(roman) && !sibling_letter {
            return if upper { Style::UpperRoman } else { Style::LowerRoman };
        }
        letter_style
    }

    fn reset(&mut self) {
        *self = Numbering::default();
    }
}

fn is_next_letter(prev: &str, n: &str) -> bool {
    let (mut p, mut c) = (prev.chars(), n.chars());
    match (p.next(), c.next(), p.next(), c.next()) {
        (Some(a), Some(b), None, None) => b as u32 == a as u32 + 1,
        _ => false,
    }
}

/// The units of `page` and what they were found under.
pub(super) fn segment(page: &str, limits: Limits) -> Segmented {
    let mut s = Segmenter {
        page,
        limits,
        out: Vec::new(),
        clauses: Vec::new(),
        headings: Vec::new(),
        numbering: Numbering::default(),
        group: 0,
        clause: None,
        heading: None,
        section: None,
        open: None,
        awaiting_caption: false,
    };
    for line in lines(page) {
        s.line(line.range, line.kind);
    }
    s.close();
    Segmented { pieces: s.out, clauses: s.clauses, headings: s.headings }
}

/// A paragraph being read: its range so far and whether it began a clause / holds a heading.
struct Open {
    range: Range,
    starts_clause: bool,
    has_heading: bool,
    only_headings: bool,
}

struct Segmenter<'a> {
    page: &'a str,
    limits: Limits,
    out: Vec<Piece>,
    clauses: Vec<(String, Option<String>, bool)>,
    headings: Vec<String>,
    numbering: Numbering,
    group: u32,
    clause: Option<usize>,
    heading: Option<usize>,
    /// The last heading line's heading (what a clause without a caption sits under).
    section: Option<usize>,
    open: Option<Open>,
    /// The last line began a clause with no caption (`ARTICLE IV`): a heading line next is
    /// its caption.
    awaiting_caption: bool,
}

impl Segmenter<'_> {
    fn line(&mut self, range: Range, kind: LineKind) {
        let awaiting = std::mem::take(&mut self.awaiting_caption);
        match kind {
            LineKind::Blank if awaiting => self.awaiting_caption = true,
            LineKind::Blank => self.close(),
            LineKind::Text => self.text(range),
            LineKind::Heading { text, .. } if awaiting => self.caption_line(range, text),
            LineKind::Heading { text, reset } => self.heading_line(range, text, reset),
            LineKind::Clause(clause) => self.clause_line(range, clause),
        }
    }

    fn text(&mut self, range: Range) {
        match &mut self.open {
            Some(open) => {
                open.range.1 = range.1;
                open.only_headings = false;
            }
            None => self.open = Some(Open { range, starts_clause: false, has_heading: false, only_headings: false }),
        }
    }

    fn heading_line(&mut self, range: Range, text: String, reset: bool) {
        self.close();
        if reset {
            self.numbering.reset();
            self.clause = None;
        }
        self.group += 1;
        self.heading = Some(self.push_heading(text));
        self.section = self.heading;
        self.open = Some(Open { range, starts_clause: false, has_heading: true, only_headings: true });
        self.close();
    }

    /// `ARTICLE IV` then `TERMINATION`: the second line is the first one's caption.
    fn caption_line(&mut self, range: Range, text: String) {
        if let Some(open) = &mut self.open {
            open.range.1 = range.1;
            open.has_heading = true;
        }
        self.numbering.base_caption = Some(text.clone());
        if let Some(last) = self.clauses.last_mut() {
            last.1 = Some(text.clone());
        }
        self.heading = Some(self.push_heading(text));
        self.section = self.heading;
    }

    fn clause_line(&mut self, range: Range, clause: ClauseStart) {
        self.close();
        if !clause.number.is_paren() {
            self.group += 1;
        }
        let path = self.numbering.enter(&clause);
        self.clauses.push((path, clause.caption.clone(), clause.number.is_paren()));
        self.clause = Some(self.clauses.len() - 1);
        self.heading = match self.numbering.caption().cloned() {
            Some(caption) => Some(self.push_heading(caption)),
            None => self.section,
        };
        if matches!(clause.number, Number::Article(_)) {
            self.section = self.heading;
        }
        self.awaiting_caption = clause.caption.is_none() && clause.whole_line;
        let has_heading = clause.whole_line && clause.caption.is_some();
        self.open = Some(Open { range, starts_clause: true, has_heading, only_headings: false });
    }

    fn push_heading(&mut self, text: String) -> usize {
        if self.headings.last() != Some(&text) {
            self.headings.push(text);
        }
        self.headings.len() - 1
    }

    /// Ends the open paragraph: it becomes one unit, or several if over `max_chars`.
    fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let Some(range) = trim(self.page, open.range) else { return };
        for (i, part) in split(self.page, range, self.limits.max).into_iter().enumerate() {
            let chars = self.page[part.0..part.1].chars().count();
            self.out.push(Piece {
                range: part,
                chars,
                group: self.group,
                starts_clause: open.starts_clause && i == 0,
                has_heading: open.has_heading && i == 0,
                only_headings: open.only_headings,
                clause: self.clause,
                heading: self.heading,
            });
        }
    }
}

/// Joins units into chunks: a unit joins the chunk before it when they share a group and
/// the join stays within `target` chars (for a unit that starts a nested clause, the join
/// of the whole clause up to the next clause start: a clause never leaves its body behind),
/// or when the chunk is only headings, the unit starts no clause and the join stays within
/// `max` chars.
pub(super) fn pack(page: &str, units: Vec<Piece>, limits: Limits) -> Vec<Piece> {
    let ends = clause_ends(&units);
    let mut out: Vec<Piece> = Vec::with_capacity(units.len());
    for (i, unit) in units.into_iter().enumerate() {
        if let Some(last) = out.last_mut() {
            let gap = page[last.range.1..unit.range.0].chars().count();
            let joined = last.chars + gap + unit.chars;
            let reach = if unit.starts_clause { page[unit.range.0..ends[i]].chars().count() } else { unit.chars };
            let fits = last.chars + gap + reach <= limits.target;
            let same_group = last.group == unit.group && !last.only_headings && !unit.only_headings && fits;
            let under_heading = last.only_headings && !unit.starts_clause && joined <= limits.max;
            if same_group || under_heading {
                if last.only_headings {
                    last.group = unit.group;
                    last.heading = unit.heading.or(last.heading);
                    last.clause = unit.clause;
                }
                last.range.1 = unit.range.1;
                last.chars = joined;
                last.has_heading |= unit.has_heading;
                last.only_headings &= unit.only_headings;
                continue;
            }
        }
        out.push(unit);
    }
    out
}

/// For each unit, the byte where its clause ends: the end of the last unit before the
/// next clause start, heading or group change (only read for units that start a clause).
fn clause_ends(units: &[Piece]) -> Vec<usize> {
    let mut ends = vec![0; units.len()];
    let mut end = 0;
    for i in (0..units.len()).rev() {
        let next_breaks = units.get(i + 1).is_none_or(|n| n.starts_clause || n.only_headings || n.group != units[i].group);
        if next_breaks {
            end = units[i].range.1;
        }
        ends[i] = end;
    }
    ends
}

/// `range` in trimmed pieces of at most `limit` chars: whole if it fits, else at sentence
/// ends, else at whitespace, else every `limit` chars.
fn split(page: &str, range: Range, limit: usize) -> Vec<Range> {
    split_at(page, range, limit, sentences)
}

/// Abbreviations a sentence does not end at (compared without their final `.`).
const ABBREVIATIONS: &[&str] = &[
    "no", "nos", "pub", "stat", "sec", "secs", "ch", "v", "vs", "inc", "ltd", "co", "corp", "id", "ibid", "etc", "mr", "mrs", "ms", "dr", "st", "ct",
    "supp", "app", "art", "para", "cl", "cir", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sept", "sep", "oct", "nov", "dec", "approx", "cf",
    "al", "pt", "subch", "ed", "rev", "jr", "sr", "op",
];

/// Sentence ends: `.`, `?`, `!` (then closing quotes or brackets) before whitespace, where
/// the word ending in `.` is not an abbreviation, an initial or a dotted form (`U.S.C.`).
fn sentences(page: &str, (start, end): Range) -> Vec<Range> {
    let text = &page[start..end];
    let mut out = Vec::new();
    let mut from = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !matches!(c, '.' | '?' | '!') || (c == '.' && is_abbreviation(&text[..at])) {
            continue;
        }
        let mut to = at + c.len_utf8();
        while let Some((at, c)) = chars.next_if(|&(_, c)| matches!(c, '"' | '\'' | ')' | ']' | '”' | '’')) {
            to = at + c.len_utf8();
        }
        if chars.peek().is_some_and(|&(_, c)| c.is_whitespace()) {
            out.extend(trim(page, (start + from, start + to)));
            from = to;
        }
    }
    out.extend(trim(page, (start + from, end)));
    out
}

/// The word before a `.` (`before` ends just ahead of it) is an abbreviation.
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    letters == 1 || word.contains('.') || ABBREVIATIONS.contains(&word.to_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_do_not_end_at_abbreviations() {
        let page = "See 42 U.S.C. § 1983 and Pub. L. No. 111-148. Brown v. Board held so. Next one.";
        let parts: Vec<&str> = sentences(page, (0, page.len())).into_iter().map(|(s, e)| &page[s..e]).collect();
        assert_eq!(parts, ["See 42 U.S.C. § 1983 and Pub. L. No. 111-148.", "Brown v. Board held so.", "Next one."]);
    }

    #[test]
    fn nested_numbers_follow_their_parents() {
        let mut n = Numbering::default();
        let enter = |n: &mut Numbering, line: &str| n.enter(&super::super::lines::clause_start(line).unwrap());
        assert_eq!(enter(&mut n, "§ 7. Marriage"), "7");
        assert_eq!(enter(&mut n, "(a) For the purposes"), "7(a)");
        assert_eq!(enter(&mut n, "(1) In general"), "7(a)(1)");
        assert_eq!(enter(&mut n, "(A) the first"), "7(a)(1)(A)");
        assert_eq!(enter(&mut n, "(i) one"), "7(a)(1)(A)(i)");
        assert_eq!(enter(&mut n, "(ii) two"), "7(a)(1)(A)(ii)");
        assert_eq!(enter(&mut n, "(2) Next"), "7(a)(2)");
        assert_eq!(enter(&mut n, "(b) In this section"), "7(b)");
        assert_eq!(enter(&mut n, "2.1 Fees"), "2.1");
        assert_eq!(enter(&mut n, "(h) eighth"), "2.1(h)");
        assert_eq!(enter(&mut n, "(i) ninth"), "2.1(i)");
    }
}
