//! SOAT conversations (conversations.yaml): create, list, get, update, delete; their
//! messages (added at a position or appended, listed by position, removed); their
//! tags; and a turn of an agent over a conversation's history ([`start_turn`]), which
//! sessions (`agents::session`) drive too. A turn is an ordinary generation
//! (`agents::generation`) whose input names the conversation: the reply joins it in
//! the transaction that settles the generation (`store::conversations`), so it lands
//! once, after a restart too. Another account's or project's conversation is 404.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::generation::events::Reader;
use super::generation::record::{GenerationRecord, InContent};
use super::generation::request::{GenerateBody, RawMessage};
use super::generation::run::Host;
use super::generation::service::{self, StartArgs, Started};
use super::patch::Patch;
use super::{Scope, SoatError};
use crate::error::{ApiError, Code};
use crate::runtime::blocking;
use crate::store::conversations::Added;
use crate::store::owned::Change;
use crate::store::{ConversationMessageRecord, ConversationRecord, Records};

crate::agents::scope::in_project!(ConversationRecord, ConversationMessageRecord, crate::store::SessionRecord);

pub const CONVERSATION_PREFIX: &str = "conv_";
pub const MESSAGE_PREFIX: &str = "doc_";

/// `createConversation`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewConversation {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub actor_id: Option<String>,
}

/// `updateConversation`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationPatch {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub name: Patch<String>,
}

/// `addConversationMessage`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    pub message: String,
    pub role: String,
    #[serde(default)]
    pub actor_id: Option<String>,
    #[serde(default)]
    pub position: Option<u64>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// `generateConversationMessage`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateIn {
    pub agent_id: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
}

fn store_err(e: crate::store::StoreError) -> ApiError {
    e.into()
}

pub(crate) fn check_name(name: &Option<String>) -> Result<(), SoatError> {
    match name {
        Some(n) => crate::names::check(n, 200).map_err(|problem| SoatError::invalid("name", problem.to_string())),
        None => Ok(()),
    }
}

fn check_status(status: &str, allowed: &[&str]) -> Result<(), SoatError> {
    if allowed.contains(&status) {
        return Ok(());
    }
    Err(SoatError::invalid("status", format!("must be one of {}, not {status:?}.", allowed.join(", "))))
}

/// A tag set as a body gives it: at most [`super::MAX_FREE_FORM_BYTES`] of JSON.
pub(crate) fn check_tags(tags: &BTreeMap<String, String>) -> Result<(), SoatError> {
    let bytes = serde_json::to_vec(tags).map_or(0, |b| b.len());
    if bytes > super::MAX_FREE_FORM_BYTES {
        return Err(SoatError::invalid("tags", format!("hold {bytes} bytes of JSON; at most {}.", super::MAX_FREE_FORM_BYTES)));
    }
    Ok(())
}

/// A new record id: `prefix` and 16 random characters.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", crate::ids::random_base62(16))
}

/// A fresh conversation record in the scope's project.
pub(crate) fn record(scope: &Scope, name: Option<String>, actor_id: Option<String>) -> ConversationRecord {
    let now = crate::clock::now_rfc3339();
    ConversationRecord {
        id: new_id(CONVERSATION_PREFIX),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name,
        status: "open".into(),
        actor_id,
        tags: BTreeMap::new(),
        created_at: now.clone(),
        updated_at: now,
    }
}

pub async fn create(records: &std::sync::Arc<Records>, scope: &Scope, new: NewConversation) -> Result<ConversationRecord, ApiError> {
    check_name(&new.name)?;
    let status = new.status.unwrap_or_else(|| "open".into());
    check_status(&status, &["open", "closed"])?;
    // actors: an actor of the project, or 400 (SOAT's "Invalid actor ID").
    if let Some(a) = &new.actor_id {
        super::actors::check_named(records, scope, &scope.project_id, a, Code::SoatValidation, "actor_id")?;
    }
    let c = ConversationRecord { status, ..record(scope, new.name, new.actor_id) };
    let (r, w) = (records.clone(), c.clone());
    blocking(move || r.insert(&w)).await.map_err(store_err)?;
    Ok(c)
}

/// The scope's project's conversations, oldest first (those of `actor_id` when given).
pub fn list(records: &Records, scope: &Scope, actor_id: Option<&str>) -> Result<Vec<ConversationRecord>, ApiError> {
    let mut all: Vec<ConversationRecord> = scope.list(records).map_err(store_err)?;
    all.retain(|c| actor_id.is_none_or(|a| c.actor_id.as_deref() == Some(a)));
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ConversationRecord, ApiError> {
    Ok(scope.find(records, "conversation", id)?)
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: ConversationPatch) -> Result<ConversationRecord, ApiError> {
    if let Some(s) = &patch.status {
        check_status(s, &["open", "closed"])?;
    }
    if let Patch::Set(n) = &patch.name {
        check_name(&Some(n.clone()))?;
    }
    get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    let changed = records
        .update(&scope.account_id, id, |c: &mut ConversationRecord| {
            if let Some(s) = patch.status {
                c.status = s;
            }
            c.name = patch.name.apply(c.name.take());
            c.updated_at = now;
            Change::Write(c.clone())
        })
        .map_err(store_err)?;
    Ok(changed.ok_or_else(|| SoatError::not_found("conversation", id))?)
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    get(records, scope, id)?;
    records.remove_conversation(&scope.account_id, id).map_err(store_err)?;
    Ok(())
}

/// The conversation's messages, by position.
pub fn messages(records: &Records, scope: &Scope, id: &str) -> Result<Vec<ConversationMessageRecord>, ApiError> {
    let c = get(records, scope, id)?;
    records.conversation_messages(&c.account_id, &c.id).map_err(store_err)
}

/// A message's role as a write takes it: `user` or `assistant`.
pub(crate) fn check_role(role: &str) -> Result<(), ApiError> {
    match role {
        "user" | "assistant" => Ok(()),
        "system" => Err(ApiError::new(
            Code::SystemMessageNotAllowed,
            "A conversation holds user and assistant messages; an agent's system prompt is its instructions.",
        )
        .at("role")),
        other => Err(ApiError::new(Code::SoatValidation, format!("role must be user or assistant, not {other:?}.")).at("role")),
    }
}

/// A message of `c`, not yet placed.
pub(crate) fn message(c: &ConversationRecord, role: &str, content: String) -> ConversationMessageRecord {
    ConversationMessageRecord {
        id: new_id(MESSAGE_PREFIX),
        account_id: c.account_id.clone(),
        project_id: c.project_id.clone(),
        conversation_id: c.id.clone(),
        role: role.to_owned(),
        content,
        position: 0,
        actor_id: None,
        agent_id: None,
        metadata: None,
        generation_id: None,
        idempotency_key: None,
        created_at: crate::clock::now_rfc3339(),
    }
}

/// Adds `m` to its conversation (at `at`, else appended); the stored message, and
/// whether an earlier one with its idempotency key was returned instead.
pub(crate) async fn place(records: &std::sync::Arc<Records>, m: ConversationMessageRecord, at: Option<u64>) -> Result<Added, ApiError> {
    let (r, conversation) = (records.clone(), m.conversation_id.clone());
    let added = blocking(move || r.add_conversation_message(m, at)).await.map_err(store_err)?;
    Ok(added.ok_or_else(|| SoatError::not_found("conversation", conversation))?)
}

pub async fn add_message(records: &std::sync::Arc<Records>, scope: &Scope, id: &str, new: NewMessage) -> Result<ConversationMessageRecord, ApiError> {
    check_role(&new.role)?;
    let c = get(records, scope, id)?;
    // actors: a message's actor is one of the conversation's project.
    if let Some(a) = &new.actor_id {
        super::actors::check_named(records, scope, &c.project_id, a, Code::SoatValidation, "actor_id")?;
    }
    let m = ConversationMessageRecord { actor_id: new.actor_id, metadata: new.metadata.map(Value::Object), ..message(&c, &new.role, new.message) };
    match place(records, m, new.position).await? {
        Added::New(m) | Added::Existing(m) => Ok(m),
    }
}

pub async fn remove_message(records: &std::sync::Arc<Records>, scope: &Scope, id: &str, message_id: &str) -> Result<(), ApiError> {
    let c = get(records, scope, id)?;
    let (r, mid) = (records.clone(), message_id.to_owned());
    let removed = blocking(move || r.remove_conversation_message(&c.account_id, &c.id, &mid)).await.map_err(store_err)?;
    if !removed {
        return Err(SoatError::not_found("message", message_id).into());
    }
    Ok(())
}

/// How a tag write changes the set.
#[derive(Debug, Clone, Copy)]
pub enum TagWrite {
    Replace,
    Merge,
}

impl TagWrite {
    pub fn apply(self, tags: &mut BTreeMap<String, String>, given: BTreeMap<String, String>) {
        if let TagWrite::Replace = self {
            tags.clear();
        }
        tags.extend(given);
    }
}

pub fn write_tags(
    records: &Records,
    scope: &Scope,
    id: &str,
    how: TagWrite,
    given: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ApiError> {
    check_tags(&given)?;
    get(records, scope, id)?;
    let now = crate::clock::now_rfc3339();
    let changed = records
        .update(&scope.account_id, id, |c: &mut ConversationRecord| {
            how.apply(&mut c.tags, given);
            if let Err(e) = check_tags(&c.tags) {
                return Change::Keep(Err(e));
            }
            c.updated_at = now;
            Change::Write(Ok(c.tags.clone()))
        })
        .map_err(store_err)?;
    Ok(changed.ok_or_else(|| SoatError::not_found("conversation", id))??)
}

/// One turn over a conversation: who answers, for which session, with what context.
pub struct Turn {
    pub agent_id: String,
    pub session_id: Option<String>,
    pub tool_context: Option<BTreeMap<String, String>>,
}

/// Starts a generation of `turn.agent_id` over `c`'s whole history; its reply joins
/// `c` when it completes. The agent must be one the scope sees.
pub async fn start_turn(host: Rc<Host>, scope: &Scope, c: &ConversationRecord, turn: Turn) -> Result<GenerationRecord, ApiError> {
    let history = host.agents.records.conversation_messages(&c.account_id, &c.id).map_err(store_err)?;
    if history.is_empty() {
        return Err(ApiError::new(Code::SoatValidation, format!("The conversation {} holds no message to answer; add one first.", c.id)));
    }
    let messages = history.into_iter().map(|m| RawMessage { role: m.role, content: InContent::Text(m.content) }).collect();
    let body = GenerateBody {
        messages,
        stream: false,
        trace_id: None,
        parent_trace_id: None,
        root_trace_id: None,
        max_call_depth: None,
        tool_context: turn.tool_context.filter(|t| !t.is_empty()),
        action_id: None,
        guardrail_context: None,
        metadata: None,
        idempotency_key: None,
        knowledge_config: None,
        session_id: turn.session_id,
        conversation_id: Some(c.id.clone()),
    };
    let scope = Scope { project_id: c.project_id.clone(), ..scope.clone() };
    let args = StartArgs { scope, agent_id: turn.agent_id, body, idempotency: None, initiator: None, version: None };
    match service::start(host, args).await? {
        Started::New { record, .. } | Started::Replay(record) => Ok(record),
    }
}

/// `g` once it rests (completed, failed or paused), its events read after `after`.
pub async fn rested(host: &Host, g: &GenerationRecord, after: u64) -> Result<GenerationRecord, ApiError> {
    let reader = Reader::new(host.agents.records.clone(), &g.account_id, &g.id, after);
    let mut done = reader
        .rest()
        .await
        .map_err(store_err)?
        .ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("The generation {} was deleted while it ran.", g.id)))?;
    host.agents.content.restore(&mut done);
    Ok(done)
}

/// SOAT's `ConversationRecord`.
pub fn view(c: &ConversationRecord) -> Value {
    json!({
        "id": c.id, "project_id": c.project_id, "name": c.name, "status": c.status,
        "actor_id": c.actor_id, "created_at": c.created_at, "updated_at": c.updated_at,
    })
}

/// SOAT's `ConversationMessageRecord`.
pub fn message_view(m: &ConversationMessageRecord) -> Value {
    json!({
        "document_id": m.id, "role": m.role, "actor_id": m.actor_id, "agent_id": m.agent_id,
        "position": m.position, "metadata": m.metadata, "content": m.content,
    })
}
