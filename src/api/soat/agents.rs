//! `/api/v1/agents`, its versions and its release (soat-agents.openapi.yaml): parse →
//! `agents::agent::Agents` → serialize. Writes run on the blocking pool (the store);
//! reads are MVCC snapshots read in place.

use hyper::header::IF_MATCH;
use hyper::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{body, query, scope, scope_in_query, Page};
use crate::agents::agent::config::{AgentConfig, Create, KnowledgeConfig, Restore, SetRelease, ToolBinding, Update};
use crate::agents::agent::record::{AgentRecord, Release, VersionRecord};
use crate::agents::agent::{inline_tool, validate, AgentError, Agents};
use crate::agents::Scope;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// `Agent`: the record's identity, its config as read (inline tools' literal
/// credentials masked, `tool_choice` `"auto"` when unset), version and release.
#[derive(Serialize)]
pub struct AgentOut {
    id: String,
    project_id: String,
    #[serde(flatten)]
    config: AgentConfig,
    version: u64,
    active_release: Option<Release>,
    created_at: String,
    updated_at: String,
}

fn masked_bindings(bindings: Option<Vec<ToolBinding>>) -> Option<Vec<ToolBinding>> {
    bindings.map(|bs| bs.into_iter().map(|b| ToolBinding { tool: b.tool.as_ref().map(inline_tool::masked), ..b }).collect())
}

impl From<AgentRecord> for AgentOut {
    fn from(a: AgentRecord) -> AgentOut {
        let mut config = a.config;
        config.tool_choice = Some(validate::tool_choice_or_default(&config));
        config.tool_bindings = masked_bindings(config.tool_bindings.take());
        AgentOut {
            id: a.id,
            project_id: a.project_id,
            config,
            version: a.version,
            active_release: a.active_release,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// `AgentVersion`, its inline tools masked as on the agent.
#[derive(Serialize)]
pub struct VersionOut {
    id: String,
    agent_id: String,
    version: u64,
    config: Map<String, Value>,
    label: Option<String>,
    eval_run_id: Option<String>,
    created_by_principal_type: Option<String>,
    created_by_principal_id: Option<String>,
    created_at: String,
}

impl From<VersionRecord> for VersionOut {
    fn from(v: VersionRecord) -> VersionOut {
        let mut config = v.config;
        if let Some(Value::Array(bindings)) = config.get_mut("tool_bindings") {
            for b in bindings.iter_mut() {
                if let Some(Value::Object(tool)) = b.get_mut("tool") {
                    *tool = inline_tool::masked(tool);
                }
            }
        }
        VersionOut {
            id: v.id,
            agent_id: v.agent_id,
            version: v.version,
            config,
            label: v.label,
            eval_run_id: v.eval_run_id,
            created_by_principal_type: v.created_by_principal_type,
            created_by_principal_id: v.created_by_principal_id,
            created_at: v.created_at,
        }
    }
}

/// An agents error as the client reads it, naming its field.
pub fn err(e: AgentError) -> ApiError {
    let field = e.field().map(str::to_owned);
    let a = ApiError::from(e);
    match field {
        Some(f) => a.at(f),
        None => a,
    }
}

/// Runs `f` on the service on the blocking pool.
async fn run<T: Send + 'static>(call: &Call<'_>, f: impl FnOnce(&Agents) -> Result<T, AgentError> + Send + 'static) -> Result<T, ApiError> {
    let records = call.app.records.clone();
    blocking(move || f(&Agents::new(records))).await.map_err(err)
}

/// The documents a body's `knowledge_config` names must be ones the key reads.
async fn named_documents(call: &Call<'_>, scope: &Scope, k: Option<&KnowledgeConfig>) -> Result<(), ApiError> {
    let ids = k.map(|k| k.documents().0).unwrap_or_default();
    crate::agents::knowledge::check_documents(&call.app.search, scope, ids, "knowledge_config.document_ids").await
}

fn agent_reply(status: StatusCode, a: AgentRecord) -> Reply {
    response::json(status, &AgentOut::from(a))
}

fn if_match(call: &Call<'_>) -> Result<Option<String>, ApiError> {
    match call.parts.headers.get(IF_MATCH) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_owned()))
            .map_err(|_| err(AgentError::invalid("If-Match", "If-Match must be a version number (3 or \"3\") or *."))),
    }
}

/// The `{version}` path parameter: a positive integer, else 400.
fn version_number(raw: &str) -> Result<u64, ApiError> {
    match raw.parse::<u64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(err(AgentError::invalid("version", format!("version must be a positive integer, not {raw:?}.")))),
    }
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: Create = body::read(&mut call).await?;
    let scope = scope(&call, new.project_id.as_deref()).await?;
    named_documents(&call, &scope, new.knowledge_config.as_ref()).await?;
    let agent = run(&call, move |a| a.create(&scope, new)).await?;
    Ok(agent_reply(StatusCode::CREATED, agent))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all = Agents::new(call.app.records.clone()).list(&scope).map_err(err)?;
    let out: Vec<AgentOut> = all.into_iter().map(AgentOut::from).collect();
    Ok(page.reply(&out))
}

async fn scoped(call: &Call<'_>) -> Result<Scope, ApiError> {
    scope(call, None).await
}

pub async fn get(call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let scope = scoped(&call).await?;
    let agent = Agents::new(call.app.records.clone()).get(&scope, &agent_id).map_err(err)?;
    Ok(agent_reply(StatusCode::OK, agent))
}

/// PUT and PATCH: both partial updates.
pub async fn update(mut call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let tag = if_match(&call)?;
    let patch: Update = body::read(&mut call).await?;
    let scope = scoped(&call).await?;
    named_documents(&call, &scope, patch.knowledge_config.as_ref().value()).await?;
    let agent = run(&call, move |a| a.update(&scope, &agent_id, patch, tag.as_deref())).await?;
    Ok(agent_reply(StatusCode::OK, agent))
}

pub async fn delete(call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let force = query::flag(call.parts.uri.query(), "force", false)?;
    let scope = scoped(&call).await?;
    run(&call, move |a| a.delete(&scope, &agent_id, force)).await?;
    Ok(super::no_content())
}

pub async fn versions(call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scoped(&call).await?;
    let all = Agents::new(call.app.records.clone()).versions(&scope, &agent_id).map_err(err)?;
    let out: Vec<VersionOut> = all.into_iter().map(VersionOut::from).collect();
    Ok(page.reply(&out))
}

pub async fn version(call: Call<'_>, agent_id: String, version: String) -> Result<Reply, ApiError> {
    let n = version_number(&version)?;
    let scope = scoped(&call).await?;
    let v = Agents::new(call.app.records.clone()).version(&scope, &agent_id, n).map_err(err)?;
    Ok(response::json(StatusCode::OK, &VersionOut::from(v)))
}

pub async fn restore(mut call: Call<'_>, agent_id: String, version: String) -> Result<Reply, ApiError> {
    let n = version_number(&version)?;
    let tag = if_match(&call)?;
    let restore: Restore = body::read_or_default(&mut call).await?;
    let scope = scoped(&call).await?;
    let agent = run(&call, move |a| a.restore(&scope, &agent_id, n, restore, tag.as_deref())).await?;
    Ok(agent_reply(StatusCode::OK, agent))
}

pub async fn set_release(mut call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let release: SetRelease = body::read(&mut call).await?;
    let scope = scoped(&call).await?;
    let agent = run(&call, move |a| a.set_release(&scope, &agent_id, release)).await?;
    Ok(agent_reply(StatusCode::OK, agent))
}

pub async fn promote(call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let scope = scoped(&call).await?;
    let agent = run(&call, move |a| a.promote(&scope, &agent_id)).await?;
    Ok(agent_reply(StatusCode::OK, agent))
}

pub async fn abort(call: Call<'_>, agent_id: String) -> Result<Reply, ApiError> {
    let scope = scoped(&call).await?;
    let agent = run(&call, move |a| a.abort(&scope, &agent_id)).await?;
    Ok(agent_reply(StatusCode::OK, agent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_versions_inline_tool_credentials_are_masked_on_read() {
        let config = json!({"name": "a", "tool_bindings": [{"tool_id": "tool_1"}, {"tool": {"name": "t", "execute": {"url": "https://h", "headers": {"Authorization": "Bearer live-123", "X-Ref": "{{secret:sec_1}}"}}}}]});
        let v = VersionRecord {
            id: "agver_1".into(),
            agent_id: "agent_1".into(),
            version: 1,
            config: config.as_object().unwrap().clone(),
            label: None,
            eval_run_id: None,
            created_by_principal_type: None,
            created_by_principal_id: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let out = serde_json::to_value(VersionOut::from(v)).unwrap();
        let headers = &out["config"]["tool_bindings"][1]["tool"]["execute"]["headers"];
        assert_eq!(headers["Authorization"], json!({"no_echo": true}));
        assert_eq!(out["config"]["tool_bindings"][0], json!({"tool_id": "tool_1"}));
        assert!(!out.to_string().contains("live-123"));
    }
}
