//! What every chunker does once a page is cut into units, written once: [`pack`] joins
//! neighbouring units into chunks, [`spans`] turns chunks into the page's [`ChunkSpan`]s.
//! Each chunker keeps its own unit type (what else it tracks: a role, a block, a clause)
//! and says through [`Unit`] and [`Packs`] what these two read of it.

use serde_json::{Map, Value};

use super::blocks::Range;
use super::kinds::{Kind, Kinds};
use super::prose::{count, offset};
use super::ChunkSpan;
use crate::date::find_dates;

/// A stretch of the page: a unit before packing, a chunk after.
pub(super) trait Unit {
    /// Its bytes in the page, end exclusive.
    fn range(&self) -> Range;
    /// Its length in chars.
    fn chars(&self) -> usize;
}

/// A unit the shared [`pack`] joins to its neighbours.
pub(super) trait Packs: Unit + Copy {
    /// Only units of one group are packed together.
    fn group(&self) -> usize;
    /// The most chars the chunk this unit begins may hold.
    fn limit(&self) -> usize;
    fn kinds(&self) -> Kinds;
    /// The chunk grown to byte `end`, now `chars` long and holding `kinds`.
    fn grow(&mut self, end: usize, chars: usize, kinds: Kinds);
}

/// Joins each unit to the chunk before it when they share a group and the joined span
/// stays within the chunk's limit.
pub(super) fn pack<U: Packs>(page: &str, units: &[U]) -> Vec<U> {
    let mut out: Vec<U> = Vec::with_capacity(units.len());
    for unit in units {
        if let Some(last) = out.last_mut().filter(|last| last.group() == unit.group()) {
            let joined = last.chars() + count(page, (last.range().1, unit.range().0)) + unit.chars();
            if joined <= last.limit() {
                last.grow(unit.range().1, joined, last.kinds().union(unit.kinds()));
                continue;
            }
        }
        out.push(*unit);
    }
    out
}

/// What a chunker says of one chunk: its kinds, its heading, its meta.
pub(super) struct Described {
    pub kinds: Kinds,
    pub heading: Option<String>,
    pub meta: Option<Map<String, Value>>,
}

/// The chunks (in page order) as spans: char offsets counted in one pass over the page,
/// what `describe` says of each from the chunk and its text, and the `date` kind wherever
/// a date stands.
pub(super) fn spans<U: Unit>(page: &str, chunks: &[U], mut describe: impl FnMut(&U, &str) -> Described) -> Vec<ChunkSpan> {
    let (mut chars, mut bytes) = (0, 0);
    let mut out = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let (from, to) = chunk.range();
        chars += count(page, (bytes, from));
        let start = chars;
        chars += chunk.chars();
        bytes = to;
        let text = &page[from..to];
        let Described { mut kinds, heading, meta } = describe(chunk, text);
        if !find_dates(text).is_empty() {
            kinds.insert(Kind::Date);
        }
        out.push(ChunkSpan {
            start: offset(start),
            end: offset(chars),
            byte_start: offset(from),
            byte_end: offset(to),
            kinds,
            heading,
            meta,
            footnote_of: None,
        });
    }
    out
}
