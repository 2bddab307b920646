//! BM25 over chunks, each indexed with its document's title before its text (a title
//! of its own field scored apart gave nDCG@10 0.666 on SciFact; joined, 0.688, as BEIR
//! indexes title + text): a tantivy index per segment, because a segment is the unit that is
//! flushed, merged and dropped; for the in-memory tail (one batch per acknowledged
//! document) a small inverted index of our own, because building a tantivy index per
//! document cost ~11 ms — as much as embedding it. Both score with tantivy's own
//! [`Bm25Weight`] and fieldnorm coding and with the statistics of the whole collection
//! ([`Stats`]), so a chunk gets the same score whichever kind of view holds it.
//!
//! [`disk`] is the segment's tantivy index, [`union`] our copy of tantivy's term union
//! that streams every match of a short query, [`memory`] the tail's own index, and
//! [`stats`] the statistics they share.

mod disk;
mod memory;
mod stats;
#[cfg(test)]
mod tests;
mod union;

use std::path::Path;

use tantivy::query::Bm25Weight;

pub use disk::{analyzer_version, DiskIndex, ANALYZER_VERSION};
pub use memory::MemoryIndex;
pub use stats::Stats;

use crate::segment::ArchivedBatch;

#[derive(Debug, thiserror::Error)]
#[error("BM25 index {path}: {source}")]
pub struct Bm25Error {
    pub path: String,
    #[source]
    pub source: tantivy::TantivyError,
}

/// The BM25 index of one view.
pub enum Bm25 {
    Disk(DiskIndex),
    Memory(MemoryIndex),
}

/// A chunk the keyword list scored: its ordinal in its view, its BM25 score, and which
/// of the query's terms its indexed text (title and chunk) holds, bit i for term i —
/// or [`Scored::UNKNOWN`] when the path that scored it does not tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub chunk: u32,
    pub score: f32,
    pub terms: u32,
    /// Of `terms`, those the indexed text holds more than once (term frequency ≥ 2):
    /// with how often the title holds a term, it tells whether the chunk's own text
    /// does without reading it. 0 when `terms` is [`Scored::UNKNOWN`].
    pub repeated: u32,
}

impl Scored {
    /// The terms are not known: block-max WAND's top-k, or a query of more than
    /// [`Scored::MAX_TERMS`] terms.
    pub const UNKNOWN: u32 = u32::MAX;
    /// The most terms whose bits a [`Scored`] carries: 31, so that no chunk's bits
    /// (all 32 set) can read as [`Scored::UNKNOWN`]. A query has rarely more distinct
    /// terms than that; 32-bit masks keep a scored chunk at 16 bytes, and let the
    /// scoring loop keep a chunk's terms and repeated terms in one word.
    pub const MAX_TERMS: usize = 31;
}

/// What a view's keyword search returns to the search path.
#[derive(Debug, Clone, Default)]
pub struct Matches {
    /// In chunk order.
    pub chunks: Vec<Scored>,
    /// Whether `chunks` is every chunk that holds a query term (and the filter admits),
    /// not only the best: then a chunk absent from it holds none of them.
    pub every: bool,
}

impl Bm25 {
    /// Writes a segment's tantivy index into `dir` (committed and fsynced by tantivy).
    pub fn build(batch: &ArchivedBatch, dir: &Path) -> Result<Bm25, Bm25Error> {
        DiskIndex::build(batch, Some(dir)).map(Bm25::Disk)
    }

    pub fn open(dir: &Path) -> Result<Bm25, Bm25Error> {
        DiskIndex::open(dir).map(Bm25::Disk)
    }

    /// An in-memory index of a small batch.
    pub fn memory(batch: &ArchivedBatch) -> Bm25 {
        Bm25::Memory(MemoryIndex::build(batch))
    }

    /// The best `limit` chunks (ordinal, score) that `allow` admits, scored with the
    /// collection's statistics. `allow` is `None` when every chunk may be returned:
    /// long postings lists are then pruned with block-max WAND, short ones scored in full.
    pub fn search<F>(&self, terms: &[String], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Vec<(u32, f32)>>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        match self {
            Bm25::Disk(d) => d.search(&d.query(terms), stats, limit, allow),
            Bm25::Memory(m) => m.search(terms, stats, limit, |c| allow.as_ref().is_none_or(|a| a(c))),
        }
    }

    /// What the search path rolls up to pages: chunks that `allow` admits, in chunk
    /// order, with their scores and the query terms they hold. When the query's
    /// postings are few ([`WAND_MIN_POSTINGS`]) that is every matching chunk, streamed
    /// out of a union of the terms' postings with no top-k selection at all (selecting
    /// the best 200 of a few thousand matches cost more than scoring them); otherwise the
    /// best `limit`, which block-max WAND (or, under a filter, a bounded top-k) finds
    /// without keeping every match, and which does not say which terms each holds.
    pub fn scored<F>(&self, terms: &[String], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Matches>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        self.scored_weighted(terms, &[], stats, limit, allow)
    }

    /// [`Bm25::scored`] with a weight per term (`weights[i]` multiplies term i's BM25
    /// score; a missing weight is 1): how often the query says a term, and quoted words
    /// it stresses (see `text::weighted_terms`). Weights of 1 give the same scores to
    /// the bit as [`Bm25::scored`].
    pub fn scored_weighted<F>(&self, terms: &[String], weights: &[f32], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Matches>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        let every = match self {
            Bm25::Disk(_) => stats.postings() <= WAND_MIN_POSTINGS,
            Bm25::Memory(_) => true,
        };
        let mut chunks = match self {
            Bm25::Disk(d) if every => d.every_match(terms, weights, stats, allow.as_ref())?,
            Bm25::Disk(d) => d
                .search(&d.query_weighted(terms, weights), stats, limit, allow)?
                .into_iter()
                .map(|(chunk, score)| Scored { chunk, score, terms: Scored::UNKNOWN, repeated: 0 })
                .collect(),
            Bm25::Memory(m) => m.matches(terms, weights, stats, |c| allow.as_ref().is_none_or(|a| a(c)))?,
        };
        if !chunks.is_sorted_by_key(|x| x.chunk) {
            chunks.sort_unstable_by_key(|x| x.chunk);
        }
        Ok(Matches { chunks, every })
    }
}

/// Term i's weight: `weights[i]`, or 1 past the end (no weights given).
fn weight_of(weights: &[f32], i: usize) -> f32 {
    weights.get(i).copied().unwrap_or(1.0)
}

/// `w` multiplied by `by`; untouched at 1, so unweighted scores stay tantivy's to the bit.
fn boosted(w: Bm25Weight, by: f32) -> Bm25Weight {
    if by == 1.0 {
        w
    } else {
        w.boost_by(by)
    }
}

/// Below this many postings (the query terms' document frequencies in the collection,
/// summed; [`Stats::postings`]) every matching chunk is scored: block-max WAND re-sorts its term cursors at every pivot,
/// which costs more than it skips when the lists are short. On SciFact (5,183 documents,
/// queries of ~8 terms, 200 chunks wanted) the exhaustive union served 18% more keyword
/// searches per second through the API than WAND did.
const WAND_MIN_POSTINGS: u64 = 20_000;

/// What BM25 indexes for chunk `i`: its document's title, then its text.
fn indexed_text(batch: &ArchivedBatch, i: usize) -> String {
    let c = &batch.chunks[i];
    let page = &batch.pages[c.page.to_native() as usize];
    let text = &page.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize];
    match batch.docs[page.doc.to_native() as usize].title.as_ref().map(|t| t.as_str()) {
        Some(title) if !title.is_empty() => format!("{title}\n{text}"),
        _ => text.to_owned(),
    }
}

/// The text field, first in the schema: tantivy's field id 0.
const FIELDS: usize = 1;
