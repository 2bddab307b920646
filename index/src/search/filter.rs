//! Filters, applied before any list is ranked: which pages of a view may be returned.

use std::collections::HashSet;

use crate::collection::view::{Dead, View};
use crate::segment::{ArchivedDocRec, ArchivedFieldValue, ArchivedPageRec, FieldValue};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub documents: Option<HashSet<String>>,
    /// A `Kinds` bitset: passages of these kinds are preferred; pages are not removed.
    pub kinds: u32,
    /// Each key (dotted) must hold one of the listed values.
    pub metadata: Vec<(String, Vec<FieldValue>)>,
    /// Inclusive day range (days since 1970-01-01).
    pub date: Option<(i32, i32)>,
    /// Lower-cased text a page heading or one of its chunk headings must contain.
    pub headings: Option<String>,
}

impl Filters {
    /// Whether any filter restricts pages (kinds do not).
    pub fn restricts(&self) -> bool {
        self.documents.is_some() || !self.metadata.is_empty() || self.date.is_some() || self.headings.is_some()
    }
}

/// The pages of one view a search may return.
pub struct Allowed {
    /// One bit per page; `None` = every page of a live document.
    pages: Option<Vec<u64>>,
    dead: std::sync::Arc<Dead>,
}

impl Allowed {
    pub fn new(view: &View, dead: std::sync::Arc<Dead>, f: &Filters) -> Allowed {
        if !f.restricts() {
            return Allowed { pages: None, dead };
        }
        let b = view.batch();
        let mut bits = vec![0u64; b.pages.len().div_ceil(64)];
        for (d, doc) in b.docs.iter().enumerate() {
            if dead.contains(d as u32) || !doc_passes(doc, f) {
                continue;
            }
            let first = doc.first_page.to_native() as usize;
            for p in first..first + doc.pages.to_native() as usize {
                if page_passes(view, doc, &b.pages[p], f) {
                    bits[p / 64] |= 1 << (p % 64);
                }
            }
        }
        Allowed { pages: Some(bits), dead }
    }

    /// Whether every page of the view may be returned (no filter, nothing deleted).
    pub fn is_everything(&self) -> bool {
        self.pages.is_none() && self.dead.count == 0
    }

    #[inline]
    pub fn page(&self, view: &View, page: u32) -> bool {
        match &self.pages {
            Some(bits) => bits[page as usize / 64] & (1 << (page % 64)) != 0,
            None => !self.dead.contains(view.batch().pages[page as usize].doc.to_native()),
        }
    }
}

fn doc_passes(doc: &ArchivedDocRec, f: &Filters) -> bool {
    if f.documents.as_ref().is_some_and(|ids| !ids.contains(doc.id.as_str())) {
        return false;
    }
    f.metadata
        .iter()
        .all(|(key, accepted)| doc.fields.iter().any(|field| field.key.as_str() == key && accepted.iter().any(|a| value_eq(&field.value, a))))
}

fn page_passes(view: &View, doc: &ArchivedDocRec, page: &ArchivedPageRec, f: &Filters) -> bool {
    if let Some((from, to)) = f.date {
        let in_range = |d: i32| d >= from && d <= to;
        let doc_dates = doc.dates.iter().map(|d| d.to_native());
        let page_dates = page.dates.iter().map(|d| d.to_native());
        if !doc_dates.chain(page_dates).any(in_range) {
            return false;
        }
    }
    if let Some(h) = &f.headings {
        let has = |s: Option<&str>| s.is_some_and(|s| s.to_lowercase().contains(h.as_str()));
        let first = page.first_chunk.to_native() as usize;
        let chunks = &view.batch().chunks[first..first + page.chunks.to_native() as usize];
        if !has(page.heading.as_ref().map(|s| s.as_str())) && !chunks.iter().any(|c| has(c.heading.as_ref().map(|s| s.as_str()))) {
            return false;
        }
    }
    true
}

/// Metadata equality as a user means it: strings exactly, numbers by value, and a
/// string that spells the number or boolean stored (filters often arrive as text).
fn value_eq(stored: &ArchivedFieldValue, wanted: &FieldValue) -> bool {
    match (stored, wanted) {
        (ArchivedFieldValue::Str(a), FieldValue::Str(b)) => a.as_str() == b,
        (ArchivedFieldValue::Num(a), FieldValue::Num(b)) => a.to_native() == *b,
        (ArchivedFieldValue::Bool(a), FieldValue::Bool(b)) => a == b,
        (ArchivedFieldValue::Null, FieldValue::Null) => true,
        (ArchivedFieldValue::Num(a), FieldValue::Str(b)) => b.parse::<f64>().is_ok_and(|b| b == a.to_native()),
        (ArchivedFieldValue::Str(a), FieldValue::Num(b)) => a.as_str().parse::<f64>().is_ok_and(|a| a == *b),
        (ArchivedFieldValue::Bool(a), FieldValue::Str(b)) => b == if *a { "true" } else { "false" },
        _ => false,
    }
}
