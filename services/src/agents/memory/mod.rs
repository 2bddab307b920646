//! SOAT memory stores (`mem_…`, memories.yaml) and their entries (`mem_entry_…`,
//! memoryEntries.yaml): the records in the store, each entry's text a document of its
//! store's hidden engine collection ([`index`]) so knowledge retrieval
//! (`agents::knowledge`) searches entries with Quarry's own hybrid search.
//!
//! A store's record and its collection are made together (the collection first; a
//! record never names a missing collection) and go together (the records first: a
//! collection no store names is removed by [`sweep`]). Another account's or another
//! project's store or entry is 404, as every SOAT record ([`Scope`]).

pub mod entries;
pub mod index;

use serde::Deserialize;

use super::patch::Patch;
use super::tools::Env;
use super::{Scope, SoatError};
use crate::error::{Code, ErrorCode};
use crate::search::{Owned, SearchError};
use crate::store::{
    is_memory_collection, CollectionRecord, MemoryEntryRecord, MemoryRecord, ProjectRecord, Records, StoreError, DOCUMENTS_COLLECTION_PREFIX,
    MEMORY_PREFIX,
};

crate::agents::scope::in_project!(MemoryRecord, MemoryEntryRecord);

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Soat(#[from] SoatError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for MemoryError {
    fn code(&self) -> Code {
        match self {
            MemoryError::Soat(e) => e.code(),
            MemoryError::Search(e) => e.code(),
            MemoryError::Store(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            MemoryError::Soat(e) => e.meta(),
            _ => None,
        }
    }
}

/// `createMemory`'s body (strict; `project_id` is taken by the scope).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMemory {
    #[serde(default)]
    pub project_id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// `updateMemory`'s body: each field absent (kept), `null` (cleared) or a value.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Patch<String>,
    #[serde(default)]
    pub tags: Patch<Vec<String>>,
}

fn check_name(name: &str) -> Result<(), SoatError> {
    crate::names::check(name, 200).map_err(|problem| SoatError::invalid("name", problem.to_string()))
}

/// Creates a store in the scope's project: its collection, then its record.
pub async fn create(env: &Env<'_>, scope: &Scope, new: NewMemory) -> Result<MemoryRecord, MemoryError> {
    check_name(&new.name)?;
    let now = crate::clock::now_rfc3339();
    let record = MemoryRecord {
        id: format!("{MEMORY_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name: new.name,
        description: new.description,
        tags: new.tags,
        created_at: now.clone(),
        updated_at: now,
    };
    let owned = index::create(env, &record.account_id, &record.id).await?;
    let (records, r) = (env.records.clone(), record.clone());
    if let Err(e) = crate::runtime::blocking(move || records.insert(&r)).await {
        let _ = env.search.remove(owned).await;
        return Err(e.into());
    }
    Ok(record)
}

/// The scope's project's stores, oldest first, those with a tag matching one of
/// `patterns` (globs: `*` any run, `?` one character) when any is given.
pub fn list(records: &Records, scope: &Scope, patterns: &[String]) -> Result<Vec<MemoryRecord>, MemoryError> {
    let mut all: Vec<MemoryRecord> = scope.list(records)?;
    all.retain(|m| patterns.is_empty() || m.tags.iter().flatten().any(|t| patterns.iter().any(|p| glob(p, t))));
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<MemoryRecord, MemoryError> {
    Ok(scope.get(records, id)?.ok_or_else(|| SoatError::not_found("memory", id))?)
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: MemoryPatch) -> Result<MemoryRecord, MemoryError> {
    if let Some(name) = &patch.name {
        check_name(name)?;
    }
    get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    let changed = records.update(&scope.account_id, id, |m: &mut MemoryRecord| {
        if let Some(name) = patch.name {
            m.name = name;
        }
        m.description = patch.description.apply(m.description.take());
        m.tags = patch.tags.apply(m.tags.take());
        m.updated_at = now;
        crate::store::owned::Change::Write(m.clone())
    })?;
    Ok(changed.ok_or_else(|| SoatError::not_found("memory", id))?)
}

/// Deletes a store with its entries: the records, then the collection.
pub async fn delete(env: &Env<'_>, scope: &Scope, id: &str) -> Result<(), MemoryError> {
    let store = get(env.records, scope, id)?;
    let records = env.records.clone();
    crate::runtime::blocking(move || remove_records(&records, &store.account_id, |m| m.id == store.id)).await?;
    sweep(env, &scope.account_id).await
}

/// Removes the account's stores `which` picks, with their entries (records only:
/// [`sweep`] removes their collections). Project deletion calls it for the project's.
pub fn remove_records(records: &Records, account_id: &str, which: impl Fn(&MemoryRecord) -> bool) -> Result<(), StoreError> {
    let stores: Vec<MemoryRecord> = records.list::<MemoryRecord>(account_id)?.into_iter().filter(|m| which(m)).collect();
    for entry in records.list::<MemoryEntryRecord>(account_id)? {
        if stores.iter().any(|s| s.id == entry.memory_id) {
            records.remove::<MemoryEntryRecord>(account_id, &entry.id)?;
        }
    }
    for s in stores {
        records.remove::<MemoryRecord>(account_id, &s.id)?;
    }
    Ok(())
}

/// Removes the account's hidden collections that no record names any more (after a
/// store or project delete, or a crash in between): a memory store's, once the store
/// is gone; a project's documents' (`soatdocs_<project>`), once the project is.
pub async fn sweep(env: &Env<'_>, account_id: &str) -> Result<(), MemoryError> {
    let (records, account) = (env.records.clone(), account_id.to_owned());
    let orphans = crate::runtime::blocking(move || -> Result<Vec<CollectionRecord>, StoreError> {
        let stores: Vec<MemoryRecord> = records.list(&account)?;
        let projects: Vec<ProjectRecord> = records.list(&account)?;
        let colls: Vec<CollectionRecord> = records.list(&account)?;
        let named = |c: &CollectionRecord| match c.id.strip_prefix(DOCUMENTS_COLLECTION_PREFIX) {
            Some(project) => projects.iter().any(|p| p.id == project),
            None => !is_memory_collection(&c.id) || stores.iter().any(|s| s.id == c.id),
        };
        Ok(colls.into_iter().filter(|c| !named(c)).collect())
    })
    .await?;
    for record in orphans {
        match env.search.collection(&record.id).await? {
            Some(coll) => env.search.remove(Owned { record, coll }).await?,
            None => {
                let records = env.records.clone();
                crate::runtime::blocking(move || records.delete_collection(&record)).await?
            }
        }
    }
    Ok(())
}

/// SOAT's list view of a store (`Memory`).
pub fn view(m: &MemoryRecord) -> serde_json::Value {
    serde_json::json!({
        "id": m.id, "project_id": m.project_id, "name": m.name, "description": m.description,
        "tags": m.tags, "created_at": m.created_at, "updated_at": m.updated_at,
    })
}

/// Glob match: `*` any run of characters, `?` exactly one.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("customer*", "customer-support") && glob("*", "") && glob("a?c", "abc") && glob("*port", "support"));
        assert!(!glob("customer*", "support") && !glob("a?c", "ac") && !glob("support", "supports"));
    }

    /// The same match serves policies' actions and SRN parts (`agents::policies`).
    #[test]
    fn stars_and_marks_match_as_globs() {
        assert!(glob("*", "files:ListFiles"));
        assert!(glob("files:*", "files:ListFiles"));
        assert!(!glob("files:*", "filesx:ListFiles"));
        assert!(glob("files:Get?ile", "files:GetFile"));
        assert!(glob("proj_*", "proj_abc"));
        assert!(!glob("proj_a", "proj_ab"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }
}
