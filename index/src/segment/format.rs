//! What a segment holds, as rkyv archives: the document table, pages, chunks, filter
//! columns and page vectors of a set of documents. The same structure is one WAL
//! record's payload (a batch of one document) and one segment file's contents, so the
//! in-memory tail of a collection and its flushed segments are read by the same code.
//!
//! This is format 3 ([`crate::FORMAT_VERSION`]): vectors are rows of windows, a page
//! longer than the embedder's window holding several (see [`WindowRec`]). `v1.rs` and
//! `v2.rs` keep formats 1 and 2 frozen, which segment files and WAL records written
//! before still hold and are read through.

use rkyv::{Archive, Deserialize, Serialize};

/// A metadata value as filters compare it; nested objects are flattened into dotted keys.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum FieldValue {
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

/// One flattened metadata entry: `a.b.c` = value; array elements repeat the key.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Field {
    pub key: String,
    pub value: FieldValue,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DocRec {
    pub id: String,
    pub title: Option<String>,
    pub author: Option<String>,
    /// The caller's metadata object, as JSON text, returned as given.
    pub metadata_json: String,
    /// What the chunker found (`{ "kind": ... }`), as JSON text.
    pub meta_json: String,
    pub chunker: String,
    pub format: String,
    pub embedder: String,
    pub created_at: String,
    /// Characters (Unicode scalar values) of page text stored.
    pub chars: u64,
    pub first_page: u32,
    pub pages: u32,
    pub chunks: u32,
    /// The metadata flattened for filters.
    pub fields: Vec<Field>,
    /// Days since 1970-01-01 of the metadata's date fields (date, encounter_date,
    /// effective_date, filed).
    pub dates: Vec<i32>,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PageRec {
    /// The document's index in this batch.
    pub doc: u32,
    /// Page index within its document, from 0.
    pub n: u32,
    pub number: Option<String>,
    pub volume: Option<String>,
    pub heading: Option<String>,
    pub text: String,
    /// The stable citation id (`AL-%08X`), assigned once when the page is indexed.
    pub citation: u32,
    /// For folding near-duplicate pages.
    pub simhash: u64,
    pub first_chunk: u32,
    pub chunks: u32,
    /// Days the chunker found on the page.
    pub dates: Vec<i32>,
    /// What the format found on the page (a JSON object as text), if anything.
    pub meta_json: Option<String>,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ChunkRec {
    pub page: u32,
    pub pos: u32,
    /// Offsets in characters into the page text, end exclusive.
    pub start: u32,
    pub end: u32,
    /// The same span in bytes, for slicing.
    pub byte_start: u32,
    pub byte_end: u32,
    /// A `Kinds` bitset.
    pub kinds: u32,
    pub heading: Option<String>,
    /// What the chunker found in the chunk (a JSON object as text), if anything.
    pub meta_json: Option<String>,
    /// For a footnote, the `pos` of the body chunk on its page it answers.
    pub footnote_of: Option<u32>,
}

/// One embedded window of a page: a run of its chunks, packed up to the embedder's
/// token limit (a page within the limit is one window of all its chunks). Vector row
/// `i` of a batch is window `i`'s.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRec {
    /// The page's index in this batch.
    pub page: u32,
    /// The window's first chunk, by its `pos` on the page, and how many it holds.
    pub first_pos: u32,
    pub chunks: u32,
}

/// The characters a document keeps of what its owner wrote, which the storage
/// allowance counts: its text (`text_chars`), its metadata as JSON, and its labels
/// (title, author, each page's number, volume and heading). What the chunker and the
/// format derive from them (meta, chunk headings) is not counted.
pub fn stored_chars<'a>(text_chars: u64, metadata_json: &str, labels: impl IntoIterator<Item = Option<&'a str>>) -> u64 {
    let count = |s: &str| s.chars().count() as u64;
    text_chars + count(metadata_json) + labels.into_iter().flatten().map(count).sum::<u64>()
}

impl Batch {
    /// [`stored_chars`] of document `doc` of this batch.
    pub fn stored_chars(&self, doc: usize) -> u64 {
        let d = &self.docs[doc];
        let pages = &self.pages[d.first_page as usize..(d.first_page + d.pages) as usize];
        let page_labels = pages.iter().flat_map(|p| [p.number.as_deref(), p.volume.as_deref(), p.heading.as_deref()]);
        stored_chars(d.chars, &d.metadata_json, [d.title.as_deref(), d.author.as_deref()].into_iter().chain(page_labels))
    }
}

/// Documents with everything needed to search them.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub docs: Vec<DocRec>,
    pub pages: Vec<PageRec>,
    pub chunks: Vec<ChunkRec>,
    /// Floats per vector; 0 when the collection has no embedder.
    pub dims: u32,
    /// Window vectors, row-major, L2-normalised, one row per entry of `windows`.
    pub vectors: Vec<f32>,
    /// In page order, at least one per page when `dims > 0`; empty when it is 0.
    pub windows: Vec<WindowRec>,
}

/// What a batch's vectors must be to be searched: no rows without an embedder; else one
/// row per window, windows in page order and every page holding one or more. `windows`
/// yields each window's page.
pub(crate) fn check_windows(dims: usize, vectors: usize, pages: usize, windows: impl ExactSizeIterator<Item = u32>) -> Result<(), String> {
    let n = windows.len();
    if dims == 0 {
        return if vectors == 0 && n == 0 { Ok(()) } else { Err(format!("{vectors} floats and {n} windows without dimensions")) };
    }
    if vectors != n * dims {
        return Err(format!("{vectors} floats for {n} windows of {dims} dimensions"));
    }
    let mut next = 0u32;
    for page in windows {
        if page != next && page + 1 != next {
            return Err(format!("window of page {page} out of order (next page {next})"));
        }
        next = page + 1;
    }
    if next as usize != pages {
        return Err(format!("windows cover {next} of {pages} pages"));
    }
    Ok(())
}

impl Batch {
    /// See [`check_windows`].
    pub fn check_windows(&self) -> Result<(), String> {
        check_windows(self.dims as usize, self.vectors.len(), self.pages.len(), self.windows.iter().map(|w| w.page))
    }

    /// Appends the documents of an archived batch, skipping those `drop` names.
    pub fn extend_from(&mut self, other: &ArchivedBatch, drop: impl Fn(&str) -> bool) {
        let dims = other.dims.to_native() as usize;
        self.dims = self.dims.max(dims as u32);
        for doc in other.docs.iter() {
            if drop(doc.id.as_str()) {
                continue;
            }
            let mut d: DocRec = rkyv::deserialize::<DocRec, rkyv::rancor::Error>(doc).expect("in-memory archive");
            let first = d.first_page as usize;
            d.first_page = self.pages.len() as u32;
            let doc_ix = self.docs.len() as u32;
            for p in &other.pages[first..first + d.pages as usize] {
                let mut page: PageRec = rkyv::deserialize::<PageRec, rkyv::rancor::Error>(p).expect("in-memory archive");
                let old_page = first + (page.n as usize);
                let first_chunk = page.first_chunk as usize;
                page.doc = doc_ix;
                page.first_chunk = self.chunks.len() as u32;
                let page_ix = self.pages.len() as u32;
                for c in &other.chunks[first_chunk..first_chunk + page.chunks as usize] {
                    let mut chunk: ChunkRec = rkyv::deserialize::<ChunkRec, rkyv::rancor::Error>(c).expect("in-memory archive");
                    chunk.page = page_ix;
                    self.chunks.push(chunk);
                }
                if dims > 0 {
                    let from = other.windows.partition_point(|w| (w.page.to_native() as usize) < old_page);
                    let to = from + other.windows[from..].partition_point(|w| w.page.to_native() as usize == old_page);
                    for w in &other.windows[from..to] {
                        self.windows.push(WindowRec { page: page_ix, first_pos: w.first_pos.to_native(), chunks: w.chunks.to_native() });
                    }
                    self.vectors.extend(other.vectors[from * dims..to * dims].iter().map(|v| v.to_native()));
                }
                self.pages.push(page);
            }
            self.docs.push(d);
        }
    }
}

impl ArchivedBatch {
    /// See [`check_windows`].
    pub fn check_windows(&self) -> Result<(), String> {
        check_windows(self.dims.to_native() as usize, self.vectors.len(), self.pages.len(), self.windows.iter().map(|w| w.page.to_native()))
    }
}
