//! The legal chunker: contracts, statutes, regulations and opinions as clauses, with their
//! definitions and citations found.
//!
//! A chunk starts at a clause number (`1.`, `1.2.3`, `(a)`, `(iv)`, `ARTICLE IV`,
//! `Section 2.1`, `§ 1.`; see [`segment`] for how nested clauses pack) and carries:
//! - kind `clause` when it begins at a clause number, meta `clause` = the number in force
//!   as a path (`2.1`, `7(a)(1)`, `IV`) on every chunk inside a clause, and `heading` = the
//!   innermost clause caption in force (`1. **Introduction**.` → `Introduction`), else the
//!   last heading line;
//! - kind `definition` and meta `terms` when it defines terms ([`define`]);
//! - kind `citation` and meta `citations`, normalised ([`cite`]);
//! - kind `heading` when it holds a heading line; kind `date` when it holds a full date.
//!
//! The document's meta: `form` (contract | statute | regulation | opinion | other, see
//! [`form`]), `citations` and `terms` (deduplicated, in order of first appearance) and
//! `sections` (`[{clause, heading?}]`, every top-level clause and every captioned nested
//! one, in order). [`signal`] says whether a text is legal at all.

mod cite;
mod define;
mod form;
mod lines;
mod segment;
mod signal;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use self::segment::{pack, segment, Limits, Piece, Segmented};
use super::unit::{self, Described};
use super::{ChunkOptions, ChunkSpan, Kind, Kinds};

/// At most this many entries in the document's `sections`, `citations` and `terms`.
const META_LIST_CAP: usize = 1000;

pub fn chunk(page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    let limits = limits(opts);
    let mut segmented = segment(page, limits);
    let pieces = pack(page, std::mem::take(&mut segmented.pieces), limits);
    spans(page, &pieces, &segmented)
}

fn limits(opts: &ChunkOptions) -> Limits {
    let max = opts.max_chars.max(1);
    Limits { target: opts.target_chars.clamp(1, max), max }
}

/// The chunks as spans, with their kinds, heading and meta.
fn spans(page: &str, pieces: &[Piece], segmented: &Segmented) -> Vec<ChunkSpan> {
    unit::spans(page, pieces, |piece, text| {
        let (kinds, meta) = describe(text, piece, segmented);
        Described { kinds, heading: piece.heading.map(|i| segmented.headings[i].clone()), meta }
    })
}

/// A chunk's kinds and meta from its text and where it sits (its dates are the shared
/// [`unit::spans`]' to find).
fn describe(text: &str, piece: &Piece, segmented: &Segmented) -> (Kinds, Option<Map<String, Value>>) {
    let mut kinds = Kinds::EMPTY;
    let mut meta = Map::new();
    if piece.starts_clause {
        kinds.insert(Kind::Clause);
    }
    if piece.has_heading {
        kinds.insert(Kind::Heading);
    }
    if let Some(i) = piece.clause {
        meta.insert("clause".into(), Value::String(segmented.clauses[i].0.clone()));
    }
    let terms = unique(define::definitions(text).into_iter().flat_map(|d| d.terms));
    if !terms.is_empty() {
        kinds.insert(Kind::Definition);
        meta.insert("terms".into(), strings(terms));
    }
    let citations = unique(cite::citations(text).into_iter().map(|c| c.text));
    if !citations.is_empty() {
        kinds.insert(Kind::Citation);
        meta.insert("citations".into(), strings(citations));
    }
    (kinds, (!meta.is_empty()).then_some(meta))
}

/// The domain's keys of the document's meta (`kind` is added by the caller).
pub fn document_meta(pages: &[(&str, &[ChunkSpan])]) -> Map<String, Value> {
    let text: String = pages.iter().map(|(page, _)| *page).collect::<Vec<_>>().join("\n\n");
    let mut meta = Map::new();
    meta.insert("form".into(), Value::String(form::form(&text).as_str().into()));
    let citations = unique(pages.iter().flat_map(|(page, _)| cite::citations(page)).map(|c| c.text));
    meta.insert("citations".into(), strings(citations.into_iter().take(META_LIST_CAP).collect()));
    let terms = unique(pages.iter().flat_map(|(page, _)| define::definitions(page)).flat_map(|d| d.terms));
    meta.insert("terms".into(), strings(terms.into_iter().take(META_LIST_CAP).collect()));
    meta.insert("sections".into(), Value::Array(sections(pages)));
    meta
}

/// Every top-level clause and every captioned nested one, with its caption.
fn sections(pages: &[(&str, &[ChunkSpan])]) -> Vec<Value> {
    let limits = limits(&ChunkOptions::default());
    let clauses = pages.iter().flat_map(|(page, _)| segment(page, limits).clauses);
    let kept = clauses.filter(|(_, caption, nested)| !nested || caption.is_some()).take(META_LIST_CAP);
    kept.map(|(clause, caption, _)| {
        let mut entry = Map::new();
        entry.insert("clause".into(), Value::String(clause));
        if let Some(caption) = caption {
            entry.insert("heading".into(), Value::String(caption));
        }
        Value::Object(entry)
    })
    .collect()
}

/// How strongly the text reads as a legal text: 1.0 or more means legal.
pub fn signal(pages: &[&str]) -> f32 {
    signal::signal(pages)
}

/// The items in order of first appearance, repeats dropped.
fn unique(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().filter(|s| seen.insert(s.clone())).collect()
}

fn strings(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}
