//! The legal chunker. Legal texts: clauses and their numbering, definitions, citations (U.S.C., C.F.R., Pub. L., reporters, section forms).
//!
//! For now the prose chunker's spans; the domain's own structure is filled in next.

use serde_json::{Map, Value};

use super::{chunk_prose, ChunkOptions, ChunkSpan};

pub fn chunk(page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
    chunk_prose(page, opts)
}

/// The domain's keys of the document's meta (`kind` is added by the caller).
pub fn document_meta(_pages: &[(&str, &[ChunkSpan])]) -> Map<String, Value> {
    Map::new()
}

/// How strongly the text reads as a legal text: 1.0 or more means legal.
pub fn signal(_pages: &[&str]) -> f32 {
    0.0
}
