//! The audit log and the activity feed (issue 37, policies): append-only logs, one per
//! account, kept as rows keyed `account/sequence` so an account's entries read in the
//! order they were written. The sequence is one counter for the whole store, so an
//! entry's id (`audit_…`, `acte_…`: the sequence, zero-padded) is unique across
//! accounts and grows with time, so an account's key range is in time order: a list
//! walks it newest first a row at a time ([`Records::audit_page`],
//! [`Records::activity_page`]), filtering as it goes and holding only its page. No
//! entry is ever updated; the audit log's entries older than the configured retention
//! are removed by [`Records::sweep_audit`], oldest first, nothing else is.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::kv::{Counts, Keys, Read, Rows, Table, WriteTx};
use super::{from_json, get_json, to_json, Records, StoreError};

pub(super) const AUDIT: Rows = Rows("soat_audit_log");
const ACTIVITY: Rows = Rows("soat_activity");
/// `audit` / `activity` → the last sequence handed out.
const SEQUENCES: Counts = Counts("soat_log_sequences");

pub const AUDIT_PREFIX: &str = "audit_";
pub const ACTIVITY_PREFIX: &str = "acte_";

/// One audited request: who, what, on what, when, and how it ended. Never a request
/// body or a secret's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Set by [`Records::append_audit`].
    #[serde(default)]
    pub id: String,
    pub account_id: String,
    pub project_id: Option<String>,
    /// `user`, `api_key`, `account_key`, or `None` for the platform.
    pub principal_type: Option<String>,
    pub principal_id: Option<String>,
    pub action: String,
    pub resource_srn: Option<String>,
    pub resource_public_id: Option<String>,
    pub status: u16,
    pub request_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub detail: Option<Value>,
    pub created_at: String,
}

/// One entry of a project's activity feed (activity.yaml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityEntry {
    #[serde(default)]
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// `action_executed`, `approval_resolved`, `exception_created`, `schedule_fired`.
    pub kind: String,
    /// `info`, `warning`, `critical`.
    pub severity: String,
    pub summary: String,
    pub detail: Option<Value>,
    pub agent_id: Option<String>,
    pub ref_id: Option<String>,
    pub created_at: String,
}

/// The sequence an id carries, if it is one of `prefix`'s.
pub fn sequence_of(prefix: &str, id: &str) -> Option<u64> {
    let digits = id.strip_prefix(prefix)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

fn key(account_id: &str, seq: u64) -> String {
    format!("{account_id}/{seq:020}")
}

fn next_in(txn: &WriteTx, log: &str) -> Result<u64, StoreError> {
    let seq = txn.count(SEQUENCES, log)?.unwrap_or(0) + 1;
    txn.put_count(SEQUENCES, log, seq)?;
    Ok(seq)
}

/// Appends `e` to its account's activity feed inside `txn` (the write that caused it).
pub(super) fn append_activity_in(txn: &WriteTx, e: &mut ActivityEntry) -> Result<(), StoreError> {
    let seq = next_in(txn, "activity")?;
    e.id = format!("{ACTIVITY_PREFIX}{seq:020}");
    txn.put_row(ACTIVITY, &key(&e.account_id, seq), &to_json(e))
}

fn all_of<T: serde::de::DeserializeOwned>(txn: &impl Read, t: Rows, account_id: &str, what: &str) -> Result<Vec<T>, StoreError> {
    let (start, end) = (format!("{account_id}/"), format!("{account_id}0"));
    txn.rows(t, Keys::Between(&start, &end))?.iter().map(|(_, v)| from_json(what, v)).collect()
}

/// A page of a log, newest first: the entries `keep` holds, after skipping `offset`,
/// at most `limit`; the walk ends at the first entry `past` holds (the log is in time
/// order, so an entry older than a `from` ends it).
pub struct LogQuery<'a, T> {
    pub keep: &'a dyn Fn(&T) -> bool,
    pub past: &'a dyn Fn(&T) -> bool,
    pub offset: usize,
    pub limit: usize,
    /// Count every kept entry (for a `total`), not only up to the page's end.
    pub count_all: bool,
}

/// A page and how many entries the query kept in all (when counted; else at least
/// the page's end, plus one when there are more).
pub struct LogPage<T> {
    pub entries: Vec<T>,
    pub total: usize,
}

fn page_of<T: serde::de::DeserializeOwned>(
    txn: &impl Read,
    t: Rows,
    start: &str,
    end: &str,
    q: &LogQuery<'_, T>,
    what: &str,
) -> Result<LogPage<T>, StoreError> {
    let (mut entries, mut total, mut failed) = (Vec::new(), 0usize, None);
    let stop = q.offset.saturating_add(q.limit);
    txn.walk(t, start, end, true, &mut |_, v| {
        let e: T = match from_json(what, v) {
            Ok(e) => e,
            Err(err) => {
                failed = Some(err);
                return false;
            }
        };
        if (q.past)(&e) {
            return false;
        }
        if (q.keep)(&e) {
            if total >= q.offset && total < stop {
                entries.push(e);
            }
            total += 1;
        }
        q.count_all || total <= stop
    })?;
    match failed {
        Some(err) => Err(err),
        None => Ok(LogPage { entries, total }),
    }
}

impl Records {
    /// A page of the account's audit log, newest first (see [`LogQuery`]).
    pub fn audit_page(&self, account_id: &str, q: &LogQuery<'_, AuditEntry>) -> Result<LogPage<AuditEntry>, StoreError> {
        page_of(&self.kv.read()?, AUDIT, &format!("{account_id}/"), &format!("{account_id}0"), q, "audit entry")
    }

    /// A page of the account's activity, newest first, from below the entry of sequence
    /// `before` (exclusive; `None`: from the newest).
    pub fn activity_page(
        &self,
        account_id: &str,
        before: Option<u64>,
        q: &LogQuery<'_, ActivityEntry>,
    ) -> Result<LogPage<ActivityEntry>, StoreError> {
        let end = before.map_or_else(|| format!("{account_id}0"), |b| key(account_id, b));
        page_of(&self.kv.read()?, ACTIVITY, &format!("{account_id}/"), &end, q, "activity entry")
    }

    /// Removes, account by account, the audit entries `expired` holds from the oldest
    /// on (up to the first it does not: the log is in time order); how many went.
    pub fn sweep_audit(&self, expired: &dyn Fn(&AuditEntry) -> bool) -> Result<usize, StoreError> {
        let (mut removed, mut start) = (0, String::new());
        loop {
            let (mut account, mut end, mut old) = (None::<String>, None::<String>, 0usize);
            self.kv.read()?.walk(AUDIT, &start, "\u{10FFFF}", false, &mut |k, v| {
                let acct = k.split('/').next().unwrap_or_default();
                match &account {
                    None => account = Some(acct.to_owned()),
                    Some(a) if a != acct => return false,
                    Some(_) => {}
                }
                if !from_json::<AuditEntry>("audit entry", v).is_ok_and(|e| expired(&e)) {
                    end = Some(k.to_owned());
                    return false;
                }
                old += 1;
                true
            })?;
            let Some(account) = account else { return Ok(removed) };
            if old > 0 {
                let txn = self.kv.write()?;
                txn.delete_rows(AUDIT, &format!("{account}/"), &end.unwrap_or_else(|| format!("{account}0")))?;
                txn.commit()?;
                removed += old;
            }
            start = format!("{account}0");
        }
    }

    pub(super) fn ensure_audit(&self) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        for t in [Table::Rows(AUDIT), Table::Rows(ACTIVITY), Table::Counts(SEQUENCES)] {
            txn.create(t)?;
        }
        txn.commit()
    }

    /// Appends `e` (its id set here), durable when this returns. Not charged to the
    /// account's stored characters (the platform's record of it, not its data; a full
    /// account is still audited, and a refused write does not change what it stores).
    pub fn append_audit(&self, e: &mut AuditEntry) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        let seq = next_in(&txn, "audit")?;
        e.id = format!("{AUDIT_PREFIX}{seq:020}");
        txn.put_row(AUDIT, &key(&e.account_id, seq), &to_json(e))?;
        txn.commit()
    }

    /// The account's audit entries, oldest first.
    pub fn audit_entries(&self, account_id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        all_of(&self.kv.read()?, AUDIT, account_id, "audit entry")
    }

    pub fn audit_entry(&self, account_id: &str, id: &str) -> Result<Option<AuditEntry>, StoreError> {
        let Some(seq) = sequence_of(AUDIT_PREFIX, id) else { return Ok(None) };
        get_json(&self.kv.read()?, AUDIT, &key(account_id, seq), "audit entry")
    }

    /// The account's activity, oldest first.
    pub fn activity(&self, account_id: &str) -> Result<Vec<ActivityEntry>, StoreError> {
        all_of(&self.kv.read()?, ACTIVITY, account_id, "activity entry")
    }
}
