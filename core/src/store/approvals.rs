//! guardrails and approvals (issue 37): approval items (`apr_…`), filed by the very
//! transaction that pauses a generation for them (`save_step`, through
//! [`GenerationRow::approvals_filed`](super::generations::GenerationRow::approvals_filed)),
//! and resolved together with the generation they hold, in one transaction; and a
//! versioned record (a guardrail) written with the version it archives, at once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::generations::GenerationRow;
use super::kv::{Names, Read, Table, WriteTx};
use super::owned::{get_in, insert_in, list_in, owned_record, put_in, remove_in, Change, Owned};
use super::webhooks::Raised;
use super::{Charge, Records, StoreError};

pub const APPROVAL_PREFIX: &str = "apr_";

/// The durable queue of items still `pending` (id → account), which the expiry
/// sweeper reads instead of every item ever filed: put by the write that files an
/// item, dropped by the write that settles it.
const PENDING: Names = Names("soat_approvals_pending");

/// One approval item (approvals.yaml's `ApprovalItem`; the account is ours). Its
/// `status` is written `pending`, `approved` or `rejected`; a pending item past its
/// `expires_at` reads `expired` (the hard gate is checked at every decision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub origin: String,
    pub status: String,
    pub proposed_action: Option<Value>,
    pub reasoning: Option<String>,
    pub evidence: Option<Value>,
    pub predicted_impact: Option<String>,
    pub expires_at: String,
    pub dedup_key: Option<String>,
    pub generation_id: Option<String>,
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    /// The call of the generation's step it gates (ours).
    pub tool_call_id: Option<String>,
    /// The guardrail that routed it here and its version (`guardrail_id@version`).
    pub policy_version: Option<String>,
    pub previous_item_id: Option<String>,
    pub resolved_by: Option<String>,
    pub resolution_reason: Option<String>,
    pub edited_arguments: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
    /// Other generations paused on this same item: a later identical proposal (same
    /// `dedup_key`, still pending) waits on it instead of filing a second (ours).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_waiting: Vec<String>,
}

owned_record!(ApprovalRecord, "soat_approvals", "soat_approvals_by_account");

/// Files the approvals `g`'s state holds that are not yet recorded, in `txn` (the
/// transaction that commits the pause). An item already filed is not filed again: the
/// same step's call (its id is derived from the generation and the call), or a gate
/// that took a pending item of the same `dedup_key` over (`also_waiting` then names
/// this generation). A proposal that follows a rejected item with the same
/// `dedup_key` links back to it (`previous_item_id`). Each item filed raises
/// `approvals.created`.
pub(super) fn file_in<G: GenerationRow>(txn: &WriteTx, g: &G) -> Result<(), StoreError> {
    let filed = g.approvals_filed();
    if filed.is_empty() {
        return Ok(());
    }
    let mut known: Option<Vec<ApprovalRecord>> = None;
    for mut a in filed {
        if let Some(mut old) = get_in::<ApprovalRecord>(txn, &a.account_id, &a.id)? {
            let other = old.generation_id != a.generation_id;
            if let Some(gid) = a.generation_id.filter(|gid| other && !old.also_waiting.contains(gid)) {
                old.also_waiting.push(gid);
                put_in(txn, &old)?;
            }
            continue;
        }
        if let Some(key) = a.dedup_key.clone() {
            let all = match &known {
                Some(all) => all,
                None => known.insert(list_in::<ApprovalRecord>(txn, &a.account_id)?),
            };
            a.previous_item_id = all
                .iter()
                .filter(|p| p.project_id == a.project_id && p.dedup_key.as_deref() == Some(key.as_str()) && p.status == "rejected")
                .max_by(|x, y| x.created_at.cmp(&y.created_at).then_with(|| x.id.cmp(&y.id)))
                .map(|p| p.id.clone());
        }
        insert_in(txn, &a)?;
        txn.put_name(PENDING, &a.id, &a.account_id)?;
        let created = Raised {
            event_type: "approvals.created".into(),
            resource_type: "approval",
            resource_id: a.id.clone(),
            data: serde_json::json!({"approval": g.approval_view(&a)}),
        };
        super::webhooks::enqueue_in(txn, &a.account_id, &a.project_id, &[created])?;
    }
    Ok(())
}

impl Records {
    pub(super) fn ensure_approvals(&self) -> Result<(), StoreError> {
        self.ensure::<ApprovalRecord>()?;
        let txn = self.kv.write()?;
        txn.create(Table::Names(PENDING))?;
        txn.commit()
    }

    /// Reads the account's approval `id` and the generations it holds (the one that
    /// filed it, and those that wait on it too), lets `f` decide them, and writes them
    /// back in one transaction, with the generations' webhook events and the event
    /// `raise` names for the item's own change. `None` when there is no such approval
    /// of this account.
    pub fn resolve_approval<G: GenerationRow, T>(
        &self,
        account_id: &str,
        id: &str,
        f: impl FnOnce(&mut ApprovalRecord, &mut [G]) -> Change<T>,
        raise: impl FnOnce(&ApprovalRecord) -> Vec<Raised>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut a) = get_in::<ApprovalRecord>(&txn, account_id, id)? else { return Ok(None) };
        let mut before: Vec<G> = Vec::new();
        for gid in a.generation_id.iter().chain(&a.also_waiting) {
            if let Some(g) = get_in::<G>(&txn, account_id, gid)? {
                before.push(g);
            }
        }
        let mut gs = before.clone();
        let out = match f(&mut a, &mut gs) {
            Change::Keep(t) => return Ok(Some(t)),
            Change::Write(t) => t,
        };
        put_in(&txn, &a)?;
        if a.status != "pending" {
            txn.delete_name(PENDING, &a.id)?;
        }
        super::webhooks::enqueue_in(&txn, account_id, &a.project_id, &raise(&a))?;
        for (g, before) in gs.iter().zip(&before) {
            put_in(&txn, g)?;
            super::webhooks::enqueue_in(&txn, account_id, g.project_id(), &g.raised(Some(before)))?;
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(out))
    }

    /// The items still pending (expiry is the reader's to judge), and entries of the
    /// queue that no longer need it (settled, or gone) dropped from it.
    pub fn pending_approvals(&self) -> Result<Vec<ApprovalRecord>, StoreError> {
        let read = self.kv.read()?;
        let mut out = Vec::new();
        let mut stale = Vec::new();
        for (id, account) in read.names(PENDING)? {
            match get_in::<ApprovalRecord>(&read, &account, &id)? {
                Some(a) if a.status == "pending" => out.push(a),
                _ => stale.push(id),
            }
        }
        drop(read);
        if !stale.is_empty() {
            let txn = self.kv.write()?;
            for id in stale {
                txn.delete_name(PENDING, &id)?;
            }
            txn.commit()?;
        }
        Ok(out)
    }

    /// guardrails: adds `r` with the first version it archives, in one transaction.
    pub fn insert_versioned<R: Owned, V: Owned>(&self, r: &R, v: &V) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        insert_in(&txn, r)?;
        insert_in(&txn, v)?;
        self.commit_charged(txn, Charge::Capped(r.account_id()))
    }

    /// guardrails: [`Records::update`], adding the version the change archives when `f`
    /// makes one, in the same transaction.
    pub fn update_versioned<R: Owned, V: Owned, T>(
        &self,
        account_id: &str,
        id: &str,
        f: impl FnOnce(&mut R) -> Change<(T, Option<V>)>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut record) = get_in::<R>(&txn, account_id, id)? else { return Ok(None) };
        let (out, version) = match f(&mut record) {
            Change::Keep((t, _)) => return Ok(Some(t)),
            Change::Write(x) => x,
        };
        assert!(record.id() == id && record.account_id() == account_id, "an update changed a record's id or owner");
        put_in(&txn, &record)?;
        if let Some(v) = version {
            insert_in(&txn, &v)?;
        }
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(Some(out))
    }

    /// guardrails: removes the record and the versions `of` says are its, at once.
    pub fn remove_versioned<R: Owned, V: Owned>(&self, account_id: &str, id: &str, of: impl Fn(&V) -> bool) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let removed = remove_in::<R>(&txn, account_id, id)?;
        for v in list_in::<V>(&txn, account_id)? {
            if of(&v) {
                remove_in::<V>(&txn, account_id, v.id())?;
            }
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(removed)
    }
}
