//! What a segment holds, as rkyv archives: the document table, pages, chunks, filter
//! columns and page vectors of a set of documents. The same structure is one WAL
//! record's payload (a batch of one document) and one segment file's contents, so the
//! in-memory tail of a collection and its flushed segments are read by the same code.
//!
//! This is format 2 ([`crate::FORMAT_VERSION`]); `v1.rs` keeps format 1 frozen, which
//! segment files and WAL records written before it still hold and are read through.

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

/// Documents with everything needed to search them.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub docs: Vec<DocRec>,
    pub pages: Vec<PageRec>,
    pub chunks: Vec<ChunkRec>,
    /// Floats per page vector; 0 when the collection has no embedder.
    pub dims: u32,
    /// Page vectors, row-major, L2-normalised.
    pub vectors: Vec<f32>,
}

impl Batch {
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
                    self.vectors.extend(other.vectors[old_page * dims..(old_page + 1) * dims].iter().map(|v| v.to_native()));
                }
                self.pages.push(page);
            }
            self.docs.push(d);
        }
    }
}
