//! SOAT conversations (`conv_…`), their messages (`doc_…`, ordered by `position`) and
//! sessions (`sess_…`, an agent's chat over one conversation), as records on the
//! generic account-owned table ([`Owned`](super::owned::Owned)). Each names its
//! project; `agents::conversation` and `agents::session` keep another project's out of
//! sight.
//!
//! A message's position is given out inside the write transaction that adds it (the
//! conversation's highest plus one, or the one asked for with the later ones moved up),
//! so two writers never share one. A generation that answers in a conversation has its
//! reply appended by the same transaction that settles it (`store::generations`'
//! `save_step`, through [`GenerationRow::conversation_reply`](super::generations::GenerationRow::conversation_reply)),
//! under an id made from the generation's: a crash lands it with the settle or not at
//! all, and a second settle (a run taken over after a restart) finds it there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::kv::{Read, Sets, WriteTx};
use super::owned::{get_in, insert_in, owned_record, put_in, remove_in};
use super::{get_json, Charge, Records, StoreError};

/// A conversation: an ordered history of messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// `open` or `closed`.
    pub status: String,
    #[serde(default)]
    pub actor_id: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ConversationRecord, "soat_conversations", "soat_conversations_by_account");

/// One message of a conversation (SOAT's `ConversationMessageRecord`; its id is the
/// `document_id` the spec names it by).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationMessageRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub conversation_id: String,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    pub position: u64,
    #[serde(default)]
    pub actor_id: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
    /// The generation whose reply this is.
    #[serde(default)]
    pub generation_id: Option<String>,
    /// A session message's deduplication key.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    pub created_at: String,
}

owned_record!(ConversationMessageRecord, "soat_conversation_messages", "soat_conversation_messages_by_account");

/// A session: one agent's chat over one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub conversation_id: String,
    /// `open`, `closed` or `expired`.
    pub status: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub actor_id: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    #[serde(default)]
    pub auto_generate: bool,
    #[serde(default)]
    pub tool_context: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub inactivity_ttl_seconds: u64,
    #[serde(default)]
    pub message_delay_seconds: Option<u64>,
    #[serde(default)]
    pub last_activity_at: Option<String>,
    #[serde(default)]
    pub forked_from_session_id: Option<String>,
    #[serde(default)]
    pub forked_from_position: Option<u64>,
    /// The last generation started in the session (whether it still runs is its record's).
    #[serde(default)]
    pub generation_id: Option<String>,
    /// A claim on the session's next start, as servers before the creating
    /// transaction took the claim wrote it; read by none now, kept so their records parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(SessionRecord, "soat_sessions", "soat_sessions_by_account");

/// conversation id → its message ids.
const BY_CONVERSATION: Sets = Sets("soat_conversation_messages_by_conversation");

/// The id of the message that holds generation `generation_id`'s reply: one per
/// generation, so a second append of it finds the first (`doc_g…`, never the form of a
/// message id given out at random).
pub fn reply_id(generation_id: &str) -> String {
    format!("doc_g{}", generation_id.strip_prefix("gen_").unwrap_or(generation_id))
}

/// What [`Records::add_conversation_message`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Added {
    New(ConversationMessageRecord),
    /// A message of the conversation already holds this idempotency key.
    Existing(ConversationMessageRecord),
}

fn messages_in(txn: &impl Read, account_id: &str, conversation_id: &str) -> Result<Vec<ConversationMessageRecord>, StoreError> {
    let mut out = Vec::new();
    for id in txn.members(BY_CONVERSATION, conversation_id)? {
        let m: Option<ConversationMessageRecord> =
            get_json(txn, super::owned::records::<ConversationMessageRecord>(), &id, "soat_conversation_messages")?;
        out.extend(m.filter(|m| m.account_id == account_id));
    }
    out.sort_by(|a, b| a.position.cmp(&b.position).then_with(|| a.created_at.cmp(&b.created_at)));
    Ok(out)
}

/// Adds `m` to its conversation at `at` (the later messages moved up one), else after
/// the last. `false` when the conversation is gone.
fn place_in(txn: &WriteTx, mut m: ConversationMessageRecord, at: Option<u64>) -> Result<Option<ConversationMessageRecord>, StoreError> {
    if get_in::<ConversationRecord>(txn, &m.account_id, &m.conversation_id)?.is_none() {
        return Ok(None);
    }
    let existing = messages_in(txn, &m.account_id, &m.conversation_id)?;
    let next = existing.last().map_or(0, |l| l.position + 1);
    m.position = match at {
        Some(p) if p < next => {
            for mut later in existing.into_iter().filter(|e| e.position >= p) {
                later.position += 1;
                put_in(txn, &later)?;
            }
            p
        }
        _ => next,
    };
    insert_in(txn, &m)?;
    txn.add_member(BY_CONVERSATION, &m.conversation_id, &m.id)?;
    Ok(Some(m))
}

/// Appends a settled generation's reply to its conversation unless it is there already
/// (or the conversation is gone). Inside the settle's transaction.
pub(super) fn append_reply_in(txn: &WriteTx, m: ConversationMessageRecord) -> Result<(), StoreError> {
    if get_json::<ConversationMessageRecord>(txn, super::owned::records::<ConversationMessageRecord>(), &m.id, "soat_conversation_messages")?
        .is_some()
    {
        return Ok(());
    }
    place_in(txn, m, None).map(|_| ())
}

impl Records {
    /// The conversation's messages, by position.
    pub fn conversation_messages(&self, account_id: &str, conversation_id: &str) -> Result<Vec<ConversationMessageRecord>, StoreError> {
        messages_in(&self.kv.read()?, account_id, conversation_id)
    }

    /// Adds a message to its conversation (see [`place_in`]), unless one of the
    /// conversation holds the same idempotency key. `None` when the conversation is gone.
    pub fn add_conversation_message(&self, m: ConversationMessageRecord, at: Option<u64>) -> Result<Option<Added>, StoreError> {
        let txn = self.kv.write()?;
        if let Some(key) = &m.idempotency_key {
            let found = messages_in(&txn, &m.account_id, &m.conversation_id)?.into_iter().find(|e| e.idempotency_key.as_ref() == Some(key));
            if let Some(found) = found {
                return Ok(Some(Added::Existing(found)));
            }
        }
        let account = m.account_id.clone();
        let Some(placed) = place_in(&txn, m, at)? else { return Ok(None) };
        self.commit_charged(txn, Charge::Capped(&account))?;
        Ok(Some(Added::New(placed)))
    }

    /// Removes one message of the conversation; whether there was one.
    pub fn remove_conversation_message(&self, account_id: &str, conversation_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        match get_in::<ConversationMessageRecord>(&txn, account_id, id)? {
            Some(m) if m.conversation_id == conversation_id => {}
            _ => return Ok(false),
        }
        remove_in::<ConversationMessageRecord>(&txn, account_id, id)?;
        txn.remove_member(BY_CONVERSATION, conversation_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }

    /// Removes a conversation with its messages; whether there was one.
    pub fn remove_conversation(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let removed = remove_conversation_in(&txn, account_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(removed)
    }

    /// Removes a session with its conversation and messages; whether there was one.
    pub fn remove_session(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let Some(s) = get_in::<SessionRecord>(&txn, account_id, id)? else { return Ok(false) };
        remove_in::<SessionRecord>(&txn, account_id, id)?;
        remove_conversation_in(&txn, account_id, &s.conversation_id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }

    /// Writes a new session, its new conversation and the conversation's first
    /// messages (a fork's copies, positions kept) in one transaction.
    pub fn create_session(&self, s: &SessionRecord, c: &ConversationRecord, messages: &[ConversationMessageRecord]) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        insert_in(&txn, c)?;
        insert_in(&txn, s)?;
        for m in messages {
            insert_in(&txn, m)?;
            txn.add_member(BY_CONVERSATION, &m.conversation_id, &m.id)?;
        }
        self.commit_charged(txn, Charge::Capped(&s.account_id))
    }
}

fn remove_conversation_in(txn: &WriteTx, account_id: &str, id: &str) -> Result<bool, StoreError> {
    if !remove_in::<ConversationRecord>(txn, account_id, id)? {
        return Ok(false);
    }
    for m in messages_in(txn, account_id, id)? {
        remove_in::<ConversationMessageRecord>(txn, account_id, &m.id)?;
        txn.remove_member(BY_CONVERSATION, id, &m.id)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(id: &str) -> ConversationRecord {
        ConversationRecord {
            id: id.into(),
            account_id: "acc_a".into(),
            project_id: "proj_a".into(),
            name: None,
            status: "open".into(),
            actor_id: None,
            tags: BTreeMap::new(),
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    fn msg(id: &str, conv: &str, text: &str) -> ConversationMessageRecord {
        ConversationMessageRecord {
            id: id.into(),
            account_id: "acc_a".into(),
            project_id: "proj_a".into(),
            conversation_id: conv.into(),
            role: "user".into(),
            content: text.into(),
            position: 0,
            actor_id: None,
            agent_id: None,
            metadata: None,
            generation_id: None,
            idempotency_key: None,
            created_at: "t".into(),
        }
    }

    #[test]
    fn positions_append_insert_and_replies_land_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        assert_eq!(r.add_conversation_message(msg("doc_0", "conv_x", "a"), None).unwrap(), None, "no conversation, no message");
        r.insert(&conv("conv_1")).unwrap();
        r.add_conversation_message(msg("doc_1", "conv_1", "a"), None).unwrap();
        r.add_conversation_message(msg("doc_2", "conv_1", "c"), None).unwrap();
        r.add_conversation_message(msg("doc_3", "conv_1", "b"), Some(1)).unwrap();
        let order =
            |r: &Records| r.conversation_messages("acc_a", "conv_1").unwrap().iter().map(|m| (m.position, m.content.clone())).collect::<Vec<_>>();
        assert_eq!(order(&r), vec![(0, "a".into()), (1, "b".into()), (2, "c".into())]);
        let txn = r.kv.write().unwrap();
        append_reply_in(&txn, msg(&reply_id("gen_1"), "conv_1", "reply")).unwrap();
        append_reply_in(&txn, msg(&reply_id("gen_1"), "conv_1", "reply")).unwrap();
        txn.commit().unwrap();
        assert_eq!(order(&r).last().unwrap(), &(3, "reply".to_owned()));
        assert_eq!(order(&r).len(), 4, "a second append of one generation's reply adds nothing");
        assert!(r.conversation_messages("acc_b", "conv_1").unwrap().is_empty(), "another account sees none");
        assert!(r.remove_conversation_message("acc_a", "conv_1", "doc_3").unwrap());
        assert_eq!(order(&r).len(), 3);
        assert!(r.remove_conversation("acc_a", "conv_1").unwrap());
        assert!(r.conversation_messages("acc_a", "conv_1").unwrap().is_empty());
        assert_eq!(r.get::<ConversationMessageRecord>("acc_a", "doc_1").unwrap(), None, "its messages go with it");
    }
}
