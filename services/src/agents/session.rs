//! SOAT sessions (sessions.yaml): one agent's chat over a conversation made with it.
//! A user message joins the conversation; with `auto_generate` on (and no generation
//! of the session running) it also starts one and waits for it, as
//! `generateSessionResponse?wait=true` does. A session's generation is an ordinary
//! one (`agents::conversation::start_turn`) whose input names the session and its
//! conversation; its reply joins the conversation when it settles. Tool pauses resume
//! through `submitSessionToolOutputs`; forks copy the history up to a position into a
//! new, inert session. Another account's or project's session is 404.
//!
//! A session idle past `inactivity_ttl_seconds` expires when a generation is asked of
//! it. A session's `actor_id` names an actor of its project (400 `ACTOR_NOT_FOUND`
//! otherwise); with the agent's `single_session_per_actor`, a second open session for
//! the same actor is 409 `SINGLE_SESSION_CONFLICT` (`meta.session_id` the open one),
//! checked inside the store's write that makes the session (`store::actors`), so of
//! two racing creates one wins. Not yet: `message_delay_seconds`' debounce (kept;
//! generation starts at once).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::agent::record::AgentRecord;
use super::conversation::{self, check_name, check_tags, new_id, TagWrite, Turn};
use super::generation::run::Host;
use super::generation::service::{self as generation, ToolOutput};
use super::generation::{GenerationRecord, Status};
use super::patch::Patch;
use super::{Scope, SoatError};
use crate::error::{ApiError, Code, ErrorCode};
use crate::runtime::blocking;
use crate::store::conversations::Added;
use crate::store::owned::Change;
use crate::store::{ConversationMessageRecord, ConversationRecord, Records, SessionRecord};

pub const SESSION_PREFIX: &str = "sess_";
const STATUSES: &[&str] = &["open", "closed", "expired"];

/// `createSession`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    pub agent_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub actor_id: Option<String>,
    #[serde(default)]
    pub auto_generate: Option<bool>,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub inactivity_ttl_seconds: Option<u64>,
    #[serde(default)]
    pub message_delay_seconds: Option<u64>,
}

/// `updateSession`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionPatch {
    #[serde(default)]
    pub name: Patch<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub auto_generate: Option<bool>,
    #[serde(default)]
    pub tool_context: Patch<BTreeMap<String, String>>,
    #[serde(default)]
    pub inactivity_ttl_seconds: Option<u64>,
    #[serde(default)]
    pub message_delay_seconds: Patch<u64>,
}

/// `addSessionMessage`'s body (`document_id` is not served: a message is text).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub document_id: Option<String>,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// `generateSessionResponse`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateIn {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
}

/// `submitSessionToolOutputs`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsIn {
    pub generation_id: String,
    pub tool_outputs: Vec<ToolOutput>,
}

/// `forkSession`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkIn {
    #[serde(default)]
    pub fork_at_position: Option<u64>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub tool_context: Patch<BTreeMap<String, String>>,
}

fn check_context(field: &str, c: &Option<BTreeMap<String, String>>) -> Result<(), ApiError> {
    if let Some(c) = c {
        crate::agents::tools::call::check_context(c).map_err(|e| ApiError::new(e.code(), e.message()).at(field.to_owned()))?;
    }
    Ok(())
}

fn check_status(status: &str) -> Result<(), SoatError> {
    if STATUSES.contains(&status) {
        return Ok(());
    }
    Err(SoatError::invalid("status", format!("must be one of {}, not {status:?}.", STATUSES.join(", "))))
}

/// The agent a session runs against: one the scope sees.
fn agent(records: &Records, scope: &Scope, id: &str) -> Result<AgentRecord, ApiError> {
    Ok(scope.agent::<AgentRecord>(records, id)?)
}

pub async fn create(records: &std::sync::Arc<Records>, scope: &Scope, new: NewSession) -> Result<SessionRecord, ApiError> {
    check_name(&new.name)?;
    check_context("tool_context", &new.tool_context)?;
    let agent = agent(records, scope, &new.agent_id)?;
    let scope = Scope { project_id: agent.project_id.clone(), ..scope.clone() };
    let c = conversation::record(&scope, new.name.clone(), new.actor_id.clone());
    let now = crate::clock::now_rfc3339();
    let s = SessionRecord {
        id: new_id(SESSION_PREFIX),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        agent_id: agent.id,
        conversation_id: c.id.clone(),
        status: "open".into(),
        name: new.name,
        actor_id: new.actor_id,
        tags: BTreeMap::new(),
        auto_generate: new.auto_generate.unwrap_or(false),
        tool_context: new.tool_context,
        inactivity_ttl_seconds: new.inactivity_ttl_seconds.unwrap_or(0),
        message_delay_seconds: new.message_delay_seconds,
        last_activity_at: None,
        forked_from_session_id: None,
        forked_from_position: None,
        generation_id: None,
        starting_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    // actors: the actor is checked, and the agent's single open session held, in the
    // write that makes the session.
    if s.actor_id.is_some() {
        return write_for_actor(records, s, c, agent.config.single_session_per_actor).await;
    }
    write_new(records, s, c, Vec::new()).await
}

/// Writes a session that names an actor (see `store::actors`' `create_actor_session`).
async fn write_for_actor(
    records: &std::sync::Arc<Records>,
    s: SessionRecord,
    c: ConversationRecord,
    single: bool,
) -> Result<SessionRecord, ApiError> {
    use crate::store::actors::ActorSession;
    let (r, w) = (records.clone(), s.clone());
    let now = std::time::SystemTime::now();
    let written = blocking(move || r.create_actor_session(&w, &c, single, |o| !idle_past_ttl(o, now))).await?;
    let actor = s.actor_id.as_deref().unwrap_or_default();
    match written {
        ActorSession::Created => Ok(s),
        ActorSession::NoActor => Err(ApiError::new(Code::ActorNotFound, format!("actor_id: no actor {actor} in this project.")).at("actor_id")),
        ActorSession::Conflict(open) => Err(conflict(actor, &open)),
    }
}

/// Whether an open session has been idle past its `inactivity_ttl_seconds` at `now`.
fn idle_past_ttl(s: &SessionRecord, now: std::time::SystemTime) -> bool {
    let idle = humantime::parse_rfc3339(s.last_activity_at.as_deref().unwrap_or(&s.created_at))
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .unwrap_or_default();
    s.inactivity_ttl_seconds > 0 && idle.as_secs() > s.inactivity_ttl_seconds
}

async fn write_new(
    records: &std::sync::Arc<Records>,
    s: SessionRecord,
    c: ConversationRecord,
    messages: Vec<ConversationMessageRecord>,
) -> Result<SessionRecord, ApiError> {
    let (r, w) = (records.clone(), s.clone());
    blocking(move || r.create_session(&w, &c, &messages)).await?;
    Ok(s)
}

/// Filters of `listSessions`.
#[derive(Debug, Default)]
pub struct Filter {
    pub agent_id: Option<String>,
    pub actor_id: Option<String>,
    pub status: Option<String>,
}

/// The scope's project's sessions, oldest first.
pub fn list(records: &Records, scope: &Scope, f: &Filter) -> Result<Vec<SessionRecord>, ApiError> {
    if let Some(s) = &f.status {
        check_status(s)?;
    }
    let mut all: Vec<SessionRecord> = scope.list(records)?;
    all.retain(|s| {
        f.agent_id.as_ref().is_none_or(|a| &s.agent_id == a)
            && f.actor_id.as_ref().is_none_or(|a| s.actor_id.as_ref() == Some(a))
            && f.status.as_ref().is_none_or(|st| &s.status == st)
    });
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<SessionRecord, ApiError> {
    Ok(scope.find(records, "session", id)?)
}

/// Changes the session in one write; `None`'s 404 when it went meanwhile.
fn change<T>(records: &Records, s: &SessionRecord, f: impl FnOnce(&mut SessionRecord) -> Change<Result<T, ApiError>>) -> Result<T, ApiError> {
    let changed = records.update(&s.account_id, &s.id, f)?;
    changed.ok_or_else(|| ApiError::from(SoatError::not_found("session", &s.id)))?
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: SessionPatch) -> Result<SessionRecord, ApiError> {
    if let Patch::Set(n) = &patch.name {
        check_name(&Some(n.clone()))?;
    }
    if let Some(s) = &patch.status {
        check_status(s)?;
    }
    if let Patch::Set(c) = &patch.tool_context {
        check_context("tool_context", &Some(c.clone()))?;
    }
    let s = get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    // actors: reopening an actor's session holds the agent's single_session_per_actor.
    let single = s.actor_id.is_some() && patch.status.as_deref() == Some("open") && single_session_per_actor(records, &s)?;
    let apply = |s: &mut SessionRecord| {
        s.name = patch.name.apply(s.name.take());
        if let Some(st) = patch.status {
            s.status = st;
        }
        if let Some(a) = patch.auto_generate {
            s.auto_generate = a;
        }
        s.tool_context = patch.tool_context.apply(s.tool_context.take());
        if let Some(t) = patch.inactivity_ttl_seconds {
            s.inactivity_ttl_seconds = t;
        }
        s.message_delay_seconds = patch.message_delay_seconds.apply(s.message_delay_seconds.take());
        s.updated_at = now;
        Change::Write(Ok(s.clone()))
    };
    if !single {
        return change(records, &s, apply);
    }
    let at = std::time::SystemTime::now();
    let changed = records.update_actor_session(&s.account_id, &s.id, true, |o| !idle_past_ttl(o, at), apply)?;
    match changed.ok_or_else(|| ApiError::from(SoatError::not_found("session", &s.id)))? {
        Ok(written) => written,
        Err(open) => Err(conflict(s.actor_id.as_deref().unwrap_or_default(), &open)),
    }
}

/// Whether the session's agent allows its actor one open session.
fn single_session_per_actor(records: &Records, s: &SessionRecord) -> Result<bool, ApiError> {
    let agent: Option<AgentRecord> = records.agent(&s.account_id, &s.agent_id)?;
    Ok(agent.is_some_and(|a| a.config.single_session_per_actor))
}

/// 409 `SINGLE_SESSION_CONFLICT`: the actor's open session `open` holds the agent.
fn conflict(actor: &str, open: &str) -> ApiError {
    ApiError::new(
        Code::SingleSessionConflict,
        format!("The actor {actor} already has the open session {open} with this agent; use it, or close it first."),
    )
    .with_meta("session_id", open)
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let s = get(records, scope, id)?;
    records.remove_session(&s.account_id, &s.id)?;
    Ok(())
}

/// The session's generation that has not settled (running or paused), if one has not.
pub fn running(records: &Records, s: &SessionRecord) -> Result<Option<GenerationRecord>, ApiError> {
    let Some(id) = &s.generation_id else { return Ok(None) };
    let g: Option<GenerationRecord> = records.get(&s.account_id, id)?;
    Ok(g.filter(|g| matches!(g.status(), Status::InProgress | Status::RequiresAction)))
}

/// What a user message did (one value per request, moved once: no box needed).
#[allow(clippy::large_enum_variant)]
pub enum Sent {
    /// Saved (and no generation started); `true` when an earlier message with its
    /// idempotency key is what is answered.
    Saved(ConversationMessageRecord, bool),
    /// Saved, and the generation it started rested.
    Generated(GenerationRecord),
}

pub async fn add_message(host: Rc<Host>, scope: &Scope, id: &str, new: NewMessage) -> Result<Sent, ApiError> {
    let text = match (new.message, new.document_id) {
        (Some(_), Some(_)) => return Err(ApiError::new(Code::SoatValidation, "message and document_id are mutually exclusive.").at("document_id")),
        (None, None) => return Err(ApiError::new(Code::SoatValidation, "Send the user message's text as message.").at("message")),
        (None, Some(_)) => {
            return Err(ApiError::new(Code::SoatValidation, "A session message is text here: send it as message (document_id is not served).")
                .at("document_id"))
        }
        (Some(t), None) => t,
    };
    if text.trim().is_empty() {
        return Err(ApiError::new(Code::SoatValidation, "message must not be empty.").at("message"));
    }
    if let Some(k) = &new.idempotency_key {
        if k.is_empty() || k.chars().count() > 255 {
            return Err(ApiError::new(Code::SoatValidation, "idempotency_key must be 1 to 255 characters.").at("idempotency_key"));
        }
    }
    check_context("tool_context", &new.tool_context)?;
    let records = host.agents.records.clone();
    let s = get(&records, scope, id)?;
    let c = conversation::get(&records, scope, &s.conversation_id)?;
    let text = screen_message(&records, scope, &s, text)?;
    let m =
        ConversationMessageRecord { idempotency_key: new.idempotency_key, actor_id: s.actor_id.clone(), ..conversation::message(&c, "user", text) };
    let m = match conversation::place(&records, m, None).await? {
        Added::Existing(m) => return Ok(Sent::Saved(m, true)),
        Added::New(m) => m,
    };
    touch(&records, &s).await?;
    if !s.auto_generate || s.status != "open" || running(&records, &s)?.is_some() {
        return Ok(Sent::Saved(m, false));
    }
    let g = match start(host.clone(), scope, &s, &c, new.tool_context).await {
        Err(e) if e.code == Code::GenerationAlreadyInProgress => return Ok(Sent::Saved(m, false)),
        started => started?,
    };
    Ok(Sent::Generated(conversation::rested(&host, &g, 0).await?))
}

/// guardrails (issue 37): a user message screened at the input stage by the session
/// agent's guardrails before its conversation keeps it: kept as they leave it
/// (redacted), or, when one blocks it, not kept at all (422 `GUARDRAIL_BLOCKED`).
fn screen_message(records: &Records, scope: &Scope, s: &SessionRecord, text: String) -> Result<String, ApiError> {
    use crate::agents::guardrails::{document::Stage, Decision, Subject};
    let agent = agent(records, scope, &s.agent_id)?;
    let ids = agent.config.guardrail_ids.clone().unwrap_or_default();
    let guards = crate::agents::guardrails::applicable(records, &scope.account_id, &agent.project_id, &ids, &[])?;
    if guards.is_empty() {
        return Ok(text);
    }
    let subject = Subject { project_id: &agent.project_id, agent_id: Some(&agent.id), ..Subject::default() };
    let (out, found) = super::generation::guard::screen(&guards, Stage::Input, &text, &subject);
    if let Some(e) = found.iter().find(|e| e.decision == Decision::Blocked) {
        let version = e.guardrail_version.map_or(Value::Null, Value::from);
        return Err(ApiError::new(
            Code::GuardrailBlocked,
            format!("The guardrail {} (version {version}) blocked this message; it was not stored.", e.guardrail_id),
        )
        .with_meta("guardrail_id", e.guardrail_id.clone())
        .with_meta("guardrail_version", version));
    }
    Ok(out)
}

/// Records activity on the session (a message added).
async fn touch(records: &std::sync::Arc<Records>, s: &SessionRecord) -> Result<(), ApiError> {
    let (r, s) = (records.clone(), s.clone());
    let now = crate::clock::now_rfc3339();
    blocking(move || {
        r.update(&s.account_id, &s.id, |s: &mut SessionRecord| {
            s.last_activity_at = Some(now);
            Change::Write(())
        })
    })
    .await?;
    Ok(())
}

fn in_progress(s: &SessionRecord) -> ApiError {
    let what = s.generation_id.as_deref().map_or("is starting".to_owned(), |g| format!("{g} has not settled yet"));
    ApiError::new(Code::GenerationAlreadyInProgress, format!("The session's generation {what}; wait for it, or answer its tool calls."))
}

/// Starts the session's agent over its conversation, with the session's context and
/// the request's over it. The start is claimed by the transaction that creates the
/// generation (`Records::create_generation`): of two racing starts one is created, the
/// other is 409 `GENERATION_ALREADY_IN_PROGRESS` and writes nothing.
async fn start(
    host: Rc<Host>,
    scope: &Scope,
    s: &SessionRecord,
    c: &ConversationRecord,
    context: Option<BTreeMap<String, String>>,
) -> Result<GenerationRecord, ApiError> {
    let mut tool_context = s.tool_context.clone().unwrap_or_default();
    tool_context.extend(context.unwrap_or_default());
    let turn = Turn { agent_id: s.agent_id.clone(), session_id: Some(s.id.clone()), tool_context: Some(tool_context) };
    conversation::start_turn(host.clone(), scope, c, turn).await
}

/// A closed session is 409 `SESSION_CLOSED`; one idle past its
/// `inactivity_ttl_seconds` becomes `expired` (written) and is 410 `SESSION_EXPIRED`.
async fn check_open(records: &std::sync::Arc<Records>, s: &SessionRecord) -> Result<(), ApiError> {
    if s.status == "closed" {
        return Err(ApiError::new(Code::SessionClosed, format!("The session {} is closed; open a new session to continue.", s.id)));
    }
    let expired = s.status == "expired" || idle_past_ttl(s, std::time::SystemTime::now());
    if !expired {
        return Ok(());
    }
    let (r, w) = (records.clone(), s.clone());
    blocking(move || {
        r.update(&w.account_id, &w.id, |s: &mut SessionRecord| {
            s.status = "expired".into();
            Change::Write(())
        })
    })
    .await?;
    Err(ApiError::new(Code::SessionExpired, format!("The session {} has expired after {} seconds without activity.", s.id, s.inactivity_ttl_seconds)))
}

/// `generateSessionResponse`: the started generation (rested when `wait`).
pub async fn generate(host: Rc<Host>, scope: &Scope, id: &str, body: GenerateIn, wait: bool) -> Result<GenerationRecord, ApiError> {
    check_context("tool_context", &body.tool_context)?;
    let records = host.agents.records.clone();
    let s = get(&records, scope, id)?;
    check_open(&records, &s).await?;
    if let Some(g) = running(&records, &s)? {
        return Err(in_progress(&s).with_meta("generation_id", g.id.clone()));
    }
    let c = conversation::get(&records, scope, &s.conversation_id)?;
    let g = start(host.clone(), scope, &s, &c, body.tool_context).await?;
    if !wait {
        return Ok(g);
    }
    conversation::rested(&host, &g, 0).await
}

/// `submitSessionToolOutputs`: fills the session's paused generation and waits for it.
pub async fn tool_outputs(host: Rc<Host>, scope: &Scope, id: &str, body: OutputsIn) -> Result<GenerationRecord, ApiError> {
    if body.tool_outputs.is_empty() {
        return Err(ApiError::new(Code::SoatValidation, "tool_outputs must hold at least one output.").at("tool_outputs"));
    }
    let records = host.agents.records.clone();
    let s = get(&records, scope, id)?;
    let g: Option<GenerationRecord> = records.get(&s.account_id, &body.generation_id)?;
    let g = g
        .filter(|g| g.state.input.session_id.as_deref() == Some(s.id.as_str()))
        .ok_or_else(|| ApiError::from(SoatError::not_found("generation", format!("{} in session {}", body.generation_id, s.id))))?;
    let scope = Scope { project_id: g.project_id.clone(), ..scope.clone() };
    let (g, _log, after) = generation::submit(host.clone(), &scope, &g.agent_id, &g.id, body.tool_outputs).await?;
    conversation::rested(&host, &g, after).await
}

/// `forkSession`: a new, inert session over a copy of the history up to
/// `fork_at_position` (all of it when absent).
pub async fn fork(records: &std::sync::Arc<Records>, scope: &Scope, id: &str, body: ForkIn) -> Result<SessionRecord, ApiError> {
    check_name(&body.name)?;
    if let Some(t) = &body.tags {
        check_tags(t)?;
    }
    if let Patch::Set(c) = &body.tool_context {
        check_context("tool_context", &Some(c.clone()))?;
    }
    let parent = get(records, scope, id)?;
    let agent_id = match &body.agent_id {
        Some(a) => {
            let found = scope.agent::<AgentRecord>(records, a).ok().filter(|x| x.project_id == parent.project_id);
            found.ok_or_else(|| ApiError::new(Code::SoatValidation, format!("agent_id: no agent {a} in the session's project.")).at("agent_id"))?.id
        }
        None => parent.agent_id.clone(),
    };
    let history = records.conversation_messages(&parent.account_id, &parent.conversation_id)?;
    if let Some(p) = body.fork_at_position {
        if !history.iter().any(|m| m.position == p) {
            return Err(ApiError::new(Code::SoatValidation, format!("fork_at_position {p} does not exist in the parent conversation."))
                .at("fork_at_position"));
        }
    }
    let scope = Scope { project_id: parent.project_id.clone(), ..scope.clone() };
    let c = conversation::record(&scope, body.name.clone(), None);
    let copies = history
        .into_iter()
        .filter(|m| body.fork_at_position.is_none_or(|p| m.position <= p))
        .map(|m| ConversationMessageRecord { id: new_id(conversation::MESSAGE_PREFIX), conversation_id: c.id.clone(), idempotency_key: None, ..m })
        .collect();
    let now = crate::clock::now_rfc3339();
    let tool_context = match body.tool_context {
        Patch::Absent => parent.tool_context.clone(),
        Patch::Null => None,
        Patch::Set(c) => Some(c),
    };
    let s = SessionRecord {
        id: new_id(SESSION_PREFIX),
        conversation_id: c.id.clone(),
        agent_id,
        status: "open".into(),
        name: body.name,
        actor_id: None,
        tags: body.tags.unwrap_or_default(),
        auto_generate: false,
        tool_context,
        last_activity_at: None,
        forked_from_session_id: Some(parent.id.clone()),
        forked_from_position: body.fork_at_position,
        generation_id: None,
        starting_at: None,
        created_at: now.clone(),
        updated_at: now,
        ..parent
    };
    write_new(records, s, c, copies).await
}

/// `listSessionForks`: the sessions forked from this one, oldest first.
pub fn forks(records: &Records, scope: &Scope, id: &str) -> Result<Vec<SessionRecord>, ApiError> {
    let parent = get(records, scope, id)?;
    let mut all: Vec<SessionRecord> = records.list(&parent.account_id)?;
    all.retain(|s| s.forked_from_session_id.as_deref() == Some(parent.id.as_str()) && scope.sees(&s.project_id));
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn write_tags(
    records: &Records,
    scope: &Scope,
    id: &str,
    how: TagWrite,
    given: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ApiError> {
    check_tags(&given)?;
    let s = get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    change(records, &s, |s| {
        how.apply(&mut s.tags, given);
        if let Err(e) = check_tags(&s.tags) {
            return Change::Keep(Err(e.into()));
        }
        s.updated_at = now;
        Change::Write(Ok(s.tags.clone()))
    })
}

/// SOAT's `SessionRecord`; `generating_at` from its running generation.
pub fn view(records: &Records, s: &SessionRecord) -> Value {
    let generating_at = running(records, s).ok().flatten().map(|g| g.started_at);
    json!({
        "id": s.id, "agent_id": s.agent_id, "conversation_id": s.conversation_id, "status": s.status,
        "name": s.name, "actor_id": s.actor_id, "tags": s.tags, "auto_generate": s.auto_generate,
        "generating_at": generating_at, "created_at": s.created_at, "updated_at": s.updated_at,
        "tool_context": s.tool_context, "inactivity_ttl_seconds": s.inactivity_ttl_seconds,
        "message_delay_seconds": s.message_delay_seconds, "last_activity_at": s.last_activity_at,
        "forked_from_session_id": s.forked_from_session_id, "forked_from_position": s.forked_from_position,
    })
}

/// `GenerateSessionResponse` of a rested generation that did not fail.
pub fn response(g: &GenerationRecord) -> Value {
    let mut v = json!({"status": g.status().as_str(), "generation_id": g.id, "trace_id": g.trace_id});
    if let Some(o) = &g.state.output {
        v["message"] = json!({"role": "assistant", "content": o.content, "model": o.model});
    }
    if let Some(r) = g.required_action() {
        v["required_action"] = r;
    }
    v
}
