//! Plain text and Markdown: stored as written, split into pages at form feeds and
//! `--- page N ---` lines (see [`crate::chunk::split_pages`]); the chunkers read the
//! Markdown structure themselves.

use crate::chunk::split_pages;
use crate::ingest::PageDraft;

pub(super) fn read(text: &str) -> Vec<PageDraft> {
    split_pages(text).into_iter().map(|p| PageDraft { text: p.text, number: p.number, volume: None, heading: p.heading, meta: None }).collect()
}
