//! Quarry's engine crate: collections, segments, BM25, vectors and fusion.
//!
//! It is synchronous on purpose: no HTTP, no async runtime, no glommio. The server
//! (`src/`) owns requests and shards; this crate takes typed inputs and returns typed
//! results, so the compiler keeps the runtime out of the hot loops.

/// The engine's on-disk format version; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 3;

pub mod bm25;
pub mod chunk;
pub mod collection;
pub mod date;
pub mod embed;
pub mod engine;
pub mod expand;
pub mod format;
pub mod identify;
pub mod ingest;
pub mod journal;
pub mod search;
pub mod segment;
pub mod text;
pub mod vector;
pub mod verify;
pub mod wal;
pub mod windows;
