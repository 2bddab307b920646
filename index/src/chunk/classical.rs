//! The classical chunker. Classical Arabic texts: hadith (isnad openers), grading, takhrij,
//! Quranic verse, poetry, footnotes linked to their markers, headings, printed page numbers.
//!
//! A hadith collection is cited by hadith, not by paragraph: each hadith (from its isnad
//! opener to the next block) is a chunk of its own, its grading («قال أبو عيسى …») another,
//! and each editor's footnote another, linked (`footnote_of`) to the body chunk holding
//! its marker. Commentary paragraphs and poems are packed like prose. The steps:
//! [`skeleton`] folds harakat, tatweel and letter variants so the cues match every
//! spelling while offsets stay the page's; [`layout`] reads the page's blocks; here they
//! become units no longer than `max_chars`, packed, then spans with kinds and meta.

mod cues;
mod layout;
mod skeleton;

use serde_json::{Map, Value};

use super::blocks::{trim, Range};
use super::kinds::{Kind, Kinds};
use super::prose::{count, split};
use super::unit::{self, pack, Described, Packs};
use super::{ChunkOptions, ChunkSpan};
use layout::{Block, Role};
use skeleton::Skeleton;

pub fn chunk(page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    let max_chars = opts.max_chars.max(1);
    let opts = ChunkOptions { target_chars: opts.target_chars.clamp(1, max_chars), max_chars };
    let sk = Skeleton::new(page);
    let blocks = layout::blocks(page, &sk);
    let mut units = Units { page, sk: &sk, opts, out: Vec::new(), headings: Vec::new(), group: 0 };
    let mut prev = None;
    for (id, block) in blocks.iter().enumerate() {
        units.add(id, block, prev);
        prev = Some(block.role);
    }
    let packed = glue_page_numbers(page, pack(page, &units.out), max_chars);
    let mut spans = spans(page, &packed, &units.headings);
    add_printed_pages(page, &sk, &mut spans);
    link_footnotes(&sk, &packed, &blocks, &mut spans);
    spans
}

/// The domain's keys of the document's meta (`kind` is added by the caller): how many
/// chunks of each classical kind, the printed pages the document spans, and its first
/// headings (books and chapters).
pub fn document_meta(pages: &[(&str, &[ChunkSpan])]) -> Map<String, Value> {
    const COUNTED: [Kind; 7] = [Kind::Hadith, Kind::Grading, Kind::Takhrij, Kind::Verse, Kind::Poetry, Kind::Footnote, Kind::Heading];
    let mut counts = [0u64; COUNTED.len()];
    let (mut first, mut last) = (None, None);
    let mut sections = Vec::new();
    for (_, chunks) in pages {
        for c in *chunks {
            for (n, k) in counts.iter_mut().zip(COUNTED) {
                *n += c.kinds.contains(k) as u64;
            }
            if let Some(p) = c.meta.as_ref().and_then(|m| m.get("printedPage")) {
                first.get_or_insert_with(|| p.clone());
                last = Some(p.clone());
            }
            if c.kinds.contains(Kind::Heading) && sections.len() < 20 {
                sections.extend(c.heading.clone().map(Value::String));
            }
        }
    }
    let mut meta = Map::new();
    let counts: Map<String, Value> = COUNTED.iter().zip(counts).filter(|(_, n)| *n > 0).map(|(k, n)| (k.as_str().to_string(), n.into())).collect();
    meta.insert("counts".into(), Value::Object(counts));
    if let (Some(first), Some(last)) = (first, last) {
        meta.insert("printedPages".into(), serde_json::json!({ "first": first, "last": last }));
    }
    if !sections.is_empty() {
        meta.insert("sections".into(), Value::Array(sections));
    }
    meta
}

/// An atom of packing, and after [`pack`] a whole chunk.
#[derive(Clone, Copy, Debug)]
struct Unit {
    range: Range,
    chars: usize,
    kinds: Kinds,
    group: u32,
    limit: usize,
    section: Option<usize>,
    /// The block it comes from (footnotes link per block).
    block: usize,
    role: Role,
}

struct Units<'a> {
    page: &'a str,
    sk: &'a Skeleton,
    opts: ChunkOptions,
    out: Vec<Unit>,
    headings: Vec<String>,
    group: u32,
}

impl Units<'_> {
    fn add(&mut self, id: usize, block: &Block, prev: Option<Role>) {
        let (from, to) = block.lines;
        let Some(range) = trim(self.page, (self.sk.lines[from].page.0, self.sk.lines[to - 1].page.1)) else { return };
        let packs = matches!(block.role, Role::Text | Role::Poetry);
        if !(packs && prev == Some(block.role)) {
            self.group += 1;
        }
        if let Some(title) = &block.title {
            self.headings.push(title.clone());
        }
        match block.role {
            Role::Hadith => self.hadith(id, block, range),
            Role::Footnote => self.footnote(id, block, range),
            role => self.push(id, role, range, role_kinds(role)),
        }
    }

    /// A hadith, cut where its grading begins (Tirmidhi's «قال أبو عيسى»).
    fn hadith(&mut self, id: usize, block: &Block, range: Range) {
        let (from, to) = (self.sk.lines[block.lines.0].sk.0, self.sk.lines[block.lines.1 - 1].sk.1);
        let cut = cues::inline_grading(&self.sk.text[from..to]).map(|at| self.sk.page_at(from + at));
        let parts = match cut.filter(|&c| c > range.0 && c < range.1) {
            Some(c) => [trim(self.page, (range.0, c)), trim(self.page, (c, range.1))],
            None => [Some(range), None],
        };
        let [hadith, grading] = parts;
        if let Some(r) = hadith {
            self.push(id, Role::Hadith, r, role_kinds(Role::Hadith));
        }
        if let Some(r) = grading {
            self.group += 1;
            self.push(id, Role::Grading, r, role_kinds(Role::Grading));
        }
    }

    /// A footnote: takhrij and grading when its text (after the marker) holds them.
    fn footnote(&mut self, id: usize, block: &Block, range: Range) {
        let mut kinds = role_kinds(Role::Footnote);
        if let Some((_, line)) = block.marker {
            let (from, to) = (self.sk.lines[line].sk.0, self.sk.lines[block.lines.1 - 1].sk.1);
            let text = &self.sk.text[from..to];
            let rest = cues::footnote_start(text).map_or(text, |(_, rest)| rest);
            if cues::has_takhrij(rest) {
                kinds.insert(Kind::Takhrij);
            }
            if cues::has_grading(rest) {
                kinds.insert(Kind::Grading);
            }
        }
        self.push(id, Role::Footnote, range, kinds);
    }

    /// Prose and poems: pieces of up to `max_chars`, packed up to `target_chars`. Other
    /// blocks: whole when they fit in `max_chars`, else cut and packed to `target_chars`.
    fn push(&mut self, block: usize, role: Role, range: Range, kinds: Kinds) {
        let ChunkOptions { target_chars: target, max_chars: max } = self.opts;
        let packs = matches!(role, Role::Text | Role::Poetry);
        let whole = count(self.page, range) <= max;
        let pieces = if whole && !packs { vec![range] } else { split(self.page, range, if packs { max } else { target }) };
        let section = self.headings.len().checked_sub(1);
        for piece in pieces {
            let chars = count(self.page, piece);
            let limit = if whole && !packs { max } else { target };
            self.out.push(Unit { range: piece, chars, kinds, group: self.group, limit, section, block, role });
        }
    }
}

fn role_kinds(role: Role) -> Kinds {
    let kind = match role {
        Role::Heading => Kind::Heading,
        Role::Hadith => Kind::Hadith,
        Role::Grading => Kind::Grading,
        Role::Takhrij => Kind::Takhrij,
        Role::Verse => Kind::Verse,
        Role::Poetry => Kind::Poetry,
        Role::Footnote => Kind::Footnote,
        Role::Text | Role::PageNumber => return Kinds::EMPTY,
    };
    Kinds::EMPTY.with(kind)
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

/// A line holding only a printed page number joins the chunk after it (or, at the end
/// of the body, the one before it) when the two fit in `max` chars.
fn glue_page_numbers(page: &str, units: Vec<Unit>, max: usize) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    let mut pending: Option<Unit> = None;
    let joined = |a: &Unit, b: &Unit| count(page, (a.range.0, b.range.1));
    let extend_last = |out: &mut Vec<Unit>, glue: Unit| match out.last_mut() {
        Some(last) if last.role != Role::Footnote && joined(last, &glue) <= max => {
            last.chars = joined(last, &glue);
            last.range.1 = glue.range.1;
        }
        _ => out.push(glue),
    };
    for mut unit in units {
        if let Some(glue) = pending.take() {
            if unit.role != Role::Footnote && unit.role != Role::PageNumber && joined(&glue, &unit) <= max {
                unit.chars = joined(&glue, &unit);
                unit.range.0 = glue.range.0;
            } else {
                extend_last(&mut out, glue);
            }
        }
        if unit.role == Role::PageNumber {
            pending = Some(unit);
        } else {
            out.push(unit);
        }
    }
    if let Some(glue) = pending {
        extend_last(&mut out, glue);
    }
    out
}

/// Chunks as spans; `verse` wherever a Quranic quotation stands (and `date` wherever a
/// date does).
fn spans(page: &str, chunks: &[Unit], headings: &[String]) -> Vec<ChunkSpan> {
    unit::spans(page, chunks, |chunk, text| {
        let mut kinds = chunk.kinds;
        if quotes_quran(text) {
            kinds.insert(Kind::Verse);
        }
        Described { kinds, heading: chunk.section.map(|i| headings[i].clone()), meta: None }
    })
}

/// ﴿…﴾, an ayah sign ۝, or `{…}` around Arabic words (the Shamela and hadith-database
/// form).
fn quotes_quran(text: &str) -> bool {
    if text.contains(['﴿', '﴾', '۝']) {
        return true;
    }
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(['}', '{']) else { return false };
        let inner = &rest[..close];
        if rest[close..].starts_with('}') && inner.split_whitespace().filter(|w| w.chars().any(cues::is_arabic_letter)).count() >= 2 {
            return true;
        }
    }
    false
}

/// `printedPage` (and `printedVolume`) in the meta of the chunk holding a printed page
/// number; the first one when a chunk holds several.
fn add_printed_pages(page: &str, sk: &Skeleton, spans: &mut [ChunkSpan]) {
    let digits = |(s, e): (usize, usize)| -> String {
        let raw = &page[sk.page_at(s)..sk.page_at(e)];
        raw.chars().filter(|c| c.is_numeric()).collect()
    };
    let mut i = 0;
    for mark in cues::page_marks(&sk.text) {
        let at = sk.page_at(mark.start) as u32;
        while i < spans.len() && spans[i].byte_end <= at {
            i += 1;
        }
        let Some(span) = spans.get_mut(i).filter(|s| s.byte_start <= at) else { continue };
        let meta = span.meta.get_or_insert_with(Map::new);
        if meta.contains_key("printedPage") {
            continue;
        }
        let is_openiti = sk.text[mark.start..].starts_with("PageV");
        let clean = |d: String| if is_openiti { d.trim_start_matches('0').to_string() } else { d };
        meta.insert("printedPage".into(), Value::String(clean(digits(mark.page))));
        if let Some(v) = mark.volume {
            meta.insert("printedVolume".into(), Value::String(clean(digits(v))));
        }
    }
}

/// Each footnote's `footnote_of`: the body chunk holding `(N)` for its number N, the
/// first at or after the chunk the previous footnote answered (markers run in order),
/// else the first anywhere in the body (headings last: their numbers look like markers).
fn link_footnotes(sk: &Skeleton, units: &[Unit], blocks: &[Block], spans: &mut [ChunkSpan]) {
    let Some(first_note) = units.iter().position(|u| u.role == Role::Footnote) else { return };
    let body_sk_end = first_sk_offset(sk, blocks, units[first_note].block);
    let mut markers: Vec<Vec<u32>> = vec![Vec::new(); first_note];
    let mut chunk = 0;
    for (at, n) in cues::body_markers(&sk.text[..body_sk_end]) {
        let at = sk.page_at(at);
        while chunk < first_note && units[chunk].range.1 <= at {
            chunk += 1;
        }
        if chunk < first_note && units[chunk].range.0 <= at {
            markers[chunk].push(n);
        }
    }
    let mut cursor = 0;
    let mut linked: Option<(usize, Option<u32>)> = None;
    for (pos, unit) in units.iter().enumerate().skip(first_note) {
        let Some((n, _)) = blocks[unit.block].marker else { continue };
        let target = match linked {
            Some((block, target)) if block == unit.block => target,
            _ => {
                // a heading's number, «(٢)», is a marker only when no other chunk has one
                let holds = |c: &usize| markers[*c].contains(&n) && !spans[*c].kinds.contains(Kind::Heading);
                let holds_any = |c: &usize| markers[*c].contains(&n);
                let found = (cursor..first_note).find(holds).or_else(|| (0..cursor).find(holds));
                let found = found.or_else(|| (0..first_note).find(holds_any));
                if let Some(f) = found {
                    cursor = f;
                }
                found.map(|f| f as u32)
            }
        };
        linked = Some((unit.block, target));
        spans[pos].footnote_of = target;
    }
}

/// The skeleton offset where block `id` starts.
fn first_sk_offset(sk: &Skeleton, blocks: &[Block], id: usize) -> usize {
    sk.lines[blocks[id].lines.0].sk.0
}

#[cfg(test)]
mod tests;
