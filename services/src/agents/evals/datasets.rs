//! Datasets and their items (evaluations.yaml): operator-owned fixtures, unique by
//! name in a project. An item's `input` must be what a generation accepts as its
//! messages, checked when it is written so a run never meets a malformed case; an
//! item curated from a generation is a copy of its input and answer.

use serde::Deserialize;
use serde_json::{json, Value};

use super::record::{DatasetItemRecord, DatasetRecord, EvalResultRecord};
use crate::agents::agent::record::EvalRecord;
use crate::agents::generation::record::{Block, GenerationRecord, Role};
use crate::agents::generation::request::GenerateBody;
use crate::agents::generation::Status;
use crate::agents::{Patch, Scope};
use crate::error::{ApiError, Code};
use crate::store::Records;

pub const DATASET_PREFIX: &str = "dset_";
pub const ITEM_PREFIX: &str = "dsit_";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewDataset {
    #[serde(default)]
    pub project_id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Patch<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewItem {
    pub input: Value,
    #[serde(default)]
    pub expected_output: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemPatch {
    #[serde(default)]
    pub input: Option<Value>,
    #[serde(default)]
    pub expected_output: Patch<String>,
    #[serde(default)]
    pub metadata: Patch<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromGeneration {
    pub generation_id: String,
    /// Absent: the generation's own answer; `null`: no reference answer.
    #[serde(default)]
    pub expected_output: Patch<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field.to_owned())
}

pub(super) fn not_found(kind: &str, id: &str) -> ApiError {
    ApiError::new(Code::SoatNotFound, format!("No {kind} {id}."))
}

pub(super) fn store(e: crate::store::StoreError) -> ApiError {
    e.into()
}

fn name_of(name: &str) -> Result<String, ApiError> {
    crate::names::check(name, 200).map_err(|problem| invalid("name", format!("name {problem}")))?;
    Ok(name.to_owned())
}

fn metadata_of(m: Option<Value>) -> Result<Option<Value>, ApiError> {
    match m {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(Value::Object(o))),
        Some(_) => Err(invalid("metadata", "metadata must be an object or null.")),
    }
}

/// `input` as the items keep it: messages a generation accepts.
pub fn input_of(input: Value) -> Result<Vec<Value>, ApiError> {
    let Value::Array(messages) = &input else {
        return Err(invalid("input", "input must be an array of { role, content } messages."));
    };
    let body: GenerateBody = serde_json::from_value(json!({ "messages": input }))
        .map_err(|e| invalid("input", format!("input must be an array of {{ role, content }} messages: {e}.")))?;
    body.check().map_err(|e| ApiError { field: Some("input".into()), ..e })?;
    Ok(messages.clone())
}

fn now() -> String {
    crate::clock::now_rfc3339()
}

fn name_taken(records: &Records, scope: &Scope, name: &str, except: &str) -> Result<bool, ApiError> {
    Ok(scope.list::<DatasetRecord>(records).map_err(store)?.iter().any(|d| d.name == name && d.id != except))
}

fn conflict(name: &str) -> ApiError {
    ApiError::new(Code::NameConflict, format!("A dataset named {name:?} already exists in this project.")).at("name")
}

pub fn create(records: &Records, scope: &Scope, new: NewDataset) -> Result<DatasetRecord, ApiError> {
    let name = name_of(&new.name)?;
    if name_taken(records, scope, &name, "")? {
        return Err(conflict(&name));
    }
    let at = now();
    let d = DatasetRecord {
        id: format!("{DATASET_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name,
        description: new.description,
        created_at: at.clone(),
        updated_at: at,
    };
    records.insert(&d).map_err(store)?;
    Ok(d)
}

pub fn list(records: &Records, scope: &Scope) -> Result<Vec<DatasetRecord>, ApiError> {
    let mut all = scope.list::<DatasetRecord>(records).map_err(store)?;
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<DatasetRecord, ApiError> {
    scope.get::<DatasetRecord>(records, id).map_err(store)?.ok_or_else(|| not_found("dataset", id))
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: DatasetPatch) -> Result<DatasetRecord, ApiError> {
    let d = get(records, scope, id)?;
    let scope = scope.within(&d.project_id);
    let name = patch.name.as_deref().map(name_of).transpose()?;
    if let Some(n) = &name {
        if name_taken(records, &scope, n, id)? {
            return Err(conflict(n));
        }
    }
    let changed = records
        .update(&scope.account_id, id, |d: &mut DatasetRecord| {
            if let Some(n) = name {
                d.name = n;
            }
            match patch.description {
                Patch::Absent => {}
                Patch::Null => d.description = None,
                Patch::Set(t) => d.description = Some(t),
            }
            d.updated_at = now();
            crate::store::owned::Change::Write(d.clone())
        })
        .map_err(store)?;
    changed.ok_or_else(|| not_found("dataset", id))
}

/// Deletes the dataset, its items and the evals bound to it; results keep their copies.
pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let d = get(records, scope, id)?;
    for item in items(records, scope, &d.id)? {
        records.remove::<DatasetItemRecord>(&scope.account_id, &item.id).map_err(store)?;
    }
    for e in records.list::<EvalRecord>(&scope.account_id).map_err(store)? {
        if e.dataset_id.as_deref() == Some(d.id.as_str()) {
            records.remove::<EvalRecord>(&scope.account_id, &e.id).map_err(store)?;
        }
    }
    records.remove::<DatasetRecord>(&scope.account_id, &d.id).map_err(store)?;
    Ok(())
}

/// The dataset's items, oldest first (the order a run takes them in).
pub fn items(records: &Records, scope: &Scope, dataset_id: &str) -> Result<Vec<DatasetItemRecord>, ApiError> {
    let d = get(records, scope, dataset_id)?;
    let mut all: Vec<DatasetItemRecord> =
        records.list::<DatasetItemRecord>(&scope.account_id).map_err(store)?.into_iter().filter(|i| i.dataset_id == d.id).collect();
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

fn insert_item(
    records: &Records,
    d: &DatasetRecord,
    input: Vec<Value>,
    expected_output: Option<String>,
    metadata: Option<Value>,
    source: Option<String>,
) -> Result<DatasetItemRecord, ApiError> {
    let at = now();
    let item = DatasetItemRecord {
        id: format!("{ITEM_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: d.account_id.clone(),
        project_id: d.project_id.clone(),
        dataset_id: d.id.clone(),
        input,
        expected_output,
        metadata,
        source_generation_id: source,
        created_at: at.clone(),
        updated_at: at,
    };
    records.insert(&item).map_err(store)?;
    Ok(item)
}

pub fn create_item(records: &Records, scope: &Scope, dataset_id: &str, new: NewItem) -> Result<DatasetItemRecord, ApiError> {
    let d = get(records, scope, dataset_id)?;
    let input = input_of(new.input)?;
    insert_item(records, &d, input, new.expected_output, metadata_of(new.metadata)?, None)
}

fn item(records: &Records, scope: &Scope, dataset_id: &str, item_id: &str) -> Result<(DatasetRecord, DatasetItemRecord), ApiError> {
    let d = get(records, scope, dataset_id)?;
    let found = records.get::<DatasetItemRecord>(&scope.account_id, item_id).map_err(store)?;
    let found = found.filter(|i| i.dataset_id == d.id).ok_or_else(|| not_found("dataset item", item_id))?;
    Ok((d, found))
}

pub fn update_item(records: &Records, scope: &Scope, dataset_id: &str, item_id: &str, patch: ItemPatch) -> Result<DatasetItemRecord, ApiError> {
    item(records, scope, dataset_id, item_id)?;
    let input = patch.input.map(input_of).transpose()?;
    let metadata = match patch.metadata {
        Patch::Absent => None,
        Patch::Null => Some(None),
        Patch::Set(m) => Some(metadata_of(Some(m))?),
    };
    let changed = records
        .update(&scope.account_id, item_id, |i: &mut DatasetItemRecord| {
            if let Some(input) = input {
                i.input = input;
            }
            match patch.expected_output {
                Patch::Absent => {}
                Patch::Null => i.expected_output = None,
                Patch::Set(t) => i.expected_output = Some(t),
            }
            if let Some(m) = metadata {
                i.metadata = m;
            }
            i.updated_at = now();
            crate::store::owned::Change::Write(i.clone())
        })
        .map_err(store)?;
    changed.ok_or_else(|| not_found("dataset item", item_id))
}

/// Deletes the item; results that scored it stay, their `dataset_item_id` cleared.
pub fn delete_item(records: &Records, scope: &Scope, dataset_id: &str, item_id: &str) -> Result<(), ApiError> {
    item(records, scope, dataset_id, item_id)?;
    records.remove::<DatasetItemRecord>(&scope.account_id, item_id).map_err(store)?;
    for r in records.list::<EvalResultRecord>(&scope.account_id).map_err(store)? {
        if r.dataset_item_id.as_deref() == Some(item_id) {
            records
                .update(&scope.account_id, &r.id, |r: &mut EvalResultRecord| {
                    r.dataset_item_id = None;
                    crate::store::owned::Change::Write(())
                })
                .map_err(store)?;
        }
    }
    Ok(())
}

/// The messages the generation was asked with: the transcript up to its first tool
/// exchange, without the answer after the last user message (the request's messages
/// become the transcript's head when the run prepares).
fn request_messages(g: &GenerationRecord) -> Vec<Value> {
    if !g.state.raw_messages.is_empty() {
        return g.state.raw_messages.iter().map(|m| serde_json::to_value(m).expect("messages serialize")).collect();
    }
    let m = &g.state.messages;
    let cut = m.iter().position(|m| m.role == Role::Tool || m.content.iter().any(|b| !matches!(b, Block::Text { .. }))).unwrap_or(m.len());
    let mut head = &m[..cut];
    while head.last().is_some_and(|last| last.role == Role::Assistant) {
        head = &head[..head.len() - 1];
    }
    head.iter()
        .map(|m| {
            let text: String = m.content.iter().map(|b| if let Block::Text { text } = b { text.as_str() } else { "" }).collect();
            json!({ "role": m.role, "content": text })
        })
        .collect()
}

/// `createDatasetItemFromGeneration`: a completed generation of the dataset's project
/// whose content was stored becomes an item (its input, its answer as the reference).
pub fn from_generation(records: &Records, scope: &Scope, dataset_id: &str, body: FromGeneration) -> Result<DatasetItemRecord, ApiError> {
    let d = get(records, scope, dataset_id)?;
    let g: Option<GenerationRecord> = records.get(&scope.account_id, &body.generation_id).map_err(store)?;
    let g = g.filter(|g| scope.sees(&g.project_id)).ok_or_else(|| not_found("generation", &body.generation_id))?;
    if g.project_id != d.project_id {
        return Err(invalid("generation_id", format!("The generation {} belongs to another project than the dataset.", g.id)));
    }
    if g.status() != Status::Completed {
        return Err(ApiError::new(
            Code::GenerationNotCompleted,
            format!("The generation {} is {}; only a completed generation can become a dataset item.", g.id, g.status().as_str()),
        ));
    }
    let input = if g.store_content && g.content_redacted_at.is_none() { request_messages(&g) } else { Vec::new() };
    if input.is_empty() {
        return Err(ApiError::new(
            Code::GenerationContentUnavailable,
            format!("The generation {}'s content was never stored or has been purged.", g.id),
        ));
    }
    let expected = match body.expected_output {
        Patch::Absent => g.state.output.as_ref().map(|o| o.content.clone()),
        Patch::Null => None,
        Patch::Set(t) => Some(t),
    };
    insert_item(records, &d, input, expected, metadata_of(body.metadata)?, Some(g.id.clone()))
}
