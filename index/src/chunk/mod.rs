//! Splitting documents into pages and pages into chunks.
//!
//! Pages are what citations name; chunks are what retrieval scores and passages quote.
//! This is the prose chunker, which every document gets; domain chunkers (hadith,
//! clinical, legal, …) will refine its chunks and add [`Kind`]s of their own.

mod blocks;
mod kinds;
mod pages;
mod prose;

pub use kinds::{Kind, Kinds};
pub use pages::{split_pages, PageText};
pub use prose::{chunk_prose, ChunkOptions, ChunkSpan};
