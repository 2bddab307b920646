//! SOAT documents (`doc_…`, documents.yaml), as records on the generic account-owned
//! table ([`Owned`](super::owned::Owned)). Each names its project; its text is also a
//! document of its project's hidden engine collection (`soatdocs_<project>`, made on
//! first use, owned by the account), which knowledge retrieval searches. The record is
//! the truth (path, tags, metadata, the source text a re-ingest reads): a search hit
//! without one is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::owned::owned_record;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    pub content: String,
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    #[serde(default)]
    pub chunk_strategy: Option<String>,
    #[serde(default)]
    pub chunk_size: Option<i64>,
    #[serde(default)]
    pub chunk_overlap: Option<i64>,
    /// What the last ingest made: pages and chunks.
    #[serde(default)]
    pub pages: u32,
    #[serde(default)]
    pub chunks: u32,
    pub created_at: String,
    pub updated_at: String,
    /// Its document's id in the project's collection (new text is a new document: the
    /// engine never revives a deleted id).
    pub doc_id: String,
}

owned_record!(DocumentRecord, "soat_documents", "soat_documents_by_account");

/// A project's documents' collection id prefix.
pub const DOCUMENTS_COLLECTION_PREFIX: &str = "soatdocs_";

/// Whether collection `id` holds a project's SOAT documents: hidden from
/// `/v1/collections` (written only through `/api/v1/documents`).
pub fn is_documents_collection(id: &str) -> bool {
    id.starts_with(DOCUMENTS_COLLECTION_PREFIX)
}

/// Whether collection `id` belongs to an `/api/v1` module (memory stores, documents)
/// and is kept out of `/v1`.
pub fn is_hidden_collection(id: &str) -> bool {
    super::is_memory_collection(id) || is_documents_collection(id)
}
