//! Webhooks (`wh_…`) and their deliveries (`whd_…`): the outbox. An event a write
//! raises (a generation's transition, see [`GenerationRow::raised`]) is written as one
//! delivery row per matching webhook *in that write's own transaction*, so a
//! delivery exists the moment the event's state is committed, and a crash between
//! the two cannot lose one. The delivery worker (`agents::webhooks::deliver`) sends
//! what the pending queue holds, records each attempt, and after a restart finds every
//! delivery still owed in the same queue (at-least-once).
//!
//! Tables besides the two kinds' own (`store::owned`): `soat_webhook_deliveries_pending`
//! (delivery id → account: the queue) and `soat_webhook_deliveries_by_webhook`
//! (webhook id → its deliveries, for the list).
//!
//! [`GenerationRow::raised`]: super::generations::GenerationRow::raised

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::kv::{Names, Read, Sets, Table, WriteTx};
use super::owned::{get_in, insert_in, list_in, owned_record, put_in, remove_in};
use super::{Charge, Records, StoreError};

pub const WEBHOOK_PREFIX: &str = "wh_";
pub const DELIVERY_PREFIX: &str = "whd_";
pub const EVENT_PREFIX: &str = "evt_";

/// Deliveries owed (pending): delivery id → account id.
const PENDING: Names = Names("soat_webhook_deliveries_pending");
/// Webhook id → its deliveries' ids.
const BY_WEBHOOK: Sets = Sets("soat_webhook_deliveries_by_webhook");

/// A webhook: where a project's events are posted, which ones (patterns), and the
/// signing secret, sealed (`agents::secrets`' sealer, the webhook as its owner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub url: String,
    /// `*`, an event name, or `prefix.*` (every event under `prefix.`).
    pub events: Vec<String>,
    pub active: bool,
    #[serde(default)]
    pub policy_id: Option<String>,
    /// The signing secret, sealed; never answered except by get-secret and rotate.
    pub sealed_secret: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One delivery of one event to one webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub webhook_id: String,
    /// The event's id, the same on every delivery of it (a redelivery too): what a
    /// receiver dedupes on.
    pub event_id: String,
    pub event_type: String,
    /// The body posted, as stored (the envelope).
    pub payload: Value,
    /// `pending`, `success` or `failed`.
    pub status: String,
    #[serde(default)]
    pub status_code: Option<u16>,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_attempt_at: Option<String>,
    #[serde(default)]
    pub next_attempt_at: Option<String>,
    #[serde(default)]
    pub response_body: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(WebhookRecord, "soat_webhooks", "soat_webhooks_by_account");
owned_record!(DeliveryRecord, "soat_webhook_deliveries", "soat_webhook_deliveries_by_account");

/// An event a write raises, before it is addressed to any webhook.
#[derive(Debug, Clone, PartialEq)]
pub struct Raised {
    pub event_type: String,
    pub resource_type: &'static str,
    pub resource_id: String,
    /// The event's own data (no secret value ever goes here).
    pub data: Value,
}

/// Whether a webhook's `patterns` take `event_type` (SOAT's matching: `*`, the exact
/// name, or `prefix.*` for every name under `prefix.`).
pub fn matches(patterns: &[String], event_type: &str) -> bool {
    patterns.iter().any(|p| {
        p == "*"
            || p == event_type
            || p.strip_suffix(".*").is_some_and(|prefix| event_type.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('.')))
    })
}

impl Records {
    pub(super) fn ensure_webhooks(&self) -> Result<(), StoreError> {
        self.ensure::<WebhookRecord>()?;
        self.ensure::<DeliveryRecord>()?;
        let txn = self.kv.write()?;
        txn.create(Table::Names(PENDING))?;
        txn.create(Table::Sets(BY_WEBHOOK))?;
        txn.commit()
    }

    /// Adds a delivery that is owed now (a redelivery).
    pub fn insert_delivery(&self, d: &DeliveryRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        add_delivery_in(&txn, d)?;
        self.commit_charged(txn, Charge::Capped(&d.account_id))
    }

    /// The webhook's deliveries, newest first.
    pub fn deliveries_of(&self, account_id: &str, webhook_id: &str) -> Result<Vec<DeliveryRecord>, StoreError> {
        let txn = self.kv.read()?;
        let mut out = Vec::new();
        for id in txn.members(BY_WEBHOOK, webhook_id)? {
            out.extend(get_in::<DeliveryRecord>(&txn, account_id, &id)?);
        }
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        Ok(out)
    }

    /// The queue: every delivery still owed, as (id, account).
    pub fn pending_deliveries(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.kv.read()?.names(PENDING)
    }

    /// Writes an attempt's outcome; a delivery no longer pending leaves the queue.
    pub fn record_attempt(&self, d: &DeliveryRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if get_in::<DeliveryRecord>(&txn, &d.account_id, &d.id)?.is_none() {
            return Ok(());
        }
        put_in(&txn, d)?;
        if d.status == "pending" {
            txn.put_name(PENDING, &d.id, &d.account_id)?;
        } else {
            txn.delete_name(PENDING, &d.id)?;
        }
        // An attempt of a delivery already made: counted, never refused.
        self.commit_charged(txn, Charge::Counted(&d.account_id))
    }

    /// Removes a webhook with its deliveries; whether the account had it.
    pub fn remove_webhook(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        if !remove_in::<WebhookRecord>(&txn, account_id, id)? {
            return Ok(false);
        }
        for d in txn.members(BY_WEBHOOK, id)? {
            remove_in::<DeliveryRecord>(&txn, account_id, &d)?;
            txn.delete_name(PENDING, &d)?;
            txn.remove_member(BY_WEBHOOK, id, &d)?;
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }
}

fn add_delivery_in(txn: &WriteTx, d: &DeliveryRecord) -> Result<(), StoreError> {
    insert_in(txn, d)?;
    txn.add_member(BY_WEBHOOK, &d.webhook_id, &d.id)?;
    if d.status == "pending" {
        txn.put_name(PENDING, &d.id, &d.account_id)?;
    }
    Ok(())
}

/// Writes, inside the caller's transaction, one pending delivery of each event to
/// each of the project's active webhooks that takes it. Nothing is read or written
/// when `events` is empty (a step that changes no status).
pub(super) fn enqueue_in(txn: &WriteTx, account_id: &str, project_id: &str, events: &[Raised]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let hooks: Vec<WebhookRecord> = list_in(txn, account_id)?;
    let hooks: Vec<&WebhookRecord> = hooks.iter().filter(|h| h.active && h.project_id == project_id).collect();
    if hooks.is_empty() {
        return Ok(());
    }
    let now = crate::clock::now_rfc3339();
    for e in events {
        let event_id = format!("{EVENT_PREFIX}{}", crate::ids::random_base62(20));
        let payload = serde_json::json!({
            "id": event_id,
            "event": e.event_type,
            "project_id": project_id,
            "resource_type": e.resource_type,
            "resource_id": e.resource_id,
            "data": e.data,
            "timestamp": now,
        });
        for h in hooks.iter().filter(|h| matches(&h.events, &e.event_type)) {
            let d = DeliveryRecord {
                id: format!("{DELIVERY_PREFIX}{}", crate::ids::random_base62(20)),
                account_id: account_id.to_owned(),
                project_id: project_id.to_owned(),
                webhook_id: h.id.clone(),
                event_id: event_id.clone(),
                event_type: e.event_type.clone(),
                payload: payload.clone(),
                status: "pending".into(),
                status_code: None,
                attempts: 0,
                last_attempt_at: None,
                next_attempt_at: Some(now.clone()),
                response_body: None,
                created_at: now.clone(),
                updated_at: now.clone(),
            };
            add_delivery_in(txn, &d)?;
        }
    }
    Ok(())
}

// evaluations (issue 37): a record's change with the events it raises.
impl Records {
    /// [`Records::update`], with the events `f` names addressed to `project_id`'s
    /// webhooks, and the exceptions a failure files, in the change's own transaction
    /// (an eval run's settle: `eval_run.completed` or `.failed`).
    pub fn update_raising<R: super::owned::Owned, T>(
        &self,
        account_id: &str,
        project_id: &str,
        id: &str,
        f: impl FnOnce(&mut R) -> super::owned::Change<(T, Vec<Raised>)>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut record) = get_in::<R>(&txn, account_id, id)? else { return Ok(None) };
        let (out, raised) = match f(&mut record) {
            super::owned::Change::Keep((t, _)) => return Ok(Some(t)),
            super::owned::Change::Write(x) => x,
        };
        assert!(record.id() == id && record.account_id() == account_id, "an update changed a record's id or owner");
        put_in(&txn, &record)?;
        enqueue_in(&txn, account_id, project_id, &raised)?;
        super::exceptions::file_in(&txn, account_id, project_id, &raised)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_as_soat_matches_them() {
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(matches(&p(&["*"]), "agents.generation.completed"));
        assert!(matches(&p(&["sessions.generation.*"]), "sessions.generation.completed"));
        assert!(matches(&p(&["sessions.*"]), "sessions.generation.completed"));
        assert!(!matches(&p(&["sessions.generation.*"]), "agents.generation.completed"));
        assert!(!matches(&p(&["sessions.gen*"]), "sessions.generation.completed"));
        assert!(!matches(&p(&["sessions.generation.*"]), "sessions.generationx"));
        assert!(matches(&p(&["a.b", "agents.generation.failed"]), "agents.generation.failed"));
        assert!(!matches(&p(&[]), "agents.generation.failed"));
    }
}
