//! SOAT guardrails (issue 37; v0.28's guardrails.yaml): a versioned policy document
//! attached by id to projects, agents and tools (`guardrail_ids`), evaluated at run
//! time by `evaluate` (one code path for generations and the dry run). Every write
//! that changes the document archives it as a new immutable version (`guard_ver_…`),
//! in the same transaction; a restore writes an old document back as a new version.
//!
//! Versions and agents, as SOAT does it: an agent (and each of its versions) binds
//! guardrail *ids*, never versions; an edit governs everywhere at once, and every
//! evaluation records the version that governed it (`guardrail_version`, on the
//! generation and its trace, and `policy_version` on an approval item).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::agents::agent::record::{AgentRecord, GuardrailRecord};
use crate::agents::{Patch, Scope};
use crate::error::{ApiError, Code};
use crate::store::owned::{owned_record, Change};
use crate::store::{ProjectRecord, Records, StoreError, ToolRecord};

pub mod document;
pub mod evaluate;
pub mod logic;

pub use evaluate::{Applied, Decision, Evaluation, Subject};

pub const GUARDRAIL_PREFIX: &str = "guardrail_";
pub const VERSION_PREFIX: &str = "guard_ver_";

/// One archived document (guardrails.yaml's `GuardrailVersion`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardrailVersionRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub guardrail_id: String,
    pub version: u64,
    pub config: Map<String, Value>,
    pub label: Option<String>,
    pub created_by: Option<String>,
    pub created_at: String,
}

owned_record!(GuardrailVersionRecord, "soat_guardrail_versions", "soat_guardrail_versions_by_account");
crate::agents::scope::in_project!(GuardrailVersionRecord);

/// createGuardrail's body; the seed's `{name}` alone is a guardrail of class A.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewGuardrail {
    pub name: String,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub document: Option<Map<String, Value>>,
    #[serde(default)]
    pub context_tool_id: Option<String>,
    #[serde(default)]
    pub context_mode: Option<String>,
    #[serde(default)]
    pub version_label: Option<String>,
}

impl NewGuardrail {
    pub fn named(name: &str) -> NewGuardrail {
        NewGuardrail {
            name: name.into(),
            project_id: None,
            description: None,
            document: None,
            context_tool_id: None,
            context_mode: None,
            version_label: None,
        }
    }
}

/// updateGuardrail's body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateGuardrail {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Patch<String>,
    #[serde(default)]
    pub document: Option<Map<String, Value>>,
    #[serde(default)]
    pub context_tool_id: Patch<String>,
    #[serde(default)]
    pub context_mode: Patch<String>,
    #[serde(default)]
    pub version_label: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreBody {
    #[serde(default)]
    pub label: Option<String>,
}

/// evaluateGuardrail's body; `text` is Quarry's: the identifier rule over a text.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluateBody {
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
    #[serde(default)]
    pub guardrail_context: Option<Map<String, Value>>,
    #[serde(default)]
    pub tool_id: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub stage: Option<String>,
}

fn store_err(e: StoreError) -> ApiError {
    if let StoreError::StorageExceeded { .. } = e {
        return e.into();
    }
    tracing::error!(error = %e, "a guardrail's store access failed");
    ApiError::internal()
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field.to_owned())
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(Code::SoatNotFound, format!("There is no guardrail {id} in this project."))
}

fn name_of(name: &str) -> Result<String, ApiError> {
    crate::names::check(name, 200).map_err(|problem| invalid("name", format!("name {problem}")))?;
    Ok(name.to_owned())
}

fn document_of(doc: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    document::check(&doc).map_err(|m| invalid("document", m))?;
    Ok(doc)
}

fn mode_of(mode: Option<&str>) -> Result<(), ApiError> {
    match mode {
        None | Some("merge") | Some("replace") => Ok(()),
        Some(m) => Err(invalid("context_mode", format!("context_mode must be merge or replace, not {m:?}."))),
    }
}

fn tool_in(records: &Records, p: &Scope, id: &str) -> Result<(), ApiError> {
    let t: Option<ToolRecord> = records.get(&p.account_id, id).map_err(store_err)?;
    if t.is_none_or(|t| t.project_id != p.project_id) {
        return Err(ApiError::new(Code::ToolNotFound, format!("context_tool_id: there is no tool {id} in this project.")).at("context_tool_id"));
    }
    Ok(())
}

fn version_record(p: &Scope, g: &GuardrailRecord, label: Option<String>) -> GuardrailVersionRecord {
    GuardrailVersionRecord {
        id: format!("{VERSION_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: p.account_id.clone(),
        project_id: g.project_id.clone(),
        guardrail_id: g.id.clone(),
        version: g.version,
        config: json!({"document": g.document}).as_object().cloned().expect("an object"),
        label,
        created_by: (p.principal_type() == "user").then(|| p.principal_id().to_owned()),
        created_at: crate::clock::now_rfc3339(),
    }
}

/// The record, or 404 (another account's or project's reads as absent).
pub fn found(records: &Records, p: &Scope, id: &str) -> Result<GuardrailRecord, ApiError> {
    p.get::<GuardrailRecord>(records, id).map_err(store_err)?.ok_or_else(|| not_found(id))
}

pub fn create(records: &Records, p: &Scope, body: NewGuardrail) -> Result<GuardrailRecord, ApiError> {
    let name = name_of(&body.name)?;
    let document = document_of(body.document.unwrap_or_else(document::permissive))?;
    mode_of(body.context_mode.as_deref())?;
    if let Some(t) = &body.context_tool_id {
        tool_in(records, p, t)?;
    }
    let at = crate::clock::now_rfc3339();
    let g = GuardrailRecord {
        id: format!("{GUARDRAIL_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: p.account_id.clone(),
        project_id: p.project_id.clone(),
        name,
        description: body.description,
        version: 1,
        document,
        context_tool_id: body.context_tool_id,
        context_mode: body.context_mode,
        created_at: at.clone(),
        updated_at: Some(at),
    };
    let v = version_record(p, &g, body.version_label);
    records.insert_versioned(&g, &v).map_err(store_err)?;
    Ok(g)
}

/// Applies `body`; a document that differs (structurally) from the one held archives a
/// new version, in the same transaction.
pub fn update(records: &Records, p: &Scope, id: &str, body: UpdateGuardrail) -> Result<GuardrailRecord, ApiError> {
    found(records, p, id)?;
    let name = body.name.as_deref().map(name_of).transpose()?;
    let document = body.document.map(document_of).transpose()?;
    if let Patch::Set(m) = &body.context_mode {
        mode_of(Some(m))?;
    }
    if let Patch::Set(t) = &body.context_tool_id {
        tool_in(records, p, t)?;
    }
    let scope = p.clone();
    let out = records
        .update_versioned::<GuardrailRecord, GuardrailVersionRecord, GuardrailRecord>(&p.account_id, id, move |g| {
            if let Some(n) = name {
                g.name = n;
            }
            match body.description {
                Patch::Absent => {}
                Patch::Null => g.description = None,
                Patch::Set(d) => g.description = Some(d),
            }
            match body.context_tool_id {
                Patch::Absent => {}
                Patch::Null => g.context_tool_id = None,
                Patch::Set(t) => g.context_tool_id = Some(t),
            }
            match body.context_mode {
                Patch::Absent => {}
                Patch::Null => g.context_mode = None,
                Patch::Set(m) => g.context_mode = Some(m),
            }
            let mut version = None;
            if let Some(doc) = document.filter(|d| *d != g.document) {
                g.document = doc;
                g.version += 1;
                version = Some(version_record(&scope, g, body.version_label));
            }
            g.updated_at = Some(crate::clock::now_rfc3339());
            Change::Write((g.clone(), version))
        })
        .map_err(store_err)?;
    out.ok_or_else(|| not_found(id))
}

/// The guardrail's versions, newest first.
pub fn versions(records: &Records, p: &Scope, id: &str) -> Result<Vec<GuardrailVersionRecord>, ApiError> {
    let g = found(records, p, id)?;
    let mut all: Vec<GuardrailVersionRecord> = records.list(&p.account_id).map_err(store_err)?;
    all.retain(|v| v.guardrail_id == g.id);
    all.sort_by_key(|v| std::cmp::Reverse(v.version));
    Ok(all)
}

pub fn version(records: &Records, p: &Scope, id: &str, version: &str) -> Result<GuardrailVersionRecord, ApiError> {
    let n = version_number(version)?;
    versions(records, p, id)?
        .into_iter()
        .find(|v| v.version == n)
        .ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("Guardrail {id} has no version {n}.")))
}

fn version_number(v: &str) -> Result<u64, ApiError> {
    v.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| invalid("version", format!("version must be a whole number of at least 1, not {v:?}.")))
}

/// Writes version `v`'s document back as the live policy, through the update path
/// (re-checked; the same document archives nothing).
pub fn restore(records: &Records, p: &Scope, id: &str, v: &str, body: RestoreBody) -> Result<GuardrailRecord, ApiError> {
    let old = version(records, p, id, v)?;
    let doc = old.config.get("document").and_then(Value::as_object).cloned().unwrap_or_else(document::permissive);
    let label = body.label.or_else(|| Some(format!("restored from v{}", old.version)));
    update(records, p, id, UpdateGuardrail { document: Some(doc), version_label: label, ..UpdateGuardrail::default() })
}

/// Deletes a guardrail no project, agent or tool names (409 listing them otherwise),
/// with its versions.
pub fn delete(records: &Records, p: &Scope, id: &str) -> Result<(), ApiError> {
    let g = found(records, p, id)?;
    let names = |ids: &Option<Vec<String>>| ids.iter().flatten().any(|x| *x == g.id);
    let mut refs: Vec<String> = Vec::new();
    let agents: Vec<AgentRecord> = records.agents_of_account(&p.account_id).map_err(store_err)?;
    refs.extend(agents.iter().filter(|a| names(&a.config.guardrail_ids)).map(|a| a.id.clone()));
    let tools: Vec<ToolRecord> = records.list(&p.account_id).map_err(store_err)?;
    let tool_names = |t: &ToolRecord| t.def.get("guardrail_ids").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x == g.id.as_str()));
    refs.extend(tools.iter().filter(|t| tool_names(t)).map(|t| t.id.clone()));
    let projects: Vec<ProjectRecord> = records.list(&p.account_id).map_err(store_err)?;
    refs.extend(projects.iter().filter(|x| names(&x.guardrail_ids)).map(|x| x.id.clone()));
    if !refs.is_empty() {
        return Err(ApiError::new(
            Code::GuardrailHasReferences,
            format!("Guardrail {id} is still attached to {}; detach it first.", refs.join(", ")),
        )
        .with_meta("count", refs.len() as u64)
        .with_meta("references", refs));
    }
    records.remove_versioned::<GuardrailRecord, GuardrailVersionRecord>(&p.account_id, id, |v| v.guardrail_id == g.id).map_err(store_err)?;
    Ok(())
}

/// The guardrails that apply in `project_id` to an agent naming `agent_ids` (and, for
/// a tool call, to a tool naming `tool_ids`), each once, the project's first.
pub fn applicable(
    records: &Records,
    account_id: &str,
    project_id: &str,
    agent_ids: &[String],
    tool_ids: &[String],
) -> Result<Vec<Applied>, StoreError> {
    let project: Option<ProjectRecord> = records.get(account_id, project_id)?;
    let project_ids = project.and_then(|p| p.guardrail_ids).unwrap_or_default();
    let mut out: Vec<Applied> = Vec::new();
    for (scope, ids) in [("project", &project_ids[..]), ("agent", agent_ids), ("tool", tool_ids)] {
        for id in ids {
            if out.iter().any(|a| a.id == *id) {
                continue;
            }
            let record = records.get::<GuardrailRecord>(account_id, id)?.filter(|g| g.project_id == project_id);
            out.push(Applied { id: id.clone(), scope, record });
        }
    }
    Ok(out)
}

/// evaluateGuardrail: the same evaluator a generation runs, on the given call (or
/// text, Quarry's), nothing executed, nothing filed.
pub fn dry_run(records: &Records, p: &Scope, id: &str, body: EvaluateBody) -> Result<Value, ApiError> {
    let g = found(records, p, id)?;
    let tool: Option<ToolRecord> = match &body.tool_id {
        Some(t) => {
            let found: Option<ToolRecord> = records.get(&p.account_id, t).map_err(store_err)?;
            Some(
                found
                    .filter(|x| x.project_id == p.project_id)
                    .ok_or_else(|| ApiError::new(Code::ToolNotFound, format!("tool_id: there is no tool {t} in this project.")).at("tool_id"))?,
            )
        }
        None => None,
    };
    let applied = Applied { id: g.id.clone(), scope: "project", record: Some(g) };
    let context = body.guardrail_context.map(Value::Object);
    let subject = Subject {
        project_id: &p.project_id,
        tool_id: tool.as_ref().map(|t| t.id.as_str()),
        tool_name: tool.as_ref().and_then(|t| t.def.get("name")).and_then(Value::as_str),
        context: context.as_ref(),
        ..Subject::default()
    };
    if let Some(text) = body.text {
        let stage = match body.stage.as_deref() {
            None | Some("input") => document::Stage::Input,
            Some("output") => document::Stage::Output,
            Some("tool_call") => document::Stage::ToolCall,
            Some(s) => return Err(invalid("stage", format!("stage must be input, output or tool_call, not {s:?}."))),
        };
        let (mut e, out) = match evaluate::text(&applied, stage, &text, &subject) {
            Some(x) => x,
            None => (evaluate::call(&applied, &json!({}), &subject), text),
        };
        if e.identifiers.is_none() {
            e.decision = Decision::Execute;
            e.class = "A";
        }
        let mut v = e.to_value();
        v["text"] = Value::from(out);
        return Ok(v);
    }
    let mut args = Value::Object(body.args.unwrap_or_default());
    let mut found = None;
    if let Some((e, scrubbed)) = evaluate::scrub_args(&applied, &args, &subject) {
        args = scrubbed;
        found = Some(e);
    }
    let mut e = evaluate::call(&applied, &args, &subject);
    if let Some(f) = found {
        e.decision = e.decision.max(f.decision);
        e.identifiers = f.identifiers;
    }
    Ok(e.to_value())
}

/// A guardrail as the API shows it.
pub fn view(g: &GuardrailRecord) -> Value {
    json!({
        "id": g.id,
        "project_id": g.project_id,
        "name": g.name,
        "description": g.description,
        "version": g.version,
        "document": g.document,
        "context_tool_id": g.context_tool_id,
        "context_mode": g.context_mode,
        "created_at": g.created_at,
        "updated_at": g.updated_at.as_deref().unwrap_or(&g.created_at),
    })
}

pub fn version_view(v: &GuardrailVersionRecord) -> Value {
    json!({
        "id": v.id,
        "guardrail_id": v.guardrail_id,
        "version": v.version,
        "config": v.config,
        "label": v.label,
        "created_by": v.created_by,
        "created_at": v.created_at,
    })
}
