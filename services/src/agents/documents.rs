//! SOAT documents (documents.yaml): a project's text documents, each a record
//! (`store::DocumentRecord`: path, title, tags, metadata, the source text) and a
//! document of the project's own Quarry collection (`soatdocs_<project>`, made on first
//! use, owned by the account, hidden from `/v1`), ingested through the same path as
//! AgentLex's (`search::Service::add`: the format detected from the text, the
//! collection's chunker and identifier settings, the default embedder). Knowledge
//! retrieval (`agents::knowledge`) searches them by id or path prefix with hybrid
//! search and page citations.
//!
//! Access: a project's documents are `/api/v1` data, read by any key of the project
//! (a project `sk_` key among them) and by the account key, like memory stores; the
//! collection behind them is not `/v1` data (`/v1/collections` neither lists nor opens
//! it), so `core::access`'s rule that an `sk_` key reads no `/v1` collection holds.
//!
//! Ingestion is synchronous: a create or re-ingest answers once the engine's WAL holds
//! the text, so every document is `ready` when it is answered. `chunk_strategy`,
//! `chunk_size` and `chunk_overlap` are recorded and answered; Quarry's chunker
//! (the collection's domain, else detection) cuts the text. There is no files module:
//! `POST /documents/ingest` names a file no project holds (400), and no converter ever
//! defers, so no ingestion callback is awaited (401).

use std::collections::BTreeMap;

use quarry_index::format::{Format, Parsed};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::memory::MemoryError as DocumentError;
use super::patch::Patch;
use super::tools::Env;
use super::{Project, Scope, SoatError};
use crate::search::{NewDocument, Owned, SearchError};
use crate::store::{CollectionRecord, CollectionSettings, DocumentRecord, DOCUMENTS_COLLECTION_PREFIX};

crate::agents::scope::in_project!(DocumentRecord);

/// A SOAT document's id prefix (a `/v1` document's ids share it: which one an id names
/// is told by the records, [`in_project`]).
pub const DOCUMENT_PREFIX: &str = "doc_";

/// Whether `id` names a SOAT document of project `project_id` (else it is read as a
/// `/v1` document's).
pub fn in_project(records: &crate::store::Records, account_id: &str, project_id: &str, id: &str) -> bool {
    records.get::<DocumentRecord>(account_id, id).ok().flatten().is_some_and(|d| d.project_id == project_id)
}

/// `chunk_strategy`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkStrategy {
    Page,
    Whole,
    Size,
}

impl ChunkStrategy {
    fn as_str(self) -> &'static str {
        match self {
            ChunkStrategy::Page => "page",
            ChunkStrategy::Whole => "whole",
            ChunkStrategy::Size => "size",
        }
    }
}

/// `createDocument`'s body (strict).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewDoc {
    #[serde(default)]
    pub project_id: Option<String>,
    pub content: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    pub chunking: Chunking,
}

/// The chunk settings a create or re-ingest records.
#[derive(Debug, Default, Deserialize)]
pub struct Chunking {
    #[serde(default)]
    pub chunk_strategy: Option<ChunkStrategy>,
    #[serde(default)]
    pub chunk_size: Option<i64>,
    #[serde(default)]
    pub chunk_overlap: Option<i64>,
}

/// `reingestDocument`'s body (strict; all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reingest {
    #[serde(default)]
    pub chunk_strategy: Option<ChunkStrategy>,
    #[serde(default)]
    pub chunk_size: Option<i64>,
    #[serde(default)]
    pub chunk_overlap: Option<i64>,
}

/// `updateDocument`'s body (strict).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocPatch {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub path: Patch<String>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
}

/// `ingestDocument`'s body (strict).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestFile {
    pub file_id: String,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub path_prefix: Option<String>,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    pub chunking: Chunking,
}

/// A path as stored: with its leading slash.
pub fn normalize_path(path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    }
}

/// Whether `path` is under directory `prefix`, at a path boundary: `/reports` and
/// `/reports/` hold `/reports/q1.txt`, never `/reports-archive/q1.txt`; `/` holds all.
pub fn under(path: &str, prefix: &str) -> bool {
    let dir = normalize_path(prefix.trim_end_matches('/'));
    if dir == "/" {
        return true;
    }
    path == dir || path.strip_prefix(&dir).is_some_and(|rest| rest.starts_with('/'))
}

fn check_chunking(c: &Chunking) -> Result<(), SoatError> {
    if c.chunk_size.is_some_and(|s| s < 1) {
        return Err(SoatError::invalid("chunk_size", "must be at least 1."));
    }
    if c.chunk_overlap.is_some_and(|o| o < 0) {
        return Err(SoatError::invalid("chunk_overlap", "cannot be negative."));
    }
    if let (Some(s), Some(o)) = (c.chunk_size, c.chunk_overlap) {
        if o >= s {
            return Err(SoatError::invalid("chunk_overlap", format!("must be below chunk_size ({s}), not {o}.")));
        }
    }
    Ok(())
}

/// The project's documents' collection, made on first use.
async fn collection(env: &Env<'_>, p: Project<'_>) -> Result<Owned, SearchError> {
    let id = format!("{DOCUMENTS_COLLECTION_PREFIX}{}", p.project_id);
    if let Some(owned) = existing(env, p.account_id, &id).await? {
        return Ok(owned);
    }
    let record = CollectionRecord {
        id: id.clone(),
        account_id: p.account_id.to_owned(),
        name: id.clone(),
        embedder: env.search.embedder().to_owned(),
        created_at: crate::clock::now_rfc3339(),
        settings: CollectionSettings { domain: "general".into(), ..CollectionSettings::default() },
        language: None,
    };
    match env.search.create(record).await {
        Ok(owned) => Ok(owned),
        // Made by a concurrent first write meanwhile.
        Err(e) => existing(env, p.account_id, &id).await?.ok_or(e),
    }
}

/// The project's documents' collection when it exists.
pub async fn existing(env: &Env<'_>, account_id: &str, id: &str) -> Result<Option<Owned>, SearchError> {
    let Some(record) = env.records.collection(account_id, id)? else { return Ok(None) };
    Ok(env.search.collection(id).await?.map(|coll| Owned { record, coll }))
}

/// The collection of `project_id`'s documents, if any was made.
pub async fn project_collection(env: &Env<'_>, p: Project<'_>) -> Result<Option<Owned>, SearchError> {
    existing(env, p.account_id, &format!("{DOCUMENTS_COLLECTION_PREFIX}{}", p.project_id)).await
}

/// Indexes the record's text as document `doc.doc_id`; durable when it returns.
async fn index(env: &Env<'_>, owned: &Owned, doc: &mut DocumentRecord) -> Result<(), DocumentError> {
    let format = Format::detect(&doc.content);
    let Parsed { pages, title } = format.read(&doc.content).map_err(|e| SoatError::invalid("content", format!("{} ({}).", e, format.as_str())))?;
    let mut metadata = Map::new();
    metadata.insert("document_id".into(), doc.id.clone().into());
    if let Some(path) = &doc.path {
        metadata.insert("path".into(), path.clone().into());
    }
    let new = NewDocument { title: doc.title.clone().or(title), metadata, format: format.as_str(), pages, ..NewDocument::default() };
    let added = env.search.add(env.caller, owned, new, Some(doc.doc_id.clone())).await?;
    (doc.pages, doc.chunks) = (added.pages, added.chunks);
    Ok(())
}

/// Creates a document in the scope's project: indexed, then recorded.
pub async fn create(env: &Env<'_>, scope: &Scope, new: NewDoc) -> Result<DocumentRecord, DocumentError> {
    check_chunking(&new.chunking)?;
    if new.content.trim().is_empty() {
        return Err(SoatError::invalid("content", "must not be empty.").into());
    }
    let id = format!("{DOCUMENT_PREFIX}{}", crate::ids::random_base62(16));
    let path = new.path.as_deref().map(normalize_path).or_else(|| new.filename.as_deref().map(normalize_path));
    let now = crate::clock::now_rfc3339();
    let mut doc = DocumentRecord {
        doc_id: id.clone(),
        id,
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        path,
        filename: new.filename,
        title: new.title,
        content: new.content,
        metadata: new.metadata.map(Value::Object),
        tags: new.tags.unwrap_or_default(),
        chunk_strategy: new.chunking.chunk_strategy.map(|s| s.as_str().to_owned()),
        chunk_size: new.chunking.chunk_size,
        chunk_overlap: new.chunking.chunk_overlap,
        pages: 0,
        chunks: 0,
        created_at: now.clone(),
        updated_at: now,
    };
    let owned = collection(env, scope.project()).await?;
    index(env, &owned, &mut doc).await?;
    let (records, d) = (env.records.clone(), doc.clone());
    if let Err(e) = crate::runtime::blocking(move || records.insert(&d)).await {
        let _ = env.search.delete(&owned, &doc.doc_id).await;
        return Err(e.into());
    }
    Ok(doc)
}

/// The scope's project's documents under `path_prefix` (all without one), oldest first.
pub fn list(env: &Env<'_>, scope: &Scope, path_prefix: Option<&str>) -> Result<Vec<DocumentRecord>, DocumentError> {
    let mut all: Vec<DocumentRecord> = scope.list(env.records)?;
    if let Some(prefix) = path_prefix {
        all.retain(|d| d.path.as_deref().is_some_and(|p| under(p, prefix)));
    }
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(env: &Env<'_>, scope: &Scope, id: &str) -> Result<DocumentRecord, DocumentError> {
    Ok(scope.find(env.records, "document", id)?)
}

/// Writes `doc` over its record (404 when it was deleted meanwhile).
async fn write(env: &Env<'_>, doc: &DocumentRecord) -> Result<(), DocumentError> {
    let (records, d) = (env.records.clone(), doc.clone());
    let written = crate::runtime::blocking(move || {
        records.update(&d.account_id.clone(), &d.id.clone(), |r: &mut DocumentRecord| {
            *r = d;
            crate::store::owned::Change::Write(())
        })
    })
    .await?;
    Ok(written.ok_or_else(|| SoatError::not_found("document", &doc.id))?)
}

/// Indexes the record's text again as a new engine document, writes the record, then
/// removes the old one.
async fn reindex(env: &Env<'_>, mut doc: DocumentRecord) -> Result<DocumentRecord, DocumentError> {
    let owned = collection(env, Project { account_id: &doc.account_id, project_id: &doc.project_id }).await?;
    let old = std::mem::replace(&mut doc.doc_id, format!("{}_v{}", doc.id, crate::ids::random_base62(8)));
    index(env, &owned, &mut doc).await?;
    doc.updated_at = crate::clock::now_rfc3339();
    write(env, &doc).await?;
    crate::agents::memory::index::remove(env, &owned, &old).await?;
    Ok(doc)
}

/// Changes a document; new text or a new title (or a path, which its pages carry) is
/// indexed again.
pub async fn update(env: &Env<'_>, scope: &Scope, id: &str, patch: DocPatch) -> Result<DocumentRecord, DocumentError> {
    if patch.content.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(SoatError::invalid("content", "must not be empty.").into());
    }
    let mut doc = get(env, scope, id)?;
    let before = (doc.content.clone(), doc.title.clone(), doc.path.clone());
    if let Some(c) = patch.content {
        doc.content = c;
    }
    if let Some(t) = patch.title {
        doc.title = Some(t);
    }
    doc.path = patch.path.apply(doc.path.take()).map(|p| normalize_path(&p));
    if let Some(m) = patch.metadata {
        doc.metadata = Some(Value::Object(m));
    }
    if let Some(t) = patch.tags {
        doc.tags = t;
    }
    if before != (doc.content.clone(), doc.title.clone(), doc.path.clone()) {
        return reindex(env, doc).await;
    }
    doc.updated_at = crate::clock::now_rfc3339();
    write(env, &doc).await?;
    Ok(doc)
}

/// Re-runs ingestion of the stored text with new chunk settings.
pub async fn reingest(env: &Env<'_>, scope: &Scope, id: &str, with: Reingest) -> Result<DocumentRecord, DocumentError> {
    let chunking = Chunking { chunk_strategy: with.chunk_strategy, chunk_size: with.chunk_size, chunk_overlap: with.chunk_overlap };
    check_chunking(&chunking)?;
    let mut doc = get(env, scope, id)?;
    doc.chunk_strategy = chunking.chunk_strategy.map(|s| s.as_str().to_owned());
    doc.chunk_size = chunking.chunk_size;
    doc.chunk_overlap = chunking.chunk_overlap;
    reindex(env, doc).await
}

/// `ingestDocument`: this server keeps no uploaded files, so the file is never found.
pub fn ingest_file(file: &IngestFile) -> DocumentError {
    if let Err(e) = check_chunking(&file.chunking) {
        return e.into();
    }
    let why = format!("no file {} in this project (this server has no files module; create the document with its content).", file.file_id);
    SoatError::invalid("file_id", why).into()
}

/// Replaces (`merge: false`) or merges the document's tags; the tags after.
pub async fn set_tags(
    env: &Env<'_>,
    scope: &Scope,
    id: &str,
    tags: BTreeMap<String, String>,
    merge: bool,
) -> Result<BTreeMap<String, String>, DocumentError> {
    let mut doc = get(env, scope, id)?;
    if merge {
        doc.tags.extend(tags);
    } else {
        doc.tags = tags;
    }
    doc.updated_at = crate::clock::now_rfc3339();
    write(env, &doc).await?;
    Ok(doc.tags)
}

/// Deletes a document: its record, then its engine document.
pub async fn delete(env: &Env<'_>, scope: &Scope, id: &str) -> Result<(), DocumentError> {
    let doc = get(env, scope, id)?;
    let (records, d) = (env.records.clone(), doc.clone());
    crate::runtime::blocking(move || records.remove::<DocumentRecord>(&d.account_id, &d.id)).await?;
    if let Some(owned) = project_collection(env, Project { account_id: &doc.account_id, project_id: &doc.project_id }).await? {
        crate::agents::memory::index::remove(env, &owned, &doc.doc_id).await?;
    }
    Ok(())
}

/// SOAT's `DocumentRecord`; `content` only when `with_content` (getDocument).
pub fn view(d: &DocumentRecord, with_content: bool) -> Value {
    let mut v = json!({
        "id": d.id, "project_id": d.project_id, "path": d.path, "filename": d.filename.clone().unwrap_or_default(),
        "title": d.title, "content_type": "text/plain", "size": d.content.len(), "status": "ready",
        "metadata": d.metadata, "tags": d.tags, "created_at": d.created_at, "updated_at": d.updated_at,
    });
    if with_content {
        v["content"] = d.content.clone().into();
    }
    if let Some(s) = &d.chunk_strategy {
        v["chunk_strategy"] = s.clone().into();
    }
    if d.chunk_strategy.as_deref() == Some("size") {
        v["chunk_size"] = d.chunk_size.unwrap_or(1000).into();
        v["chunk_overlap"] = d.chunk_overlap.unwrap_or(200).into();
    }
    v
}

/// `IngestedDocumentRecord`: the record with its chunk count.
pub fn ingested_view(d: &DocumentRecord) -> Value {
    let mut v = view(d, false);
    v["chunk_count"] = d.chunks.into();
    v
}

/// `DocumentStatusRecord`: ingestion is synchronous, so a document is `ready`.
pub fn status_view(d: &DocumentRecord) -> Value {
    json!({
        "id": d.id, "status": "ready", "chunk_count": d.chunks, "total_chunks": d.chunks,
        "total_pages": d.pages, "progress": 100, "error": null,
    })
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn a_path_prefix_is_a_directory_boundary() {
        for prefix in ["/reports", "reports", "/reports/"] {
            assert!(under("/reports/q1.txt", prefix), "{prefix}");
            assert!(!under("/reports-archive/q1.txt", prefix), "{prefix}");
        }
        assert!(under("/anything", "/") && under("/a/b/c", "/a/b"));
        assert!(!under("/a%b/c", "/a_b"), "no wildcards");
    }
}
