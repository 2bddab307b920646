//! The builtin actions: Quarry's own, run in-process.
//!
//! - `collections:SearchCollection` searches one of the account's collections through
//!   `search::Service` (as `POST /v1/collections/{id}/search` does: one search spent),
//!   for a caller whose key reads `/v1` data (`crate::access`: an account key's);
//!   input `{collection_id, query, k?, mode?}`.
//! - `memories:WriteMemory` writes one entry into a memory store of the project, indexed
//!   (`agents::knowledge::write_memory`, as the `write_memory` tool); input `{memory_id,
//!   content, metadata?}`; a store that is not the project's is 400.

use serde::Deserialize;
use serde_json::{json, Value};

use super::call::Env;
use super::ToolError;
use crate::agents::Project;
use quarry_index::search::Mode;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchIn {
    collection_id: String,
    query: String,
    #[serde(default)]
    k: Option<usize>,
    #[serde(default)]
    mode: Option<String>,
}

fn input<T: serde::de::DeserializeOwned>(action: &str, v: &Value) -> Result<T, ToolError> {
    serde_json::from_value(v.clone()).map_err(|e| ToolError::Invalid(format!("{action} input: {e}")))
}

pub async fn search(env: &Env<'_>, v: &Value) -> Result<Value, ToolError> {
    let i: SearchIn = input(super::def::SEARCH_ACTION, v)?;
    if i.query.trim().is_empty() {
        return Err(ToolError::Invalid("query must not be empty".into()));
    }
    let k = i.k.unwrap_or(5);
    if !(1..=50).contains(&k) {
        return Err(ToolError::Invalid("k must be 1 to 50".into()));
    }
    let mode = match i.mode.as_deref().unwrap_or("hybrid") {
        "keyword" => Mode::Keyword,
        "semantic" => Mode::Semantic,
        "hybrid" => Mode::Hybrid,
        other => return Err(ToolError::Invalid(format!("mode must be keyword, semantic or hybrid, not {other:?}"))),
    };
    let owned = env.search.readable(env.caller, &i.collection_id).await?;
    let req = crate::search::Request::new(i.query, k, mode);
    let s = env.search.search(env.embedders, env.caller, &owned, &req).await?;
    let results: Vec<Value> = s
        .results
        .hits
        .iter()
        .enumerate()
        .map(|(n, h)| {
            let v = s.snapshot.hit_view(h);
            json!({
                "rank": n + 1,
                "citation": v.page.citation_id(),
                "score": h.score,
                "document": {"id": v.doc.id, "title": v.doc.title},
                "page": {"n": v.page.n, "number": v.page.number},
                "passages": v.passages.iter().map(|(c, _)| c.text).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({"collection_id": owned.id(), "results": results}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryIn {
    memory_id: String,
    content: String,
    #[serde(default)]
    metadata: Option<Value>,
}

pub async fn write_memory(env: &Env<'_>, p: Project<'_>, v: &Value) -> Result<Value, ToolError> {
    let i: MemoryIn = input(super::def::WRITE_MEMORY_ACTION, v)?;
    if i.content.trim().is_empty() || i.memory_id.trim().is_empty() {
        return Err(ToolError::Invalid("memory_id and content must not be empty".into()));
    }
    let written = crate::agents::knowledge::write_memory(env, p, &i.memory_id, &i.content, i.metadata, Default::default()).await;
    written.map_err(|e| match e {
        crate::agents::memory::MemoryError::Search(e) => ToolError::Search(e),
        crate::agents::memory::MemoryError::Store(e) => ToolError::Store(e),
        crate::agents::memory::MemoryError::Soat(e) => ToolError::Invalid(format!("memories:WriteMemory: {e}")),
    })
}
