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
//!
//! Every change of the generation's status goes through its record's transitions
//! (`record::transition`); this file is the loop, and its concerns have files of their
//! own: `prepare` (the first step's transcript and knowledge), `calls` (server-run tool
//! calls), `model` (one model call) and `route` (where it goes, failing over).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::event::Event;
use super::live::{self, Log};
use super::record::{Block, Failure, GenerationRecord, Held, HeldStage, Message, Output, PendingCall, Role, Runner, Transition};
use super::tools::{self as gtools, Bound};
use crate::agents::agent::config::StopKind;
use crate::agents::guardrails::document::{self as gdoc, Stage};
use crate::agents::guardrails::{Applied, Decision, Evaluation, Subject};
use crate::agents::providers::CallError;
use crate::agents::tools::call::Env;
use crate::agents::tools::outbound::Timeouts;
use crate::agents::{Project, Scope};
use crate::error::{Code, ErrorCode};
use crate::runtime::blocking;
use crate::store::generations::EventRow;
use crate::store::StoreError;
use quarry_index::embed::Embedder;

// model routes' circuit breaker (issue 37)
pub mod breaker;
mod calls;
mod model;
mod prepare;
// quotas (issue 37)
mod quota;
mod route;
// chats (issue 36): a chat on its project's default route fails over as a generation does.
pub(crate) use route::failover_class;

/// What a shard lends its runs: the agents service and this shard's sessions.
pub struct Host {
    pub agents: Arc<crate::agents::Service>,
    pub embedders: Rc<RefCell<Vec<Embedder>>>,
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        if e.is_unavailable() {
            // Not the generation's fault: its run stops and is resumed from its last
            // committed step once the store answers again (see `drive`).
            tracing::warn!(error = %e, "a generation lost the records store mid-step");
            return Failure::new(Code::StoreUnavailable, "The records store is out of reach; the generation resumes once it is back.");
        }
        tracing::error!(error = %e, "a generation's store write failed");
        Failure::new(Code::Internal, "The server could not record the generation's step.")
    }
}

/// How long a run retries a step's commit while the records store is out of reach (a
/// PostgreSQL restart takes seconds) before it stops and leaves the step to be resumed.
const STORE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the records-store call `f` on the blocking pool, again while the store is out
/// of reach (with backoff, for up to [`STORE_PATIENCE`]): what it answered, or its
/// last error.
pub(crate) async fn patiently<T: Send + 'static>(
    f: impl Fn() -> Result<T, crate::store::StoreError> + Send + Sync + 'static,
) -> Result<T, crate::store::StoreError> {
    let f = Arc::new(f);
    let started = std::time::Instant::now();
    let mut wait = std::time::Duration::from_millis(100);
    loop {
        let call = f.clone();
        match blocking(move || call()).await {
            Err(e) if e.is_unavailable() && started.elapsed() < STORE_PATIENCE => {
                glommio::timer::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// The generations whose run is under way in this process. A run of this boot that is
/// not here lost the records store mid-step and is resumed (`recover::adopt`) once
/// the store is back, as a dead node's runs are: no run is left `in_progress` with
/// nobody running it.
static RUNNING: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<String>>> = std::sync::LazyLock::new(Default::default);

/// A new run of this boot, marked as under way here from before its record is
/// written: the adopt loop leaves it alone while the write's outcome is being learnt
/// (a write that met a store restart may have landed), so it never runs twice. Unmarked
/// when dropped, unless [`spawn`] took it.
pub(crate) struct Pending(Option<String>);

impl Pending {
    pub fn new(id: &str) -> Pending {
        RUNNING.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_owned());
        Pending(Some(id.to_owned()))
    }

    /// The run was spawned: its end unmarks it.
    pub fn spawned(mut self) {
        self.0 = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.0.take() {
            RUNNING.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        }
    }
}

/// Whether `id`'s run is under way in this process.
pub(crate) fn running_here(id: &str) -> bool {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner()).contains(id)
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Failure {
        Failure { code: e.code(), message: e.message(), meta: e.meta().unwrap_or_default(), stop_reason: "error" }
    }
}

/// Starts (or resumes) `g` on this shard; `g`'s lease must already be this boot's
/// and committed. The returned log is the one readers of this segment follow. The
/// segment counts as one of its account's running generations until it ends: `slot`
/// when the caller took one against the cap (a new generation), else one taken here.
pub fn spawn(host: Rc<Host>, g: GenerationRecord, slot: Option<crate::limits::Slot>) -> Rc<Log> {
    let log = live::open(&g.id);
    let lease = g.state.lease.clone();
    RUNNING.lock().unwrap_or_else(|p| p.into_inner()).insert(g.id.clone());
    let slot = slot.unwrap_or_else(|| host.agents.running.take(&g.account_id));
    let run = Run {
        host,
        log: log.clone(),
        lease,
        g,
        batch: Vec::new(),
        new_steps: 0,
        tools: Vec::new(),
        plan: String::new(),
        last: None,
        guards: Vec::new(),
        hold: false,
        quota: None,
    };
    glommio::spawn_local(async move {
        let _slot = slot;
        run.drive().await
    })
    .detach();
    log
}

struct Run {
    host: Rc<Host>,
    log: Rc<Log>,
    g: GenerationRecord,
    /// Events emitted since the last commit.
    batch: Vec<EventRow>,
    /// Model calls since the last commit (the trace's step count).
    new_steps: u64,
    tools: Vec<Bound>,
    plan: String,
    /// The stream's last frame, sent once the state it announces is committed.
    last: Option<(u64, String)>,
    /// The lease this run holds: a save lands only while the stored record names it.
    lease: Option<String>,
    /// guardrails (issue 37): the project's and the agent's guardrails, as this segment
    /// of the run found them (a tool's own are read at each of its calls).
    guards: Vec<Applied>,
    /// An output rule would change the model's text: it is streamed only once screened.
    hold: bool,
    /// quotas (issue 37): the last model call's reservation, settled by the next save.
    quota: Option<crate::agents::quotas::Reservation>,
}

/// How a turn rested.
enum Rest {
    Settled,
    Paused,
}

impl Run {
    async fn drive(mut self) {
        let out = self.turn().await;
        match out {
            // The store went away: nothing more can be committed now. The record stays
            // `in_progress` at its last committed step, and this boot resumes it once
            // the store answers (it is no longer `running_here`).
            Err(f) if f.code == Code::StoreUnavailable => {
                tracing::warn!(generation = %self.g.id, "a generation stopped for the records store; it resumes from its last step once the store is back");
            }
            Err(f) => {
                if let Err(e) = self.fail(f).await {
                    tracing::error!(generation = %self.g.id, error = %e.message, "recording a generation's failure failed");
                }
            }
            Ok(_) => {}
        }
        RUNNING.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.g.id);
        if !self.g.store_content && self.g.status().settled() {
            super::content::forget_later(self.host.agents.clone(), self.g.id.clone());
        }
        live::finish(&self.g.id, &self.log);
    }

    /// What a tool call or a search runs with: this shard's sessions, the account's plan.
    fn env(&self) -> Env<'_> {
        let agents = &self.host.agents;
        Env {
            search: &agents.search,
            records: &agents.records,
            embedders: &self.host.embedders,
            caller: crate::search::Caller { account_id: &self.g.account_id, plan: agents.plan(&self.plan), reach: self.scope().reach() },
            timeouts: Timeouts::default(),
        }
    }

    /// The run acts in its project with the reach of the key that started it.
    fn scope(&self) -> Scope {
        Scope::of_run(&self.g.account_id, &self.g.project_id, self.g.started_by_principal_id.as_deref())
    }

    fn project(&self) -> Project<'_> {
        Project { account_id: &self.g.account_id, project_id: &self.g.project_id }
    }

    /// Numbers an event and sends it to live readers, except a stream's last frame,
    /// which waits for the commit of the state it announces (a reader that saw
    /// `[DONE]` then reads the record settled).
    fn emit(&mut self, event: Event<'_>) {
        let seq = self.g.next_event_id();
        let (data, ends_stream) = (event.data(), event.ends_stream());
        if ends_stream {
            self.last = Some((seq, data.clone()));
        } else {
            self.log.push(seq, data.as_str());
        }
        if self.g.store_content || ends_stream {
            self.batch.push(EventRow { seq, data, ends_stream });
        }
    }

    /// Commits the record as it stands with the events since the last commit.
    async fn save(&mut self) -> Result<(), Failure> {
        self.g.apply(Transition::Step);
        let record = self.host.agents.content.persisted(&self.g);
        let events = Arc::new(std::mem::take(&mut self.batch));
        let steps = std::mem::take(&mut self.new_steps);
        let record = Arc::new(record);
        let settle = Arc::new(self.quota.take().map(|r| r.settle()));
        // A store out of reach for a moment (a restart) is waited out, so a step's work
        // (a tool call sent) is committed rather than done again.
        let (records, lease) = (self.host.agents.records.clone(), self.lease.clone());
        let saved = patiently(move || {
            records.save_step_settling(&*record, &events[..], steps, |stored| stored.state.lease == lease, settle.as_ref().as_ref())
        })
        .await?;
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
        self.g.apply(Transition::Fail(f));
        let frame = self.g.error.clone().expect("a failed generation records its error");
        self.emit(Event::failed(&frame));
        self.save().await
    }

    async fn complete(&mut self, stop_reason: &str, finish_reason: &str, content: String, object: Option<Value>) -> Result<Rest, Failure> {
        let output = Output { model: self.model_name(), content, finish_reason: finish_reason.to_owned(), object };
        self.g.apply(Transition::Complete { stop_reason: stop_reason.to_owned(), output });
        // Extraction is recorded with the settling step, then runs (issue 36, knowledge).
        let extracts = super::extract::wanted(&self.g);
        if extracts {
            self.g.extraction = Some(super::record::ExtractionSummary { pending: true, ..Default::default() });
        }
        self.emit(Event::Done);
        self.save().await?;
        if extracts {
            super::extract::spawn(self.host.clone(), self.g.clone());
        }
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
        let records = self.host.agents.records.clone();
        let account_id = self.g.account_id.clone();
        self.plan = blocking(move || records.account(&account_id)).await?.map(|a| a.plan).unwrap_or_default();
        // guardrails (issue 37): an input a guardrail blocked fails before any model call.
        if let Some(b) = self.g.state.blocked.clone() {
            let id = b.get("guardrail_id").and_then(Value::as_str).unwrap_or_default().to_owned();
            let version = b.get("guardrail_version").cloned().unwrap_or(Value::Null);
            return Err(Failure::new(
                Code::GuardrailBlocked,
                format!("The guardrail {id} (version {version}) blocked the input; the model was not called."),
            )
            .with("guardrail_id", id)
            .with("guardrail_version", version));
        }
        self.load_guards().await?;
        // approvals (issue 37): an input a guardrail sent to approval waits for it; once
        // decided it goes on (approved), or the run ends with the refusal, the model
        // never called.
        if let Some(h) = self.g.state.held.clone().filter(|h| h.stage == HeldStage::Input) {
            if !h.gate.approved {
                return self.pause().await;
            }
            self.g.state.held = None;
            if let Some(why) = h.refused() {
                let note = format!("The request was not run: {why}.");
                self.emit(Event::Delta { text: &note });
                self.g.state.messages.push(Message::text(Role::Assistant, note.clone()));
                return self.complete("stop", "stop", note, None).await;
            }
        }
        if self.g.state.steps == 0 && self.g.state.pending.is_empty() && self.g.input_depth() == Some(0) {
            let note = "The call depth limit was reached (max_call_depth 0): this agent was not run.".to_owned();
            return self.complete("max_call_depth", "stop", note, None).await;
        }
        let write_store = self.g.state.config.knowledge_config.as_ref().and_then(|k| k.write_memory_store_id.clone());
        self.tools = gtools::resolve(&self.host.agents.tools, self.project(), &self.g.state.config, write_store.as_deref())
            .map_err(|e| Failure::new(e.code(), e.message()))?;
        if !self.g.state.prepared {
            self.prepare().await?;
        }
        let max_steps = self.g.state.config.max_steps.unwrap_or(i64::from(crate::agents::agent::config::DEFAULT_MAX_STEPS)).max(0) as u32;
        // guardrails (issue 37): a held answer, decided: released, or its refusal.
        if let Some(h) = self.g.state.held.clone().filter(|h| h.gate.approved) {
            self.g.state.held = None;
            let (content, object) = match h.refused() {
                Some(why) => (format!("The answer was withheld: {why}."), None),
                None => (h.content, h.object),
            };
            self.emit(Event::Delta { text: &content });
            self.g.state.messages.push(Message::text(Role::Assistant, content.clone()));
            return self.complete(&h.stop, &h.finish, content, object).await;
        }
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
            let (text, approval) = self.screen_output(output.text.clone(), output.tool_calls.is_empty())?;
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
                    Some(schema) => Some(crate::agents::generation::output::parse(schema, &text)?),
                    None => None,
                };
                let (stop, finish) = if reason == crate::llm::Reason::MaxTokens { ("length", "length") } else { ("stop", "stop") };
                // guardrails (issue 37): an answer a guardrail sends to approval waits for it.
                if let Some(e) = approval {
                    let key = super::guard::dedup_key(&self.g.agent_id, "output", &Value::from(text.as_str()));
                    let gate = super::guard::gate(&e, &self.g.id, &format!("output:{step}"), key, None, None);
                    self.g.state.held = Some(Held {
                        gate,
                        content: text,
                        stop: stop.into(),
                        finish: finish.into(),
                        object,
                        refusal: None,
                        stage: HeldStage::Output,
                        expired: false,
                    });
                    return self.pause().await;
                }
                self.g.state.messages.push(Message::text(Role::Assistant, text.clone()));
                return self.complete(stop, finish, text, object).await;
            }
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(Block::Text { text });
            }
            let mut pending = Vec::new();
            for call in &output.tool_calls {
                let args: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::Object(Map::new()));
                let bound = self.tools.iter().find(|b| b.name == call.name);
                // guardrails (issue 37): what the call's tool brings (its own guardrails).
                let gated = bound.map(|b| {
                    let own = match &b.does {
                        gtools::Does::Tool { def, .. } => def.guardrail_ids.clone().unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    (b.tool_id.clone(), own)
                });
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
                    gate: None,
                };
                match gated {
                    None => {
                        p.result = Some(json!({"error": format!("There is no tool named {:?}.", call.name)}));
                        p.is_error = true;
                    }
                    Some((tool_id, own)) => self.gate(&mut p, tool_id, own).await?,
                }
                content.push(Block::ToolCall { id: p.id.clone(), tool_name: p.tool_name.clone(), args: p.args.clone() });
                pending.push(p);
            }
            self.g.state.messages.push(Message { role: Role::Assistant, content });
            for p in &pending {
                self.emit(Event::ToolCall { id: &p.id, tool_name: &p.tool_name, args: &p.args, runner: p.runner });
            }
            self.g.state.pending = pending;
            self.save().await?;
        }
    }

    async fn pause(&mut self) -> Result<Rest, Failure> {
        let mut expiry = self.host.agents.config.approval_expiry;
        // approvals (issue 37): a proposal already pending (same dedup_key) is waited on,
        // not filed again; the pause ends no later than that item.
        if let Some(left) = self.join_pending_items().await? {
            expiry = expiry.min(left);
        }
        // guardrails (issue 37): a governing guardrail's own approval window, if shorter.
        let window = self.g.state.pending.iter().filter_map(|c| c.gate.as_ref().filter(|g| !g.approved)?.expires_in).min();
        if let Some(secs) = window {
            expiry = expiry.min(std::time::Duration::from_secs(secs));
        }
        self.g.apply(Transition::Pause { expires_at: crate::clock::rfc3339_after(expiry) });
        let paused = self.g.clone();
        self.emit(Event::Paused(&paused));
        self.emit(Event::Done);
        self.save().await?;
        super::expiry::schedule(self.host.clone(), self.g.account_id.clone(), self.g.id.clone(), expiry);
        Ok(Rest::Paused)
    }
}

impl GenerationRecord {
    fn input_depth(&self) -> Option<u32> {
        Some(self.state.input.max_call_depth)
    }
}

// guardrails (issue 37): the run's side of `generation::guard`.
impl Run {
    async fn load_guards(&mut self) -> Result<(), Failure> {
        let (r, a, p) = (self.host.agents.records.clone(), self.g.account_id.clone(), self.g.project_id.clone());
        let ids = self.g.state.config.guardrail_ids.clone().unwrap_or_default();
        self.guards = blocking(move || crate::agents::guardrails::applicable(&r, &a, &p, &ids, &[])).await?;
        let changes_output = |g: &Applied| {
            g.record.as_ref().and_then(|r| gdoc::rule(&r.document)).is_some_and(|r| r.applies(Stage::Output) && r.action != gdoc::Action::Flag)
        };
        self.hold = self.guards.iter().any(changes_output);
        Ok(())
    }

    /// The model's text screened at the output stage; when held back from the stream,
    /// it is streamed now, as it goes on.
    fn screen_output(&mut self, text: String, last: bool) -> Result<(String, Option<Evaluation>), Failure> {
        let mut text = text;
        let mut approval = None;
        if !text.is_empty() && !self.guards.is_empty() {
            let (project, agent, id) = (self.g.project_id.clone(), self.g.agent_id.clone(), self.g.id.clone());
            let context = self.g.state.input.guardrail_context.clone();
            let s =
                Subject { project_id: &project, agent_id: Some(&agent), generation_id: Some(&id), context: context.as_ref(), ..Subject::default() };
            let (out, found) = super::guard::screen(&self.guards, Stage::Output, &text, &s);
            text = out;
            self.g.state.guardrails.extend(found.iter().map(super::guard::record));
            if let Some(e) = found.iter().find(|e| e.decision == Decision::Blocked) {
                return Err(super::guard::stopped(e, Code::GuardrailBlocked, "blocked the model's answer, which was not kept"));
            }
            // Only a final answer waits for an approval; text beside tool calls goes on.
            approval = found.into_iter().find(|e| e.decision == Decision::RouteToApproval).filter(|_| last);
        }
        if self.hold && !text.is_empty() && approval.is_none() {
            self.emit(Event::Delta { text: &text });
        }
        Ok((text, approval))
    }

    /// One tool call through the project's, the agent's and the tool's own guardrails.
    async fn gate(&mut self, p: &mut PendingCall, tool_id: Option<String>, own: Vec<String>) -> Result<(), Failure> {
        let mut guards = self.guards.clone();
        if !own.is_empty() {
            let (r, a, pr) = (self.host.agents.records.clone(), self.g.account_id.clone(), self.g.project_id.clone());
            let more = blocking(move || crate::agents::guardrails::applicable(&r, &a, &pr, &[], &own)).await?;
            guards.extend(more.into_iter().filter(|m| m.scope == "tool" && !self.guards.iter().any(|g| g.id == m.id)));
        }
        if guards.is_empty() {
            return Ok(());
        }
        let (project, agent, id) = (self.g.project_id.clone(), self.g.agent_id.clone(), self.g.id.clone());
        let context = self.g.state.input.guardrail_context.clone();
        let name = p.tool_name.clone();
        let s = Subject {
            project_id: &project,
            agent_id: Some(&agent),
            generation_id: Some(&id),
            tool_id: tool_id.as_deref(),
            tool_name: Some(&name),
            action: Some(&name),
            context: context.as_ref(),
        };
        let mut out = Vec::new();
        let gated = super::guard::gate_call(&guards, p, tool_id.as_deref(), &s, &mut out);
        self.g.state.guardrails.extend(out);
        gated
    }

    /// A message the run prepared (a document read, a tool's output), screened at the
    /// input stage before the transcript keeps it.
    pub(super) fn screen_prepared(&mut self, text: String) -> String {
        if self.guards.is_empty() {
            return text;
        }
        let (project, agent, id) = (self.g.project_id.clone(), self.g.agent_id.clone(), self.g.id.clone());
        let s = Subject { project_id: &project, agent_id: Some(&agent), generation_id: Some(&id), ..Subject::default() };
        let (out, found) = super::guard::screen(&self.guards, Stage::Input, &text, &s);
        self.g.state.guardrails.extend(found.iter().map(super::guard::record));
        out
    }

    /// A tool's result, redacted as the guardrails that redact tool calls say.
    fn scrub_result(&self, result: Value) -> Value {
        if self.guards.is_empty() {
            return result;
        }
        let s = Subject { project_id: &self.g.project_id, ..Subject::default() };
        super::guard::scrub_result(&self.guards, result, &s)
    }

    /// Points each undecided gate whose proposal is pending already in the project (the
    /// same `dedup_key`, another item, not past its expiry) at that item; the time
    /// left on the first of them, if any.
    async fn join_pending_items(&mut self) -> Result<Option<std::time::Duration>, Failure> {
        let held = self.g.state.held.as_ref().is_some_and(|h| !h.gate.approved);
        if !held && !self.g.state.pending.iter().any(|c| c.result.is_none() && c.gate.as_ref().is_some_and(|g| !g.approved)) {
            return Ok(None);
        }
        let (r, a) = (self.host.agents.records.clone(), self.g.account_id.clone());
        let items: Vec<crate::store::ApprovalRecord> = blocking(move || r.list(&a)).await?;
        let project = self.g.project_id.clone();
        let mut left: Option<std::time::Duration> = None;
        let gates = self.g.state.pending.iter_mut().filter(|c| c.result.is_none()).filter_map(|c| c.gate.as_mut());
        for gate in gates.chain(self.g.state.held.as_mut().map(|h| &mut h.gate)).filter(|g| !g.approved) {
            let open = items.iter().find(|i| {
                i.project_id == project
                    && i.id != gate.approval_id
                    && i.status == "pending"
                    && !crate::clock::is_past(&i.expires_at)
                    && i.dedup_key.as_deref() == Some(gate.dedup_key.as_str())
            });
            if let Some(i) = open {
                gate.approval_id = i.id.clone();
                let until = super::recover::until(&i.expires_at);
                left = Some(left.map_or(until, |l| l.min(until)));
            }
        }
        Ok(left)
    }
}
