//! The classical chunker. Classical Arabic texts: hadith (isnad openers), grading, takhrij, Quranic verse, poetry, footnotes linked to their markers, headings.
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
