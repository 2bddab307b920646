//! Knowledge retrieval (digest §2.8): the search an agent generation runs before every
//! model call, over the sources its `knowledge_config` names — memory stores of the
//! project and documents (by id, or by a `path` metadata prefix) of the account's
//! collections — with Quarry's own hybrid search (`agents::memory::index::search`:
//! BM25 ∥ vectors, fused by reciprocal rank with `rrf_k`). Then `min_score` (a floor
//! on the raw cosine of a hit's best window; a hit without vectors does not pass it),
//! recency decay of memory hits, and the best `limit`.
//!
//! A config names its sources: no `memory_store_ids`, no memory; neither `document_ids`
//! nor `document_paths`, no documents; nothing named, nothing searched (and no search
//! spent). A named store that is gone or in another project is skipped (the agent write
//! checks ids; a store deleted since must not fail every generation). `tags` (a TagBag)
//! must be held exactly: by a memory hit's entry or store tags written `key:value`, by a
//! document's `tags` metadata object.

use std::collections::{BTreeMap, HashSet};

use quarry_index::segment::FieldValue;
use serde_json::Value;

use crate::agents::agent::config::KnowledgeConfig;
use crate::agents::documents;
use crate::agents::memory::entries::{self, NewEntry};
use crate::agents::memory::index::{self, Ask};
use crate::agents::tools::call::Env;
use crate::agents::{KeyRef, Project, Scope};
use crate::store::{DocumentRecord, MemoryEntryRecord, MemoryRecord};

pub use crate::agents::memory::MemoryError as KnowledgeError;

/// `limit`'s default.
pub const DEFAULT_LIMIT: usize = 10;
/// `recency_half_life_days`' default: this deployment decays nothing unless asked.
pub const DEFAULT_HALF_LIFE_DAYS: f64 = 0.0;

/// One retrieved passage.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// `"document"` or `"memory"`.
    pub source: &'static str,
    /// The document's or the entry's id.
    pub id: String,
    /// The memory store of a memory hit.
    pub store_id: Option<String>,
    /// What the model cites: the entry id, or the page's `AL-…` citation.
    pub citation: String,
    pub text: String,
    /// The fused score, decayed for memory hits: the order.
    pub score: f64,
    /// The raw cosine of the hit to the query (0–1), when it has vectors.
    pub similarity: Option<f64>,
    pub created_at: Option<String>,
    /// A memory hit's entry's last change, as read for the search; `created_at` for a
    /// document.
    pub updated_at: Option<String>,
}

/// §2.8 merge: arrays unioned, tags merged (override wins per key), scalars from the
/// override when present; the override's `write_memory_store_id` is ignored (the
/// caller refuses it).
pub fn merge(stored: Option<&KnowledgeConfig>, over: Option<&KnowledgeConfig>) -> Option<KnowledgeConfig> {
    let (s, o) = match (stored, over) {
        (None, None) => return None,
        (Some(s), None) => return Some(s.clone()),
        (s, Some(o)) => (s.cloned().unwrap_or_default(), o),
    };
    let union = |a: Option<Vec<String>>, b: &Option<Vec<String>>| -> Option<Vec<String>> {
        if a.is_none() && b.is_none() {
            return None;
        }
        let mut out = a.unwrap_or_default();
        for x in b.iter().flatten() {
            if !out.contains(x) {
                out.push(x.clone());
            }
        }
        Some(out)
    };
    let tags = match (s.tags, &o.tags) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or_default().into_iter().chain(b.clone().unwrap_or_default()).collect()),
    };
    Some(KnowledgeConfig {
        memory_store_ids: union(s.memory_store_ids, &o.memory_store_ids),
        memory_tags: union(s.memory_tags, &o.memory_tags),
        document_ids: union(s.document_ids, &o.document_ids),
        document_paths: union(s.document_paths, &o.document_paths),
        tags,
        min_score: o.min_score.or(s.min_score),
        rrf_k: o.rrf_k.or(s.rrf_k),
        recency_half_life_days: o.recency_half_life_days.or(s.recency_half_life_days),
        limit: o.limit.or(s.limit),
        write_memory_store_id: s.write_memory_store_id,
        extraction: s.extraction,
    })
}

/// Whether `tags` (`key:value` strings; a bare `key` has the value "") hold every pair.
pub fn holds<'a>(tags: impl Iterator<Item = &'a String> + Clone, want: &BTreeMap<String, String>) -> bool {
    want.iter().all(|(k, v)| tags.clone().any(|t| t.split_once(':').map_or((t.as_str(), ""), |(a, b)| (a, b)) == (k.as_str(), v.as_str())))
}

/// The decay factor of a hit `age_days` old: ½ per half-life; 1 when `half_life` ≤ 0.
pub fn decay(age_days: f64, half_life: f64) -> f64 {
    if half_life <= 0.0 {
        return 1.0;
    }
    0.5f64.powf(age_days.max(0.0) / half_life)
}

/// Days from `created_at` (RFC 3339) to `now` (seconds since the epoch); 0 unreadable.
fn age_days(created_at: &str, now: i64) -> f64 {
    let at = humantime::parse_rfc3339_weak(created_at).ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    at.map_or(0.0, |t| (now - t.as_secs() as i64) as f64 / 86_400.0)
}

/// The knowledge search for `query`: matches best first, at most `limit`.
pub async fn retrieve(env: &Env<'_>, p: Project<'_>, cfg: &KnowledgeConfig, query: &str) -> Result<Vec<Match>, KnowledgeError> {
    let limit = cfg.limit.map_or(DEFAULT_LIMIT, |l| l.clamp(1, 100) as usize);
    let rrf_k = cfg.rrf_k.filter(|&k| k > 0).map_or(env.search.index_config().rrf_k, |k| k as f64);
    let (stores, docs) = (memory_sources(env, p, cfg).await?, document_sources(env, p, cfg).await?);
    let project_docs = project_documents(env, p, cfg).await?;
    if query.trim().is_empty() || (stores.is_empty() && docs.is_empty() && project_docs.is_none()) {
        return Ok(Vec::new());
    }
    env.search.spend_search(env.caller, 1).await?;
    // Deeper than `limit`: `min_score` may drop some.
    let k = (limit * 3).min(100);
    let mut vectors: Vec<(String, Option<Vec<f32>>)> = Vec::new();
    let mut out = Vec::new();
    for (owned, entries) in stores {
        let vector = vector_for(env, &mut vectors, &owned.record, query)?;
        let allowed: HashSet<String> = entries.keys().cloned().collect();
        for h in index::rank_entries(env, &owned, vector.as_deref(), query, &allowed, k, rrf_k) {
            let Some(e) = entries.get(&h.doc_id) else { continue };
            out.push(Match {
                source: "memory",
                id: e.id.clone(),
                store_id: Some(e.memory_id.clone()),
                citation: e.id.clone(),
                text: e.content.clone(),
                score: h.score,
                similarity: h.cosine,
                created_at: Some(e.created_at.clone()),
                updated_at: Some(e.updated_at.clone()),
            });
        }
    }
    let metadata: Vec<(String, Vec<FieldValue>)> =
        cfg.tags.iter().flatten().map(|(k, v)| (format!("tags.{k}"), vec![FieldValue::Str(v.clone())])).collect();
    for (owned, ids) in docs {
        let vector = vector_for(env, &mut vectors, &owned.record, query)?;
        let ask = Ask { query, k, rrf_k, documents: Some(ids), metadata: metadata.clone() };
        for h in index::search(env, &owned, vector, ask) {
            let text = match &h.title {
                Some(t) if !t.is_empty() => format!("{t}: {}", h.text),
                _ => h.text.clone(),
            };
            let created_at = Some(h.created_at.clone());
            out.push(Match {
                source: "document",
                id: h.doc_id,
                store_id: None,
                citation: h.citation,
                text,
                score: h.score,
                similarity: h.cosine,
                updated_at: created_at.clone(),
                created_at,
            });
        }
    }
    if let Some((owned, by_doc)) = project_docs {
        let vector = vector_for(env, &mut vectors, &owned.record, query)?;
        let ids = by_doc.keys().cloned().collect();
        let ask = Ask { query, k, rrf_k, documents: Some(ids), metadata: Vec::new() };
        for h in index::search(env, &owned, vector, ask) {
            let Some(d) = by_doc.get(&h.doc_id) else { continue };
            let text = match &h.title {
                Some(t) if !t.is_empty() => format!("{t}: {}", h.text),
                _ => h.text.clone(),
            };
            out.push(Match {
                source: "document",
                id: d.id.clone(),
                store_id: None,
                citation: h.citation,
                text,
                score: h.score,
                similarity: h.cosine,
                created_at: Some(d.created_at.clone()),
                updated_at: Some(d.updated_at.clone()),
            });
        }
    }
    let half_life = cfg.recency_half_life_days.unwrap_or(DEFAULT_HALF_LIFE_DAYS);
    Ok(rank(
        out,
        cfg.min_score,
        half_life,
        limit,
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64),
    ))
}

/// A knowledge search asked directly (`POST /api/v1/knowledge/search`): its sources
/// by id and by tag glob, the rest of a `knowledge_config` (its `memory_store_ids`
/// are what the sources select), and `min_score`, a floor on the returned score.
pub struct Asked {
    pub memory_ids: Option<Vec<String>>,
    pub memory_tags: Option<Vec<String>>,
    pub config: KnowledgeConfig,
    pub min_score: Option<f64>,
}

/// A match of a direct search, with its memory store's name (memory hits).
pub struct Found {
    pub m: Match,
    pub memory_name: Option<String>,
}

/// The knowledge search of `asked` in the scope's project: the stores named by id or
/// whose tags match a `memory_tags` glob, and naming no source at all searches every
/// memory store of the project; then [`retrieve`] and the `min_score` floor.
pub async fn search(env: &Env<'_>, scope: &Scope, asked: Asked, query: &str) -> Result<Vec<Found>, KnowledgeError> {
    let stores = crate::agents::memory::list(env.records, scope, &[])?;
    let cfg = &asked.config;
    let named = asked.memory_ids.is_some() || asked.memory_tags.is_some() || cfg.document_ids.is_some() || cfg.document_paths.is_some();
    let mut ids: Vec<String> = asked.memory_ids.unwrap_or_default();
    let globs = asked.memory_tags.unwrap_or_default();
    for s in &stores {
        let tagged = s.tags.iter().flatten().any(|t| globs.iter().any(|g| crate::agents::memory::glob(g, t)));
        if (tagged || !named) && !ids.contains(&s.id) {
            ids.push(s.id.clone());
        }
    }
    let cfg = KnowledgeConfig { memory_store_ids: Some(ids), ..asked.config };
    let mut found = retrieve(env, scope.project(), &cfg, query).await?;
    if let Some(min) = asked.min_score {
        found.retain(|m| m.score >= min);
    }
    let name = |m: &Match| stores.iter().find(|s| Some(&s.id) == m.store_id.as_ref()).map(|s| s.name.clone());
    Ok(found.into_iter().map(|m| Found { memory_name: name(&m), m }).collect())
}

/// The cut: `min_score` on the cosine, decay of memory hits by age, best first, `limit`.
pub fn rank(mut all: Vec<Match>, min_score: Option<f64>, half_life: f64, limit: usize, now: i64) -> Vec<Match> {
    if let Some(min) = min_score {
        all.retain(|m| m.similarity.is_some_and(|s| s >= min));
    }
    for m in all.iter_mut().filter(|m| m.source == "memory") {
        m.score *= decay(m.created_at.as_deref().map_or(0.0, |c| age_days(c, now)), half_life);
    }
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    all.truncate(limit);
    all
}

/// The query's vector for a collection's embedder, embedded once per retrieval.
fn vector_for(
    env: &Env<'_>,
    cache: &mut Vec<(String, Option<Vec<f32>>)>,
    record: &crate::store::CollectionRecord,
    query: &str,
) -> Result<Option<Vec<f32>>, KnowledgeError> {
    if let Some((_, v)) = cache.iter().find(|(e, _)| *e == record.embedder) {
        return Ok(v.clone());
    }
    let v = index::embed(env, record, query)?;
    cache.push((record.embedder.clone(), v.clone()));
    Ok(v)
}

type StoreSource = (crate::search::Owned, BTreeMap<String, MemoryEntryRecord>);
/// The project's documents' collection, with the named records by engine document id.
type DocSource = (crate::search::Owned, BTreeMap<String, DocumentRecord>);

/// The named stores of the project, each with its entries that hold the tags.
async fn memory_sources(env: &Env<'_>, p: Project<'_>, cfg: &KnowledgeConfig) -> Result<Vec<StoreSource>, KnowledgeError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut named: Vec<String> = cfg.memory_store_ids.clone().unwrap_or_default();
    if let Some(globs) = cfg.memory_tags.as_ref().filter(|g| !g.is_empty()) {
        let scope =
            Scope { account_id: p.account_id.to_owned(), project_id: p.project_id.to_owned(), key: KeyRef::Project { id: "knowledge".into() } };
        let tagged = crate::agents::memory::list(env.records, &scope, globs)?;
        named.extend(tagged.into_iter().map(|s| s.id));
    }
    for id in named.iter().filter(|id| seen.insert(id.as_str())) {
        let Some(store) = env.records.get::<MemoryRecord>(p.account_id, id)?.filter(|s| s.project_id == p.project_id) else { continue };
        let Ok(owned) = index::collection(env, p.account_id, &store.id).await else { continue };
        let all = entries::of_store(env.records, p.account_id, &store.id)?;
        let store_tags = store.tags.clone().unwrap_or_default();
        let want = cfg.tags.clone().unwrap_or_default();
        let keep = entries::tagged(all.iter(), &store_tags, &want);
        // By their documents' ids, which the hits carry.
        let entries: BTreeMap<String, MemoryEntryRecord> =
            all.into_iter().filter(|e| keep.contains(&e.id)).map(|e| (e.doc_id().to_owned(), e)).collect();
        if !entries.is_empty() {
            out.push((owned, entries));
        }
    }
    Ok(out)
}

/// The project's SOAT documents the config names (`doc_…` ids, paths under a
/// `document_paths` prefix) that hold its `tags`: their collection, and the records by
/// their engine documents' ids. Any key of the project reads them.
async fn project_documents(env: &Env<'_>, p: Project<'_>, cfg: &KnowledgeConfig) -> Result<Option<DocSource>, KnowledgeError> {
    let ids: HashSet<&str> = cfg.document_ids.iter().flatten().map(String::as_str).collect();
    let paths: Vec<&str> = cfg.document_paths.iter().flatten().map(String::as_str).collect();
    if ids.is_empty() && paths.is_empty() {
        return Ok(None);
    }
    let Some(owned) = documents::project_collection(env, p).await? else { return Ok(None) };
    let want = cfg.tags.clone().unwrap_or_default();
    let all: Vec<DocumentRecord> = env.records.list::<DocumentRecord>(p.account_id)?;
    let named: BTreeMap<String, DocumentRecord> = all
        .into_iter()
        .filter(|d| d.project_id == p.project_id)
        .filter(|d| ids.contains(d.id.as_str()) || d.path.as_deref().is_some_and(|x| paths.iter().any(|prefix| documents::under(x, prefix))))
        .filter(|d| want.iter().all(|(k, v)| d.tags.get(k) == Some(v)))
        .map(|d| (d.doc_id.clone(), d))
        .collect();
    Ok((!named.is_empty()).then_some((owned, named)))
}

/// The account's collections holding a named `/v1` document, each with the ids it
/// holds; 403 for a caller whose key reads no `/v1` data and names a `/v1` document
/// by id (paths alone then reach the project's documents only).
async fn document_sources(
    env: &Env<'_>,
    p: Project<'_>,
    cfg: &KnowledgeConfig,
) -> Result<Vec<(crate::search::Owned, HashSet<String>)>, KnowledgeError> {
    let own = |id: &str| documents::in_project(env.records, p.account_id, p.project_id, id);
    let ids: HashSet<&str> = cfg.document_ids.iter().flatten().map(String::as_str).filter(|id| !own(id)).collect();
    let paths: Vec<&str> = cfg.document_paths.iter().flatten().map(String::as_str).collect();
    if ids.is_empty() && (paths.is_empty() || !env.caller.reach.reads_collections()) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for owned in env.search.readable_collections(env.caller).await? {
        let snap = owned.snapshot();
        let held: HashSet<String> = snap
            .docs()
            .map(|at| snap.doc_view(at))
            .filter(|d| ids.contains(d.id) || (!paths.is_empty() && path_of(d.metadata_json).is_some_and(|p| paths.iter().any(|x| p.starts_with(x)))))
            .map(|d| d.id.to_owned())
            .collect();
        if !held.is_empty() {
            out.push((owned, held));
        }
    }
    Ok(out)
}

/// Each document id a request names at `field` must be a document of a collection the
/// key reads: 403 `API_KEY_PROJECT_SCOPE` for a key that reads no `/v1` data
/// ([`crate::access`]), 404 at `field[i]` for an id no collection of the account holds
/// (another account's among them).
pub async fn check_documents(search: &crate::search::Service, scope: &Scope, ids: &[String], field: &str) -> Result<(), crate::error::ApiError> {
    for (i, id) in ids.iter().enumerate() {
        check_document(search, scope, id, &format!("{field}[{i}]")).await?;
    }
    Ok(())
}

/// One document id a request names at `field`, under [`check_documents`]' rule.
pub async fn check_document(search: &crate::search::Service, scope: &Scope, id: &str, field: &str) -> Result<(), crate::error::ApiError> {
    use crate::error::{ApiError, Code};
    if documents::in_project(search.records(), &scope.account_id, &scope.project_id, id) {
        return Ok(()); // the project's own SOAT document: any key of its project reads it
    }
    scope.may_read_collections(field)?;
    if search.holds_document(&scope.account_id, scope.reach(), id).await? {
        return Ok(());
    }
    Err(ApiError::new(Code::SoatNotFound, format!("No document {id} in this account's collections.")).at(field.to_owned()))
}

/// A document's `path` metadata.
fn path_of(metadata_json: &str) -> Option<String> {
    let v: Value = serde_json::from_str(metadata_json).ok()?;
    v.get("path")?.as_str().map(str::to_owned)
}

/// The block the runner prepends to the system prompt: each match numbered, with its
/// citation; empty when there is none.
pub fn context(matches: &[Match]) -> String {
    if matches.is_empty() {
        return String::new();
    }
    let mut out = String::from("Relevant knowledge (cite a source by its id in brackets):\n");
    for (n, m) in matches.iter().enumerate() {
        out.push_str(&format!("{}. [{}] ({}) {}\n", n + 1, m.citation, m.source, m.text.trim()));
    }
    out
}

/// The `write_memory` tool: one entry (`source_type: agent`) into the project's store
/// `store_id`, indexed before it returns, with the generation (and its conversation)
/// that wrote it; the `MemoryEntryWriteResult` (a near-duplicate is `skipped`).
pub async fn write_memory(
    env: &Env<'_>,
    p: Project<'_>,
    store_id: &str,
    content: &str,
    metadata: Option<Value>,
    source: Provenance,
) -> Result<Value, KnowledgeError> {
    let metadata = match metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err(crate::agents::SoatError::invalid("metadata", "must be an object.").into()),
    };
    let scope =
        Scope { account_id: p.account_id.to_owned(), project_id: p.project_id.to_owned(), key: KeyRef::Project { id: "write_memory".into() } };
    let new = NewEntry {
        memory_id: store_id.to_owned(),
        content: content.to_owned(),
        source_type: Some("agent".into()),
        tags: None,
        metadata,
        duplicate_threshold: None,
        source_generation_id: source.generation_id,
        source_conversation_id: source.conversation_id,
    };
    let (entry, action) = entries::create(env, &scope, new).await?;
    Ok(entries::write_view(&entry, action))
}

/// Which turn wrote a memory entry.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub generation_id: Option<String>,
    pub conversation_id: Option<String>,
}

#[cfg(test)]
mod tests;
