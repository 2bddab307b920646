//! The turn loop. A run drives one generation from where its record stands to the
//! next point where it rests (completed, failed, or paused at `requires_action`),
//! committing each step before the next begins:
//!
//! 1. the step's tool calls that the server runs: marked `started` in the commit of
//!    the step that made them, then each sent (an http call with `Idempotency-Key:
//!    <generation>:<step>:<call>`) and its result committed; a restart re-sends only
//!    calls without a committed result, with the same key;
//! 2. calls the client runs: the turn pauses (`requires_action`, with its expiry);
//!    `tool-outputs` fills them and resumes the run;
//! 3. the results join the transcript; a `has_tool_call` stop condition may end the
//!    turn; with `max_steps` spent it ends without a model call;
//! 4. the model call, its deltas emitted as they come, its answer and tool calls
//!    committed as the step.
//!
//! Events are numbered; each step's are committed with it, and the record reserves the
//! ids a step may emit before its commit, so a run resumed after a crash numbers its
//! events after any a reader may have seen.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, LazyLock};

use serde_json::{json, Map, Value};

use super::live::{self, Log, DONE};
use super::record::{Block, GenerationRecord, InContent, Message, Output, Part, PendingCall, RecordedError, Role, Runner, Status};
use super::tools::{self as gtools, Bound, Does};
use crate::agents::agent::config::StopKind;
use crate::agents::agent::record::{ModelRouteRecord, RetryOn};
use crate::agents::providers::{self, CallError};
use crate::agents::tools::call::{CallInput, Env};
use crate::agents::tools::outbound::Timeouts;
use crate::agents::tools::ToolError;
use crate::agents::{KeyRef, Project, Scope};
use crate::app::App;
use crate::error::{Code, ErrorCode};
use crate::llm::request::{ChatRequest, Effort, Params, ResponseFormat, ToolChoice};
use crate::llm::{Delta, LlmError};
use crate::runtime::blocking;
use crate::store::{AiProviderRecord, StoreError};
use quarry_index::embed::Embedder;

/// Event ids a step may use before its commit (see the module docs).
pub const RESERVE: u64 = 1 << 20;

/// This process's boot: a run's lease names it, so another boot knows the run died.
pub static BOOT: LazyLock<String> = LazyLock::new(|| crate::ids::random_base62(12));

/// What a shard lends its runs.
pub struct Host {
    pub app: Arc<App>,
    pub embedders: Rc<RefCell<Vec<Embedder>>>,
}

/// Why a run failed: the SOAT code, the message a 502 body carries, its meta.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: Code,
    pub message: String,
    pub meta: Map<String, Value>,
    /// The record's `stop_reason`: `error`, or why it was stopped (`interrupted`,
    /// `approval_expired`).
    pub stop_reason: &'static str,
}

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into(), meta: Map::new(), stop_reason: "error" }
    }

    fn with(mut self, key: &str, v: impl Into<Value>) -> Failure {
        self.meta.insert(key.to_owned(), v.into());
        self
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        tracing::error!(error = %e, "a generation's store write failed");
        Failure::new(Code::Internal, "The server could not record the generation's step.")
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Failure {
        Failure { code: e.code(), message: e.message(), meta: e.meta().unwrap_or_default(), stop_reason: "error" }
    }
}

/// Starts (or resumes) `g` on this shard; `g`'s lease must already be this boot's
/// and committed. The returned log is the one readers of this segment follow.
pub fn spawn(host: Rc<Host>, g: GenerationRecord) -> Arc<Log> {
    let log = live::open(&g.id);
    let lease = g.state.lease.clone();
    let run = Run { host, log: log.clone(), lease, g, batch: Vec::new(), new_steps: 0, tools: Vec::new(), plan: String::new(), last: None };
    glommio::spawn_local(run.drive()).detach();
    log
}

struct Run {
    host: Rc<Host>,
    log: Arc<Log>,
    g: GenerationRecord,
    /// Events emitted since the last commit.
    batch: Vec<(u64, String)>,
    /// Model calls since the last commit (the trace's step count).
    new_steps: u64,
    tools: Vec<Bound>,
    plan: String,
    /// The stream's last frame, sent once the state it announces is committed.
    last: Option<(u64, String)>,
    /// The lease this run holds: a save lands only while the stored record names it.
    lease: Option<String>,
}

/// How a turn rested.
enum Rest {
    Settled,
    Paused,
}

impl Run {
    async fn drive(mut self) {
        let out = self.turn().await;
        if let Err(f) = out {
            if let Err(e) = self.fail(f).await {
                tracing::error!(generation = %self.g.id, error = %e.message, "recording a generation's failure failed");
            }
        }
        if !self.g.store_content && self.g.status.settled() {
            super::content::forget_later(self.g.id.clone());
        }
        live::finish(&self.g.id, &self.log);
    }

    /// What a tool call or a search runs with: this shard's sessions, the account's plan.
    fn env(&self) -> Env<'_> {
        Env {
            search: &self.host.app.search,
            records: &self.host.app.records,
            embedders: &self.host.embedders,
            caller: crate::search::Caller { account_id: &self.g.account_id, plan: self.host.app.plan(&self.plan) },
            timeouts: Timeouts::default(),
        }
    }

    fn scope(&self) -> Scope {
        Scope { account_id: self.g.account_id.clone(), project_id: self.g.project_id.clone(), key: KeyRef::Account { prefix: String::new() } }
    }

    fn project(&self) -> Project<'_> {
        Project { account_id: &self.g.account_id, project_id: &self.g.project_id }
    }

    /// Numbers an event and sends it to live readers, except a stream's last frame,
    /// which waits for the commit of the state it announces (a reader that saw
    /// `[DONE]` then reads the record settled).
    fn emit(&mut self, data: String) {
        self.g.state.seq += 1;
        let seq = self.g.state.seq;
        if live::terminal(&data) {
            self.last = Some((seq, data.clone()));
        } else {
            self.log.push(seq, data.as_str());
        }
        if self.g.store_content || live::terminal(&data) {
            self.batch.push((seq, data));
        }
    }

    /// Commits the record as it stands with the events since the last commit.
    async fn save(&mut self) -> Result<(), Failure> {
        let now = crate::clock::now_rfc3339();
        self.g.last_activity_at = Some(now);
        self.g.state.reserved = self.g.state.seq + RESERVE;
        let record = super::content::persisted(&self.g);
        let events = std::mem::take(&mut self.batch);
        let steps = std::mem::take(&mut self.new_steps);
        let records = self.host.app.records.clone();
        let lease = self.lease.clone();
        let saved = blocking(move || records.save_step(&record, &events, steps, |stored| stored.state.lease == lease)).await?;
        match saved {
            Some(true) => {
                if let Some((seq, data)) = self.last.take() {
                    self.log.push(seq, data);
                }
                Ok(())
            }
            // Deleted meanwhile (its agent force-deleted), or taken over: stop here.
            None | Some(false) => Err(Failure::new(Code::Internal, "The generation was deleted or taken over while it ran.")),
        }
    }

    async fn fail(&mut self, f: Failure) -> Result<(), Failure> {
        let mut meta = f.meta.clone();
        meta.insert("generation_id".into(), Value::from(self.g.id.as_str()));
        meta.insert("trace_id".into(), Value::from(self.g.trace_id.as_str()));
        let code = crate::http::surface::soat_code(f.code).to_owned();
        self.g.status = Status::Failed;
        self.g.stop_reason = Some(f.stop_reason.to_owned());
        self.g.error = Some(RecordedError { code: code.clone(), message: f.message.clone(), meta });
        self.g.completed_at = Some(crate::clock::now_rfc3339());
        let frame = format!("{{\"error\":{},\"code\":{}}}", Value::from(f.message.as_str()), Value::from(code));
        self.emit(frame);
        self.save().await
    }

    async fn complete(&mut self, stop_reason: &str, finish_reason: &str, content: String, object: Option<Value>) -> Result<Rest, Failure> {
        self.g.status = Status::Completed;
        self.g.stop_reason = Some(stop_reason.to_owned());
        self.g.completed_at = Some(crate::clock::now_rfc3339());
        let model = self.model_name();
        self.g.state.output = Some(Output { model, content, finish_reason: finish_reason.to_owned(), object });
        self.emit(DONE.to_owned());
        self.save().await?;
        Ok(Rest::Settled)
    }

    fn model_name(&self) -> String {
        self.g.state.served_by.clone().unwrap_or_default()
    }

    fn last_text(&self) -> String {
        self.g
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect::<String>())
            .unwrap_or_default()
    }

    async fn turn(&mut self) -> Result<Rest, Failure> {
        let records = self.host.app.records.clone();
        let account_id = self.g.account_id.clone();
        self.plan = blocking(move || records.account(&account_id)).await?.map(|a| a.plan).unwrap_or_default();
        if self.g.state.steps == 0 && self.g.state.pending.is_empty() && self.g.input_depth() == Some(0) {
            let note = "The call depth limit was reached (max_call_depth 0): this agent was not run.".to_owned();
            return self.complete("max_call_depth", "stop", note, None).await;
        }
        let write_store = self.g.state.config.knowledge_config.as_ref().and_then(|k| k.write_memory_store_id.clone());
        self.tools = gtools::resolve(&self.host.app.tools, self.project(), &self.g.state.config, write_store.as_deref())
            .map_err(|e| Failure::new(e.code(), e.message()))?;
        if !self.g.state.prepared {
            self.prepare().await?;
        }
        let max_steps = self.g.state.config.max_steps.unwrap_or(i64::from(crate::agents::agent::config::DEFAULT_MAX_STEPS)).max(0) as u32;
        loop {
            if !self.g.state.pending.is_empty() {
                self.run_server_calls().await?;
                if self.g.state.pending.iter().any(|c| c.result.is_none()) {
                    return self.pause().await;
                }
                let pending = std::mem::take(&mut self.g.state.pending);
                let names: Vec<String> = pending.iter().map(|c| c.tool_name.clone()).collect();
                let content = pending
                    .into_iter()
                    .map(|c| Block::ToolResult {
                        tool_call_id: c.id,
                        tool_name: c.tool_name,
                        output: c.result.unwrap_or(Value::Null),
                        is_error: c.is_error,
                    })
                    .collect();
                self.g.state.messages.push(Message { role: Role::Tool, content });
                let stop = self
                    .g
                    .state
                    .config
                    .stop_conditions
                    .iter()
                    .flatten()
                    .any(|s| s.r#type == StopKind::HasToolCall && s.tool_name.as_deref().is_some_and(|n| names.iter().any(|called| called == n)));
                if stop {
                    let text = self.last_text();
                    return self.complete("stop_condition", "tool_calls", text, None).await;
                }
            }
            if self.g.state.steps >= max_steps {
                let text = self.last_text();
                return self.complete("max_steps", "tool_calls", text, None).await;
            }
            self.g.state.steps += 1;
            self.new_steps += 1;
            let step = self.g.state.steps;
            let (output, reason, forced) = self.model_call(step).await?;
            let text = output.text.clone();
            self.g.state.usage.input_tokens += output.usage.input;
            self.g.state.usage.output_tokens += output.usage.output + output.usage.reasoning;
            self.g.state.usage.cached_tokens += output.usage.cached;
            self.g.state.usage.cache_write_tokens += output.usage.cache_write;
            if output.tool_calls.is_empty() && forced {
                // §2.7: a forcing tool_choice forbids a final assistant message.
                return Err(Failure::new(
                    Code::AiProviderError,
                    format!("This step's tool_choice forces a tool call, and the model answered with text instead (step {step})."),
                ));
            }
            if output.tool_calls.is_empty() {
                if let Some(name) = gtools::text_encoded_call(&text, &self.tools) {
                    let message = format!("The model wrote a call to the tool {name} as text instead of calling it; the tool did not run.");
                    return Err(Failure::new(Code::TextEncodedToolCall, message).with("tool_name", name));
                }
                let object = match &self.g.state.config.output_schema {
                    Some(schema) => Some(super::output::parse(schema, &text)?),
                    None => None,
                };
                self.g.state.messages.push(Message::text(Role::Assistant, text.clone()));
                let (stop, finish) = if reason == crate::llm::Reason::MaxTokens { ("length", "length") } else { ("stop", "stop") };
                return self.complete(stop, finish, text, object).await;
            }
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(Block::Text { text });
            }
            let mut pending = Vec::new();
            for call in &output.tool_calls {
                let args: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::Object(Map::new()));
                content.push(Block::ToolCall { id: call.id.clone(), tool_name: call.name.clone(), args: args.clone() });
                let bound = self.tools.iter().find(|b| b.name == call.name);
                let mut p = PendingCall {
                    id: call.id.clone(),
                    tool_name: call.name.clone(),
                    args,
                    runner: bound.map_or(Runner::Server, |b| b.runner),
                    // Committed with the step that decided them: a restart finds them
                    // "maybe sent" and re-sends with the same idempotency key, which costs
                    // no commit of its own before each send.
                    started: bound.is_some_and(|b| b.runner == Runner::Server),
                    result: None,
                    is_error: false,
                };
                if bound.is_none() {
                    p.result = Some(json!({"error": format!("There is no tool named {:?}.", call.name)}));
                    p.is_error = true;
                }
                pending.push(p);
            }
            self.g.state.messages.push(Message { role: Role::Assistant, content });
            for p in &pending {
                let frame = json!({"type": "tool_call", "id": p.id, "tool_name": p.tool_name, "args": p.args, "runner": p.runner});
                self.emit(frame.to_string());
            }
            self.g.state.pending = pending;
            self.save().await?;
        }
    }

    /// Before the first step: the request's messages made into the transcript (each
    /// `tool_output` tool run, each document read) and the knowledge search.
    async fn prepare(&mut self) -> Result<(), Failure> {
        let raw = std::mem::take(&mut self.g.state.raw_messages);
        let ran_tools = raw.iter().any(|m| matches!(m.content, InContent::Part(Part::ToolOutput { .. })));
        for (i, m) in raw.iter().enumerate() {
            let text = match &m.content {
                InContent::Text(t) => t.clone(),
                InContent::Part(Part::ToolOutput { tool_id, action, input, output_path }) => self
                    .tool_output(tool_id, action.clone(), input.clone().unwrap_or_default(), output_path.as_deref())
                    .await
                    .map_err(|f| Failure { message: format!("messages[{i}].content: {}", f.message), ..f })?,
                InContent::Part(Part::Document { document_id }) => {
                    self.document(document_id).map_err(|f| Failure { message: format!("messages[{i}].content: {}", f.message), ..f })?
                }
            };
            self.g.state.messages.push(Message::text(m.role, text));
        }
        self.g.state.context = self.knowledge().await?;
        self.g.state.prepared = true;
        // Only a tool_output message did something a restart must not redo; otherwise
        // the first step's commit carries the prepared transcript.
        if ran_tools {
            self.save().await?;
        }
        Ok(())
    }

    async fn tool_output(&self, tool_id: &str, action: Option<String>, input: Map<String, Value>, path: Option<&str>) -> Result<String, Failure> {
        let tool = self
            .host
            .app
            .tools
            .lookup_in(self.project(), tool_id)
            .map_err(|e| Failure::new(e.code(), e.message()))?
            .ok_or_else(|| Failure::new(Code::ToolNotFound, format!("no tool {tool_id} in this project")))?;
        let env = self.env();
        let call =
            CallInput { action, input, context: self.g.state.input.tool_context.clone(), idempotency_key: Some(format!("{}:{tool_id}", self.g.id)) };
        let out = self.host.app.tools.run(&env, self.project(), &tool.def, call, 0).await.map_err(|e| Failure::new(e.code(), e.message()))?;
        let picked = match path {
            Some(p) => p.split('.').filter(|s| !s.is_empty()).try_fold(&out, |v, k| match v {
                Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
                v => v.get(k),
            }),
            None => Some(&out),
        };
        let picked = picked.ok_or_else(|| {
            Failure::new(Code::SoatValidation, format!("output_path {:?} names nothing in the tool's output", path.unwrap_or_default()))
        })?;
        Ok(match picked {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        })
    }

    /// A Quarry document of the account, its pages' text in order.
    fn document(&self, id: &str) -> Result<String, Failure> {
        const MAX_CHARS: usize = 60_000;
        let collections = self.host.app.search.collections(&self.g.account_id).map_err(|e| Failure::new(e.code(), e.message()))?;
        for owned in collections {
            let snap = owned.snapshot();
            let Some(at) = snap.find(id) else { continue };
            let d = snap.doc_view(at);
            let mut text = String::new();
            for n in 0..d.pages {
                if let Some(p) = snap.page_view(at, n) {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(p.text);
                }
                if text.chars().count() > MAX_CHARS {
                    text = text.chars().take(MAX_CHARS).collect();
                    break;
                }
            }
            return Ok(text);
        }
        Err(Failure::new(Code::SoatNotFound, format!("no document {id} in this account's collections")))
    }

    /// The knowledge search before the first step (§2.8): the agent's
    /// `knowledge_config` merged with the request's, searched with the last user
    /// message; its matches, with their citations, join the system prompt.
    async fn knowledge(&self) -> Result<Option<String>, Failure> {
        let Some(cfg) = crate::agents::knowledge::merge(self.g.state.config.knowledge_config.as_ref(), self.g.state.input.knowledge_config.as_ref())
        else {
            return Ok(None);
        };
        let query: String = self
            .g
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect())
            .unwrap_or_default();
        if query.trim().is_empty() {
            return Ok(None);
        }
        let env = self.env();
        let matches = crate::agents::knowledge::retrieve(&env, self.project(), &cfg, &query)
            .await
            .map_err(|e| Failure::new(e.code(), format!("The knowledge search failed: {}", e.message())))?;
        Ok((!matches.is_empty()).then(|| crate::agents::knowledge::context(&matches)))
    }

    async fn pause(&mut self) -> Result<Rest, Failure> {
        self.g.status = Status::RequiresAction;
        let expiry = self.host.app.config.agents.approval_expiry;
        self.g.state.expires_at = Some(crate::clock::rfc3339_after(expiry));
        self.g.state.lease = None;
        let frame = self.g.response().to_string();
        self.emit(frame);
        self.emit(DONE.to_owned());
        self.save().await?;
        super::expiry::schedule(self.host.clone(), self.g.account_id.clone(), self.g.id.clone(), expiry);
        Ok(Rest::Paused)
    }

    /// Runs the step's server-side calls that have no committed result.
    async fn run_server_calls(&mut self) -> Result<(), Failure> {
        let todo: Vec<usize> = (0..self.g.state.pending.len())
            .filter(|&i| self.g.state.pending[i].runner == Runner::Server && self.g.state.pending[i].result.is_none())
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        if todo.iter().any(|&i| !self.g.state.pending[i].started) {
            for &i in &todo {
                self.g.state.pending[i].started = true;
            }
            self.save().await?;
        }
        for i in todo {
            let call = self.g.state.pending[i].clone();
            let (result, is_error) = match self.call_tool(&call).await {
                Ok(v) => (v, false),
                Err(Call::Soft(message)) => (json!({"error": message}), true),
                Err(Call::Fatal(f)) => return Err(f),
            };
            let frame = json!({"type": "tool_result", "tool_call_id": call.id, "tool_name": call.tool_name, "output": result, "is_error": is_error});
            self.emit(frame.to_string());
            let p = &mut self.g.state.pending[i];
            p.result = Some(result);
            p.is_error = is_error;
            self.save().await?;
        }
        Ok(())
    }

    async fn call_tool(&self, call: &PendingCall) -> Result<Value, Call> {
        let bound = self.tools.iter().find(|b| b.name == call.tool_name).ok_or_else(|| Call::Soft("no such tool".into()))?;
        let env = self.env();
        let args = call.args.as_object().cloned().unwrap_or_default();
        match &bound.does {
            Does::Tool { def, action } => {
                let input = CallInput {
                    action: action.clone(),
                    input: args,
                    context: self.g.state.input.tool_context.clone(),
                    // The step too: a provider may reuse call ids from step to step.
                    idempotency_key: Some(format!("{}:{}:{}", self.g.id, self.g.state.steps, call.id)),
                };
                self.host.app.tools.run(&env, self.project(), def, input, 0).await.map_err(tool_failure)
            }
            Does::WriteMemory { store_id } => super::knowledge::write_memory(&env, self.project(), store_id, &call.args).await.map_err(Call::Soft),
            Does::Agent { agent_id } => {
                let agent_id = agent_id.clone().or_else(|| args.get("agent_id").and_then(Value::as_str).map(str::to_owned));
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or_default().to_owned();
                let agent_id = agent_id.ok_or_else(|| Call::Soft("agent_id is required".into()))?;
                super::nested::ask(self.host.clone(), &self.g, &agent_id, &prompt).await.map_err(Call::Soft)
            }
        }
    }

    /// One model call for `step`: the request from the transcript, streamed (each
    /// text delta an event) when the request streams, else whole.
    async fn model_call(&mut self, step: u32) -> Result<(crate::llm::Output, crate::llm::Reason, bool), Failure> {
        let config = &self.g.state.config;
        let step_tools = gtools::for_step(&self.tools, config, step);
        let forced = matches!(step_tools.choice, Some(ToolChoice::Required | ToolChoice::Specific(_)));
        let mut req = ChatRequest {
            model: config.model.clone().unwrap_or_default(),
            system: super::prompt::system(config, self.g.state.context.as_deref()),
            messages: super::prompt::messages(&self.g.state.messages, config.max_context_messages),
            tools: gtools::llm_tools(&step_tools.visible),
            tool_choice: step_tools.choice,
            params: Params { temperature: config.temperature, max_tokens: config.max_output_tokens.map(|n| n.max(1) as u64), ..Params::default() },
            response_format: None,
            reasoning_effort: config.reasoning.as_ref().and_then(|r| effort(r.effort)),
            cache_breakpoints: config.prompt_caching.as_ref().is_some_and(|p| p.enabled),
        };
        if let Some(schema) = &config.output_schema {
            req.response_format = Some(ResponseFormat::JsonSchema { name: "output".into(), schema: Value::Object(schema.clone()), strict: false });
        }
        let targets = self.targets().await?;
        let scope = self.scope();
        let app = self.host.app.clone();
        let routed = targets.iter().any(|t| t.index.is_some());
        let mut attempts = Vec::new();
        let mut fallbacks = 0u64;
        for (n, t) in targets.iter().enumerate() {
            let mut req = req.clone();
            req.model = t.model.clone().unwrap_or_default();
            let model = t.model.clone().unwrap_or_else(|| t.provider.default_model.clone());
            let attempt = json!({"target_index": t.index, "ai_provider_id": t.provider.id, "model": model});
            let out = if self.g.state.input.stream {
                match providers::stream(&app.upstreams(), &scope, &t.provider, req).await {
                    Ok(mut s) => {
                        let mut failed = None;
                        while let Some(d) = s.next().await {
                            match d {
                                Ok(Delta::Text(t)) if !t.is_empty() => self.emit(json!({"type": "delta", "text": t}).to_string()),
                                Ok(_) => {}
                                Err(e) => {
                                    failed = Some(e);
                                    break;
                                }
                            }
                        }
                        match failed {
                            // Deltas were sent: a stream that broke is not retried elsewhere.
                            Some(e) => Err((CallError::Llm(e), false)),
                            None => Ok(s.completion()),
                        }
                    }
                    Err(e) => Err((e, true)),
                }
            } else {
                providers::complete(&app.upstreams(), &scope, &t.provider, req).await.map_err(|e| (e, true))
            };
            match out {
                Ok(c) => {
                    attempts.push(attempt);
                    self.g.ai_provider_id = Some(t.provider.id.clone());
                    self.g.state.served_by = Some(model);
                    if let Some(route_id) = &self.g.state.config.model_route_id {
                        self.g.routing = Some(routing(route_id, t.index, fallbacks, attempts, self.g.routing.take()));
                    }
                    if !self.g.state.input.stream && !c.output.text.is_empty() {
                        self.emit(json!({"type": "delta", "text": c.output.text}).to_string());
                    }
                    return Ok((c.output, c.termination.reason, forced));
                }
                Err((e, may_fail_over)) => {
                    let class = failover_class(&e).filter(|c| routed && may_fail_over && t.retry_on.iter().any(|r| r == c));
                    let last = n + 1 == targets.len();
                    match class {
                        Some(class) if !last => {
                            let mut a = attempt;
                            a["error_class"] = Value::from(class);
                            attempts.push(a);
                            fallbacks += 1;
                        }
                        _ => {
                            if let Some(route_id) = &self.g.state.config.model_route_id {
                                let mut a = attempt;
                                if let Some(c) = failover_class(&e) {
                                    a["error_class"] = Value::from(c);
                                }
                                attempts.push(a);
                                self.g.routing = Some(routing(route_id, None, fallbacks, attempts, self.g.routing.take()));
                            }
                            return Err(e.into());
                        }
                    }
                }
            }
        }
        Err(Failure::new(Code::AiProviderError, "The agent's model route has no target."))
    }

    /// Where model calls go: the agent's provider (its model), or its route's
    /// targets in order.
    async fn targets(&self) -> Result<Vec<Target>, Failure> {
        let config = &self.g.state.config;
        let records = self.host.app.records.clone();
        let scope = self.scope();
        if let Some(id) = config.ai_provider_id.clone() {
            let model = config.model.clone();
            let found = blocking(move || providers::in_project(&records, &scope, &id)).await.map_err(|e| Failure::new(e.code(), e.message()))?;
            return Ok(vec![Target { index: None, provider: found, model, retry_on: Vec::new() }]);
        }
        let route_id = config
            .model_route_id
            .clone()
            .ok_or_else(|| Failure::new(Code::AiProviderError, "The agent names neither an AI provider nor a model route."))?;
        let route = blocking(move || -> Result<(ModelRouteRecord, Vec<AiProviderRecord>), Failure> {
            let route: ModelRouteRecord = crate::agents::agent::service::in_project(&records, &scope.account_id, &scope.project_id, &route_id)
                .map_err(|e| Failure::new(Code::Internal, e.to_string()))?
                .ok_or_else(|| {
                    Failure::new(Code::ModelRouteNotFound, format!("The agent's model route {route_id} does not exist in this project."))
                })?;
            let providers = route
                .targets
                .iter()
                .map(|t| providers::in_project(&records, &scope, &t.ai_provider_id).map_err(|e| Failure::new(e.code(), e.message())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((route, providers))
        })
        .await?;
        let (route, found) = route;
        let retry_on: Vec<&'static str> = route
            .retry_on
            .iter()
            .map(|r| match r {
                RetryOn::ProviderError => "provider_error",
                RetryOn::Timeout => "timeout",
                RetryOn::RateLimited => "rate_limited",
            })
            .collect();
        Ok(route
            .targets
            .iter()
            .zip(found)
            .enumerate()
            .map(|(i, (t, provider))| Target { index: Some(i), provider, model: Some(t.model.clone()), retry_on: retry_on.clone() })
            .collect())
    }
}

/// One place a model call may go.
struct Target {
    /// Its position in the route's targets (`None`: the agent's own provider).
    index: Option<usize>,
    provider: AiProviderRecord,
    model: Option<String>,
    retry_on: Vec<&'static str>,
}

/// The route's `error_class` of a failure that may fail over; `None` for a
/// deterministic one (a bad request, a refused credential), which fails the generation.
fn failover_class(e: &CallError) -> Option<&'static str> {
    use crate::llm::ErrorClass as C;
    match e {
        CallError::Llm(LlmError::Provider { error, .. }) => match error.class {
            C::RateLimited | C::QuotaExhausted => Some("rate_limited"),
            C::Timeout => Some("timeout"),
            C::ServerError | C::Overloaded | C::Other => Some("provider_error"),
            _ => None,
        },
        CallError::Llm(LlmError::Unreachable { message, .. }) if message.contains("timed out") => Some("timeout"),
        CallError::Llm(LlmError::Unreachable { .. } | LlmError::Stream { .. }) => Some("provider_error"),
        _ => None,
    }
}

/// The generation's `routing`, cumulative across its model calls.
fn routing(route_id: &str, index: Option<usize>, fallbacks: u64, attempts: Vec<Value>, before: Option<Value>) -> Value {
    let (mut all, before_fallbacks) = match before {
        Some(b) => (b["attempts"].as_array().cloned().unwrap_or_default(), b["fallbacks"].as_u64().unwrap_or(0)),
        None => (Vec::new(), 0),
    };
    all.extend(attempts);
    json!({"route_id": route_id, "target_index": index, "fallbacks": before_fallbacks + fallbacks, "attempts": all})
}

fn effort(e: crate::agents::agent::config::Effort) -> Option<Effort> {
    use crate::agents::agent::config::Effort as E;
    match e {
        E::None => None,
        E::Low => Some(Effort::Low),
        E::Medium => Some(Effort::Medium),
        E::High => Some(Effort::High),
    }
}

/// How a tool call ended, when not with a result.
enum Call {
    /// The model sees the error as the call's result and may try again.
    Soft(String),
    /// The generation fails (an http tool's non-2xx is 502 `TOOL_HTTP_ERROR`).
    Fatal(Failure),
}

fn tool_failure(e: ToolError) -> Call {
    match &e {
        ToolError::Http { status: Some(status), .. } => {
            Call::Fatal(Failure::new(Code::ToolHttpError, e.message()).with("status", *status).with("tool_error", e.to_string()))
        }
        ToolError::Http { .. } | ToolError::Secret(_) | ToolError::Store(_) | ToolError::MissingContext(_) => {
            Call::Fatal(Failure::new(e.code(), e.message()))
        }
        _ => Call::Soft(e.message()),
    }
}

impl GenerationRecord {
    fn input_depth(&self) -> Option<u32> {
        Some(self.state.input.max_call_depth)
    }
}
