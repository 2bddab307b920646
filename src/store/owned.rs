//! One generic table for every kind of record an account owns (collections today;
//! agents, versions, providers, secrets, tools, generations, traces, memory stores as
//! they come). A kind names its two tables and says whose it is; reads, writes and the
//! account check are written once here, so no kind has a read path of its own that
//! could forget the check: a record of another account is `None`, as if it did not
//! exist.
//!
//! Each kind has a table `id → JSON` and a multimap `account → id`. Every write is
//! one transaction, committed with fsync before it returns.

use redb::{MultimapTableDefinition, ReadableDatabase, ReadableMultimapTable, ReadableTable, TableDefinition, TableError, WriteTransaction};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::Op;
use super::{from_json, to_json, Records, StoreError};

/// A kind of record an account owns.
pub trait Owned: Serialize + DeserializeOwned {
    /// The records table (`id → JSON`); also the kind's name in errors.
    const TABLE: &'static str;
    /// The index table (`account id → record ids`).
    const INDEX: &'static str;

    fn id(&self) -> &str;
    fn account_id(&self) -> &str;
}

/// `impl Owned` for a record struct with `id` and `account_id` fields, on its two tables:
/// `owned_record!(Type, "records table", "index table");`.
macro_rules! owned_record {
    ($t:ty, $table:literal, $index:literal) => {
        impl $crate::store::owned::Owned for $t {
            const TABLE: &'static str = $table;
            const INDEX: &'static str = $index;
            fn id(&self) -> &str {
                &self.id
            }
            fn account_id(&self) -> &str {
                &self.account_id
            }
        }
    };
}
pub(crate) use owned_record;

fn records<R: Owned>() -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(R::TABLE)
}

fn index<R: Owned>() -> MultimapTableDefinition<'static, &'static str, &'static str> {
    MultimapTableDefinition::new(R::INDEX)
}

/// What [`Records::update`]'s closure decides.
pub enum Change<T> {
    /// Write the changed record and return `T`.
    Write(T),
    /// Write nothing and return `T` (a no-op, a failed precondition).
    Keep(T),
}

impl Records {
    /// Creates the kind's tables if they are missing (at start-up, so readers never
    /// meet a missing table).
    pub fn ensure<R: Owned>(&self) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin create tables")?;
        txn.open_table(records::<R>()).op("create records table")?;
        txn.open_multimap_table(index::<R>()).op("create index table")?;
        txn.commit().op("commit create tables")
    }

    /// Adds a new record; `Conflict` when its id is taken.
    pub fn insert<R: Owned>(&self, r: &R) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin insert")?;
        insert_in(&txn, r)?;
        txn.commit().op("commit insert")
    }

    /// The record when it exists and belongs to `account_id`.
    pub fn get<R: Owned>(&self, account_id: &str, id: &str) -> Result<Option<R>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(records::<R>()) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            t => t.op("open records")?,
        };
        let found = table.get(id).op("read record")?.map(|v| from_json::<R>(R::TABLE, v.value())).transpose()?;
        Ok(found.filter(|r| r.account_id() == account_id))
    }

    /// The account's records of this kind, by id.
    pub fn list<R: Owned>(&self, account_id: &str) -> Result<Vec<R>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let (index, table) = match (txn.open_multimap_table(index::<R>()), txn.open_table(records::<R>())) {
            (Err(TableError::TableDoesNotExist(_)), _) | (_, Err(TableError::TableDoesNotExist(_))) => return Ok(Vec::new()),
            (i, t) => (i.op("open index")?, t.op("open records")?),
        };
        collect(&index, &table, account_id)
    }

    /// Every record of this kind, of every account (start-up, operators).
    pub fn all<R: Owned>(&self) -> Result<Vec<R>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(records::<R>()) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            t => t.op("open records")?,
        };
        let mut out = Vec::new();
        for row in table.iter().op("list records")? {
            out.push(from_json(R::TABLE, row.op("read record")?.1.value())?);
        }
        Ok(out)
    }

    /// Reads the account's record, lets `f` change it, and writes it back, all in one
    /// write transaction: a check `f` makes (a version, a state) holds when the write
    /// lands, since redb runs one writer at a time. `None` when there is no such
    /// record of this account. `f` may not change the id or the owner.
    pub fn update<R: Owned, T>(&self, account_id: &str, id: &str, f: impl FnOnce(&mut R) -> Change<T>) -> Result<Option<T>, StoreError> {
        let txn = self.db.begin_write().op("begin update")?;
        let out = {
            let mut table = txn.open_table(records::<R>()).op("open records")?;
            let current = table.get(id).op("read record")?.map(|v| from_json::<R>(R::TABLE, v.value())).transpose()?;
            let Some(mut record) = current.filter(|r| r.account_id() == account_id) else { return Ok(None) };
            match f(&mut record) {
                Change::Keep(t) => return Ok(Some(t)),
                Change::Write(t) => {
                    assert!(record.id() == id && record.account_id() == account_id, "an update changed a record's id or owner");
                    table.insert(id, to_json(&record).as_slice()).op("update record")?;
                    t
                }
            }
        };
        txn.commit().op("commit update")?;
        Ok(Some(out))
    }

    /// Removes the account's record; whether there was one.
    pub fn remove<R: Owned>(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.db.begin_write().op("begin remove")?;
        let removed = remove_in::<R>(&txn, account_id, id)?;
        txn.commit().op("commit remove")?;
        Ok(removed)
    }
}

// The same operations inside a write transaction the caller holds, for writes that
// touch more than one kind or table at once (`store::soat`).

/// Adds a new record; `Conflict` when its id is taken.
pub(super) fn insert_in<R: Owned>(txn: &WriteTransaction, r: &R) -> Result<(), StoreError> {
    let mut table = txn.open_table(records::<R>()).op("open records")?;
    if table.get(r.id()).op("look up id")?.is_some() {
        return Err(StoreError::Conflict { what: format!("{} {}", R::TABLE, r.id()) });
    }
    table.insert(r.id(), to_json(r).as_slice()).op("insert record")?;
    txn.open_multimap_table(index::<R>()).op("open index")?.insert(r.account_id(), r.id()).op("index record")?;
    Ok(())
}

/// The record when it exists and belongs to `account_id`.
pub(super) fn get_in<R: Owned>(txn: &WriteTransaction, account_id: &str, id: &str) -> Result<Option<R>, StoreError> {
    let table = txn.open_table(records::<R>()).op("open records")?;
    let found = table.get(id).op("read record")?.map(|v| from_json::<R>(R::TABLE, v.value())).transpose()?;
    Ok(found.filter(|r| r.account_id() == account_id))
}

/// The account's records of this kind, by id.
pub(super) fn list_in<R: Owned>(txn: &WriteTransaction, account_id: &str) -> Result<Vec<R>, StoreError> {
    let index = txn.open_multimap_table(index::<R>()).op("open index")?;
    let table = txn.open_table(records::<R>()).op("open records")?;
    collect(&index, &table, account_id)
}

fn collect<R: Owned>(
    index: &impl ReadableMultimapTable<&'static str, &'static str>,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    account_id: &str,
) -> Result<Vec<R>, StoreError> {
    let mut out = Vec::new();
    for id in index.get(account_id).op("list records")? {
        let id = id.op("read index")?;
        if let Some(v) = table.get(id.value()).op("read record")? {
            out.push(from_json::<R>(R::TABLE, v.value())?);
        }
    }
    Ok(out)
}

/// Removes the account's record; whether there was one.
pub(super) fn remove_in<R: Owned>(txn: &WriteTransaction, account_id: &str, id: &str) -> Result<bool, StoreError> {
    let mut table = txn.open_table(records::<R>()).op("open records")?;
    let current = table.get(id).op("read record")?.map(|v| from_json::<R>(R::TABLE, v.value())).transpose()?;
    if current.is_none_or(|r| r.account_id() != account_id) {
        return Ok(false);
    }
    table.remove(id).op("remove record")?;
    txn.open_multimap_table(index::<R>()).op("open index")?.remove(account_id, id).op("unindex record")?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note {
        id: String,
        account_id: String,
        text: String,
        version: u32,
    }

    owned_record!(Note, "test_notes", "test_notes_by_account");

    fn note(id: &str, account: &str) -> Note {
        Note { id: id.into(), account_id: account.into(), text: "hello".into(), version: 1 }
    }

    #[test]
    fn another_accounts_record_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        assert_eq!(r.get::<Note>("acc_a", "n1").unwrap(), None, "a kind never written reads as empty");
        assert!(r.list::<Note>("acc_a").unwrap().is_empty());
        r.insert(&note("n1", "acc_a")).unwrap();
        r.insert(&note("n2", "acc_a")).unwrap();
        r.insert(&note("n3", "acc_b")).unwrap();
        assert!(matches!(r.insert(&note("n1", "acc_b")), Err(StoreError::Conflict { .. })));
        assert_eq!(r.get::<Note>("acc_a", "n1").unwrap(), Some(note("n1", "acc_a")));
        assert_eq!(r.get::<Note>("acc_b", "n1").unwrap(), None);
        assert_eq!(r.list::<Note>("acc_a").unwrap().len(), 2);
        assert_eq!(r.all::<Note>().unwrap().len(), 3);
        assert!(!r.remove::<Note>("acc_b", "n1").unwrap(), "another account cannot remove it");
        assert!(r.remove::<Note>("acc_a", "n1").unwrap());
        assert_eq!(r.get::<Note>("acc_a", "n1").unwrap(), None);
        assert_eq!(r.list::<Note>("acc_a").unwrap().len(), 1);
    }

    #[test]
    fn updates_check_and_write_in_one_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let r = std::sync::Arc::new(Records::open(dir.path()).unwrap());
        r.insert(&note("n1", "acc_a")).unwrap();
        // Concurrent compare-and-set on the version: exactly one writer per version wins.
        let wins: usize = (0..8)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || {
                    r.update::<Note, bool>("acc_a", "n1", |n| {
                        if n.version != 1 {
                            return Change::Keep(false);
                        }
                        n.version = 2;
                        Change::Write(true)
                    })
                    .unwrap()
                    .unwrap()
                })
            })
            .map(|h| h.join().unwrap() as usize)
            .sum();
        assert_eq!(wins, 1);
        assert_eq!(r.get::<Note>("acc_a", "n1").unwrap().unwrap().version, 2);
        assert_eq!(r.update::<Note, ()>("acc_b", "n1", |_| Change::Write(())).unwrap(), None);
    }
}
