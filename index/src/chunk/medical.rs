//! The medical chunker. Clinical notes: sections (HPI, PMH, medications, allergies,
//! assessment and plan, vitals, labs, ...) and the kinds medication, lab, vital,
//! diagnosis, plan, allergy.
//!
//! A clinical note is a run of sections, and what a passage is depends on the section it
//! sits in: "lisinopril" under ALLERGIES is no medication the patient takes. So the page
//! is first cut at its section headers ([`sections`]); each section's body is read into
//! blocks (paragraphs, list items, table rows) as the prose chunker reads them; each
//! block is tagged with its section's kinds and the content cues it shows ([`cues`]);
//! blocks of one section are then packed up to `target_chars`, never across a section
//! boundary. A chunk's `heading` is its section's header as written; its meta names the
//! canonical section and the codes it holds ([`codes`]).

mod codes;
mod cues;
mod meta;
mod sections;
mod signal;

use serde_json::{Map, Value};

use super::blocks::{blocks, trim, Block, Range};
use super::kinds::{Kind, Kinds};
use super::prose::{count, split};
use super::unit::{self, pack, Described, Packs};
use super::{ChunkOptions, ChunkSpan};
use sections::{Section, SectionSpan};

pub use meta::document_meta;
pub use signal::signal;

pub fn chunk(page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    let max_chars = opts.max_chars.max(1);
    let target = opts.target_chars.clamp(1, max_chars);
    let mut units = Vec::new();
    let split_sections = sections::split(page);
    for (index, section) in split_sections.iter().enumerate() {
        section_units(page, section, index, (target, max_chars), &mut units);
    }
    let packed = pack(page, &units);
    spans(page, &packed, &split_sections)
}

/// An atom of packing (a header, a block or a piece of one), and after [`pack`] a chunk.
#[derive(Clone, Copy, Debug)]
struct Unit {
    range: Range,
    chars: usize,
    kinds: Kinds,
    /// Index of the section in [`sections::split`]'s list.
    section: usize,
    /// The most chars a chunk may hold: the options' `target_chars`.
    target: usize,
}

fn section_units(page: &str, span: &SectionSpan, index: usize, (target, max_chars): (usize, usize), out: &mut Vec<Unit>) {
    let section = span.header.as_ref().map(|h| h.section);
    let base = section.map_or(Kinds::EMPTY, Section::kinds);
    let mut pieces: Vec<(Range, Kinds)> = Vec::new();
    let (start, end) = span.body;
    for block in blocks(&page[start..end]) {
        let (parts, kind) = match block {
            Block::Heading { range, .. } | Block::Paragraph { range } => (vec![range], None),
            Block::List { items } => (items, Some(Kind::List)),
            Block::Table { rows } => (rows, Some(Kind::Table)),
        };
        for (s, e) in parts {
            let range = (start + s, start + e);
            let mut kinds = base.union(cues::kinds(&page[range.0..range.1], section));
            kinds.extend(kind);
            pieces.extend(split(page, range, max_chars).into_iter().map(|r| (r, kinds)));
        }
    }
    let unit = |range: Range, kinds: Kinds| Unit { range, chars: count(page, range), kinds, section: index, target };
    let header = span.header.as_ref().and_then(|h| trim(page, h.range));
    let Some(header) = header else {
        out.extend(pieces.into_iter().map(|(r, k)| unit(r, k)));
        return;
    };
    let heading = Kinds::EMPTY.with(Kind::Heading);
    let mut pieces = pieces.into_iter();
    match pieces.next() {
        Some((first, kinds)) if count(page, (header.0, first.1)) <= max_chars => {
            out.push(unit((header.0, first.1), kinds.union(heading)));
        }
        Some((first, kinds)) => {
            out.extend(split(page, header, max_chars).into_iter().map(|r| unit(r, heading)));
            out.push(unit(first, kinds));
        }
        None => out.extend(split(page, header, max_chars).into_iter().map(|r| unit(r, heading))),
    }
    out.extend(pieces.map(|(r, k)| unit(r, k)));
}

trait Extend {
    fn extend(&mut self, kind: Option<Kind>);
}

impl Extend for Kinds {
    fn extend(&mut self, kind: Option<Kind>) {
        if let Some(kind) = kind {
            self.insert(kind);
        }
    }
}

impl unit::Unit for Unit {
    fn range(&self) -> Range {
        self.range
    }

    fn chars(&self) -> usize {
        self.chars
    }
}

/// Units join only within one section, up to `target` chars.
impl Packs for Unit {
    fn group(&self) -> usize {
        self.section
    }

    fn limit(&self) -> usize {
        self.target
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

/// Chunks as spans, with their section's heading and meta (and dates).
fn spans(page: &str, chunks: &[Unit], sections: &[SectionSpan]) -> Vec<ChunkSpan> {
    unit::spans(page, chunks, |chunk, text| {
        let header = sections[chunk.section].header.as_ref();
        Described { kinds: chunk.kinds, heading: header.map(|h| h.name.clone()), meta: chunk_meta(text, header) }
    })
}

/// `{"section": canonical name, "codes": [{system, code}]}`, each where there is one.
fn chunk_meta(text: &str, header: Option<&sections::Header>) -> Option<Map<String, Value>> {
    let mut meta = Map::new();
    if let Some(h) = header {
        let name = if h.section == Section::Other { h.name.as_str() } else { h.section.name() };
        meta.insert("section".into(), Value::String(name.into()));
    }
    let codes = codes::find(text);
    if !codes.is_empty() {
        meta.insert("codes".into(), Value::Array(codes.iter().map(codes::Code::to_json).collect()));
    }
    (!meta.is_empty()).then_some(meta)
}

#[cfg(test)]
mod tests;
