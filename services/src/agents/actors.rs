//! SOAT actors (`actor_…`, actors.yaml): the end users of a project's agents (a
//! WhatsApp contact, a signed-in customer). Sessions and conversations name one by
//! `actor_id`; a release's canary split hashes it, so one person keeps one version
//! (`agent::rollout`); an agent with `single_session_per_actor` lets each actor hold
//! one open session with it (`agents::session`).
//!
//! As SOAT v0.28 does: an `external_id` names one actor of a project, and a create
//! naming a taken one answers that actor (200, unchanged); an actor links an agent or
//! a chat of its project, not both (another: 400 `AGENT_NOT_FOUND` /
//! `CHAT_NOT_FOUND`); an actor that wrote conversation messages is not deleted (409
//! `ACTOR_HAS_MESSAGES`), and deleting one clears it from its sessions and
//! conversations. Each of these rules runs inside the store's write
//! (`store::actors`). Another account's or project's actor is 404.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::agent::record::AgentRecord;
use super::conversation::{check_tags, new_id, TagWrite};
use super::{Patch, Scope, SoatError};
use crate::error::{ApiError, Code};
use crate::store::actors::{ActorCreated, ActorRemoved, ActorUpdated};
use crate::store::{ActorRecord, Records};

pub const ACTOR_PREFIX: &str = "actor_";
const MAX_NAME: usize = 200;
const MAX_EXTERNAL_ID: usize = 255;

super::scope::in_project!(ActorRecord);

/// `createActor`'s body (`project_id` is read by the handler for the scope).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewActor {
    #[serde(default)]
    pub project_id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub chat_id: Option<String>,
}

/// `updateActor`'s body; `tags`, when given, replace the actor's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActorPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub instructions: Patch<String>,
    #[serde(default)]
    pub agent_id: Patch<String>,
    #[serde(default)]
    pub chat_id: Patch<String>,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
}

/// What a create did: a new actor (201), or the one holding its external id (200).
pub enum Created {
    New(ActorRecord),
    Existing(ActorRecord),
}

fn check_name(name: &str) -> Result<(), SoatError> {
    crate::names::check(name, MAX_NAME).map_err(|problem| SoatError::invalid("name", problem.to_string()))
}

fn check_external_id(id: &str) -> Result<(), SoatError> {
    let n = id.chars().count();
    if id.trim().is_empty() || n > MAX_EXTERNAL_ID {
        return Err(SoatError::invalid("external_id", format!("must be 1 to {MAX_EXTERNAL_ID} characters, not blank.")));
    }
    Ok(())
}

fn exclusive() -> SoatError {
    SoatError::invalid("chat_id", "agent_id and chat_id are mutually exclusive: link the actor to one or the other.")
}

/// The agent `id` of exactly the actor's project (400 `AGENT_NOT_FOUND` otherwise).
fn check_agent(records: &Records, scope: &Scope, project_id: &str, id: &str) -> Result<(), SoatError> {
    let found = scope.agent::<AgentRecord>(records, id).ok().filter(|a| a.project_id == project_id);
    found.map(|_| ()).ok_or_else(|| SoatError::Reference { code: Code::AgentNotFound, kind: "agent", field: "agent_id", id: id.to_owned() })
}

/// The chat `id` of exactly the actor's project (400 `CHAT_NOT_FOUND` otherwise).
fn check_chat(records: &Records, scope: &Scope, project_id: &str, id: &str) -> Result<(), SoatError> {
    let found = scope.get::<crate::store::ChatRecord>(records, id)?.filter(|c| c.project_id == project_id);
    found.map(|_| ()).ok_or_else(|| SoatError::Reference { code: Code::ChatNotFound, kind: "chat", field: "chat_id", id: id.to_owned() })
}

fn taken(external_id: &str, holder: &str) -> ApiError {
    ApiError::new(Code::ExternalIdTaken, format!("The actor {holder} of this project already has external_id {external_id:?}."))
        .at("external_id")
        .with_meta("actor_id", holder)
}

pub fn create(records: &Records, scope: &Scope, new: NewActor) -> Result<Created, ApiError> {
    check_name(&new.name)?;
    if let Some(e) = &new.external_id {
        check_external_id(e)?;
    }
    if new.agent_id.is_some() && new.chat_id.is_some() {
        return Err(exclusive().into());
    }
    if let Some(a) = &new.agent_id {
        check_agent(records, scope, &scope.project_id, a)?;
    }
    if let Some(c) = &new.chat_id {
        check_chat(records, scope, &scope.project_id, c)?;
    }
    let now = crate::clock::now_rfc3339();
    let a = ActorRecord {
        id: new_id(ACTOR_PREFIX),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name: new.name,
        external_id: new.external_id,
        instructions: new.instructions,
        agent_id: new.agent_id,
        chat_id: new.chat_id,
        tags: BTreeMap::new(),
        created_at: now.clone(),
        updated_at: now,
    };
    Ok(match records.create_actor(&a)? {
        ActorCreated::New => Created::New(a),
        ActorCreated::Existing(existing) => Created::Existing(*existing),
    })
}

/// Filters of `listActors`.
#[derive(Debug, Default)]
pub struct Filter {
    pub external_id: Option<String>,
    pub agent_id: Option<String>,
    pub chat_id: Option<String>,
    /// Actors who wrote a message of this conversation.
    pub conversation_id: Option<String>,
}

/// The scope's project's actors, oldest first.
pub fn list(records: &Records, scope: &Scope, f: &Filter) -> Result<Vec<ActorRecord>, ApiError> {
    let speakers: Option<Vec<String>> = match &f.conversation_id {
        None => None,
        Some(c) => {
            let seen = scope.get::<crate::store::ConversationRecord>(records, c)?.filter(|c| c.project_id == scope.project_id);
            let messages = match seen {
                Some(c) => records.conversation_messages(&c.account_id, &c.id)?,
                None => Vec::new(),
            };
            Some(messages.into_iter().filter_map(|m| m.actor_id).collect())
        }
    };
    let mut all: Vec<ActorRecord> = scope.list(records)?;
    let is = |want: &Option<String>, have: &Option<String>| want.as_ref().is_none_or(|w| have.as_ref() == Some(w));
    all.retain(|a| {
        is(&f.external_id, &a.external_id)
            && is(&f.agent_id, &a.agent_id)
            && is(&f.chat_id, &a.chat_id)
            && speakers.as_ref().is_none_or(|s| s.contains(&a.id))
    });
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ActorRecord, ApiError> {
    Ok(scope.find(records, "actor", id)?)
}

/// The actor `id` when it is in exactly `project_id` of the scope's account: what a
/// session or a conversation may name (`code` and `field` the caller's).
pub fn check_named(records: &Records, scope: &Scope, project_id: &str, id: &str, code: Code, field: &'static str) -> Result<(), ApiError> {
    let found = scope.get::<ActorRecord>(records, id)?.filter(|a| a.project_id == project_id);
    found.map(|_| ()).ok_or_else(|| SoatError::Reference { code, kind: "actor", field, id: id.to_owned() }.into())
}

/// Writes `f`'s change of the actor `id` (an external id another actor holds: 409).
fn change(records: &Records, a: &ActorRecord, f: impl FnOnce(&mut ActorRecord) -> Result<(), ApiError>) -> Result<ActorRecord, ApiError> {
    let now = crate::clock::now_rfc3339();
    let changed = records.update_actor(&a.account_id, &a.id, |a| {
        f(a)?;
        a.updated_at = now;
        Ok::<_, ApiError>(a.clone())
    })?;
    match changed {
        ActorUpdated::Gone => Err(SoatError::not_found("actor", &a.id).into()),
        ActorUpdated::Done(out) => out,
        ActorUpdated::ExternalIdTaken(holder) => Err(taken(a.external_id.as_deref().unwrap_or_default(), &holder)),
    }
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: ActorPatch) -> Result<ActorRecord, ApiError> {
    if let Some(n) = &patch.name {
        check_name(n)?;
    }
    if let Some(e) = &patch.external_id {
        check_external_id(e)?;
    }
    if let Some(t) = &patch.tags {
        check_tags(t)?;
    }
    let a = get(records, scope, id)?;
    if let Patch::Set(agent) = &patch.agent_id {
        check_agent(records, scope, &a.project_id, agent)?;
    }
    if let Patch::Set(chat) = &patch.chat_id {
        check_chat(records, scope, &a.project_id, chat)?;
    }
    let external = patch.external_id.clone();
    let a = ActorRecord { external_id: external.or(a.external_id), ..a };
    change(records, &a, |a| {
        if let Some(n) = patch.name {
            a.name = n;
        }
        if let Some(e) = patch.external_id {
            a.external_id = Some(e);
        }
        patch.instructions.apply_to(&mut a.instructions);
        patch.agent_id.apply_to(&mut a.agent_id);
        patch.chat_id.apply_to(&mut a.chat_id);
        if a.agent_id.is_some() && a.chat_id.is_some() {
            return Err(exclusive().into());
        }
        if let Some(t) = patch.tags {
            a.tags = t;
        }
        Ok(())
    })
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let a = get(records, scope, id)?;
    match records.remove_actor(&a.account_id, &a.id)? {
        ActorRemoved::Removed => Ok(()),
        ActorRemoved::Gone => Err(SoatError::not_found("actor", id).into()),
        ActorRemoved::HasMessages(n) => Err(ApiError::new(
            Code::ActorHasMessages,
            format!("The actor {id} wrote {n} conversation message(s) and cannot be deleted; its history names it."),
        )
        .with_meta("message_count", n)),
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
    let a = get(records, scope, id)?;
    let a = change(records, &a, |a| {
        how.apply(&mut a.tags, given);
        Ok(check_tags(&a.tags)?)
    })?;
    Ok(a.tags)
}

/// SOAT's `ActorRecord`.
pub fn view(a: &ActorRecord) -> Value {
    json!({
        "id": a.id, "project_id": a.project_id, "name": a.name, "external_id": a.external_id,
        "instructions": a.instructions, "agent_id": a.agent_id, "chat_id": a.chat_id, "tags": a.tags,
        "created_at": a.created_at, "updated_at": a.updated_at,
    })
}
