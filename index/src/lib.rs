//! Quarry's engine crate: collections, segments, BM25, vectors and fusion.
//!
//! It is synchronous on purpose: no HTTP, no async runtime, no glommio. The server
//! (`src/`) owns requests and shards; this crate takes typed inputs and returns typed
//! results, so the compiler keeps the runtime out of the hot loops.
//!
//! It starts nearly empty: the offline-models and index-engine work fill it in.

/// The engine's on-disk format version; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

pub mod embed;
pub mod vector;
