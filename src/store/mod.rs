//! The records store: accounts, keys and usage meters in one embedded ACID database
//! (redb) at `DATA/records.redb`. This module is the only code that touches it; the
//! rest of the server sees typed records.
//!
//! Writes commit with fsync before they return. Reads are MVCC snapshots that never
//! wait for the writer. Calls block, so the server runs writes on a blocking pool.

pub mod agents;
mod collections;
mod error;
pub mod generations;
mod memory;
pub mod owned;
mod records;
mod soat;
mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use redb::{Database, MultimapTableDefinition, ReadableDatabase, ReadableMultimapTable, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
use serde::Serialize;

use error::Op;
pub use error::StoreError;
pub use memory::{is_memory_collection, MemoryEntryRecord, MemoryRecord, MEMORY_PREFIX};
pub use records::{AccountRecord, CollectionRecord, CollectionSettings, KeyRecord, MonthCounts, NewKey};
pub use soat::{AiProviderRecord, ProjectKeyRecord, ProjectRecord};
pub use tools::{SecretRecord, ToolRecord};

/// The schema this build writes. A store with a higher number is refused.
pub const SCHEMA_VERSION: u64 = 1;

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const ACCOUNTS: TableDefinition<&str, &[u8]> = TableDefinition::new("accounts");
const EMAILS: TableDefinition<&str, &str> = TableDefinition::new("accounts_by_email");
const KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("keys");
const ACCOUNT_KEYS: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("account_keys");
const MONTHS: TableDefinition<&str, &[u8]> = TableDefinition::new("usage_by_month");
const STORAGE: TableDefinition<&str, u64> = TableDefinition::new("stored_chars");

pub struct Records {
    db: Database,
    path: PathBuf,
}

/// Usage to write back: one account's month and its stored characters.
#[derive(Debug, Clone)]
pub struct MeterSnapshot {
    pub account_id: String,
    pub month: String,
    pub counts: MonthCounts,
    pub stored_chars: u64,
}

impl Records {
    /// Opens (creating if needed) `dir/records.redb`, checking the schema version.
    pub fn open(dir: &Path) -> Result<Records, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: dir.to_owned(), source })?;
        let path = dir.join("records.redb");
        let db = Database::create(&path).map_err(|source| match source {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked { path: path.clone() },
            source => StoreError::Open { path: path.clone(), source },
        })?;
        let records = Records { db, path };
        records.check_schema()?;
        Ok(records)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin schema check")?;
        {
            let mut meta = txn.open_table(META).op("open meta")?;
            let found = meta.get("schema_version").op("read schema version")?.map(|v| v.value());
            match found {
                Some(v) if v > SCHEMA_VERSION => return Err(StoreError::Version { path: self.path.clone(), found: v, expected: SCHEMA_VERSION }),
                Some(_) => {}
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION).op("write schema version")?;
                }
            }
            // Create every table so readers never meet a missing one.
            txn.open_table(ACCOUNTS).op("create accounts")?;
            txn.open_table(EMAILS).op("create emails")?;
            txn.open_table(KEYS).op("create keys")?;
            txn.open_multimap_table(ACCOUNT_KEYS).op("create account keys")?;
            txn.open_table(MONTHS).op("create usage")?;
            txn.open_table(STORAGE).op("create storage")?;
        }
        txn.commit().op("commit schema check")?;
        self.ensure::<CollectionRecord>()?;
        self.ensure_soat()?;
        self.ensure_generations()
    }

    /// Creates an account and its first key in one transaction. `next_key` is asked
    /// again while its prefix is already taken. Fails with `Conflict` when the email
    /// already has an account.
    pub fn create_account(&self, account: &AccountRecord, next_key: &mut dyn FnMut() -> NewKey, created_at: &str) -> Result<KeyRecord, StoreError> {
        let txn = self.db.begin_write().op("begin create account")?;
        let key = {
            let mut emails = txn.open_table(EMAILS).op("open emails")?;
            if emails.get(account.email.as_str()).op("look up email")?.is_some() {
                return Err(StoreError::Conflict { what: format!("an account for {}", account.email) });
            }
            emails.insert(account.email.as_str(), account.id.as_str()).op("insert email")?;
            let mut accounts = txn.open_table(ACCOUNTS).op("open accounts")?;
            accounts.insert(account.id.as_str(), to_json(account).as_slice()).op("insert account")?;
            insert_key(&txn, &account.id, next_key, created_at)?
        };
        txn.commit().op("commit create account")?;
        Ok(key)
    }

    /// Adds a key to an existing account, refused with `TooManyKeys` when it already
    /// holds `max_active` unrevoked keys. The count and the insert are one write
    /// transaction, and redb runs one writer at a time, so concurrent adds cannot
    /// pass the cap between them.
    pub fn add_key(
        &self,
        account_id: &str,
        max_active: Option<u64>,
        next_key: &mut dyn FnMut() -> NewKey,
        created_at: &str,
    ) -> Result<KeyRecord, StoreError> {
        let txn = self.db.begin_write().op("begin add key")?;
        if let Some(max) = max_active {
            let active = active_keys(&txn, account_id)?;
            if active >= max {
                return Err(StoreError::TooManyKeys { active, max });
            }
        }
        let key = insert_key(&txn, account_id, next_key, created_at)?;
        txn.commit().op("commit add key")?;
        Ok(key)
    }

    pub fn account(&self, id: &str) -> Result<Option<AccountRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = txn.open_table(ACCOUNTS).op("open accounts")?;
        let value = table.get(id).op("read account")?;
        value.map(|v| from_json("account", v.value())).transpose()
    }

    pub fn account_by_email(&self, email: &str) -> Result<Option<AccountRecord>, StoreError> {
        let id = {
            let txn = self.db.begin_read().op("begin read")?;
            let table = txn.open_table(EMAILS).op("open emails")?;
            let id = table.get(email).op("look up email")?.map(|v| v.value().to_owned());
            id
        };
        match id {
            Some(id) => self.account(&id),
            None => Ok(None),
        }
    }

    pub fn accounts(&self) -> Result<Vec<AccountRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = txn.open_table(ACCOUNTS).op("open accounts")?;
        let mut out = Vec::new();
        for row in table.iter().op("list accounts")? {
            let (_, v) = row.op("read account")?;
            out.push(from_json("account", v.value())?);
        }
        Ok(out)
    }

    /// Moves the account with this email to `plan`.
    pub fn set_plan(&self, email: &str, plan: &str) -> Result<Option<AccountRecord>, StoreError> {
        let txn = self.db.begin_write().op("begin set plan")?;
        let updated = {
            let emails = txn.open_table(EMAILS).op("open emails")?;
            let Some(id) = emails.get(email).op("look up email")?.map(|v| v.value().to_owned()) else {
                return Ok(None);
            };
            let mut accounts = txn.open_table(ACCOUNTS).op("open accounts")?;
            let mut account: AccountRecord = match accounts.get(id.as_str()).op("read account")? {
                Some(v) => from_json("account", v.value())?,
                None => return Err(StoreError::Corrupt { what: format!("account {id}"), reason: "email index names a missing account".into() }),
            };
            account.plan = plan.to_owned();
            accounts.insert(id.as_str(), to_json(&account).as_slice()).op("update account")?;
            account
        };
        txn.commit().op("commit set plan")?;
        Ok(Some(updated))
    }

    pub fn key(&self, prefix: &str) -> Result<Option<KeyRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = txn.open_table(KEYS).op("open keys")?;
        let value = table.get(prefix).op("read key")?;
        value.map(|v| from_json("key", v.value())).transpose()
    }

    /// The account's keys, oldest first.
    pub fn keys_of(&self, account_id: &str) -> Result<Vec<KeyRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let index = txn.open_multimap_table(ACCOUNT_KEYS).op("open account keys")?;
        let keys = txn.open_table(KEYS).op("open keys")?;
        let mut out = Vec::new();
        for prefix in index.get(account_id).op("list keys")? {
            let prefix = prefix.op("read key index")?;
            if let Some(v) = keys.get(prefix.value()).op("read key")? {
                out.push(from_json::<KeyRecord>("key", v.value())?);
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.prefix.cmp(&b.prefix)));
        Ok(out)
    }

    /// Marks the account's key revoked. `None` when the account has no such key;
    /// a key already revoked keeps its first revocation time.
    pub fn revoke_key(&self, account_id: &str, prefix: &str, at: &str) -> Result<Option<KeyRecord>, StoreError> {
        let txn = self.db.begin_write().op("begin revoke")?;
        let key = {
            let mut keys = txn.open_table(KEYS).op("open keys")?;
            let mut key: KeyRecord = match keys.get(prefix).op("read key")? {
                Some(v) => from_json("key", v.value())?,
                None => return Ok(None),
            };
            if key.account_id != account_id {
                return Ok(None);
            }
            if key.revoked_at.is_none() {
                key.revoked_at = Some(at.to_owned());
                keys.insert(prefix, to_json(&key).as_slice()).op("write key")?;
            }
            key
        };
        txn.commit().op("commit revoke")?;
        Ok(Some(key))
    }

    /// This month's counts and the stored characters of one account.
    pub fn meters(&self, account_id: &str, month: &str) -> Result<(MonthCounts, u64), StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let months = txn.open_table(MONTHS).op("open usage")?;
        let counts = match months.get(month_key(account_id, month).as_str()).op("read usage")? {
            Some(v) => from_json("usage", v.value())?,
            None => MonthCounts::default(),
        };
        let storage = txn.open_table(STORAGE).op("open storage")?;
        let stored = storage.get(account_id).op("read storage")?.map_or(0, |v| v.value());
        Ok((counts, stored))
    }

    /// Sets every account's stored characters to `truth` (what the index holds), in one
    /// transaction; an account absent from it stores nothing. Returns the accounts whose
    /// count changed, with the count before and after.
    pub fn reconcile_stored_chars(&self, truth: &BTreeMap<String, u64>) -> Result<Vec<(String, u64, u64)>, StoreError> {
        let txn = self.db.begin_write().op("begin reconcile storage")?;
        let mut changed = Vec::new();
        {
            let mut storage = txn.open_table(STORAGE).op("open storage")?;
            let mut was = BTreeMap::new();
            for row in storage.iter().op("list storage")? {
                let (id, n) = row.op("read storage")?;
                was.insert(id.value().to_owned(), n.value());
            }
            let ids: std::collections::BTreeSet<&String> = was.keys().chain(truth.keys()).collect();
            for id in ids {
                let (before, after) = (was.get(id).copied().unwrap_or(0), truth.get(id).copied().unwrap_or(0));
                if before != after {
                    storage.insert(id.as_str(), after).op("write storage")?;
                    changed.push((id.clone(), before, after));
                }
            }
        }
        txn.commit().op("commit reconcile storage")?;
        Ok(changed)
    }

    /// Writes many accounts' meters in one transaction.
    pub fn save_meters(&self, snapshots: &[MeterSnapshot]) -> Result<(), StoreError> {
        if snapshots.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write().op("begin save usage")?;
        {
            let mut months = txn.open_table(MONTHS).op("open usage")?;
            let mut storage = txn.open_table(STORAGE).op("open storage")?;
            for s in snapshots {
                let key = month_key(&s.account_id, &s.month);
                months.insert(key.as_str(), to_json(&s.counts).as_slice()).op("write usage")?;
                storage.insert(s.account_id.as_str(), s.stored_chars).op("write storage")?;
            }
        }
        txn.commit().op("commit usage")
    }
}

/// The account's unrevoked keys, counted inside a write transaction.
fn active_keys(txn: &redb::WriteTransaction, account_id: &str) -> Result<u64, StoreError> {
    let index = txn.open_multimap_table(ACCOUNT_KEYS).op("open account keys")?;
    let keys = txn.open_table(KEYS).op("open keys")?;
    let mut active = 0;
    for prefix in index.get(account_id).op("list keys")? {
        let prefix = prefix.op("read key index")?;
        if let Some(v) = keys.get(prefix.value()).op("read key")? {
            active += u64::from(from_json::<KeyRecord>("key", v.value())?.revoked_at.is_none());
        }
    }
    Ok(active)
}

fn insert_key(
    txn: &redb::WriteTransaction,
    account_id: &str,
    next_key: &mut dyn FnMut() -> NewKey,
    created_at: &str,
) -> Result<KeyRecord, StoreError> {
    let mut keys = txn.open_table(KEYS).op("open keys")?;
    let new = loop {
        let candidate = next_key();
        if keys.get(candidate.prefix.as_str()).op("look up key prefix")?.is_none() {
            break candidate;
        }
    };
    let record =
        KeyRecord { prefix: new.prefix, account_id: account_id.to_owned(), hash: new.hash, created_at: created_at.to_owned(), revoked_at: None };
    keys.insert(record.prefix.as_str(), to_json(&record).as_slice()).op("insert key")?;
    let mut index = txn.open_multimap_table(ACCOUNT_KEYS).op("open account keys")?;
    index.insert(account_id, record.prefix.as_str()).op("index key")?;
    Ok(record)
}

fn month_key(account_id: &str, month: &str) -> String {
    format!("{account_id}/{month}")
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("records serialize")
}

fn from_json<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt { what: what.to_owned(), reason: e.to_string() })
}

#[cfg(test)]
mod tests;
