//! Format 2, frozen: what segment files and WAL records (tag 3) held before vectors
//! became rows of windows (format 3), when every page had exactly one vector. Never edit
//! these types: the bytes already on users' disks are laid out by them. A format-2
//! archive is validated against them and upgraded to today's
//! [`Batch`](super::format::Batch) in memory, each page one window of all its chunks;
//! the next merge writes it out as format 3.

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

/// A format-2 archive, validated, as today's batch.
pub fn upgrade(archive: &[u8]) -> Result<super::format::Batch, String> {
    let archived = rkyv::access::<ArchivedBatch, rkyv::rancor::Error>(archive).map_err(|e| format!("invalid format-2 archive: {e}"))?;
    let old: Batch = rkyv::deserialize::<Batch, rkyv::rancor::Error>(archived).map_err(|e| format!("format-2 archive: {e}"))?;
    Ok(upgrade_batch(old))
}

/// Format 2 → today: the same records, and one window per page of all its chunks (a
/// format-2 page's one vector was made from its whole text).
pub fn upgrade_batch(old: Batch) -> super::format::Batch {
    use super::format as now;
    let field = |f: Field| now::Field {
        key: f.key,
        value: match f.value {
            FieldValue::Str(s) => now::FieldValue::Str(s),
            FieldValue::Num(n) => now::FieldValue::Num(n),
            FieldValue::Bool(b) => now::FieldValue::Bool(b),
            FieldValue::Null => now::FieldValue::Null,
        },
    };
    let windows = if old.dims > 0 {
        (0u32..).zip(&old.pages).map(|(page, p)| now::WindowRec { page, first_pos: 0, chunks: p.chunks }).collect()
    } else {
        Vec::new()
    };
    now::Batch {
        docs: old
            .docs
            .into_iter()
            .map(|d| now::DocRec {
                id: d.id,
                title: d.title,
                author: d.author,
                metadata_json: d.metadata_json,
                meta_json: d.meta_json,
                chunker: d.chunker,
                format: d.format,
                embedder: d.embedder,
                created_at: d.created_at,
                chars: d.chars,
                first_page: d.first_page,
                pages: d.pages,
                chunks: d.chunks,
                fields: d.fields.into_iter().map(field).collect(),
                dates: d.dates,
            })
            .collect(),
        pages: old
            .pages
            .into_iter()
            .map(|p| now::PageRec {
                doc: p.doc,
                n: p.n,
                number: p.number,
                volume: p.volume,
                heading: p.heading,
                text: p.text,
                citation: p.citation,
                simhash: p.simhash,
                first_chunk: p.first_chunk,
                chunks: p.chunks,
                dates: p.dates,
                meta_json: p.meta_json,
            })
            .collect(),
        chunks: old
            .chunks
            .into_iter()
            .map(|c| now::ChunkRec {
                page: c.page,
                pos: c.pos,
                start: c.start,
                end: c.end,
                byte_start: c.byte_start,
                byte_end: c.byte_end,
                kinds: c.kinds,
                heading: c.heading,
                meta_json: c.meta_json,
                footnote_of: c.footnote_of,
            })
            .collect(),
        dims: old.dims,
        vectors: old.vectors,
        windows,
    }
}
