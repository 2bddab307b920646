//! Splitting documents into pages and pages into chunks.
//!
//! Pages are what citations name; chunks are what retrieval scores and passages quote.
//! A [`Chunker`] picks the chunking of a whole document: prose (headings, lists, tables,
//! dates) or a domain chunker (classical Arabic, clinical notes, legal texts) that adds
//! its own structure, [`Kind`]s and meta.

mod blocks;
mod chunker;
mod classical;
mod kinds;
mod legal;
mod medical;
mod pages;
mod prose;
mod unit;

pub use chunker::Chunker;
pub use kinds::{Kind, Kinds};
pub use pages::{split_pages, PageText};
pub use prose::{chunk_prose, ChunkOptions, ChunkSpan};
