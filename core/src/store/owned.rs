//! One generic table for every kind of record an account owns (collections today;
//! agents, versions, providers, secrets, tools, generations, traces, memory stores as
//! they come). A kind names its two tables and says whose it is; reads, writes and the
//! account check are written once here, so no kind has a read path of its own that
//! could forget the check: a record of another account is `None`, as if it did not
//! exist.
//!
//! Each kind has a table `id → JSON` and a multimap `account → id`. Every write is
//! one transaction, committed with fsync before it returns. Written against `kv`'s
//! tables, so every backend keeps them alike.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::kv::{Read, Rows, Sets, Table, WriteTx};
use super::{from_json, get_json, to_json, Charge, Records, StoreError};

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
#[doc(hidden)]
#[macro_export]
macro_rules! __owned_record {
    ($t:ty, $table:expr, $index:expr) => {
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
pub use crate::__owned_record as owned_record;

pub(super) fn records<R: Owned>() -> Rows {
    Rows(R::TABLE)
}

fn index<R: Owned>() -> Sets {
    Sets(R::INDEX)
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
        let txn = self.kv.write()?;
        txn.create(Table::Rows(records::<R>()))?;
        txn.create(Table::Sets(index::<R>()))?;
        txn.commit()
    }

    /// Adds a new record; `Conflict` when its id is taken.
    pub fn insert<R: Owned>(&self, r: &R) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        insert_in(&txn, r)?;
        self.commit_charged(txn, Charge::Capped(r.account_id()))
    }

    /// The record when it exists and belongs to `account_id`.
    pub fn get<R: Owned>(&self, account_id: &str, id: &str) -> Result<Option<R>, StoreError> {
        get_in(&self.kv.read()?, account_id, id)
    }

    /// The account's records of this kind, by id.
    pub fn list<R: Owned>(&self, account_id: &str) -> Result<Vec<R>, StoreError> {
        list_in(&self.kv.read()?, account_id)
    }

    /// Every record of this kind, of every account (start-up, operators).
    pub fn all<R: Owned>(&self) -> Result<Vec<R>, StoreError> {
        let rows = self.kv.read()?.rows(records::<R>(), super::kv::Keys::All)?;
        rows.iter().map(|(_, v)| from_json(R::TABLE, v)).collect()
    }

    /// Reads the account's record, lets `f` change it, and writes it back, all in one
    /// write transaction: a check `f` makes (a version, a state) holds when the write
    /// lands, since the store runs writes one at a time. `None` when there is no such
    /// record of this account. `f` may not change the id or the owner.
    pub fn update<R: Owned, T>(&self, account_id: &str, id: &str, f: impl FnOnce(&mut R) -> Change<T>) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut record) = get_in::<R>(&txn, account_id, id)? else { return Ok(None) };
        let out = match f(&mut record) {
            Change::Keep(t) => return Ok(Some(t)),
            Change::Write(t) => t,
        };
        assert!(record.id() == id && record.account_id() == account_id, "an update changed a record's id or owner");
        put_in(&txn, &record)?;
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(Some(out))
    }

    /// Removes the account's record; whether there was one.
    pub fn remove<R: Owned>(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let removed = remove_in::<R>(&txn, account_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(removed)
    }
}

// The same operations inside a transaction the caller holds, for writes that touch
// more than one kind or table at once (`store::soat`, `store::generations`).

/// Adds a new record; `Conflict` when its id is taken.
pub(super) fn insert_in<R: Owned>(txn: &WriteTx, r: &R) -> Result<(), StoreError> {
    if txn.row(records::<R>(), r.id())?.is_some() {
        return Err(StoreError::Conflict { what: format!("{} {}", R::TABLE, r.id()) });
    }
    txn.put_row(records::<R>(), r.id(), &to_json(r))?;
    txn.add_member(index::<R>(), r.account_id(), r.id())
}

/// Replaces a record that exists (its owner checked by the caller).
pub(super) fn put_in<R: Owned>(txn: &WriteTx, r: &R) -> Result<(), StoreError> {
    txn.put_row(records::<R>(), r.id(), &to_json(r))
}

/// The record when it exists and belongs to `account_id`.
pub(super) fn get_in<R: Owned>(txn: &impl Read, account_id: &str, id: &str) -> Result<Option<R>, StoreError> {
    let found: Option<R> = get_json(txn, records::<R>(), id, R::TABLE)?;
    Ok(found.filter(|r| r.account_id() == account_id))
}

/// The account's records of this kind, by id.
pub(super) fn list_in<R: Owned>(txn: &impl Read, account_id: &str) -> Result<Vec<R>, StoreError> {
    let mut out = Vec::new();
    for id in txn.members(index::<R>(), account_id)? {
        out.extend(get_json::<R>(txn, records::<R>(), &id, R::TABLE)?);
    }
    Ok(out)
}

/// Removes the account's record; whether there was one.
pub(super) fn remove_in<R: Owned>(txn: &WriteTx, account_id: &str, id: &str) -> Result<bool, StoreError> {
    if get_in::<R>(txn, account_id, id)?.is_none() {
        return Ok(false);
    }
    txn.delete_row(records::<R>(), id)?;
    txn.remove_member(index::<R>(), account_id, id)?;
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
