//! Chunking a page of prose into passages for retrieval.
//!
//! A chunk is what BM25 and the embedder score and what a citation quotes, so it should be
//! one coherent stretch of text of about `target_chars`: paragraphs packed together, a
//! table or list kept whole where it fits, never a row or item cut in half, and the heading
//! it sits under known. Chunks are spans of the page (char and byte offsets), never copies,
//! so passages and highlights point straight into the stored page.
//!
//! The steps: [`blocks`] reads the page's structure; each block becomes one or more
//! *units* (atoms no larger than `max_chars`: a paragraph, a list item, a table row, or a
//! sentence, word or slice of an oversized one); [`pack`] (the chunkers' shared packer) then joins neighbouring units of
//! the same *group* (a section's prose, or one large list or table) up to the group's limit.

use super::blocks::{blocks, trim, Block, Range};
use super::kinds::{Kind, Kinds};
use super::unit::{self, pack, Described, Packs};
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Prose is packed into chunks of up to this many chars.
    pub target_chars: usize,
    /// No chunk is longer than this many chars; a list or table up to this long stays whole.
    pub max_chars: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions { target_chars: 1000, max_chars: 2000 }
    }
}

impl ChunkOptions {
    /// These options with `1 <= target_chars <= max_chars`, whatever was asked.
    fn sane(self) -> ChunkOptions {
        let max_chars = self.max_chars.max(1);
        ChunkOptions { target_chars: self.target_chars.clamp(1, max_chars), max_chars }
    }

    /// Lists and tables shorter than this are packed with the prose around them.
    fn tiny(self) -> usize {
        self.target_chars / 4
    }
}

/// One chunk of a page. Offsets are into the page text, end exclusive; `start..end`
/// count chars (Unicode scalar values), `byte_start..byte_end` bytes of the same span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSpan {
    pub start: u32,
    pub end: u32,
    pub byte_start: u32,
    pub byte_end: u32,
    pub kinds: Kinds,
    /// The heading of the section the chunk starts in.
    pub heading: Option<String>,
    /// What a domain chunker found in the chunk (a JSON object), if anything.
    pub meta: Option<Map<String, Value>>,
    /// For a footnote, the `pos` of the body chunk on the same page whose marker it answers.
    pub footnote_of: Option<u32>,
}

/// The chunks of `page`, in order, non-overlapping, trimmed, covering all its text.
pub fn chunk_prose(page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    let mut units = Units::new(page, opts.sane());
    for block in blocks(page) {
        units.add(block);
    }
    let (units, headings) = units.finish();
    spans(page, &pack(page, &units), &headings)
}

/// An atom of packing, and after [`pack`] a whole chunk.
#[derive(Clone, Copy, Debug)]
struct Unit {
    range: Range,
    chars: usize,
    kinds: Kinds,
    /// Only units of the same group are packed together.
    group: u32,
    /// The most chars a packed chunk of this group may hold.
    limit: usize,
    /// Index of the heading in force.
    section: Option<usize>,
}

/// Turns blocks into units, tracking the section heading and a heading waiting to be
/// attached to the next unit.
struct Units<'a> {
    page: &'a str,
    opts: ChunkOptions,
    out: Vec<Unit>,
    headings: Vec<String>,
    section: Option<usize>,
    pending_heading: Option<Range>,
    group: u32,
}

impl<'a> Units<'a> {
    fn new(page: &'a str, opts: ChunkOptions) -> Self {
        let (out, headings) = (Vec::new(), Vec::new());
        Units { page, opts, out, headings, section: None, pending_heading: None, group: 0 }
    }

    fn add(&mut self, block: Block) {
        match block {
            Block::Heading { range, text } => self.heading(range, text),
            Block::Paragraph { range } => self.text(range, Kinds::EMPTY, self.opts.target_chars),
            Block::List { items } => self.parts(&items, Kind::List),
            Block::Table { rows } => self.parts(&rows, Kind::Table),
        }
    }

    /// Ends the page: a heading with nothing after it becomes a chunk of its own.
    fn finish(mut self) -> (Vec<Unit>, Vec<String>) {
        if let Some(heading) = self.pending_heading.take() {
            self.heading_alone(heading);
        }
        (self.out, self.headings)
    }

    /// Starts a section; consecutive headings all wait for the next unit.
    fn heading(&mut self, range: Range, text: String) {
        self.headings.push(text);
        self.section = Some(self.headings.len() - 1);
        self.pending_heading = Some(match self.pending_heading {
            Some((start, _)) => (start, range.1),
            None => range,
        });
        self.group += 1;
    }

    /// A list's items or a table's rows: one group of their own unless tiny, kept whole
    /// when they fit in `max_chars`, else packed up to `target_chars` at item boundaries.
    fn parts(&mut self, parts: &[Range], kind: Kind) {
        let kinds = Kinds::EMPTY.with(kind);
        let whole = (parts[0].0, parts[parts.len() - 1].1);
        let chars = count(self.page, whole);
        if chars < self.opts.tiny() {
            return self.text(whole, kinds, self.opts.target_chars);
        }
        let limit = if chars <= self.opts.max_chars { self.opts.max_chars } else { self.opts.target_chars };
        self.group += 1;
        for &part in parts {
            self.text(part, kinds, limit);
        }
        self.group += 1;
    }

    fn text(&mut self, range: Range, kinds: Kinds, limit: usize) {
        for piece in split(self.page, range, self.opts.max_chars) {
            self.push(piece, kinds, limit);
        }
    }

    fn push(&mut self, range: Range, kinds: Kinds, limit: usize) {
        match self.pending_heading.take() {
            Some(heading) => self.push_after_heading(heading, range, kinds, limit),
            None => self.out.push(self.unit(range, kinds, limit)),
        }
    }

    /// Pushes `range` with `heading` glued to its front, first splitting off as much of
    /// `range` as fits beside the heading in `max_chars`.
    fn push_after_heading(&mut self, heading: Range, range: Range, kinds: Kinds, limit: usize) {
        let heading_chars = count(self.page, (heading.0, range.0));
        let Some(room) = self.opts.max_chars.checked_sub(heading_chars).filter(|r| *r > 0) else {
            self.heading_alone(heading);
            return self.push(range, kinds, limit);
        };
        let pieces = split(self.page, range, room);
        let first = (heading.0, pieces[0].1);
        self.out.push(self.unit(first, kinds.with(Kind::Heading), limit));
        if let Some(next) = pieces.get(1) {
            self.text((next.0, range.1), kinds, limit);
        }
    }

    fn heading_alone(&mut self, heading: Range) {
        let kinds = Kinds::EMPTY.with(Kind::Heading);
        for piece in split(self.page, heading, self.opts.max_chars) {
            self.out.push(self.unit(piece, kinds, self.opts.target_chars));
        }
    }

    fn unit(&self, range: Range, kinds: Kinds, limit: usize) -> Unit {
        let chars = count(self.page, range);
        Unit { range, chars, kinds, group: self.group, limit, section: self.section }
    }
}

/// `range` cut into trimmed pieces of at most `limit` chars: whole if it fits, else at
/// sentence ends, else at whitespace, else every `limit` chars.
pub(super) fn split(page: &str, range: Range, limit: usize) -> Vec<Range> {
    split_at(page, range, limit, sentences)
}

/// [`split`] with a domain's own sentence splitter (legal text does not end a sentence
/// at `U.S.C.`).
pub(super) fn split_at(page: &str, range: Range, limit: usize, sentences: fn(&str, Range) -> Vec<Range>) -> Vec<Range> {
    if count(page, range) <= limit {
        return vec![range];
    }
    for level in [sentences, words] {
        let parts = level(page, range);
        if parts.len() > 1 {
            return parts.into_iter().flat_map(|p| split_at(page, p, limit, sentences)).collect();
        }
    }
    slices(page, range, limit)
}

/// Sentence ends: `.`, `?`, `!`, `؟` or `۔`, then any closing quotes or brackets, then
/// whitespace.
fn sentences(page: &str, (start, end): Range) -> Vec<Range> {
    let text = &page[start..end];
    let mut out = Vec::new();
    let mut from = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !matches!(c, '.' | '?' | '!' | '؟' | '۔') {
            continue;
        }
        let mut to = at + c.len_utf8();
        while let Some((at, c)) = chars.next_if(|&(_, c)| matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»')) {
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

/// The runs of non-whitespace in `range`.
pub(super) fn words(page: &str, (start, end): Range) -> Vec<Range> {
    let mut out = Vec::new();
    let mut word_start = None;
    for (at, c) in page[start..end].char_indices() {
        match (c.is_whitespace(), word_start) {
            (false, None) => word_start = Some(start + at),
            (true, Some(from)) => {
                out.push((from, start + at));
                word_start = None;
            }
            _ => {}
        }
    }
    out.extend(word_start.map(|from| (from, end)));
    out
}

/// `range` cut every `limit` chars (for a word longer than a chunk).
pub(super) fn slices(page: &str, (start, end): Range, limit: usize) -> Vec<Range> {
    let cuts = page[start..end].char_indices().map(|(at, _)| start + at).step_by(limit);
    let mut cuts: Vec<usize> = cuts.collect();
    cuts.push(end);
    cuts.windows(2).filter_map(|w| trim(page, (w[0], w[1]))).collect()
}

impl unit::Unit for Unit {
    fn range(&self) -> Range {
        self.range
    }

    fn chars(&self) -> usize {
        self.chars
    }
}

impl Packs for Unit {
    fn group(&self) -> usize {
        self.group as usize
    }

    fn limit(&self) -> usize {
        self.limit
    }

    fn kinds(&self) -> Kinds {
        self.kinds
    }

    fn grow(&mut self, end: usize, chars: usize, kinds: Kinds) {
        self.range.1 = end;
        self.chars = chars;
        self.kinds = kinds;
    }
}

/// Chunks as spans: the kinds they hold (and `date`), the heading they sit under.
fn spans(page: &str, chunks: &[Unit], headings: &[String]) -> Vec<ChunkSpan> {
    unit::spans(page, chunks, |chunk, _| Described { kinds: chunk.kinds, heading: chunk.section.map(|i| headings[i].clone()), meta: None })
}

pub(super) fn count(page: &str, (start, end): Range) -> usize {
    page[start..end].chars().count()
}

/// Offsets are stored as u32: pages beyond 4 GiB are not supported (they saturate).
pub(super) fn offset(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
