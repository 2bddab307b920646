//! A published snapshot: the views a search reads and which of their documents are
//! deleted. Immutable; a write builds a new one and swaps it in atomically, so a search
//! never waits for a write and never sees half of one.

use std::sync::Arc;

use super::view::{Dead, View};
use crate::chunk::Chunker;
use crate::segment::{ArchivedDocRec, ArchivedPageRec};

#[derive(Default, Clone)]
pub struct Snapshot {
    pub views: Vec<Arc<View>>,
    pub dead: Vec<Arc<Dead>>,
}

/// Where a document lives in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocAt {
    pub view: usize,
    pub doc: u32,
}

/// Live documents, pages and chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub documents: u64,
    pub pages: u64,
    pub chunks: u64,
    pub chars: u64,
    /// What the storage allowance counts ([`crate::segment::stored_chars`]): the text,
    /// metadata and labels of every live document.
    pub stored: u64,
    /// Documents per chunker, in `Chunker::ALL` order.
    pub by_chunker: [u64; 4],
}

impl Counts {
    /// The chunker most documents used (the first in `Chunker::ALL` order on a tie);
    /// `None` with no documents.
    pub fn main_chunker(&self) -> Option<Chunker> {
        let (i, n) = self.by_chunker.iter().enumerate().rev().max_by_key(|(_, n)| **n)?;
        (*n > 0).then(|| Chunker::ALL[i])
    }
}

/// An archived optional label as text.
fn label(s: &rkyv::option::ArchivedOption<rkyv::string::ArchivedString>) -> Option<&str> {
    s.as_ref().map(|s| s.as_str())
}

impl Snapshot {
    pub fn find(&self, id: &str) -> Option<DocAt> {
        self.views
            .iter()
            .enumerate()
            .rev()
            .find_map(|(v, view)| view.doc(id).filter(|&d| !self.dead[v].contains(d)).map(|doc| DocAt { view: v, doc }))
    }

    pub fn doc(&self, at: DocAt) -> &ArchivedDocRec {
        &self.views[at.view].batch().docs[at.doc as usize]
    }

    /// Page `n` of a document.
    pub fn page(&self, at: DocAt, n: u32) -> Option<&ArchivedPageRec> {
        let doc = self.doc(at);
        (n < doc.pages.to_native()).then(|| &self.views[at.view].batch().pages[(doc.first_page.to_native() + n) as usize])
    }

    /// Every live document, oldest view first.
    pub fn docs(&self) -> impl Iterator<Item = DocAt> + '_ {
        self.views.iter().enumerate().flat_map(move |(v, view)| {
            (0..view.batch().docs.len() as u32).filter(move |&d| !self.dead[v].contains(d)).map(move |doc| DocAt { view: v, doc })
        })
    }

    /// [`crate::segment::stored_chars`] of a document.
    pub fn stored_chars(&self, at: DocAt) -> u64 {
        let d = self.doc(at);
        let pages = (0..d.pages.to_native()).filter_map(|n| self.page(at, n));
        let page_labels = pages.flat_map(|p| [label(&p.number), label(&p.volume), label(&p.heading)]);
        crate::segment::stored_chars(d.chars.to_native(), &d.metadata_json, [label(&d.title), label(&d.author)].into_iter().chain(page_labels))
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for at in self.docs() {
            let d = self.doc(at);
            c.documents += 1;
            c.pages += d.pages.to_native() as u64;
            c.chunks += d.chunks.to_native() as u64;
            c.chars += d.chars.to_native();
            c.stored += self.stored_chars(at);
            if let Some(i) = Chunker::ALL.iter().position(|k| k.as_str() == d.chunker.as_str()) {
                c.by_chunker[i] += 1;
            }
        }
        c
    }
}
