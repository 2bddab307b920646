//! `POST /api/v1/knowledge/search` (knowledge.yaml): the knowledge search a generation
//! runs (`agents::knowledge::retrieve`), asked directly. Its sources: `memory_ids`, the
//! project's stores whose tags match a `memory_tags` glob, `document_ids`,
//! `document_paths`; naming none searches every memory store of the project. Fields
//! beyond knowledge.yaml, as `knowledge_config` has them: `tags` (a TagBag),
//! `min_similarity` (the floor on the raw cosine that `knowledge_config.min_score` is),
//! `rrf_k`, `recency_half_life_days`. `min_score` is knowledge.yaml's: a floor on the
//! returned `score`. `memory_store_ids` (the seed's spelling) is read as `memory_ids`.

use std::collections::BTreeMap;

use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use super::memories::env;
use super::{body, scope};
use crate::agents::agent::config::{either, KnowledgeConfig};
use crate::agents::knowledge::{self, Asked, Found};
use crate::agents::SoatError;
use crate::api::Call;
use crate::error::ApiError;
use crate::http::response::{self, Reply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchIn {
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    min_score: Option<f64>,
    #[serde(default)]
    min_similarity: Option<f64>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    memory_ids: Option<Vec<String>>,
    /// The seed's spelling of `memory_ids` (both at once must agree).
    #[serde(default)]
    memory_store_ids: Option<Vec<String>>,
    #[serde(default)]
    memory_tags: Option<Vec<String>>,
    #[serde(default)]
    document_paths: Option<Vec<String>>,
    #[serde(default)]
    document_ids: Option<Vec<String>>,
    #[serde(default)]
    tags: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rrf_k: Option<i64>,
    #[serde(default)]
    recency_half_life_days: Option<f64>,
}

fn check(req: &SearchIn) -> Result<(), SoatError> {
    let unit = |f: &'static str, v: Option<f64>| match v {
        Some(x) if !(0.0..=1.0).contains(&x) => Err(SoatError::invalid(f, format!("is from 0 to 1, not {x}."))),
        _ => Ok(()),
    };
    unit("min_score", req.min_score)?;
    unit("min_similarity", req.min_similarity)?;
    if req.limit.is_some_and(|l| l < 1) {
        return Err(SoatError::invalid("limit", "must be at least 1."));
    }
    if req.rrf_k.is_some_and(|k| k < 1) {
        return Err(SoatError::invalid("rrf_k", "must be at least 1."));
    }
    if req.recency_half_life_days.is_some_and(|d| d.is_nan() || d < 0.0) {
        return Err(SoatError::invalid("recency_half_life_days", "cannot be negative; 0 turns decay off."));
    }
    match req.query.as_deref() {
        Some(q) if !q.trim().is_empty() => Ok(()),
        _ => Err(SoatError::invalid("query", "is required (a search without one has nothing to rank).")),
    }
}

pub async fn search(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let req: SearchIn = body::read(&mut call).await?;
    check(&req)?;
    let scope = scope(&call, req.project_id.as_deref()).await?;
    knowledge::check_documents(&call.app.search, &scope, req.document_ids.as_deref().unwrap_or_default(), "document_ids").await?;
    let memory_ids = either(req.memory_ids, req.memory_store_ids, ("memory_store_ids", "memory_ids"))
        .map_err(|problem| SoatError::invalid("memory_ids", format!("{problem}.")))?;
    let config = KnowledgeConfig {
        memory_store_ids: None,
        memory_tags: None,
        document_ids: req.document_ids,
        document_paths: req.document_paths,
        tags: req.tags,
        min_score: req.min_similarity,
        rrf_k: req.rrf_k,
        recency_half_life_days: req.recency_half_life_days,
        limit: req.limit,
        write_memory_store_id: None,
        extraction: None,
    };
    let asked = Asked { memory_ids, memory_tags: req.memory_tags, config, min_score: req.min_score };
    let found = knowledge::search(&env(&call), &scope, asked, &req.query.unwrap_or_default()).await?;
    let results: Vec<Value> = found.iter().map(result).collect();
    Ok(response::json(StatusCode::OK, &json!({ "results": results })))
}

fn result(Found { m, memory_name }: &Found) -> Value {
    if m.source == "memory" {
        return json!({
            "source_type": "memory", "entry_id": m.id, "memory_id": m.store_id, "memory_name": memory_name.clone().unwrap_or_default(),
            "content": m.text, "score": m.score, "similarity_score": m.similarity.unwrap_or(0.0), "citation": m.citation,
            "created_at": m.created_at, "updated_at": m.updated_at,
        });
    }
    json!({
        "source_type": "document", "document_id": m.id, "content": m.text, "score": m.score,
        "similarity_score": m.similarity.unwrap_or(0.0), "citation": m.citation,
        "created_at": m.created_at, "updated_at": m.created_at,
    })
}
