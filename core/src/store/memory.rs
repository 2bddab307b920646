//! SOAT memory stores (`mem_…`) and their entries (`mem_entry_…`), as records on the
//! generic account-owned table ([`Owned`](super::owned::Owned)). Each names its project;
//! `agents::memory` keeps another project's out of sight. An entry's text is also a
//! document of its store's engine collection (`agents::memory::index`): the record is
//! the truth, a search hit without one is dropped.

use serde::{Deserialize, Serialize};

use super::owned::owned_record;

/// A memory store: a named container of entries, searched by knowledge retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(MemoryRecord, "soat_memories", "soat_memories_by_account");

/// One entry of a memory store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntryRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub memory_id: String,
    pub content: String,
    /// `manual`, `agent`, `extraction` or `orchestration`.
    #[serde(default = "manual")]
    pub source_type: String,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    #[serde(default)]
    pub source_generation_id: Option<String>,
    /// The conversation the writing generation answered in (issue 36, knowledge).
    #[serde(default)]
    pub source_conversation_id: Option<String>,
    pub created_at: String,
    #[serde(default)]
    pub updated_at: String,
    /// The id of its document in the store's collection when it is not the entry's own:
    /// new content is a new document (the engine never revives a deleted id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_id: Option<String>,
}

impl MemoryEntryRecord {
    /// Its document's id in the store's collection.
    pub fn doc_id(&self) -> &str {
        self.doc_id.as_deref().unwrap_or(&self.id)
    }
}

fn manual() -> String {
    "manual".into()
}

owned_record!(MemoryEntryRecord, "soat_memory_entries", "soat_memory_entries_by_account");

/// A store's id prefix; its engine collection has the store's id.
pub const MEMORY_PREFIX: &str = "mem_";

/// Whether collection `id` is a memory store's: hidden from `/v1/collections` (its
/// documents are entries, written only through `/api/v1/memory-entries`).
pub fn is_memory_collection(id: &str) -> bool {
    id.starts_with(MEMORY_PREFIX)
}
