//! What a generation persists: the record clients read (the spec's `Generation`) and,
//! beside it, the run's own state ([`RunState`]): the config version that serves it,
//! the transcript so far, the steps spent, the calls pending, and the event counter.
//! Every step of the turn loop rewrites the record in one fsync'd transaction before
//! the next step begins, so any shard can answer for it and a restart finds it where
//! it was. Traces group generations; their `step_count` covers them all.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::agents::agent::config::{AgentConfig, KnowledgeConfig};
use crate::store::generations::{self, GenerationRow, TraceRow};

pub mod transition;

pub use transition::{Failure, Transition, BOOT, RESERVE};

pub const GENERATION_PREFIX: &str = "gen_";
pub const TRACE_PREFIX: &str = "trace_";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    InProgress,
    RequiresAction,
    Completed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::InProgress => "in_progress",
            Status::RequiresAction => "requires_action",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "in_progress" => Status::InProgress,
            "requires_action" => Status::RequiresAction,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            _ => return None,
        })
    }

    /// Completed or failed: nothing more happens to it.
    pub fn settled(self) -> bool {
        matches!(self, Status::Completed | Status::Failed)
    }
}

/// A failure as the record keeps it: the SOAT code, the message a 502 body carries,
/// and its meta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

/// One block of a transcript message, as stored and as `/transcript` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolCall {
        id: String,
        tool_name: String,
        args: Value,
    },
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        output: Value,
        #[serde(default)]
        is_error: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// Tool results (sent to providers as the user side of the exchange).
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message { role, content: vec![Block::Text { text: text.into() }] }
    }
}

/// A message of the generate request: `user` or `assistant`, and its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InMessage {
    pub role: Role,
    pub content: InContent,
}

/// `content`: text, a tool to run before the generation (`ToolOutputMessageContent`,
/// its output becomes the message), or a document (`DocumentMessageContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InContent {
    Text(String),
    Part(Part),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Part {
    ToolOutput {
        tool_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Map<String, Value>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_path: Option<String>,
    },
    Document {
        document_id: String,
    },
}

/// Who runs a tool call the model made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    /// The server (http, builtin, mcp, pipeline, an agent, write_memory).
    Server,
    /// The calling client: the turn pauses at `requires_action`.
    Client,
}

/// One tool call of the step in progress. `started` is committed before a server
/// call is sent, `result` after it answers: a restart between the two re-sends it
/// with the same idempotency key (`<generation_id>:<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    pub id: String,
    pub tool_name: String,
    pub args: Value,
    pub runner: Runner,
    #[serde(default)]
    pub started: bool,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    /// guardrails (issue 37): the approval a guardrail routed this call to; the call
    /// runs (or is handed to the client) only once it is approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// guardrails (issue 37): a call held for an approval item (`apr_…`), filed by the
/// transaction that commits the pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub approval_id: String,
    /// Decided: approved (the call runs) or rejected (its result is the refusal).
    #[serde(default)]
    pub approved: bool,
    /// The guardrail that routed it and its version (`guardrail_…@3`).
    pub policy_version: Option<String>,
    /// The governing guardrail's `expires_in`, when it has one.
    #[serde(default)]
    pub expires_in: Option<u64>,
    pub tool_id: Option<String>,
    pub dedup_key: String,
    pub created_at: String,
}

/// guardrails (issue 37): a final answer held for an approval item; released as it is
/// once approved, replaced by the refusal once rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Held {
    pub gate: Gate,
    pub content: String,
    pub stop: String,
    pub finish: String,
    #[serde(default)]
    pub object: Option<Value>,
    /// The rejection's reason, once rejected.
    #[serde(default)]
    pub refusal: Option<String>,
    /// What is held: the final answer (`content`), or the request's input (approvals:
    /// an input a guardrail sends to approval; `content` is then the input's text).
    #[serde(default)]
    pub stage: HeldStage,
    /// Its approval expired before anyone decided (then `refusal` is set too).
    #[serde(default)]
    pub expired: bool,
}

impl Held {
    /// Why it was refused, once refused.
    pub fn refused(&self) -> Option<String> {
        let reason = self.refusal.as_ref()?;
        Some(if self.expired { "its approval expired before anyone decided".to_owned() } else { format!("its approval was rejected ({reason})") })
    }
}

/// What a [`Held`] holds back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldStage {
    #[default]
    Output,
    Input,
}

impl HeldStage {
    pub fn as_str(self) -> &'static str {
        match self {
            HeldStage::Output => "output",
            HeldStage::Input => "input",
        }
    }
}

/// What the generate request asked for beyond its messages, kept so a resumed run
/// (after a pause or a restart) runs as the request asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Input {
    #[serde(default)]
    pub tool_context: BTreeMap<String, String>,
    #[serde(default)]
    pub knowledge_config: Option<KnowledgeConfig>,
    #[serde(default)]
    pub max_call_depth: u32,
    #[serde(default)]
    pub guardrail_context: Option<Value>,
    #[serde(default)]
    pub actor_id: Option<String>,
    /// The session (and its conversation) this generation answers in, when a
    /// session's generate or auto-generate started it: its events are the
    /// session's too (`sessions.generation.*`), and its reply joins the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The request streams: model calls stream and each text delta is an event.
    #[serde(default)]
    pub stream: bool,
}

/// The output of a settled generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    pub model: String,
    pub content: String,
    pub finish_reason: String,
    #[serde(default)]
    pub object: Option<Value>,
}

/// The run's own state (Quarry's, never in the spec's body but for `output` and
/// `required_action`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The config of the version that serves this generation.
    pub config: AgentConfig,
    pub input: Input,
    /// The whole conversation: the request's messages, then each step's.
    pub messages: Vec<Message>,
    /// The request's messages as sent, until the run prepares them (runs their
    /// `tool_output` tools, reads their documents) into `messages`.
    #[serde(default)]
    pub raw_messages: Vec<InMessage>,
    #[serde(default)]
    pub prepared: bool,
    /// The knowledge matches found before the first step, as the system prompt
    /// carries them.
    #[serde(default)]
    pub context: Option<String>,
    /// Model calls spent in this turn (across pauses).
    pub steps: u32,
    /// The step in progress's tool calls, until their results join `messages`.
    #[serde(default)]
    pub pending: Vec<PendingCall>,
    #[serde(default)]
    pub output: Option<Output>,
    /// The provider that served the last model call.
    #[serde(default)]
    pub served_by: Option<String>,
    /// The last event id committed; ids up to `reserved` may have been sent before a
    /// crash, so a resumed run numbers its events after `reserved`.
    pub seq: u64,
    pub reserved: u64,
    /// The boot that runs it; another boot finding it `in_progress` takes it over.
    #[serde(default)]
    pub lease: Option<String>,
    /// When a `requires_action` pause expires unanswered.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// The number of continuation generations spawned from this chain.
    #[serde(default)]
    pub chain: u32,
    #[serde(default)]
    pub usage: Usage,
    /// guardrails (issue 37): every `guardrail_evaluation` of this generation, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<Value>,
    /// guardrails (issue 37): the evaluation that blocked the input; the run fails on it
    /// before any model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Value>,
    /// guardrails (issue 37): the final answer held for an approval item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache, and written to it.
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// v0.28's `Generation.extraction`: what the turn's memory extraction considered and
/// wrote. `pending` (Quarry's, not answered) while it is recorded and not yet done;
/// `error` when the extraction's model call or writes failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractionSummary {
    pub candidates: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    #[serde(default)]
    pub pending: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ExtractionSummary {
    /// The spec's summary; `null` while the extraction is pending.
    pub fn view(summary: Option<&ExtractionSummary>) -> Value {
        match summary.filter(|e| !e.pending) {
            Some(e) => json!({"candidates": e.candidates, "created": e.created, "updated": e.updated, "skipped": e.skipped}),
            None => Value::Null,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub trace_id: String,
    pub initiator_generation_id: Option<String>,
    pub parent_trace_id: Option<String>,
    pub root_trace_id: Option<String>,
    pub started_by_principal_type: Option<String>,
    pub started_by_principal_id: Option<String>,
    /// Written only by [`GenerationRecord::apply`] (`transition`).
    status: Status,
    pub stop_reason: Option<String>,
    pub error: Option<RecordedError>,
    pub agent_version: Option<u64>,
    pub ai_provider_id: Option<String>,
    pub action_id: Option<String>,
    /// What the model route did (agents with a `model_route_id`).
    #[serde(default)]
    pub routing: Option<Value>,
    /// The turn's memory extraction (`knowledge_config.extraction`; issue 36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<ExtractionSummary>,
    pub metadata: Option<Value>,
    pub idempotency_key: Option<String>,
    /// Whether content (messages, output, event payloads) is written at all
    /// (`trace_content_mode: none` keeps it in memory only).
    pub store_content: bool,
    pub content_redacted_at: Option<String>,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub last_activity_at: Option<String>,
    pub state: RunState,
}

/// What a new generation is, beside its state machine's fields (which
/// [`GenerationRecord::start`] sets).
pub struct NewGeneration {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub trace_id: String,
    pub initiator_generation_id: Option<String>,
    pub parent_trace_id: Option<String>,
    pub root_trace_id: Option<String>,
    pub started_by_principal_type: Option<String>,
    pub started_by_principal_id: Option<String>,
    pub agent_version: Option<u64>,
    pub ai_provider_id: Option<String>,
    pub action_id: Option<String>,
    pub metadata: Option<Value>,
    pub idempotency_key: Option<String>,
    pub store_content: bool,
    pub state: RunState,
}

impl GenerationRecord {
    /// The pending calls the client must answer, as `required_action` shows them.
    pub fn required_action(&self) -> Option<Value> {
        if self.status != Status::RequiresAction {
            return None;
        }
        let calls: Vec<Value> = self
            .state
            .pending
            .iter()
            .filter(|c| c.runner == Runner::Client && c.result.is_none())
            .filter(|c| c.gate.as_ref().is_none_or(|g| g.approved))
            .map(|c| json!({"id": c.id, "tool_name": c.tool_name, "args": c.args}))
            .collect();
        let mut action = json!({"type": "submit_tool_outputs", "tool_calls": calls});
        // guardrails (issue 37): the calls held for an approval item.
        let held: Vec<Value> = self
            .state
            .pending
            .iter()
            .filter_map(|c| {
                let g = c.gate.as_ref().filter(|g| !g.approved && c.result.is_none())?;
                Some(json!({"approval_id": g.approval_id, "tool_call_id": c.id, "tool_name": c.tool_name, "expires_at": self.state.expires_at}))
            })
            .collect();
        let mut held = held;
        if let Some(h) = self.state.held.as_ref().filter(|h| !h.gate.approved) {
            held.push(
                json!({"approval_id": h.gate.approval_id, "tool_call_id": null, "stage": h.stage.as_str(), "expires_at": self.state.expires_at}),
            );
        }
        if !held.is_empty() {
            action["approvals"] = Value::Array(held);
        }
        Some(action)
    }

    /// `GET /api/v1/generations/{id}`: the spec's `Generation`, with `output` and
    /// `required_action` (Quarry) so a poller needs nothing else.
    pub fn view(&self) -> Value {
        json!({
            "id": self.id,
            "project_id": self.project_id,
            "agent_id": self.agent_id,
            "trace_id": self.trace_id,
            "initiator_generation_id": self.initiator_generation_id,
            "started_by_principal_type": self.started_by_principal_type,
            "started_by_principal_id": self.started_by_principal_id,
            "status": self.status.as_str(),
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "last_activity_at": self.last_activity_at,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "action_id": self.action_id,
            "agent_version": self.agent_version,
            "ai_provider_id": self.ai_provider_id,
            "routing": self.routing,
            "extraction": ExtractionSummary::view(self.extraction.as_ref()),
            "metadata": self.metadata,
            "content_redacted_at": self.content_redacted_at,
            "content_redacted": self.content_redacted_at.is_some(),
            "output": self.state.output,
            "required_action": self.required_action(),
            "step_count": self.state.steps,
            // guardrails (issue 37): what each guardrail decided, and at which version.
            "guardrail_evaluations": self.state.guardrails.iter().map(without_notable).collect::<Vec<_>>(),
            "usage": {
                "input_tokens": self.state.usage.input_tokens,
                "output_tokens": self.state.usage.output_tokens,
                "cached_tokens": self.state.usage.cached_tokens,
                "cache_write_tokens": self.state.usage.cache_write_tokens,
            },
        })
    }

    /// `AgentGenerationResponse`: what `?wait=true`, `tool-outputs` and the stream's
    /// pause frame answer.
    pub fn response(&self) -> Value {
        let mut v = json!({"id": self.id, "trace_id": self.trace_id, "status": self.status.as_str(), "ai_provider_id": self.ai_provider_id});
        if let Some(o) = &self.state.output {
            let mut out = json!({"model": o.model, "content": o.content, "finish_reason": o.finish_reason});
            if let Some(obj) = &o.object {
                out["object"] = obj.clone();
            }
            v["output"] = out;
        }
        if let Some(r) = self.required_action() {
            v["required_action"] = r;
        }
        v
    }
}

/// guardrails (issue 37): an evaluation as the API shows it (the run's own `notable`
/// mark left out).
fn without_notable(e: &Value) -> Value {
    let mut e = e.clone();
    if let Some(m) = e.as_object_mut() {
        m.remove("notable");
    }
    e
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub step_count: u64,
    pub parent_trace_id: Option<String>,
    pub root_trace_id: Option<String>,
    pub error: Option<RecordedError>,
    pub content_redacted_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// guardrails (issue 37): what a guardrail stopped, redacted, flagged or sent for
    /// approval in this trace's generations, with the guardrail's id and version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrail_events: Vec<Value>,
}

impl TraceRecord {
    pub fn view(&self) -> Value {
        json!({
            "id": self.id,
            "project_id": self.project_id,
            "agent_id": self.agent_id,
            // The trace's steps as a file (agents::trace_files; files, issue 36).
            "file_id": (self.step_count > 0).then(|| crate::agents::trace_files::file_id_of(&self.id)),
            "step_count": self.step_count,
            "parent_trace_id": self.parent_trace_id,
            "root_trace_id": self.root_trace_id,
            "error": self.error,
            "content_redacted_at": self.content_redacted_at,
            "content_redacted": self.content_redacted_at.is_some(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "guardrail_events": self.guardrail_events,
        })
    }
}

crate::store::owned::owned_record!(GenerationRecord, generations::GENERATIONS, generations::GENERATIONS_BY_ACCOUNT);
crate::store::owned::owned_record!(TraceRecord, generations::TRACES, generations::TRACES_BY_ACCOUNT);

impl GenerationRow for GenerationRecord {
    type Trace = TraceRecord;
    fn project_id(&self) -> &str {
        &self.project_id
    }
    fn agent_id(&self) -> &str {
        &self.agent_id
    }
    fn trace_id(&self) -> &str {
        &self.trace_id
    }
    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }
    fn settled(&self) -> bool {
        self.status.settled()
    }
    fn content_redacted_at(&self) -> Option<&str> {
        self.content_redacted_at.as_deref()
    }
    fn extraction_pending(&self) -> bool {
        self.extraction.as_ref().is_some_and(|e| e.pending)
    }
    fn keep_from_stored(&mut self, stored: GenerationRecord) {
        self.metadata = stored.metadata;
        self.content_redacted_at = stored.content_redacted_at;
    }

    /// Clears what a purge erases (GenerationRecord.content_redacted_at's doc in
    /// generations.yaml: `metadata`, `error`, and the run's recovery state: the
    /// transcript, the calls pending, the output, the request's context) and stamps
    /// `at`, unless it was purged already (the first stamp stays). Ids, timestamps,
    /// status, stop reason, counters and attribution stay. A runner saving a step of a
    /// purged generation has this applied to what it saves (and writes no event
    /// payloads), so the purge holds.
    fn redact(&mut self, at: &str) {
        self.metadata = None;
        self.error = None;
        self.state.messages.clear();
        self.state.raw_messages.clear();
        self.state.context = None;
        self.state.pending.clear();
        self.state.output = None;
        self.state.input.tool_context.clear();
        self.state.input.guardrail_context = None;
        // guardrails (issue 37): an evaluation's snapshot holds the call's values.
        for e in &mut self.state.guardrails {
            if let Some(m) = e.as_object_mut() {
                m.insert("context_snapshot".into(), json!({}));
            }
        }
        if !self.extraction_pending() {
            self.extraction = None;
        }
        if self.content_redacted_at.is_none() {
            self.content_redacted_at = Some(at.to_owned());
        }
    }

    /// webhooks: the generation's lifecycle events (`agents::webhooks::events`).
    fn raised(&self, before: Option<&GenerationRecord>) -> Vec<crate::store::webhooks::Raised> {
        crate::agents::webhooks::events::raised(self, before)
    }

    fn count_steps_on(&self, t: &mut TraceRecord, steps: u64, now: &str) {
        t.step_count += steps;
        t.updated_at = now.to_owned();
        if self.error.is_some() && t.error.is_none() {
            t.error = self.error.clone();
        }
        // guardrails (issue 37): this generation's notable evaluations join its trace
        // once each (they only ever grow, so those already there are a prefix).
        let notes: Vec<&Value> = self.state.guardrails.iter().filter(|e| e.get("notable").and_then(Value::as_bool) == Some(true)).collect();
        let have = t.guardrail_events.iter().filter(|e| e.get("generation_id").and_then(Value::as_str) == Some(self.id.as_str())).count();
        for e in notes.into_iter().skip(have) {
            let mut e = e.clone();
            if let Some(m) = e.as_object_mut() {
                m.remove("notable");
                m.insert("generation_id".into(), Value::from(self.id.as_str()));
                m.insert("at".into(), Value::from(now));
            }
            t.guardrail_events.push(e);
        }
    }

    fn has_trace_notes(&self) -> bool {
        self.state.guardrails.iter().any(|e| e.get("notable").and_then(Value::as_bool) == Some(true))
    }

    fn approval_view(&self, a: &crate::store::ApprovalRecord) -> Value {
        crate::agents::approvals::view(a)
    }

    /// guardrails (issue 37): the approval items this pause holds.
    fn approvals_filed(&self) -> Vec<crate::store::ApprovalRecord> {
        if self.status != Status::RequiresAction {
            return Vec::new();
        }
        let expires_at = self.state.expires_at.clone().unwrap_or_else(crate::clock::now_rfc3339);
        let output = self.state.held.as_ref().filter(|h| !h.gate.approved).map(|h| crate::store::ApprovalRecord {
            id: h.gate.approval_id.clone(),
            account_id: self.account_id.clone(),
            project_id: self.project_id.clone(),
            origin: "tool_call".into(),
            status: "pending".into(),
            proposed_action: None,
            reasoning: None,
            evidence: Some(match h.stage {
                HeldStage::Output => json!({"stage": "output", "output": h.content}),
                HeldStage::Input => json!({"stage": "input", "input": h.content}),
            }),
            predicted_impact: Some(
                match h.stage {
                    HeldStage::Output => "The agent's answer is returned and stored.",
                    HeldStage::Input => "The request's input is sent to the model.",
                }
                .into(),
            ),
            expires_at: expires_at.clone(),
            dedup_key: Some(h.gate.dedup_key.clone()),
            generation_id: Some(self.id.clone()),
            session_id: self.state.input.session_id.clone(),
            agent_id: Some(self.agent_id.clone()),
            tool_call_id: None,
            policy_version: h.gate.policy_version.clone(),
            previous_item_id: None,
            resolved_by: None,
            resolution_reason: None,
            edited_arguments: None,
            created_at: h.gate.created_at.clone(),
            updated_at: h.gate.created_at.clone(),
            also_waiting: Vec::new(),
        });
        self.state
            .pending
            .iter()
            .filter_map(|c| {
                let g = c.gate.as_ref().filter(|g| !g.approved && c.result.is_none())?;
                Some(crate::store::ApprovalRecord {
                    id: g.approval_id.clone(),
                    account_id: self.account_id.clone(),
                    project_id: self.project_id.clone(),
                    origin: "tool_call".into(),
                    status: "pending".into(),
                    proposed_action: Some(
                        json!({"tool_id": g.tool_id.clone().unwrap_or_else(|| c.tool_name.clone()), "action": c.tool_name, "arguments": c.args}),
                    ),
                    reasoning: None,
                    evidence: Some(json!({"tool_call_id": c.id, "step": self.state.steps})),
                    predicted_impact: None,
                    expires_at: expires_at.clone(),
                    dedup_key: Some(g.dedup_key.clone()),
                    generation_id: Some(self.id.clone()),
                    session_id: self.state.input.session_id.clone(),
                    agent_id: Some(self.agent_id.clone()),
                    tool_call_id: Some(c.id.clone()),
                    policy_version: g.policy_version.clone(),
                    previous_item_id: None,
                    resolved_by: None,
                    resolution_reason: None,
                    edited_arguments: None,
                    created_at: g.created_at.clone(),
                    updated_at: g.created_at.clone(),
                    also_waiting: Vec::new(),
                })
            })
            .chain(output)
            .collect()
    }

    fn session_id(&self) -> Option<&str> {
        self.state.input.session_id.as_deref()
    }

    /// sessions: a completed generation of a conversation answers into it.
    fn conversation_reply(&self) -> Option<crate::store::ConversationMessageRecord> {
        let conversation_id = self.state.input.conversation_id.clone()?;
        let output = self.state.output.as_ref().filter(|_| self.status == Status::Completed)?;
        Some(crate::store::ConversationMessageRecord {
            id: crate::store::conversations::reply_id(&self.id),
            account_id: self.account_id.clone(),
            project_id: self.project_id.clone(),
            conversation_id,
            role: "assistant".into(),
            content: output.content.clone(),
            position: 0,
            actor_id: None,
            agent_id: Some(self.agent_id.clone()),
            metadata: None,
            generation_id: Some(self.id.clone()),
            idempotency_key: None,
            created_at: self.completed_at.clone().unwrap_or_else(crate::clock::now_rfc3339),
        })
    }
}

impl TraceRow for TraceRecord {
    fn project_id(&self) -> &str {
        &self.project_id
    }
    fn agent_id(&self) -> &str {
        &self.agent_id
    }
    fn parent_trace_id(&self) -> Option<&str> {
        self.parent_trace_id.as_deref()
    }
    fn redact(&mut self, at: &str) {
        self.error = None;
        if self.content_redacted_at.is_none() {
            self.content_redacted_at = Some(at.to_owned());
        }
    }
}

crate::agents::scope::in_project!(GenerationRecord, TraceRecord);
