//! The store's one interface to a database: named tables of five shapes, read in
//! transactions that see one consistent state and written in transactions that land
//! whole or not at all. Every record family (`store::*`) is written against this, never
//! against a database's own API, so a backend is this module's to add: redb (embedded,
//! the default; `redb.rs`) and PostgreSQL (shared; `postgres.rs`).
//!
//! What a backend promises: a write transaction's reads see its own writes; its checks
//! hold when it commits (redb runs one writer at a time; a backend that runs writers
//! concurrently must make them serializable); `commit` returns once the transaction is
//! durable; a write transaction dropped without `commit` leaves nothing behind; and a
//! write of rows or log entries says how many characters it stored and removed, which
//! [`WriteTx::written`] adds up (so an account can be charged for what its records hold).

pub(super) mod postgres;
mod redb;

pub use postgres::Settings as PostgresSettings;

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::StoreError;

/// `key → bytes` (a record's JSON).
#[derive(Debug, Clone, Copy)]
pub struct Rows(pub &'static str);

/// `key → text` (an index: an email's account, a prefix's key id).
#[derive(Debug, Clone, Copy)]
pub struct Names(pub &'static str);

/// `key → u64` (a counter, a schema number).
#[derive(Debug, Clone, Copy)]
pub struct Counts(pub &'static str);

/// `key → a set of text` (an account's record ids, an agent's dependents).
#[derive(Debug, Clone, Copy)]
pub struct Sets(pub &'static str);

/// `(key, sequence) → text`, read in sequence order (a generation's events).
#[derive(Debug, Clone, Copy)]
pub struct Logs(pub &'static str);

/// Any table, for creating them all at start-up.
#[derive(Debug, Clone, Copy)]
pub enum Table {
    Rows(Rows),
    Names(Names),
    Counts(Counts),
    Sets(Sets),
    Logs(Logs),
}

/// Which keys of a `Rows` table a scan reads, in key order.
#[derive(Debug, Clone, Copy)]
pub enum Keys<'a> {
    All,
    /// `start <= key < end`.
    Between(&'a str, &'a str),
}

/// One entry of the store, whatever its table's shape: what `quarry migrate` copies
/// from one backend to the other and compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    Row { table: String, key: String, value: Vec<u8> },
    Name { table: String, key: String, value: String },
    Count { table: String, key: String, value: u64 },
    Member { table: String, key: String, member: String },
    Log { table: String, key: String, seq: u64, data: String },
}

impl Entry {
    /// What the entry is kept under: two entries with the same place are one record.
    pub fn place(&self) -> (u8, String, String, String) {
        let (shape, table, key, within) = match self {
            Entry::Row { table, key, .. } => (0, table, key, String::new()),
            Entry::Name { table, key, .. } => (1, table, key, String::new()),
            Entry::Count { table, key, .. } => (2, table, key, String::new()),
            Entry::Member { table, key, member } => (3, table, key, member.clone()),
            Entry::Log { table, key, seq, .. } => (4, table, key, format!("{seq:020}")),
        };
        (shape, table.clone(), key.clone(), within)
    }

    /// Its shape's name, for reports.
    pub fn shape(&self) -> &'static str {
        match self {
            Entry::Row { .. } => "rows",
            Entry::Name { .. } => "names",
            Entry::Count { .. } => "counts",
            Entry::Member { .. } => "set members",
            Entry::Log { .. } => "log entries",
        }
    }
}

/// A table's name for the typed interface, which names tables `'static`: the few
/// names a whole-store pass meets are kept once for the process's life.
fn static_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().expect("names lock");
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(n);
    n
}

/// What both kinds of transaction read.
pub trait Read {
    fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// `(key, value)` in key order.
    fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
    fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError>;
    fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError>;
    fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError>;
    fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError>;
    /// `(key, value)` with `start <= key < end`, in key order.
    fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError>;
    /// The set's members, in order.
    fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError>;
    /// The entries of `key` with a sequence above `after`, in order.
    fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError>;
    /// Every row of every `Rows` table, as `(table, key, value)`: for a pass over the
    /// whole store (the records' recount), not for requests.
    fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError>;
    /// The rows `start <= key < end` one at a time, in key order or (`back`) the
    /// reverse, until `f` returns false: a page read without loading the range.
    fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError>;
}

/// The database, whichever backend holds it, and the one table whose changes it
/// counts (see [`Kv::watch`]).
pub struct Kv {
    db: Db,
    watched: Option<Watched>,
}

enum Db {
    Redb(redb::Db),
    Postgres(postgres::Db),
}

/// A table whose committed changes are counted: a cache of its rows is good while the
/// count stands.
#[derive(Clone)]
struct Watched {
    table: &'static str,
    changes: Arc<AtomicU64>,
}

impl Kv {
    /// Opens (creating if needed) the embedded store at `path`.
    pub fn open_redb(path: &Path) -> Result<Kv, StoreError> {
        Ok(Kv { db: Db::Redb(redb::Db::open(path)?), watched: None })
    }

    /// Connects to the PostgreSQL database `settings` names, applying its migrations.
    pub fn open_postgres(settings: &PostgresSettings) -> Result<Kv, StoreError> {
        Ok(Kv { db: Db::Postgres(postgres::Db::open(settings)?), watched: None })
    }

    /// Counts the write transactions that commit a change to `t`'s rows from now on,
    /// in this process: the count a cache of those rows is checked against.
    pub fn watch(&mut self, t: Rows) -> Arc<AtomicU64> {
        let changes = Arc::new(AtomicU64::new(0));
        self.watched = Some(Watched { table: t.0, changes: changes.clone() });
        changes
    }

    /// Whether other processes may write the same database (so a cache of its rows
    /// must not outlive a short freshness bound).
    pub fn shared(&self) -> bool {
        matches!(self.db, Db::Postgres(_))
    }

    /// The PostgreSQL database, when that is the backend (the shared journal's home).
    pub fn postgres(&self) -> Option<&postgres::Db> {
        match &self.db {
            Db::Postgres(db) => Some(db),
            Db::Redb(_) => None,
        }
    }

    /// Where the store is, for messages: a path, or a database's host, port and name.
    pub fn at(&self) -> String {
        match &self.db {
            Db::Redb(db) => db.at(),
            Db::Postgres(db) => db.at().to_owned(),
        }
    }

    /// Every entry of every table, in one snapshot: a whole-store pass (`quarry
    /// migrate`), not for requests.
    pub fn every_entry(&self, f: &mut dyn FnMut(Entry)) -> Result<(), StoreError> {
        match &self.db {
            Db::Redb(db) => db.read()?.every_entry(f),
            Db::Postgres(db) => db.read()?.every_entry(f),
        }
    }

    /// Writes `entries` in one transaction, each replacing what its place held.
    pub fn put_entries(&self, entries: &[Entry]) -> Result<(), StoreError> {
        let tx = self.write()?;
        for e in entries {
            match e {
                Entry::Row { table, key, value } => tx.put_row(Rows(static_name(table)), key, value)?,
                Entry::Name { table, key, value } => tx.put_name(Names(static_name(table)), key, value)?,
                Entry::Count { table, key, value } => tx.put_count(Counts(static_name(table)), key, *value)?,
                Entry::Member { table, key, member } => tx.add_member(Sets(static_name(table)), key, member)?,
                Entry::Log { table, key, seq, data } => tx.append(Logs(static_name(table)), key, [(*seq, data.as_str())])?,
            }
        }
        tx.commit()
    }

    pub fn read(&self) -> Result<ReadTx, StoreError> {
        match &self.db {
            Db::Redb(db) => Ok(ReadTx::Redb(db.read()?)),
            Db::Postgres(db) => Ok(ReadTx::Postgres(db.read()?)),
        }
    }

    pub fn write(&self) -> Result<WriteTx, StoreError> {
        let tx = match &self.db {
            Db::Redb(db) => Backend::Redb(db.write()?),
            Db::Postgres(db) => Backend::Postgres(db.write()?),
        };
        Ok(WriteTx { tx, written: Cell::new(0), watched: self.watched.clone(), touched: Cell::new(false) })
    }
}

/// A consistent view of the store. (Its variants differ in size; one lives per
/// transaction, briefly, and boxing would allocate on every redb transaction.)
#[allow(clippy::large_enum_variant)]
pub enum ReadTx {
    Redb(redb::ReadTx),
    Postgres(postgres::ReadTx),
}

/// A transaction that lands whole on `commit`, or not at all when dropped.
pub struct WriteTx {
    tx: Backend,
    /// Characters of rows and log entries stored, less those removed.
    written: Cell<i64>,
    watched: Option<Watched>,
    /// Whether it changed the watched table's rows.
    touched: Cell<bool>,
}

/// A backend's write transaction (sizes differ, as [`ReadTx`]'s do).
#[allow(clippy::large_enum_variant)]
enum Backend {
    Redb(redb::WriteTx),
    Postgres(postgres::WriteTx),
}

macro_rules! dispatch {
    ($self:ident, $tx:ident => $call:expr) => {
        match $self {
            Self::Redb($tx) => $call,
            Self::Postgres($tx) => $call,
        }
    };
}

/// A write, dispatched to the transaction's backend.
macro_rules! on_backend {
    ($self:ident, $tx:ident => $call:expr) => {
        match &$self.tx {
            Backend::Redb($tx) => $call,
            Backend::Postgres($tx) => $call,
        }
    };
}

/// `Read` for a transaction enum, each method its backend's.
macro_rules! reads {
    ($tx:ty) => {
        impl Read for $tx {
            fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
                dispatch!(self, tx => tx.row(t, key))
            }
            fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
                dispatch!(self, tx => tx.rows(t, keys))
            }
            fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
                dispatch!(self, tx => tx.name(t, key))
            }
            fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
                dispatch!(self, tx => tx.names(t))
            }
            fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
                dispatch!(self, tx => tx.count(t, key))
            }
            fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
                dispatch!(self, tx => tx.counts(t))
            }
            fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
                dispatch!(self, tx => tx.counts_between(t, start, end))
            }
            fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
                dispatch!(self, tx => tx.members(t, key))
            }
            fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
                dispatch!(self, tx => tx.log(t, key, after))
            }
            fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
                dispatch!(self, tx => tx.every_row(f))
            }
            fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
                dispatch!(self, tx => tx.walk(t, start, end, back, f))
            }
        }
    };
}

reads!(ReadTx);
reads!(Backend);

impl Read for WriteTx {
    fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.tx.row(t, key)
    }
    fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.tx.rows(t, keys)
    }
    fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
        self.tx.name(t, key)
    }
    fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
        self.tx.names(t)
    }
    fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
        self.tx.count(t, key)
    }
    fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
        self.tx.counts(t)
    }
    fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
        self.tx.counts_between(t, start, end)
    }
    fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
        self.tx.members(t, key)
    }
    fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        self.tx.log(t, key, after)
    }
    fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
        self.tx.every_row(f)
    }
    fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
        self.tx.walk(t, start, end, back, f)
    }
}

/// Characters (Unicode scalar values) of UTF-8 `bytes`: every byte but continuations.
pub fn chars(bytes: &[u8]) -> i64 {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count() as i64
}

impl WriteTx {
    /// Characters stored by this transaction's rows (key and value) and log entries,
    /// less those it removed or overwrote: what it adds to what the store holds.
    pub fn written(&self) -> i64 {
        self.written.get()
    }

    /// Counts `delta` characters more as written, for what a record stands for outside
    /// the store (a file's bytes on disk, `store::files`), so the account is charged them.
    pub fn wrote_outside(&self, delta: i64) {
        self.wrote(delta);
    }

    fn touch(&self, t: Rows) {
        if self.watched.as_ref().is_some_and(|w| w.table == t.0) {
            self.touched.set(true);
        }
    }

    fn wrote(&self, delta: i64) {
        self.written.set(self.written.get() + delta);
    }

    /// Makes the table if it is missing (at start-up, so readers never meet a missing one).
    pub fn create(&self, t: Table) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.create(t))
    }
    pub fn put_row(&self, t: Rows, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.touch(t);
        let old = on_backend!(self, tx => tx.put_row(t, key, value))?;
        self.wrote(match old {
            Some(old) => chars(value) - old,
            None => chars(key.as_bytes()) + chars(value),
        });
        Ok(())
    }
    /// Whether there was such a row.
    pub fn delete_row(&self, t: Rows, key: &str) -> Result<bool, StoreError> {
        self.touch(t);
        let old = on_backend!(self, tx => tx.delete_row(t, key))?;
        if let Some(old) = old {
            self.wrote(-(chars(key.as_bytes()) + old));
        }
        Ok(old.is_some())
    }
    /// Deletes every row `start <= key < end`.
    pub fn delete_rows(&self, t: Rows, start: &str, end: &str) -> Result<(), StoreError> {
        self.touch(t);
        let removed = on_backend!(self, tx => tx.delete_rows(t, start, end))?;
        self.wrote(-removed);
        Ok(())
    }
    pub fn put_name(&self, t: Names, key: &str, value: &str) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.put_name(t, key, value))
    }
    pub fn delete_name(&self, t: Names, key: &str) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.delete_name(t, key))
    }
    pub fn put_count(&self, t: Counts, key: &str, value: u64) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.put_count(t, key, value))
    }
    pub fn delete_count(&self, t: Counts, key: &str) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.delete_count(t, key))
    }
    pub fn add_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.add_member(t, key, member))
    }
    pub fn remove_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        on_backend!(self, tx => tx.remove_member(t, key, member))
    }
    /// Appends `(sequence, data)` entries to `key`'s log.
    pub fn append<'a>(&self, t: Logs, key: &str, entries: impl IntoIterator<Item = (u64, &'a str)>) -> Result<(), StoreError> {
        let added = on_backend!(self, tx => tx.append(t, key, entries))?;
        self.wrote(added);
        Ok(())
    }
    /// Drops every entry of `key`.
    pub fn drop_log(&self, t: Logs, key: &str) -> Result<(), StoreError> {
        let removed = on_backend!(self, tx => tx.drop_log(t, key))?;
        self.wrote(-removed);
        Ok(())
    }
    /// Durable when it returns.
    /// [`postgres::WriteTx::journal_publish`]; the embedded backend keeps no journal.
    pub fn journal_publish(&self, id: &str, from: u64, to: u64, covered: u64, epoch: u64) -> Result<bool, StoreError> {
        match &self.tx {
            Backend::Postgres(tx) => tx.journal_publish(id, from, to, covered, epoch),
            Backend::Redb(_) => Err(StoreError::Corrupt { what: "the shared journal".into(), reason: "the embedded store keeps none".into() }),
        }
    }

    pub fn commit(self) -> Result<(), StoreError> {
        match self.tx {
            Backend::Redb(tx) => tx.commit(),
            Backend::Postgres(tx) => tx.commit(),
        }?;
        if let Some(w) = self.watched.filter(|_| self.touched.get()) {
            w.changes.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests;
