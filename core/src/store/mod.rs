//! The records store: accounts, keys, usage meters and every record family of the
//! agents platform, as typed records. The families are written once, against `kv`'s
//! tables and transactions; the database behind them is `kv`'s backend (redb at
//! `DATA/records.redb`, embedded, by default). This module is the only code that
//! touches a database; the rest of the server sees typed records.
//!
//! Writes commit durably (fsync) before they return. Reads see one consistent state and
//! never wait for the writer. Calls block, so the server runs writes on a blocking pool.

// SOAT actors (issue 36, actors).
pub mod actors;
pub mod agents;
mod charges;
// the cluster's membership and leases (issue 40)
pub mod cluster;
mod collections;
pub mod migrate;
// sessions: conversations, their messages and sessions.
pub mod conversations;
// SOAT documents (issue 36, knowledge).
mod documents;
mod error;
pub mod generations;
pub mod journal;
mod kv;
mod memory;
pub mod owned;
// quotas and usage meters (issue 37).
pub mod quotas;
// the usage price book (issue 37).
pub mod prices;
// usage thresholds (issue 37)
mod records;
mod soat;
pub mod thresholds;
mod tools;
// SOAT users and their login tokens (issue 36, users).
mod users;
// SOAT files' records (issue 36, files).
mod files;
// webhooks (issue 36)
pub mod webhooks;
// chats (issue 36)
mod chats;
// guardrails and approvals (issue 37)
pub mod approvals;
// policies, audit log, activity, exceptions (issue 37, policies)
pub mod audit;
pub mod exceptions;
mod policies;

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

// actors
pub use actors::ActorRecord;
pub use charges::{Charge, Ledger};
// sessions
pub use conversations::{ConversationMessageRecord, ConversationRecord, SessionRecord};
pub use documents::{is_documents_collection, is_hidden_collection, DocumentRecord, DOCUMENTS_COLLECTION_PREFIX};
pub use error::StoreError;
pub use files::FileRecord;
pub use kv::PostgresSettings;
use kv::{Counts, Kv, Names, Read, Rows, Sets, Table, WriteTx};
pub use memory::{is_memory_collection, MemoryEntryRecord, MemoryRecord, MEMORY_PREFIX};
pub use records::{AccountRecord, CollectionRecord, CollectionSettings, KeyRecord, MonthCounts, NewKey, AUTO_EMBEDDER};
pub use soat::{AiProviderRecord, ProjectKeyRecord, ProjectRecord};
pub use tools::{SecretRecord, ToolRecord};
pub use users::{UserRecord, UserTokenRecord};
pub use webhooks::{DeliveryRecord, WebhookRecord};
// chats (issue 36)
pub use chats::{ChatRecord, CHAT_PREFIX};
// guardrails and approvals (issue 37)
pub use approvals::{ApprovalRecord, APPROVAL_PREFIX};
// policies (issue 37)
pub use audit::{ActivityEntry, AuditEntry, LogPage, LogQuery};
pub use exceptions::ExceptionRecord;
pub use policies::PolicyRecord;
// quotas (issue 37)
pub use quotas::QuotaRecord;
// the usage price book (issue 37)
pub use prices::PriceRecord;
// usage thresholds (issue 37)
pub use thresholds::UsageThresholdRecord;

/// The schema this build writes. A store with a higher number is refused.
pub const SCHEMA_VERSION: u64 = 1;

const META: Counts = Counts("meta");
const ACCOUNTS: Rows = Rows("accounts");
const EMAILS: Names = Names("accounts_by_email");
const KEYS: Rows = Rows("keys");
const ACCOUNT_KEYS: Sets = Sets("account_keys");
const MONTHS: Rows = Rows("usage_by_month");
const STORAGE: Counts = Counts("stored_chars");
/// `account/month/meter` → the units of that month's allowance durably reserved (see
/// `limits::meters`): after a crash the month counts at least this.
const LEASES: Counts = Counts("usage_leases");

/// Where the records live (`[store]`): redb in the data directory (the default), or a
/// PostgreSQL database shared by every node that names it.
#[derive(Debug, Clone, Default)]
pub enum StoreSettings {
    #[default]
    Embedded,
    Postgres(PostgresSettings),
}

pub struct Records {
    kv: Kv,
    /// Collection records read (every search reads its collection's).
    collections: collections::Cache,
    /// What charges for records written (`charges`), set once at start-up.
    ledger: std::sync::OnceLock<std::sync::Arc<dyn Ledger>>,
    /// The data directory's lock (`DATA/LOCK`, an advisory file lock), held while the
    /// records are open: one process per data directory, whichever store it names.
    _dir_lock: std::fs::File,
}

/// Usage to write back: one account's month and its stored characters.
#[derive(Debug, Clone)]
pub struct MeterSnapshot {
    pub account_id: String,
    pub month: String,
    pub counts: MonthCounts,
    pub stored_chars: u64,
}

/// One node's usage since its last flush, on shared records (a cluster): added to what
/// every node wrote, never written over it.
#[derive(Debug, Clone)]
pub struct MeterDelta {
    pub account_id: String,
    pub month: String,
    /// Per meter, in [`MonthCounts::NAMES`] order (negative: a refund).
    pub counts: [i64; 4],
    pub stored_chars: i64,
    /// Per meter, units this node leased and did not spend, given back (at shutdown).
    pub unspent: [u64; 4],
}

/// Takes `dir/LOCK` (created if needed) for this process; released when the file is
/// closed, so a crash never leaves it taken.
fn lock_dir(dir: &Path) -> Result<std::fs::File, StoreError> {
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| StoreError::CreateDir { path: path.clone(), source })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked { path: dir.to_owned() }),
        Err(std::fs::TryLockError::Error(source)) => Err(StoreError::CreateDir { path, source }),
    }
}

impl Records {
    /// Opens (creating if needed) `dir/records.redb`, checking the schema version.
    pub fn open(dir: &Path) -> Result<Records, StoreError> {
        Records::open_with(dir, &StoreSettings::Embedded)
    }

    /// Opens the store `settings` names: `dir/records.redb` (created if needed), or the
    /// PostgreSQL database (migrated if needed); then checks the schema version.
    pub fn open_with(dir: &Path, settings: &StoreSettings) -> Result<Records, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: dir.to_owned(), source })?;
        let _dir_lock = lock_dir(dir)?;
        let mut kv = match settings {
            StoreSettings::Embedded => Kv::open_redb(&dir.join("records.redb"))?,
            StoreSettings::Postgres(settings) => Kv::open_postgres(settings)?,
        };
        let collections = collections::Cache::new(kv.watch(owned::records::<CollectionRecord>()), kv.shared());
        let records = Records { kv, collections, ledger: std::sync::OnceLock::new(), _dir_lock };
        records.check_schema()?;
        Ok(records)
    }

    /// Whether other processes may share these records (PostgreSQL): nodes of a cluster.
    pub fn shared(&self) -> bool {
        self.kv.shared()
    }

    /// Where the records are: the redb file's path, or the database's host, port and name.
    pub fn at(&self) -> String {
        self.kv.at()
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        match txn.count(META, "schema_version")? {
            Some(v) if v > SCHEMA_VERSION => return Err(StoreError::Version { at: self.kv.at(), found: v, expected: SCHEMA_VERSION }),
            Some(_) => {}
            None => txn.put_count(META, "schema_version", SCHEMA_VERSION)?,
        }
        // Create every table so readers never meet a missing one.
        for t in [
            Table::Rows(ACCOUNTS),
            Table::Names(EMAILS),
            Table::Rows(KEYS),
            Table::Sets(ACCOUNT_KEYS),
            Table::Rows(MONTHS),
            Table::Counts(STORAGE),
            Table::Counts(LEASES),
            Table::Counts(charges::RECORD_CHARS),
        ] {
            txn.create(t)?;
        }
        txn.commit()?;
        self.ensure::<CollectionRecord>()?;
        self.ensure_soat()?;
        self.ensure_generations()?;
        self.ensure_users()?;
        self.ensure_files()?;
        self.ensure_webhooks()?;
        // actors
        self.ensure_actors()?;
        // chats (issue 36)
        self.ensure_chats()?;
        // policies (issue 37)
        self.ensure::<PolicyRecord>()?;
        self.ensure::<ExceptionRecord>()?;
        self.ensure_audit()?;
        self.ensure_quotas()?; // quotas and usage (issue 37)
        self.ensure_prices()?; // the usage price book (issue 37)
        self.ensure_approvals()?; // approvals: the items and their expiry queue (issue 37)
        self.ensure_thresholds()?; // usage thresholds (issue 37)
        self.ensure_cluster()?; // membership and leases (issue 40)
        self.count_records_once()
    }

    /// Creates an account and its first key in one transaction. `next_key` is asked
    /// again while its prefix is already taken. Fails with `Conflict` when the email
    /// already has an account.
    pub fn create_account(&self, account: &AccountRecord, next_key: &mut dyn FnMut() -> NewKey, created_at: &str) -> Result<KeyRecord, StoreError> {
        let txn = self.kv.write()?;
        if txn.name(EMAILS, &account.email)?.is_some() {
            return Err(StoreError::Conflict { what: format!("an account for {}", account.email) });
        }
        txn.put_name(EMAILS, &account.email, &account.id)?;
        txn.put_row(ACCOUNTS, &account.id, &to_json(account))?;
        let key = insert_key(&txn, &account.id, next_key, created_at)?;
        txn.commit()?;
        Ok(key)
    }

    /// Adds a key to an existing account, refused with `TooManyKeys` when it already
    /// holds `max_active` unrevoked keys. The count and the insert are one write
    /// transaction, and the store runs writes one at a time (kv's promise), so
    /// concurrent adds cannot pass the cap between them.
    pub fn add_key(
        &self,
        account_id: &str,
        max_active: Option<u64>,
        next_key: &mut dyn FnMut() -> NewKey,
        created_at: &str,
    ) -> Result<KeyRecord, StoreError> {
        let txn = self.kv.write()?;
        if let Some(max) = max_active {
            let active = keys_of(&txn, account_id)?.iter().filter(|k| k.revoked_at.is_none()).count() as u64;
            if active >= max {
                return Err(StoreError::TooManyKeys { active, max });
            }
        }
        let key = insert_key(&txn, account_id, next_key, created_at)?;
        txn.commit()?;
        Ok(key)
    }

    pub fn account(&self, id: &str) -> Result<Option<AccountRecord>, StoreError> {
        get_json(&self.kv.read()?, ACCOUNTS, id, "account")
    }

    pub fn account_by_email(&self, email: &str) -> Result<Option<AccountRecord>, StoreError> {
        let txn = self.kv.read()?;
        match txn.name(EMAILS, email)? {
            Some(id) => get_json(&txn, ACCOUNTS, &id, "account"),
            None => Ok(None),
        }
    }

    pub fn accounts(&self) -> Result<Vec<AccountRecord>, StoreError> {
        let rows = self.kv.read()?.rows(ACCOUNTS, kv::Keys::All)?;
        rows.iter().map(|(_, v)| from_json("account", v)).collect()
    }

    /// Moves the account with this email to `plan`.
    pub fn set_plan(&self, email: &str, plan: &str) -> Result<Option<AccountRecord>, StoreError> {
        let txn = self.kv.write()?;
        let Some(id) = txn.name(EMAILS, email)? else { return Ok(None) };
        let Some(mut account) = get_json::<AccountRecord>(&txn, ACCOUNTS, &id, "account")? else {
            return Err(StoreError::Corrupt { what: format!("account {id}"), reason: "email index names a missing account".into() });
        };
        account.plan = plan.to_owned();
        txn.put_row(ACCOUNTS, &id, &to_json(&account))?;
        txn.commit()?;
        Ok(Some(account))
    }

    pub fn key(&self, prefix: &str) -> Result<Option<KeyRecord>, StoreError> {
        get_json(&self.kv.read()?, KEYS, prefix, "key")
    }

    /// The account's keys, oldest first.
    pub fn keys_of(&self, account_id: &str) -> Result<Vec<KeyRecord>, StoreError> {
        let mut out = keys_of(&self.kv.read()?, account_id)?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.prefix.cmp(&b.prefix)));
        Ok(out)
    }

    /// Marks the account's key revoked. `None` when the account has no such key;
    /// a key already revoked keeps its first revocation time.
    pub fn revoke_key(&self, account_id: &str, prefix: &str, at: &str) -> Result<Option<KeyRecord>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut key) = get_json::<KeyRecord>(&txn, KEYS, prefix, "key")?.filter(|k| k.account_id == account_id) else {
            return Ok(None);
        };
        if key.revoked_at.is_none() {
            key.revoked_at = Some(at.to_owned());
            txn.put_row(KEYS, prefix, &to_json(&key))?;
            txn.commit()?;
        }
        Ok(Some(key))
    }

    /// This month's counts and the stored characters of one account. A meter counts at
    /// least what was leased of it this month: units reserved before a crash, spent or
    /// not, stay spent.
    pub fn meters(&self, account_id: &str, month: &str) -> Result<(MonthCounts, u64), StoreError> {
        let txn = self.kv.read()?;
        let mut counts: MonthCounts = get_json(&txn, MONTHS, &month_key(account_id, month), "usage")?.unwrap_or_default();
        for (meter, count) in counts.each_mut() {
            let leased = txn.count(LEASES, &lease_key(account_id, month, meter))?.unwrap_or(0);
            *count = (*count).max(leased);
        }
        let stored = txn.count(STORAGE, account_id)?.unwrap_or(0);
        Ok((counts, stored))
    }

    /// On shared records: the month's counts every node has flushed, each at least
    /// what the cluster has leased of it (as on one node, units reserved before a crash
    /// stay spent; units a live node holds unspent are counted too until it spends or
    /// gives them back), and the stored characters.
    pub fn meters_shared(&self, account_id: &str, month: &str) -> Result<(MonthCounts, u64), StoreError> {
        self.meters(account_id, month)
    }

    /// On shared records: leases up to `want` more units of `meter` to one node, so the
    /// units every node has leased this month (the lease count is the cluster's total,
    /// starting from what is counted spent) never pass `limit`. Returns the units
    /// granted (0: the allowance is all leased); committed before it returns.
    pub fn lease_meter_shared(&self, account_id: &str, month: &str, meter: &str, want: u64, limit: u64) -> Result<u64, StoreError> {
        let txn = self.kv.write()?;
        let key = lease_key(account_id, month, meter);
        let total = match txn.count(LEASES, &key)? {
            Some(t) => t,
            None => {
                let mut counts: MonthCounts = get_json(&txn, MONTHS, &month_key(account_id, month), "usage")?.unwrap_or_default();
                let spent = counts.each_mut().into_iter().find(|(name, _)| *name == meter).map_or(0, |(_, c)| *c);
                spent
            }
        };
        let granted = want.min(limit.saturating_sub(total));
        if granted > 0 {
            txn.put_count(LEASES, &key, total + granted)?;
            txn.commit()?;
        }
        Ok(granted)
    }

    /// On shared records: adds each node's usage since its last flush to the month's
    /// counts and the stored characters, and gives unspent leases back, in one
    /// transaction. Returns each account's totals after it, in order.
    pub fn add_meters(&self, deltas: &[MeterDelta]) -> Result<Vec<(MonthCounts, u64)>, StoreError> {
        let txn = self.kv.write()?;
        let mut totals = Vec::with_capacity(deltas.len());
        for d in deltas {
            let key = month_key(&d.account_id, &d.month);
            let mut counts: MonthCounts = get_json(&txn, MONTHS, &key, "usage")?.unwrap_or_default();
            for (i, (meter, count)) in counts.each_mut().into_iter().enumerate() {
                *count = count.saturating_add_signed(d.counts[i]);
                if d.unspent[i] > 0 {
                    let lk = lease_key(&d.account_id, &d.month, meter);
                    if let Some(t) = txn.count(LEASES, &lk)? {
                        txn.put_count(LEASES, &lk, t.saturating_sub(d.unspent[i]).max(*count))?;
                    }
                }
            }
            if d.counts.iter().any(|&c| c != 0) {
                txn.put_row(MONTHS, &key, &to_json(&counts))?;
            }
            let stored = txn.count(STORAGE, &d.account_id)?.unwrap_or(0).saturating_add_signed(d.stored_chars);
            if d.stored_chars != 0 {
                txn.put_count(STORAGE, &d.account_id, stored)?;
            }
            // What the nodes see: at least what the cluster leased (`meters_shared`).
            for (meter, count) in counts.each_mut() {
                *count = (*count).max(txn.count(LEASES, &lease_key(&d.account_id, &d.month, meter))?.unwrap_or(0));
            }
            totals.push((counts, stored));
        }
        txn.commit()?;
        Ok(totals)
    }

    /// Durably reserves `upto` units of `meter` of the account's `month` (more than any
    /// lease before it); returns once committed.
    pub fn lease_meter(&self, account_id: &str, month: &str, meter: &str, upto: u64) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.put_count(LEASES, &lease_key(account_id, month, meter), upto)?;
        txn.commit()
    }

    /// Sets every account's stored characters to `truth` (what the index holds), in one
    /// transaction; an account absent from it stores nothing. Returns the accounts whose
    /// count changed, with the count before and after.
    pub fn reconcile_stored_chars(&self, truth: &BTreeMap<String, u64>) -> Result<Vec<(String, u64, u64)>, StoreError> {
        let txn = self.kv.write()?;
        let was: BTreeMap<String, u64> = txn.counts(STORAGE)?.into_iter().collect();
        let ids: std::collections::BTreeSet<&String> = was.keys().chain(truth.keys()).collect();
        let mut changed = Vec::new();
        for id in ids {
            let (before, after) = (was.get(id).copied().unwrap_or(0), truth.get(id).copied().unwrap_or(0));
            if before != after {
                txn.put_count(STORAGE, id, after)?;
                changed.push((id.clone(), before, after));
            }
        }
        txn.commit()?;
        Ok(changed)
    }

    /// Writes many accounts' meters in one transaction. With `release`, their leases of
    /// the month written go too: the counts written are then the whole truth (at
    /// shutdown, once nothing spends any more).
    pub fn save_meters(&self, snapshots: &[MeterSnapshot], release: bool) -> Result<(), StoreError> {
        if snapshots.is_empty() && !release {
            return Ok(());
        }
        let txn = self.kv.write()?;
        for s in snapshots {
            txn.put_row(MONTHS, &month_key(&s.account_id, &s.month), &to_json(&s.counts))?;
            txn.put_count(STORAGE, &s.account_id, s.stored_chars)?;
        }
        if release {
            for s in snapshots {
                for meter in MonthCounts::NAMES {
                    txn.delete_count(LEASES, &lease_key(&s.account_id, &s.month, meter))?;
                }
            }
        }
        txn.commit()
    }
}

/// The account's keys, in the index's order.
fn keys_of(txn: &impl Read, account_id: &str) -> Result<Vec<KeyRecord>, StoreError> {
    let mut out = Vec::new();
    for prefix in txn.members(ACCOUNT_KEYS, account_id)? {
        out.extend(get_json::<KeyRecord>(txn, KEYS, &prefix, "key")?);
    }
    Ok(out)
}

fn insert_key(txn: &WriteTx, account_id: &str, next_key: &mut dyn FnMut() -> NewKey, created_at: &str) -> Result<KeyRecord, StoreError> {
    let new = loop {
        let candidate = next_key();
        if txn.row(KEYS, &candidate.prefix)?.is_none() {
            break candidate;
        }
    };
    let record =
        KeyRecord { prefix: new.prefix, account_id: account_id.to_owned(), hash: new.hash, created_at: created_at.to_owned(), revoked_at: None };
    txn.put_row(KEYS, &record.prefix, &to_json(&record))?;
    txn.add_member(ACCOUNT_KEYS, account_id, &record.prefix)?;
    Ok(record)
}

fn month_key(account_id: &str, month: &str) -> String {
    format!("{account_id}/{month}")
}

fn lease_key(account_id: &str, month: &str, meter: &str) -> String {
    format!("{account_id}/{month}/{meter}")
}

/// The row's record, read as `what` for errors.
fn get_json<T: DeserializeOwned>(txn: &impl Read, t: Rows, key: &str, what: &str) -> Result<Option<T>, StoreError> {
    txn.row(t, key)?.map(|v| from_json(what, &v)).transpose()
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("records serialize")
}

fn from_json<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt { what: what.to_owned(), reason: e.to_string() })
}

#[cfg(test)]
mod tests;
