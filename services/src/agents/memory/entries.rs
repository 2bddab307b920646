//! Memory entries (memoryEntries.yaml): written into a store's record table and its
//! collection, the index first (a hit with no record is dropped by retrieval, a record
//! is never without its document); removed record first.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{get as get_store, index, MemoryError};
use crate::agents::patch::Patch;
use crate::agents::tools::Env;
use crate::agents::{Scope, SoatError};
use crate::store::{MemoryEntryRecord, Records};

pub const ENTRY_PREFIX: &str = "mem_entry_";
pub const SOURCE_TYPES: &[&str] = &["manual", "agent", "extraction", "orchestration"];
/// `duplicate_threshold`'s default: a cosine at or above it skips the write.
pub const DUPLICATE_THRESHOLD: f64 = 0.95;

/// `createMemoryEntry`'s body (strict).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewEntry {
    pub memory_id: String,
    pub content: String,
    #[serde(default)]
    pub source_type: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub duplicate_threshold: Option<f64>,
    /// Not in the body: the generation a `write_memory` call ran in.
    #[serde(skip)]
    pub source_generation_id: Option<String>,
    /// Not in the body: the conversation that generation answered in.
    #[serde(skip)]
    pub source_conversation_id: Option<String>,
}

/// `updateMemoryEntry`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryPatch {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tags: Patch<Vec<String>>,
    #[serde(default)]
    pub metadata: Patch<serde_json::Map<String, Value>>,
}

/// What a create did: `created`, or `skipped` for a near-duplicate (the existing entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Skipped,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Skipped => "skipped",
        }
    }
}

/// The most characters one memory entry holds: a fact to recall, not a document.
pub const MAX_CONTENT_CHARS: usize = 20_000;

fn check_content(content: &str) -> Result<(), SoatError> {
    if content.trim().is_empty() {
        return Err(SoatError::invalid("content", "must not be empty."));
    }
    let n = content.chars().count();
    if n > MAX_CONTENT_CHARS {
        return Err(SoatError::invalid("content", format!("holds {n} characters; at most {MAX_CONTENT_CHARS}.")));
    }
    Ok(())
}

/// The store's live entries, oldest first.
pub fn of_store(records: &Records, account_id: &str, memory_id: &str) -> Result<Vec<MemoryEntryRecord>, MemoryError> {
    let mut all: Vec<MemoryEntryRecord> = records.list(account_id)?;
    all.retain(|e| e.memory_id == memory_id);
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

/// Writes an entry into a store the scope sees (in the store's project), unless an
/// entry of the store is a near-duplicate (cosine ≥ `duplicate_threshold`).
pub async fn create(env: &Env<'_>, scope: &Scope, new: NewEntry) -> Result<(MemoryEntryRecord, Action), MemoryError> {
    check_content(&new.content)?;
    let threshold = new.duplicate_threshold.unwrap_or(DUPLICATE_THRESHOLD);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(SoatError::invalid("duplicate_threshold", format!("is a cosine similarity from 0 to 1, not {threshold}.")).into());
    }
    let source_type = new.source_type.unwrap_or_else(|| "manual".into());
    if !SOURCE_TYPES.contains(&source_type.as_str()) {
        return Err(SoatError::invalid("source_type", format!("must be one of {}, not \"{source_type}\".", SOURCE_TYPES.join(", "))).into());
    }
    let store = get_store(env.records, scope, &new.memory_id)?;
    let owned = index::collection(env, &store.account_id, &store.id).await?;
    if let Some(existing) = duplicate(env, &owned, &store.account_id, &new.content, threshold)? {
        return Ok((existing, Action::Skipped));
    }
    let now = crate::clock::now_rfc3339();
    let entry = MemoryEntryRecord {
        id: format!("{ENTRY_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: store.account_id.clone(),
        project_id: store.project_id.clone(),
        memory_id: store.id.clone(),
        content: new.content,
        source_type,
        tags: new.tags,
        metadata: new.metadata.map(Value::Object),
        source_generation_id: new.source_generation_id,
        source_conversation_id: new.source_conversation_id,
        created_at: now.clone(),
        updated_at: now,
        doc_id: None,
    };
    index::add(env, &owned, &entry).await?;
    let (records, e) = (env.records.clone(), entry.clone());
    crate::runtime::blocking(move || records.insert(&e)).await?;
    Ok((entry, Action::Created))
}

/// The store's entry nearest `content` when its cosine reaches `threshold`.
fn duplicate(
    env: &Env<'_>,
    owned: &crate::search::Owned,
    account_id: &str,
    content: &str,
    threshold: f64,
) -> Result<Option<MemoryEntryRecord>, MemoryError> {
    if owned.snapshot().counts().documents == 0 {
        return Ok(None);
    }
    let Some(vector) = index::embed_passage(env, &owned.record, content)? else { return Ok(None) };
    let entries = of_store(env.records, account_id, &owned.record.id)?;
    let live: HashSet<String> = entries.iter().map(|e| e.doc_id().to_owned()).collect();
    let hits = index::rank_entries(env, owned, Some(&vector), content, &live, live.len(), env.search.index_config().rrf_k);
    let best = hits.into_iter().filter(|h| h.cosine.is_some_and(|c| c >= threshold)).max_by(|a, b| a.cosine.partial_cmp(&b.cosine).unwrap());
    let Some(best) = best else { return Ok(None) };
    Ok(entries.into_iter().find(|e| e.doc_id() == best.doc_id))
}

/// The entries of a store the scope sees, oldest first (`include_invalidated` changes
/// nothing yet: no write path supersedes an entry).
pub fn list(records: &Records, scope: &Scope, memory_id: &str) -> Result<Vec<MemoryEntryRecord>, MemoryError> {
    let store = get_store(records, scope, memory_id)?;
    of_store(records, &store.account_id, &store.id)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<MemoryEntryRecord, MemoryError> {
    Ok(scope.get(records, id)?.ok_or_else(|| SoatError::not_found("memory entry", id))?)
}

/// Changes an entry; new content is indexed again (its document replaced) first.
pub async fn update(env: &Env<'_>, scope: &Scope, id: &str, patch: EntryPatch) -> Result<MemoryEntryRecord, MemoryError> {
    if let Some(c) = &patch.content {
        check_content(c)?;
    }
    let mut entry = get(env.records, scope, id)?;
    let mut replaced = None;
    if let Some(content) = patch.content.filter(|c| *c != entry.content) {
        // The new content is a new document; the old one goes once the record names it.
        entry.content = content;
        replaced = Some(entry.doc_id().to_owned());
        entry.doc_id = Some(format!("{}_v{}", entry.id, crate::ids::random_base62(8)));
        let owned = index::collection(env, &entry.account_id, &entry.memory_id).await?;
        index::add(env, &owned, &entry).await?;
    }
    entry.tags = patch.tags.apply(entry.tags.take());
    entry.metadata = patch.metadata.apply(entry.metadata.take().and_then(|m| m.as_object().cloned())).map(Value::Object);
    entry.updated_at = crate::clock::now_rfc3339();
    let (records, e) = (env.records.clone(), entry.clone());
    let written = crate::runtime::blocking(move || {
        records.update(&e.account_id.clone(), &e.id.clone(), |r: &mut MemoryEntryRecord| {
            *r = e;
            crate::store::owned::Change::Write(())
        })
    })
    .await?;
    written.ok_or_else(|| SoatError::not_found("memory entry", id))?;
    if let (Some(old), Ok(owned)) = (replaced, index::collection(env, &entry.account_id, &entry.memory_id).await) {
        index::remove(env, &owned, &old).await?;
    }
    Ok(entry)
}

/// Deletes an entry: its record, then its document.
pub async fn delete(env: &Env<'_>, scope: &Scope, id: &str) -> Result<(), MemoryError> {
    let entry = get(env.records, scope, id)?;
    let (records, e) = (env.records.clone(), entry.clone());
    crate::runtime::blocking(move || records.remove::<MemoryEntryRecord>(&e.account_id, &e.id)).await?;
    if let Ok(owned) = index::collection(env, &entry.account_id, &entry.memory_id).await {
        index::remove(env, &owned, entry.doc_id()).await?;
    }
    Ok(())
}

/// SOAT's `MemoryEntry`.
pub fn view(e: &MemoryEntryRecord) -> Value {
    json!({
        "id": e.id, "memory_id": e.memory_id, "content": e.content, "source_type": e.source_type,
        "tags": e.tags, "metadata": e.metadata, "source_generation_id": e.source_generation_id,
        "source_conversation_id": e.source_conversation_id, "invalidated_at": null, "superseded_by_entry_id": null,
        "created_at": e.created_at, "updated_at": e.updated_at,
    })
}

/// `MemoryEntryWriteResult`: the entry and what the write did.
pub fn write_view(e: &MemoryEntryRecord, action: Action) -> Value {
    let mut v = view(e);
    v["action"] = action.as_str().into();
    v
}

/// The ids of `entries` whose tags (with their store's) hold every `key:value` pair.
pub fn tagged<'a>(
    entries: impl Iterator<Item = &'a MemoryEntryRecord>,
    store_tags: &[String],
    want: &std::collections::BTreeMap<String, String>,
) -> HashSet<String> {
    entries.filter(|e| crate::agents::knowledge::holds(store_tags.iter().chain(e.tags.iter().flatten()), want)).map(|e| e.id.clone()).collect()
}
