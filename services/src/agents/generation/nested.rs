//! Another agent as a tool (the builtin `agents:CreateAgentGeneration`): a child
//! generation in the same project, in a trace of its own whose parent is the
//! caller's, one call deeper (`max_call_depth` one less; at 0 the child answers the
//! depth guard without a model call). It always waits, as the spec's tool form does.

use std::rc::Rc;

use serde_json::{json, Value};

use super::events::Reader;
use super::record::{GenerationRecord, InContent, Status};
use super::request::{GenerateBody, RawMessage};
use super::run::Host;
use super::service::{self, StartArgs, Started};
use crate::agents::{KeyRef, Scope};

pub async fn ask(host: Rc<Host>, parent: &GenerationRecord, agent_id: &str, prompt: &str) -> Result<Value, String> {
    if prompt.trim().is_empty() {
        return Err("prompt must not be empty".into());
    }
    let depth = parent.state.input.max_call_depth.saturating_sub(1);
    let body = GenerateBody {
        messages: vec![RawMessage { role: "user".into(), content: InContent::Text(prompt.to_owned()) }],
        stream: false,
        trace_id: None,
        parent_trace_id: Some(parent.trace_id.clone()),
        root_trace_id: Some(parent.root_trace_id.clone().unwrap_or_else(|| parent.trace_id.clone())),
        max_call_depth: Some(depth),
        tool_context: Some(parent.state.input.tool_context.clone()).filter(|c| !c.is_empty()),
        action_id: parent.action_id.clone(),
        guardrail_context: None,
        metadata: None,
        idempotency_key: None,
        knowledge_config: None,
        session_id: None,
        conversation_id: None,
    };
    let scope =
        Scope { account_id: parent.account_id.clone(), project_id: parent.project_id.clone(), key: KeyRef::Account { prefix: String::new() } };
    let args = StartArgs { scope, agent_id: agent_id.to_owned(), body, idempotency: None, initiator: Some(parent.id.clone()), version: None };
    let started = service::start(host.clone(), args).await.map_err(|e| e.message)?;
    let Started::New { record, .. } = started else { return Err("the child generation was not started".into()) };
    let reader = Reader::new(host.agents.records.clone(), &record.account_id, &record.id, 0);
    let done = reader.rest().await.map_err(|e| e.to_string())?.ok_or("the child generation is gone")?;
    match done.status() {
        Status::Completed => Ok(json!({
            "generation_id": done.id,
            "trace_id": done.trace_id,
            "stop_reason": done.stop_reason,
            "content": done.state.output.as_ref().map(|o| o.content.clone()).unwrap_or_default(),
        })),
        Status::RequiresAction => {
            Err(format!("the agent {agent_id} paused on a client tool (generation {}), which a nested call cannot answer", done.id))
        }
        _ => Err(done.error.map_or_else(|| "the child generation failed".to_owned(), |e| format!("{}: {}", e.code, e.message))),
    }
}
