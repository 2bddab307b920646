//! SOAT actors (`actor_…`): the end users of a project's agents, as records on the
//! generic account-owned table ([`Owned`](super::owned::Owned)). The writes whose
//! rules span other records run in one write transaction each, so a rule checked is
//! a rule that holds when the write lands (the store runs writes one at a time):
//!
//! - an `external_id` names at most one actor of a project (a create naming a taken
//!   one answers the existing actor, as SOAT's find-or-create does);
//! - an actor that wrote a conversation message is never deleted; deleting one clears
//!   it from the sessions and conversations that named it (SOAT's `SET NULL`);
//! - a session naming an actor is written only while the actor exists, and, for an
//!   agent with `single_session_per_actor`, only while the actor has no other live
//!   open session with that agent: two racing creates, one wins.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::owned::{get_in, insert_in, list_in, owned_record, put_in, remove_in};
use super::{Charge, ConversationMessageRecord, ConversationRecord, Records, SessionRecord, StoreError};

/// An actor: one end user of a project's agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActorRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    /// The actor's id elsewhere (a phone number); unique in its project.
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub chat_id: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ActorRecord, "soat_actors", "soat_actors_by_account");

/// What [`Records::create_actor`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ActorCreated {
    New,
    /// An actor of the project already holds the external id: it, unchanged.
    Existing(Box<ActorRecord>),
}

/// What [`Records::update_actor`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ActorUpdated<T> {
    Gone,
    /// The closure's answer; written when it was `Ok`.
    Done(T),
    /// Another actor of the project holds the external id the change sets.
    ExternalIdTaken(String),
}

/// What [`Records::remove_actor`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ActorRemoved {
    Gone,
    Removed,
    /// The actor wrote this many conversation messages; nothing changed.
    HasMessages(usize),
}

/// What [`Records::create_actor_session`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ActorSession {
    Created,
    /// The session's actor is not in its project (or is gone).
    NoActor,
    /// The id of the actor's open session with the agent, which is still live.
    Conflict(String),
}

fn holder_of(txn: &impl super::kv::Read, a: &ActorRecord) -> Result<Option<ActorRecord>, StoreError> {
    let Some(external) = &a.external_id else { return Ok(None) };
    let all: Vec<ActorRecord> = list_in(txn, &a.account_id)?;
    Ok(all.into_iter().find(|o| o.id != a.id && o.project_id == a.project_id && o.external_id.as_ref() == Some(external)))
}

impl Records {
    pub(super) fn ensure_actors(&self) -> Result<(), StoreError> {
        self.ensure::<ActorRecord>()
    }

    /// Adds the actor unless another of its project holds its external id.
    pub fn create_actor(&self, a: &ActorRecord) -> Result<ActorCreated, StoreError> {
        let txn = self.kv.write()?;
        if let Some(existing) = holder_of(&txn, a)? {
            return Ok(ActorCreated::Existing(Box::new(existing)));
        }
        insert_in(&txn, a)?;
        self.commit_charged(txn, Charge::Capped(&a.account_id))?;
        Ok(ActorCreated::New)
    }

    /// Lets `f` change the account's actor and writes it when `f` answers `Ok` and its
    /// external id is free in the project.
    pub fn update_actor<T, E>(
        &self,
        account_id: &str,
        id: &str,
        f: impl FnOnce(&mut ActorRecord) -> Result<T, E>,
    ) -> Result<ActorUpdated<Result<T, E>>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut a) = get_in::<ActorRecord>(&txn, account_id, id)? else { return Ok(ActorUpdated::Gone) };
        let out = match f(&mut a) {
            Err(e) => return Ok(ActorUpdated::Done(Err(e))),
            Ok(t) => t,
        };
        assert!(a.id == id && a.account_id == account_id, "an update changed an actor's id or owner");
        if let Some(holder) = holder_of(&txn, &a)? {
            return Ok(ActorUpdated::ExternalIdTaken(holder.id));
        }
        put_in(&txn, &a)?;
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(ActorUpdated::Done(Ok(out)))
    }

    /// Removes the actor unless it wrote a conversation message, clearing it from the
    /// sessions and conversations that name it.
    pub fn remove_actor(&self, account_id: &str, id: &str) -> Result<ActorRemoved, StoreError> {
        let txn = self.kv.write()?;
        if get_in::<ActorRecord>(&txn, account_id, id)?.is_none() {
            return Ok(ActorRemoved::Gone);
        }
        let named = |a: &Option<String>| a.as_deref() == Some(id);
        let messages: Vec<ConversationMessageRecord> = list_in(&txn, account_id)?;
        let written = messages.iter().filter(|m| named(&m.actor_id)).count();
        if written > 0 {
            return Ok(ActorRemoved::HasMessages(written));
        }
        let sessions: Vec<SessionRecord> = list_in(&txn, account_id)?;
        for mut s in sessions.into_iter().filter(|s| named(&s.actor_id)) {
            s.actor_id = None;
            put_in(&txn, &s)?;
        }
        let conversations: Vec<ConversationRecord> = list_in(&txn, account_id)?;
        for mut c in conversations.into_iter().filter(|c| named(&c.actor_id)) {
            c.actor_id = None;
            put_in(&txn, &c)?;
        }
        remove_in::<ActorRecord>(&txn, account_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(ActorRemoved::Removed)
    }

    /// Writes a new session that names an actor, with its new conversation, while the
    /// actor is in the session's project; with `single`, only while the actor has no
    /// other open session with the agent that `live` holds live (one it does not is
    /// marked `expired` in the same write).
    pub fn create_actor_session(
        &self,
        s: &SessionRecord,
        c: &ConversationRecord,
        single: bool,
        live: impl Fn(&SessionRecord) -> bool,
    ) -> Result<ActorSession, StoreError> {
        let txn = self.kv.write()?;
        let Some(actor_id) = s.actor_id.as_deref() else { return Ok(ActorSession::NoActor) };
        let actor = get_in::<ActorRecord>(&txn, &s.account_id, actor_id)?;
        if actor.is_none_or(|a| a.project_id != s.project_id) {
            return Ok(ActorSession::NoActor);
        }
        if single {
            let sessions: Vec<SessionRecord> = list_in(&txn, &s.account_id)?;
            let open = sessions.into_iter().filter(|o| o.agent_id == s.agent_id && o.actor_id == s.actor_id && o.status == "open");
            for mut other in open {
                if live(&other) {
                    return Ok(ActorSession::Conflict(other.id));
                }
                other.status = "expired".into();
                put_in(&txn, &other)?;
            }
        }
        insert_in(&txn, c)?;
        insert_in(&txn, s)?;
        self.commit_charged(txn, Charge::Capped(&s.account_id))?;
        Ok(ActorSession::Created)
    }
}

/// The id of a live open session, other than `s`, of `s`'s agent and actor.
fn other_open(txn: &super::kv::WriteTx, s: &SessionRecord, live: &impl Fn(&SessionRecord) -> bool) -> Result<Option<String>, StoreError> {
    let sessions: Vec<SessionRecord> = list_in(txn, &s.account_id)?;
    let mut open = sessions.into_iter().filter(|o| o.id != s.id && o.agent_id == s.agent_id && o.actor_id == s.actor_id && o.status == "open");
    Ok(open.find(|o| live(o)).map(|o| o.id))
}

impl Records {
    /// Lets `f` change the account's session, as [`Records::update`] does; with
    /// `single`, a change that leaves a session of an actor open is written only while
    /// no other live open session of its agent and actor exists (`Err` its id).
    pub fn update_actor_session<T>(
        &self,
        account_id: &str,
        id: &str,
        single: bool,
        live: impl Fn(&SessionRecord) -> bool,
        f: impl FnOnce(&mut SessionRecord) -> super::owned::Change<T>,
    ) -> Result<Option<Result<T, String>>, StoreError> {
        use super::owned::Change;
        let txn = self.kv.write()?;
        let Some(mut s) = get_in::<SessionRecord>(&txn, account_id, id)? else { return Ok(None) };
        let out = match f(&mut s) {
            Change::Keep(t) => return Ok(Some(Ok(t))),
            Change::Write(t) => t,
        };
        assert!(s.id == id && s.account_id == account_id, "an update changed a session's id or owner");
        if single && s.status == "open" && s.actor_id.is_some() {
            if let Some(other) = other_open(&txn, &s, &live)? {
                return Ok(Some(Err(other)));
            }
        }
        put_in(&txn, &s)?;
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(Some(Ok(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(id: &str, project: &str, external: Option<&str>) -> ActorRecord {
        ActorRecord {
            id: id.into(),
            account_id: "acc_a".into(),
            project_id: project.into(),
            name: "A".into(),
            external_id: external.map(Into::into),
            instructions: None,
            agent_id: None,
            chat_id: None,
            tags: BTreeMap::new(),
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    #[test]
    fn an_external_id_names_one_actor_of_a_project() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        assert_eq!(r.create_actor(&actor("actor_1", "proj_a", Some("+1"))).unwrap(), ActorCreated::New);
        let again = r.create_actor(&actor("actor_2", "proj_a", Some("+1"))).unwrap();
        assert!(matches!(again, ActorCreated::Existing(a) if a.id == "actor_1"));
        assert_eq!(r.create_actor(&actor("actor_3", "proj_b", Some("+1"))).unwrap(), ActorCreated::New, "another project's is apart");
        assert_eq!(r.create_actor(&actor("actor_4", "proj_a", None)).unwrap(), ActorCreated::New);
        let taken = r
            .update_actor("acc_a", "actor_4", |a| {
                a.external_id = Some("+1".into());
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(taken, ActorUpdated::ExternalIdTaken("actor_1".into()));
        assert_eq!(r.get::<ActorRecord>("acc_a", "actor_4").unwrap().unwrap().external_id, None, "nothing written");
        assert_eq!(r.remove_actor("acc_a", "actor_1").unwrap(), ActorRemoved::Removed);
        assert_eq!(r.remove_actor("acc_a", "actor_1").unwrap(), ActorRemoved::Gone);
    }
}
