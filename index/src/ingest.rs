//! From a parsed document to a batch ready to log: pages chunked by the document's
//! chunker (the one asked for, else the one its text calls for), dates found,
//! near-duplicate fingerprints taken, and page vectors attached once the embedder has run.

use crate::chunk::{ChunkOptions, Chunker};
use crate::segment::{Batch, ChunkRec, DocRec, Field, PageRec};

/// A document as the API parsed it: pages of text, no chunks yet.
#[derive(Debug, Clone, Default)]
pub struct DocDraft {
    pub id: String,
    pub title: Option<String>,
    pub author: Option<String>,
    pub metadata_json: String,
    pub fields: Vec<Field>,
    pub dates: Vec<i32>,
    pub format: String,
    pub embedder: String,
    pub created_at: String,
    /// The chunker the request or the collection's domain names; `None` detects it.
    pub chunker: Option<Chunker>,
    pub pages: Vec<PageDraft>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageDraft {
    pub text: String,
    pub number: Option<String>,
    pub volume: Option<String>,
    pub heading: Option<String>,
    /// What the format found on the page (a CSV page's columns and rows, a JSON
    /// record's index), shown with the page.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The chunker `d` gets: the one it names, else the one its text calls for.
pub fn chunker_of(d: &DocDraft) -> Chunker {
    d.chunker.unwrap_or_else(|| Chunker::detect(&d.pages.iter().map(|p| p.text.as_str()).collect::<Vec<_>>()))
}

/// Chunks every page; the batch has no vectors yet (see [`attach_vectors`]).
pub fn prepare(d: DocDraft, opts: &ChunkOptions) -> Batch {
    let chunker = chunker_of(&d);
    let mut b = Batch::default();
    let mut chars = 0u64;
    let chunked: Vec<_> = d.pages.iter().map(|p| chunker.chunk(&p.text, opts)).collect();
    let meta = {
        let pages: Vec<_> = d.pages.iter().zip(&chunked).map(|(p, c)| (p.text.as_str(), c.as_slice())).collect();
        chunker.document_meta(&pages)
    };
    // A clinical note's encounter date is the document's date, as a metadata date is.
    let mut dates = d.dates;
    if let Some(day) = meta.get("encounterDate").and_then(|v| v.as_str()).and_then(crate::date::parse_date) {
        dates.push(day.from);
    }
    let meta = serde_json::Value::Object(meta).to_string();
    for (n, (page, spans)) in d.pages.into_iter().zip(chunked).enumerate() {
        let first_chunk = b.chunks.len() as u32;
        let page_ix = b.pages.len() as u32;
        for (pos, s) in spans.iter().enumerate() {
            b.chunks.push(ChunkRec {
                page: page_ix,
                pos: pos as u32,
                start: s.start,
                end: s.end,
                byte_start: s.byte_start,
                byte_end: s.byte_end,
                kinds: s.kinds.0,
                heading: s.heading.clone(),
                meta_json: s.meta.as_ref().map(|m| serde_json::Value::Object(m.clone()).to_string()),
                footnote_of: s.footnote_of,
            });
        }
        chars += page.text.chars().count() as u64;
        let heading = page.heading.or_else(|| spans.iter().find_map(|s| s.heading.clone()));
        b.pages.push(PageRec {
            doc: 0,
            n: n as u32,
            number: page.number,
            volume: page.volume,
            heading,
            simhash: crate::text::simhash(&page.text),
            dates: crate::date::find_dates(&page.text),
            meta_json: page.meta.map(|m| serde_json::Value::Object(m).to_string()),
            text: page.text,
            citation: 0,
            first_chunk,
            chunks: spans.len() as u32,
        });
    }
    b.docs.push(DocRec {
        id: d.id,
        title: d.title,
        author: d.author,
        metadata_json: d.metadata_json,
        meta_json: meta,
        chunker: chunker.as_str().into(),
        format: d.format,
        embedder: d.embedder,
        created_at: d.created_at,
        chars,
        first_page: 0,
        pages: b.pages.len() as u32,
        chunks: b.chunks.len() as u32,
        fields: d.fields,
        dates,
    });
    b
}

/// What the embedder reads for each page: the title, then the page text.
pub fn embedding_inputs(b: &Batch) -> Vec<String> {
    let title = b.docs.first().and_then(|d| d.title.as_deref()).unwrap_or("");
    b.pages.iter().map(|p| if title.is_empty() { p.text.clone() } else { format!("{title}\n\n{}", p.text) }).collect()
}

pub fn attach_vectors(b: &mut Batch, dims: usize, data: Vec<f32>) {
    debug_assert_eq!(data.len(), b.pages.len() * dims);
    b.dims = dims as u32;
    b.vectors = data;
}
