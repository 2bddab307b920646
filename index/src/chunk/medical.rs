//! The medical chunker. Clinical notes: sections (HPI, PMH, medications, allergies, assessment and plan, vitals, labs, ...) and the kinds medication, lab, vital, diagnosis, plan, allergy.
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

/// How strongly the text reads as a clinical note: 1.0 or more means medical.
pub fn signal(_pages: &[&str]) -> f32 {
    0.0
}
