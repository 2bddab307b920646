//! From a parsed document to a batch ready to log: pages chunked by the document's
//! chunker (the one asked for, else the one its text calls for), dates found,
//! near-duplicate fingerprints taken, and window vectors attached once the embedder has run
//! (`windows.rs` plans what it reads).

use crate::chunk::{ChunkOptions, Chunker};
use crate::identify::{self, Counts, Kinds};
use crate::segment::{Batch, ChunkRec, DocRec, Field, PageRec, WindowRec};

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
    /// What the collection's identifier settings ask of this document.
    pub privacy: Privacy,
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

/// A collection's identifier settings, as ingest applies them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Privacy {
    /// `mask_identifiers`: the embedder reads the text with identifiers masked; what is
    /// stored keeps them.
    pub mask_embedding: bool,
    /// `redact_storage`: title, author and text are masked before chunking; only the
    /// masked form is stored.
    pub redact: bool,
}

/// The identifiers found in a document's title, author and pages; under `redact` those
/// texts are replaced by their masked form (the default set: every kind but date and url),
/// before anything is chunked, logged or stored.
fn identifiers(d: &mut DocDraft) -> Counts {
    let mut counts = Counts::default();
    let texts = d.title.iter_mut().chain(d.author.iter_mut()).chain(d.pages.iter_mut().map(|p| &mut p.text));
    for text in texts {
        if d.privacy.redact {
            let masked = identify::mask(text, Kinds::default_mask());
            counts.add(&masked.counts);
            *text = masked.text;
        } else {
            counts.add(&Counts::of(&identify::scan(text, Kinds::ALL)));
        }
    }
    counts
}

/// The counts as the API writes them: `{ kind: n }` for the kinds found, most first.
pub fn counts_json(c: &Counts) -> serde_json::Map<String, serde_json::Value> {
    c.by_count().into_iter().map(|(k, n)| (k.name().to_owned(), n.into())).collect()
}

/// The chunker `d` gets: the one it names, else the one its text calls for.
pub fn chunker_of(d: &DocDraft) -> Chunker {
    d.chunker.unwrap_or_else(|| Chunker::detect(&d.pages.iter().map(|p| p.text.as_str()).collect::<Vec<_>>()))
}

/// Chunks every page; the batch has no vectors yet (see [`attach_vectors`]).
pub fn prepare(d: DocDraft, opts: &ChunkOptions) -> Batch {
    prepare_counted(d, opts).0
}

/// [`prepare`], and the identifiers the document held (counted whatever the settings;
/// under `redact` the batch holds only the masked text).
pub fn prepare_counted(mut d: DocDraft, opts: &ChunkOptions) -> (Batch, Counts) {
    let found = identifiers(&mut d);
    let chunker = chunker_of(&d);
    let mut b = Batch::default();
    let mut chars = 0u64;
    let chunked: Vec<_> = d.pages.iter().map(|p| chunker.chunk(&p.text, opts)).collect();
    let mut meta = {
        let pages: Vec<_> = d.pages.iter().zip(&chunked).map(|(p, c)| (p.text.as_str(), c.as_slice())).collect();
        chunker.document_meta(&pages)
    };
    if d.privacy.redact {
        let identifiers = serde_json::json!({ "total": found.total(), "counts": counts_json(&found) });
        meta.insert("identifiers".into(), identifiers);
        meta.insert("redacted".into(), true.into());
    }
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
    (b, found)
}

/// Attaches the embedder's output for `windows` (see [`crate::windows::plan`]): one
/// row of `dims` floats per window, in order.
pub fn attach_vectors(b: &mut Batch, windows: Vec<WindowRec>, dims: usize, data: Vec<f32>) {
    debug_assert_eq!(data.len(), windows.len() * dims);
    b.dims = dims as u32;
    b.vectors = data;
    b.windows = windows;
}
