//! guardrails and approvals (issue 37): approval items (`apr_…`), filed by the very
//! transaction that pauses a generation for them (`save_step`, through
//! [`GenerationRow::approvals_filed`](super::generations::GenerationRow::approvals_filed)),
//! and resolved together with the generation they hold, in one transaction; and a
//! versioned record (a guardrail) written with the version it archives, at once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::generations::GenerationRow;
use super::kv::WriteTx;
use super::owned::{get_in, insert_in, list_in, owned_record, put_in, remove_in, Change, Owned};
use super::{Charge, Records, StoreError};

pub const APPROVAL_PREFIX: &str = "apr_";

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
}

owned_record!(ApprovalRecord, "soat_approvals", "soat_approvals_by_account");

/// Files the approvals `g`'s state holds that are not yet recorded, in `txn` (the
/// transaction that commits the pause). A proposal that follows a rejected item with
/// the same `dedup_key` links back to it (`previous_item_id`).
pub(super) fn file_in<G: GenerationRow>(txn: &WriteTx, g: &G) -> Result<(), StoreError> {
    let filed = g.approvals_filed();
    if filed.is_empty() {
        return Ok(());
    }
    let mut known: Option<Vec<ApprovalRecord>> = None;
    for mut a in filed {
        if get_in::<ApprovalRecord>(txn, &a.account_id, &a.id)?.is_some() {
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
    }
    Ok(())
}

impl Records {
    /// Reads the account's approval `id` and the generation it gates, lets `f` decide
    /// both, and writes them back in one transaction (with the generation's webhook
    /// events). `None` when there is no such approval of this account.
    pub fn resolve_approval<G: GenerationRow, T>(
        &self,
        account_id: &str,
        id: &str,
        f: impl FnOnce(&mut ApprovalRecord, Option<&mut G>) -> Change<T>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut a) = get_in::<ApprovalRecord>(&txn, account_id, id)? else { return Ok(None) };
        let before: Option<G> = match &a.generation_id {
            Some(gid) => get_in::<G>(&txn, account_id, gid)?,
            None => None,
        };
        let mut g = before.clone();
        let out = match f(&mut a, g.as_mut()) {
            Change::Keep(t) => return Ok(Some(t)),
            Change::Write(t) => t,
        };
        put_in(&txn, &a)?;
        if let (Some(g), Some(before)) = (&g, &before) {
            put_in(&txn, g)?;
            super::webhooks::enqueue_in(&txn, account_id, g.project_id(), &g.raised(Some(before)))?;
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(out))
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
