//! `/api/v1/memories` (memories.yaml): memory stores, create, list (`tags` globs),
//! get, PUT, delete (with their entries). The service is `agents::memory`.

use hyper::StatusCode;

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::memory::{self, MemoryPatch, NewMemory};
use crate::agents::tools::outbound::Timeouts;
use crate::agents::tools::Env;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::search::Caller;

/// What the memory services run with: the search service, the records, this shard's
/// embedder sessions and the caller's plan.
pub(super) fn env<'a>(call: &'a Call<'_>) -> Env<'a> {
    let p = call.principal();
    Env {
        search: &call.app.search,
        records: &call.app.records,
        embedders: call.embedders,
        caller: Caller { account_id: &p.account_id, plan: call.app.plan(&p.plan), reach: p.reach() },
        timeouts: Timeouts::default(),
    }
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewMemory = body::read(&mut call).await?;
    let scope = scope(&call, new.project_id.as_deref()).await?;
    let m = memory::create(&env(&call), &scope, new).await?;
    Ok(response::json(StatusCode::CREATED, &memory::view(&m)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let tags = all_params(call.parts.uri.query(), "tags");
    let all: Vec<serde_json::Value> = memory::list(&call.app.records, &scope, &tags)?.iter().map(memory::view).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, memory_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &memory::view(&memory::get(&call.app.records, &scope, &memory_id)?)))
}

pub async fn update(mut call: Call<'_>, memory_id: String) -> Result<Reply, ApiError> {
    let patch: MemoryPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let m = blocking(move || memory::update(&app.records, &scope, &memory_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &memory::view(&m)))
}

pub async fn delete(call: Call<'_>, memory_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    memory::delete(&env(&call), &scope, &memory_id).await?;
    Ok(super::no_content())
}

/// Every value of parameter `name` (`tags=a&tags=b`; `tags[]=` too), decoded.
pub(super) fn all_params(q: Option<&str>, name: &str) -> Vec<String> {
    let Some(q) = q else { return Vec::new() };
    let brackets = format!("{name}[]");
    q.split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .filter(|(k, _)| {
            let k = query::decode(k);
            k == name || k == brackets
        })
        .map(|(_, v)| query::decode(v))
        .collect()
}
