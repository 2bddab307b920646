//! Evals (evaluations.yaml `Eval`): an agent under test bound to a dataset and a
//! frozen list of scorers, with the pass rate a run must reach to pass. An eval made
//! the seed's way (a name and an agent, no dataset) is kept, and can gate a release,
//! but cannot be run until it names a dataset and scorers.

use serde::Deserialize;
use serde_json::Value;

use super::datasets::{self, not_found, store};
use super::scorers::{self, Scorer};
use crate::agents::agent::record::{AgentRecord, EvalRecord, EvalRunRecord};
use crate::agents::{Patch, Scope};
use crate::error::{ApiError, Code};
use crate::store::Records;

pub const EVAL_PREFIX: &str = "eval_";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewEval {
    #[serde(default)]
    pub project_id: Option<String>,
    pub name: String,
    pub agent_id: String,
    #[serde(default)]
    pub dataset_id: Option<String>,
    #[serde(default)]
    pub scorers: Option<Vec<Value>>,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub dataset_id: Option<String>,
    #[serde(default)]
    pub scorers: Option<Vec<Value>>,
    #[serde(default)]
    pub pass_threshold: Patch<f64>,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field.to_owned())
}

fn agent_in(records: &Records, scope: &Scope, id: &str) -> Result<AgentRecord, ApiError> {
    let a: Option<AgentRecord> = records.agent(&scope.account_id, id).map_err(store)?;
    a.filter(|a| a.project_id == scope.project_id).ok_or_else(|| invalid("agent_id", format!("agent_id: there is no agent {id} in this project.")))
}

fn dataset_in(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let d = datasets::get(records, scope, id).ok().filter(|d| d.project_id == scope.project_id);
    d.map(|_| ()).ok_or_else(|| invalid("dataset_id", format!("dataset_id: there is no dataset {id} in this project.")))
}

fn check_judges(records: &Records, scope: &Scope, scorers: &[Scorer]) -> Result<(), ApiError> {
    for (i, s) in scorers.iter().enumerate() {
        if let Scorer::LlmJudge { ai_provider_id: Some(p), .. } = s {
            if crate::agents::providers::in_project(records, scope, p).is_err() {
                return Err(invalid(&format!("scorers[{i}].ai_provider_id"), format!("There is no AI provider {p} in this project.")));
            }
        }
        // A tool scorer's tool is one of the eval's project, and one the server calls.
        if let Scorer::Tool { tool_id, .. } = s {
            let found: Option<crate::store::ToolRecord> = records.get(&scope.account_id, tool_id).map_err(store)?;
            let Some(t) = found.filter(|t| t.project_id == scope.project_id) else {
                return Err(invalid(&format!("scorers[{i}].tool_id"), format!("There is no tool {tool_id} in this project.")));
            };
            if t.def.get("type").and_then(Value::as_str) == Some("client") {
                return Err(invalid(
                    &format!("scorers[{i}].tool_id"),
                    format!(
                        "The tool {tool_id} is a client tool, which pauses for a client an eval run does not have; score with a server-callable one."
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn name_taken(records: &Records, scope: &Scope, name: &str, except: &str) -> Result<bool, ApiError> {
    Ok(scope.list::<EvalRecord>(records).map_err(store)?.iter().any(|e| e.name == name && e.id != except))
}

fn name_of(name: &str) -> Result<String, ApiError> {
    crate::names::check(name, 200).map_err(|problem| invalid("name", format!("name {problem}")))?;
    Ok(name.to_owned())
}

fn conflict(name: &str) -> ApiError {
    ApiError::new(Code::NameConflict, format!("An eval named {name:?} already exists in this project.")).at("name")
}

pub fn create(records: &Records, scope: &Scope, new: NewEval) -> Result<EvalRecord, ApiError> {
    let name = name_of(&new.name)?;
    let agent = agent_in(records, scope, &new.agent_id)?;
    if let Some(d) = &new.dataset_id {
        dataset_in(records, scope, d)?;
    }
    let scorers = scorers::parse(new.scorers.as_deref().unwrap_or_default(), agent.config.output_schema.as_ref())?;
    check_judges(records, scope, &scorers)?;
    if let Some(t) = new.pass_threshold {
        scorers::check_threshold("pass_threshold", t)?;
    }
    if name_taken(records, scope, &name, "")? {
        return Err(conflict(&name));
    }
    let at = crate::clock::now_rfc3339();
    let e = EvalRecord {
        id: format!("{EVAL_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name,
        agent_id: agent.id,
        dataset_id: new.dataset_id,
        scorers,
        pass_threshold: new.pass_threshold,
        created_at: at.clone(),
        updated_at: Some(at),
    };
    records.insert(&e).map_err(store)?;
    Ok(e)
}

pub fn list(records: &Records, scope: &Scope) -> Result<Vec<EvalRecord>, ApiError> {
    let mut all = scope.list::<EvalRecord>(records).map_err(store)?;
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<EvalRecord, ApiError> {
    scope.get::<EvalRecord>(records, id).map_err(store)?.ok_or_else(|| not_found("eval", id))
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: EvalPatch) -> Result<EvalRecord, ApiError> {
    let e = get(records, scope, id)?;
    let scope = scope.within(&e.project_id);
    let name = patch.name.as_deref().map(name_of).transpose()?;
    if let Some(n) = &name {
        if name_taken(records, &scope, n, id)? {
            return Err(conflict(n));
        }
    }
    let agent = agent_in(records, &scope, patch.agent_id.as_deref().unwrap_or(&e.agent_id))?;
    if let Some(d) = &patch.dataset_id {
        dataset_in(records, &scope, d)?;
    }
    // A new agent re-validates the scorers: an output_schema scorer may lean on its schema.
    let scorers = match &patch.scorers {
        Some(raw) => Some(scorers::parse(raw, agent.config.output_schema.as_ref())?),
        None if patch.agent_id.is_some() => {
            let raw: Vec<Value> = e.scorers.iter().map(|s| serde_json::to_value(s).expect("scorers serialize")).collect();
            Some(scorers::parse(&raw, agent.config.output_schema.as_ref())?)
        }
        None => None,
    };
    if let Some(s) = &scorers {
        check_judges(records, &scope, s)?;
    }
    if let Patch::Set(t) = patch.pass_threshold {
        scorers::check_threshold("pass_threshold", t)?;
    }
    let changed = records
        .update(&scope.account_id, id, |e: &mut EvalRecord| {
            if let Some(n) = name {
                e.name = n;
            }
            e.agent_id = agent.id.clone();
            if let Some(d) = patch.dataset_id {
                e.dataset_id = Some(d);
            }
            if let Some(s) = scorers {
                e.scorers = s;
            }
            match patch.pass_threshold {
                Patch::Absent => {}
                Patch::Null => e.pass_threshold = None,
                Patch::Set(t) => e.pass_threshold = Some(t),
            }
            e.updated_at = Some(crate::clock::now_rfc3339());
            crate::store::owned::Change::Write(e.clone())
        })
        .map_err(store)?;
    changed.ok_or_else(|| not_found("eval", id))
}

/// Deletes the eval and its runs (their results with them).
pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let e = get(records, scope, id)?;
    for r in records.list::<EvalRunRecord>(&scope.account_id).map_err(store)? {
        if r.eval_id == e.id {
            super::run::remove_results(records, &scope.account_id, &r.id)?;
            records.remove::<EvalRunRecord>(&scope.account_id, &r.id).map_err(store)?;
        }
    }
    records.remove::<EvalRecord>(&scope.account_id, &e.id).map_err(store)?;
    Ok(())
}
