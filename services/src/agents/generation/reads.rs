//! The read and maintenance side of generations and traces (generations.yaml,
//! traces.yaml): lists, gets, the metadata PATCH, purges, the transcript and the
//! trace tree. Every read goes through [`Scope`], so another account's record, or one
//! of a project the scope does not see, is absent (404). Writes block: run them on the
//! blocking pool.

use serde_json::{json, Map, Value};

use super::record::{Block, GenerationRecord, Message, Role, Status, TraceRecord};
use crate::agents::{Scope, SoatError};
use crate::store::owned::Change;
use crate::store::Records;

/// `GET /generations`'s filters (each absent: any).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub agent_id: Option<String>,
    pub trace_id: Option<String>,
    pub initiator_generation_id: Option<String>,
    pub status: Option<Status>,
}

impl Filter {
    fn admits(&self, g: &GenerationRecord) -> bool {
        self.agent_id.as_ref().is_none_or(|a| *a == g.agent_id)
            && self.trace_id.as_ref().is_none_or(|t| *t == g.trace_id)
            && self.initiator_generation_id.as_ref().is_none_or(|i| g.initiator_generation_id.as_ref() == Some(i))
            && self.status.is_none_or(|s| s == g.status())
    }
}

fn not_found_generation(id: &str) -> SoatError {
    SoatError::not_found("generation", id)
}

fn not_found_trace(id: &str) -> SoatError {
    SoatError::not_found("trace", id)
}

/// The scope's project's generations the filter admits, newest first.
pub fn list_generations(records: &Records, scope: &Scope, filter: &Filter) -> Result<Vec<GenerationRecord>, SoatError> {
    let mut all: Vec<GenerationRecord> = scope.list::<GenerationRecord>(records)?.into_iter().filter(|g| filter.admits(g)).collect();
    all.sort_by(|a, b| (&b.started_at, &b.id).cmp(&(&a.started_at, &a.id)));
    Ok(all)
}

pub fn get_generation(records: &Records, scope: &Scope, id: &str) -> Result<GenerationRecord, SoatError> {
    scope.get::<GenerationRecord>(records, id)?.ok_or_else(|| not_found_generation(id))
}

/// Shallow-merges `metadata` over the generation's (a key given replaces the stored
/// one, `null` included: the bag is the caller's, returned verbatim). The merged bag
/// is held to the bound of one ([`crate::agents::MAX_FREE_FORM_BYTES`]), so PATCHes
/// cannot grow it past what a create may send.
pub fn update_metadata(records: &Records, scope: &Scope, id: &str, metadata: Map<String, Value>) -> Result<GenerationRecord, SoatError> {
    get_generation(records, scope, id)?;
    let updated = records.update::<GenerationRecord, _>(&scope.account_id, id, |g| {
        let mut bag = match g.metadata.clone() {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        bag.extend(metadata);
        let bag = Value::Object(bag);
        let bytes = serde_json::to_vec(&bag).map_or(0, |b| b.len());
        if bytes > crate::agents::MAX_FREE_FORM_BYTES {
            let max = crate::agents::MAX_FREE_FORM_BYTES;
            return Change::Keep(Err(SoatError::invalid("metadata", format!("merged, metadata would be {bytes} bytes of JSON; at most {max}."))));
        }
        g.metadata = Some(bag);
        Change::Write(Ok(g.clone()))
    })?;
    updated.ok_or_else(|| not_found_generation(id))?
}

/// `DELETE /generations/{id}/content`: the purged skeleton.
pub fn purge_generation(records: &Records, scope: &Scope, id: &str) -> Result<GenerationRecord, SoatError> {
    get_generation(records, scope, id)?;
    records.purge_generation_content(&scope.account_id, id)?.ok_or_else(|| not_found_generation(id))
}

/// The scope's project's traces, newest first.
pub fn list_traces(records: &Records, scope: &Scope) -> Result<Vec<TraceRecord>, SoatError> {
    let mut all = scope.list::<TraceRecord>(records)?;
    all.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    Ok(all)
}

pub fn get_trace(records: &Records, scope: &Scope, id: &str) -> Result<TraceRecord, SoatError> {
    scope.get::<TraceRecord>(records, id)?.ok_or_else(|| not_found_trace(id))
}

/// `DELETE /traces/{id}/content`: the purged trace, after its descendants and all
/// their generations.
pub fn purge_trace(records: &Records, scope: &Scope, id: &str) -> Result<TraceRecord, SoatError> {
    get_trace(records, scope, id)?;
    Ok(records.purge_trace_content::<GenerationRecord>(&scope.account_id, id)?.ok_or_else(|| not_found_trace(id))?.trace)
}

/// `GET /traces/{id}/tree`: the tree rooted at the trace's root (its `root_trace_id`,
/// else the top of its `parent_trace_id` chain), each node with its `children` and,
/// when asked, its `generations` (newest first).
pub fn tree(records: &Records, scope: &Scope, id: &str, with_generations: bool) -> Result<Value, SoatError> {
    let start = get_trace(records, scope, id)?;
    let traces: Vec<TraceRecord> = records.list::<TraceRecord>(&scope.account_id)?.into_iter().filter(|t| t.project_id == start.project_id).collect();
    let find = |id: &str| traces.iter().find(|t| t.id == id);
    let mut root = start.root_trace_id.as_deref().and_then(find).unwrap_or(&start);
    // Up the parent chain from there (a root named but gone, or none named), once
    // around at most: a cycle stops where it began.
    let mut seen = vec![root.id.clone()];
    while let Some(parent) = root.parent_trace_id.as_deref().and_then(find) {
        if seen.contains(&parent.id) {
            break;
        }
        seen.push(parent.id.clone());
        root = parent;
    }
    let generations = if with_generations {
        let mut all: Vec<GenerationRecord> =
            records.list::<GenerationRecord>(&scope.account_id)?.into_iter().filter(|g| g.project_id == start.project_id).collect();
        all.sort_by(|a, b| (&b.started_at, &b.id).cmp(&(&a.started_at, &a.id)));
        Some(all)
    } else {
        None
    };
    let mut placed = vec![root.id.clone()];
    Ok(node(root, &traces, generations.as_deref(), &mut placed))
}

fn node(t: &TraceRecord, all: &[TraceRecord], generations: Option<&[GenerationRecord]>, placed: &mut Vec<String>) -> Value {
    let mut v = t.view();
    let kids: Vec<&TraceRecord> = all.iter().filter(|c| c.parent_trace_id.as_deref() == Some(t.id.as_str()) && !placed.contains(&c.id)).collect();
    placed.extend(kids.iter().map(|c| c.id.clone()));
    v["children"] = Value::Array(kids.into_iter().map(|c| node(c, all, generations, placed)).collect());
    if let Some(gs) = generations {
        v["generations"] = Value::Array(gs.iter().filter(|g| g.trace_id == t.id).map(GenerationRecord::view).collect());
    }
    v
}

/// `GET /generations/{id}/transcript` (generations.yaml `GenerationTranscript`).
///
/// The stored conversation is the request's messages, then one assistant message per
/// model step, each followed by the tool messages answering its calls: the last
/// `step_count` assistant messages are the steps, what precedes the first of them the
/// input. Content purged or never stored: `input`, `output` null, `steps` empty.
pub fn transcript(g: &GenerationRecord) -> Value {
    let zero_retention = !g.store_content && g.content_redacted_at.is_none();
    let content_gone = g.content_redacted_at.is_some() || zero_retention;
    let (input, steps, output) = if content_gone {
        (Value::Null, Vec::new(), Value::Null)
    } else {
        let (input, steps) = split(&g.state.messages, g.state.steps as usize);
        let last = steps.len().checked_sub(1);
        let finish = g.state.output.as_ref().map(|o| o.finish_reason.as_str());
        let steps: Vec<Value> = steps.iter().enumerate().map(|(i, s)| step(i, s, if Some(i) == last { finish } else { None })).collect();
        let output = if steps.is_empty() {
            Value::Null
        } else {
            let content = steps.iter().rev().filter_map(|s| s["text"].as_str()).find(|t| !t.is_empty()).map(str::to_owned);
            let finish = g
                .state
                .output
                .as_ref()
                .map(|o| o.finish_reason.clone())
                .or_else(|| steps.last().and_then(|s| s["finish_reason"].as_str().map(str::to_owned)));
            json!({"content": content, "finish_reason": finish})
        };
        (Value::Array(input.iter().map(input_message).collect()), steps, output)
    };
    let (by_type, by_id) = if zero_retention { (Some("system"), Some("zero_retention")) } else { (None, None) };
    json!({
        "generation_id": g.id,
        "trace_id": g.trace_id,
        "project_id": g.project_id,
        "agent_id": g.agent_id,
        "agent_version": g.agent_version,
        "status": g.status().as_str(),
        "stop_reason": g.stop_reason,
        "started_at": g.started_at,
        "completed_at": g.completed_at,
        "step_count": g.state.steps,
        "input": input,
        "steps": steps,
        "output": output,
        "error": g.error,
        "content_redacted_at": g.content_redacted_at,
        "content_redacted_by_principal_type": by_type,
        "content_redacted_by_principal_id": by_id,
    })
}

/// One step: an assistant message and the tool messages after it.
struct Step<'a> {
    said: &'a Message,
    answers: Vec<&'a Message>,
}

/// The input messages and the last `steps` steps of `messages`.
fn split(messages: &[Message], steps: usize) -> (&[Message], Vec<Step<'_>>) {
    let assistant: Vec<usize> = messages.iter().enumerate().filter(|(_, m)| m.role == Role::Assistant).map(|(i, _)| i).collect();
    let first = assistant.len().saturating_sub(steps);
    let Some(&start) = assistant.get(first) else { return (messages, Vec::new()) };
    let mut out = Vec::new();
    for (n, &i) in assistant[first..].iter().enumerate() {
        let end = assistant.get(first + n + 1).copied().unwrap_or(messages.len());
        out.push(Step { said: &messages[i], answers: messages[i + 1..end].iter().filter(|m| m.role == Role::Tool).collect() });
    }
    (&messages[..start], out)
}

/// Step `index`; `finish` is the turn's finish reason, given for its last step.
fn step(index: usize, s: &Step<'_>, finish: Option<&str>) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in &s.said.content {
        match b {
            Block::Text { text: t } => text.push_str(t),
            Block::ToolCall { id, tool_name, args } => calls.push(json!({"id": id, "tool_name": tool_name, "args": args})),
            Block::ToolResult { .. } => {}
        }
    }
    let results: Vec<Value> = s
        .answers
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolResult { tool_call_id, tool_name, output, is_error } => Some(if *is_error {
                json!({"tool_call_id": tool_call_id, "tool_name": tool_name, "result": null, "error": output})
            } else {
                json!({"tool_call_id": tool_call_id, "tool_name": tool_name, "result": output, "error": null})
            }),
            _ => None,
        })
        .collect();
    let finish = finish.or(if calls.is_empty() { None } else { Some("tool-calls") });
    json!({"index": index, "text": text, "finish_reason": finish, "tool_calls": calls, "tool_results": results, "usage": null})
}

/// An input message as the request gave it: `{role, content}`, the content a string
/// when it is all text, else its blocks.
fn input_message(m: &Message) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let all_text = m.content.iter().all(|b| matches!(b, Block::Text { .. }));
    let content = if all_text {
        Value::String(m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect())
    } else {
        serde_json::to_value(&m.content).unwrap_or(Value::Null)
    };
    json!({"role": role, "content": content})
}

#[cfg(test)]
pub(crate) mod tests;
