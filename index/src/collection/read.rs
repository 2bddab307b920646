//! Plain views of what a snapshot holds — documents, pages, chunks, search hits — so
//! the server reads them without meeting rkyv's archived types: every field a native
//! value or a `&str` borrowed from the mmapped segment (no copy).

use super::snapshot::{DocAt, Snapshot};
use crate::chunk::Kinds;
use crate::search::{Hit, Passage};
use crate::segment::{ArchivedChunkRec, ArchivedDocRec, ArchivedPageRec};

#[derive(Debug, Clone, Copy)]
pub struct DocView<'a> {
    pub id: &'a str,
    pub title: Option<&'a str>,
    pub author: Option<&'a str>,
    /// The caller's metadata object as JSON text, as given.
    pub metadata_json: &'a str,
    /// What the chunker found, as JSON text.
    pub meta_json: &'a str,
    pub chunker: &'a str,
    pub format: &'a str,
    pub embedder: &'a str,
    pub created_at: &'a str,
    pub pages: u32,
    pub chunks: u32,
    pub chars: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct PageView<'a> {
    /// Index within its document, from 0.
    pub n: u32,
    pub number: Option<&'a str>,
    pub volume: Option<&'a str>,
    pub heading: Option<&'a str>,
    pub text: &'a str,
    /// The stable citation id; [`PageView::citation_id`] writes it as `AL-%08X`.
    pub citation: u32,
    /// What the format found on the page, a JSON object as text.
    pub meta_json: Option<&'a str>,
}

impl PageView<'_> {
    pub fn citation_id(&self) -> String {
        format!("AL-{:08X}", self.citation)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct ChunkView<'a> {
    pub pos: u32,
    /// The chunk's text: the page text sliced at its offsets.
    pub text: &'a str,
    pub kinds: Kinds,
    pub heading: Option<&'a str>,
    /// Offsets in characters into the page text, end exclusive.
    pub start: u32,
    pub end: u32,
    /// What the chunker found in the chunk, a JSON object as text.
    pub meta_json: Option<&'a str>,
    /// For a footnote, the `pos` of the body chunk on its page it answers.
    pub footnote_of: Option<u32>,
}

/// One search result: its page, document, and best passages with their matched terms.
pub struct HitView<'a> {
    pub doc: DocView<'a>,
    pub page: PageView<'a>,
    pub hit: &'a Hit,
    pub passages: Vec<(ChunkView<'a>, &'a Passage)>,
}

fn doc_view(d: &ArchivedDocRec) -> DocView<'_> {
    DocView {
        id: d.id.as_str(),
        title: d.title.as_ref().map(|s| s.as_str()),
        author: d.author.as_ref().map(|s| s.as_str()),
        metadata_json: d.metadata_json.as_str(),
        meta_json: d.meta_json.as_str(),
        chunker: d.chunker.as_str(),
        format: d.format.as_str(),
        embedder: d.embedder.as_str(),
        created_at: d.created_at.as_str(),
        pages: d.pages.to_native(),
        chunks: d.chunks.to_native(),
        chars: d.chars.to_native(),
    }
}

fn page_view(p: &ArchivedPageRec) -> PageView<'_> {
    PageView {
        n: p.n.to_native(),
        number: p.number.as_ref().map(|s| s.as_str()),
        volume: p.volume.as_ref().map(|s| s.as_str()),
        heading: p.heading.as_ref().map(|s| s.as_str()),
        text: p.text.as_str(),
        citation: p.citation.to_native(),
        meta_json: p.meta_json.as_ref().map(|s| s.as_str()),
    }
}

fn chunk_view<'a>(page: &'a ArchivedPageRec, c: &'a ArchivedChunkRec) -> ChunkView<'a> {
    ChunkView {
        pos: c.pos.to_native(),
        text: &page.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize],
        kinds: Kinds(c.kinds.to_native()),
        heading: c.heading.as_ref().map(|s| s.as_str()),
        start: c.start.to_native(),
        end: c.end.to_native(),
        meta_json: c.meta_json.as_ref().map(|s| s.as_str()),
        footnote_of: c.footnote_of.as_ref().map(|n| n.to_native()),
    }
}

impl Snapshot {
    pub fn doc_view(&self, at: DocAt) -> DocView<'_> {
        doc_view(self.doc(at))
    }

    /// Page `n` of a document, or `None` past its last page.
    pub fn page_view(&self, at: DocAt, n: u32) -> Option<PageView<'_>> {
        self.page(at, n).map(page_view)
    }

    /// The chunks of page `n` of a document, in order.
    pub fn chunk_views(&self, at: DocAt, n: u32) -> Vec<ChunkView<'_>> {
        let Some(p) = self.page(at, n) else { return Vec::new() };
        let b = self.views[at.view].batch();
        let first = p.first_chunk.to_native() as usize;
        b.chunks[first..first + p.chunks.to_native() as usize].iter().map(|c| chunk_view(p, c)).collect()
    }

    /// The citation id of a hit's page.
    pub fn citation_of(&self, hit: &Hit) -> u32 {
        self.views[hit.view].batch().pages[hit.page as usize].citation.to_native()
    }

    /// A search hit of this snapshot as plain views.
    pub fn hit_view<'a>(&'a self, hit: &'a Hit) -> HitView<'a> {
        let b = self.views[hit.view].batch();
        let p = &b.pages[hit.page as usize];
        let d = &b.docs[p.doc.to_native() as usize];
        let passages = hit.passages.iter().map(|ps| (chunk_view(p, &b.chunks[ps.chunk as usize]), ps)).collect();
        HitView { doc: doc_view(d), page: page_view(p), hit, passages }
    }
}
