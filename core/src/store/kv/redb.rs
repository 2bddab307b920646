//! The embedded backend: redb at `DATA/records.redb`. Its tables keep the types they
//! have always had on disk (`&str → &[u8]`, `&str → &str`, `&str → u64`, multimaps of
//! `&str`, `(&str, u64) → &str`), so old data directories open. redb runs one writer at
//! a time and commits with fsync; readers are MVCC snapshots that never wait.

use std::path::Path;

use redb::{
    Database, MultimapTableDefinition, MultimapTableHandle, ReadTransaction, ReadableDatabase, ReadableMultimapTable, ReadableTable, TableDefinition,
    TableError, TableHandle, WriteTransaction,
};

use super::{chars, Counts, Keys, Logs, Names, Rows, Sets, Table};
use crate::store::StoreError;

pub struct Db(Database, std::path::PathBuf);

pub struct ReadTx(ReadTransaction);

pub struct WriteTx(WriteTransaction);

fn rows(t: Rows) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(t.0)
}

fn names(t: Names) -> TableDefinition<'static, &'static str, &'static str> {
    TableDefinition::new(t.0)
}

fn counts(t: Counts) -> TableDefinition<'static, &'static str, u64> {
    TableDefinition::new(t.0)
}

fn sets(t: Sets) -> MultimapTableDefinition<'static, &'static str, &'static str> {
    MultimapTableDefinition::new(t.0)
}

fn logs(t: Logs) -> TableDefinition<'static, (&'static str, u64), &'static str> {
    TableDefinition::new(t.0)
}

/// Names the operation and the table of any redb error.
trait On<T> {
    fn on(self, op: &'static str, table: &'static str) -> Result<T, StoreError>;
}

impl<T, E: Into<redb::Error>> On<T> for Result<T, E> {
    fn on(self, op: &'static str, table: &'static str) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::Table { op, table, source: e.into() })
    }
}

impl Db {
    pub fn open(path: &Path) -> Result<Db, StoreError> {
        let db = Database::create(path).map_err(|source| match source {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked { path: path.to_owned() },
            source => StoreError::Open { path: path.to_owned(), source },
        })?;
        Ok(Db(db, path.to_owned()))
    }

    pub fn at(&self) -> String {
        self.1.display().to_string()
    }

    pub fn read(&self) -> Result<ReadTx, StoreError> {
        self.0.begin_read().on("begin", "a read").map(ReadTx)
    }

    pub fn write(&self) -> Result<WriteTx, StoreError> {
        self.0.begin_write().on("begin", "a write").map(WriteTx)
    }
}

/// A read transaction's table, `None` when it was never made (reads as empty).
macro_rules! open_read {
    ($tx:expr, $def:expr, $name:expr) => {
        match $tx.open_table($def) {
            Err(TableError::TableDoesNotExist(_)) => None,
            t => Some(t.on("open", $name)?),
        }
    };
}

// The reads, written once over redb's readable tables, so a read transaction and a
// write transaction read alike.

fn get_row(t: &impl ReadableTable<&'static str, &'static [u8]>, key: &str, name: &'static str) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(t.get(key).on("read", name)?.map(|v| v.value().to_vec()))
}

fn scan_rows(t: &impl ReadableTable<&'static str, &'static [u8]>, keys: Keys<'_>, name: &'static str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    let mut out = Vec::new();
    let mut push = |row: Result<(redb::AccessGuard<&str>, redb::AccessGuard<&[u8]>), redb::StorageError>| -> Result<(), StoreError> {
        let (k, v) = row.on("read", name)?;
        out.push((k.value().to_owned(), v.value().to_vec()));
        Ok(())
    };
    match keys {
        Keys::All => t.iter().on("scan", name)?.try_for_each(&mut push)?,
        Keys::Between(start, end) => t.range(start..end).on("scan", name)?.try_for_each(&mut push)?,
    }
    Ok(out)
}

fn walk_rows(
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    (start, end, back): (&str, &str, bool),
    f: &mut dyn FnMut(&str, &[u8]) -> bool,
    name: &'static str,
) -> Result<(), StoreError> {
    if start >= end {
        return Ok(());
    }
    let range = t.range(start..end).on("scan", name)?;
    let mut visit = |row: Result<(redb::AccessGuard<&str>, redb::AccessGuard<&[u8]>), redb::StorageError>| -> Result<bool, StoreError> {
        let (k, v) = row.on("read", name)?;
        Ok(f(k.value(), v.value()))
    };
    if back {
        for row in range.rev() {
            if !visit(row)? {
                break;
            }
        }
    } else {
        for row in range {
            if !visit(row)? {
                break;
            }
        }
    }
    Ok(())
}

fn get_name(t: &impl ReadableTable<&'static str, &'static str>, key: &str, name: &'static str) -> Result<Option<String>, StoreError> {
    Ok(t.get(key).on("read", name)?.map(|v| v.value().to_owned()))
}

fn scan_names(t: &impl ReadableTable<&'static str, &'static str>, name: &'static str) -> Result<Vec<(String, String)>, StoreError> {
    let mut out = Vec::new();
    for row in t.iter().on("scan", name)? {
        let (k, v) = row.on("read", name)?;
        out.push((k.value().to_owned(), v.value().to_owned()));
    }
    Ok(out)
}

fn get_count(t: &impl ReadableTable<&'static str, u64>, key: &str, name: &'static str) -> Result<Option<u64>, StoreError> {
    Ok(t.get(key).on("read", name)?.map(|v| v.value()))
}

fn scan_counts(t: &impl ReadableTable<&'static str, u64>, name: &'static str) -> Result<Vec<(String, u64)>, StoreError> {
    let mut out = Vec::new();
    for row in t.iter().on("scan", name)? {
        let (k, v) = row.on("read", name)?;
        out.push((k.value().to_owned(), v.value()));
    }
    Ok(out)
}

fn range_counts(t: &impl ReadableTable<&'static str, u64>, start: &str, end: &str, name: &'static str) -> Result<Vec<(String, u64)>, StoreError> {
    let mut out = Vec::new();
    for row in t.range(start..end).on("scan", name)? {
        let (k, v) = row.on("read", name)?;
        out.push((k.value().to_owned(), v.value()));
    }
    Ok(out)
}

fn get_members(t: &impl ReadableMultimapTable<&'static str, &'static str>, key: &str, name: &'static str) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for m in t.get(key).on("read", name)? {
        out.push(m.on("read", name)?.value().to_owned());
    }
    Ok(out)
}

fn read_log(
    t: &impl ReadableTable<(&'static str, u64), &'static str>,
    key: &str,
    after: u64,
    name: &'static str,
) -> Result<Vec<(u64, String)>, StoreError> {
    let mut out = Vec::new();
    if after == u64::MAX {
        return Ok(out);
    }
    for row in t.range((key, after + 1)..=(key, u64::MAX)).on("scan", name)? {
        let (k, v) = row.on("read", name)?;
        out.push((k.value().1, v.value().to_owned()));
    }
    Ok(out)
}

/// Every row of every table of `Rows`' type (`&str → &[u8]`); tables of other types
/// (names, counts, sets, logs) are passed over.
macro_rules! every_row {
    ($tx:expr, $f:expr) => {{
        let names: Vec<String> = $tx.list_tables().on("list", "the tables")?.map(|t| t.name().to_owned()).collect();
        for name in &names {
            let table = match $tx.open_table(TableDefinition::<&str, &[u8]>::new(name)) {
                Err(TableError::TableTypeMismatch { .. }) => continue,
                t => t.on("open", "a table")?,
            };
            for row in table.iter().on("scan", "a table")? {
                let (k, v) = row.on("read", "a table")?;
                $f(name, k.value(), v.value());
            }
        }
        Ok(())
    }};
}

/// Iterates table `$name` as `$def` when it has that type: `Ok(false)` when it has
/// another.
macro_rules! entries_as {
    ($tx:expr, $def:expr, $f:expr) => {
        match $tx.open_table($def) {
            Err(TableError::TableTypeMismatch { .. }) => false,
            t => {
                let table = t.on("open", "a table")?;
                for row in table.iter().on("scan", "a table")? {
                    let (k, v) = row.on("read", "a table")?;
                    $f(k.value(), v.value());
                }
                true
            }
        }
    };
}

impl ReadTx {
    /// Every entry of every table, each table read as the shape its type says.
    pub fn every_entry(&self, f: &mut dyn FnMut(super::Entry)) -> Result<(), StoreError> {
        use super::Entry;
        let tx = &self.0;
        let names: Vec<String> = tx.list_tables().on("list", "the tables")?.map(|t| t.name().to_owned()).collect();
        for name in &names {
            let table = || name.clone();
            let known = entries_as!(tx, TableDefinition::<&str, &[u8]>::new(name), |k: &str, v: &[u8]| f(Entry::Row {
                table: table(),
                key: k.to_owned(),
                value: v.to_vec()
            })) || entries_as!(tx, TableDefinition::<&str, &str>::new(name), |k: &str, v: &str| f(Entry::Name {
                table: table(),
                key: k.to_owned(),
                value: v.to_owned()
            })) || entries_as!(tx, TableDefinition::<&str, u64>::new(name), |k: &str, v: u64| f(Entry::Count {
                table: table(),
                key: k.to_owned(),
                value: v
            })) || entries_as!(tx, TableDefinition::<(&str, u64), &str>::new(name), |k: (&str, u64), v: &str| f(Entry::Log {
                table: table(),
                key: k.0.to_owned(),
                seq: k.1,
                data: v.to_owned()
            }));
            if !known {
                return Err(StoreError::Corrupt {
                    what: format!("table {name}"),
                    reason: "its key and value types are none this build keeps".into(),
                });
            }
        }
        let sets: Vec<String> = tx.list_multimap_tables().on("list", "the tables")?.map(|t| t.name().to_owned()).collect();
        for name in &sets {
            let table = tx.open_multimap_table(MultimapTableDefinition::<&str, &str>::new(name)).on("open", "a table")?;
            for row in table.iter().on("scan", "a table")? {
                let (k, members) = row.on("read", "a table")?;
                for m in members {
                    let m = m.on("read", "a table")?;
                    f(Entry::Member { table: name.clone(), key: k.value().to_owned(), member: m.value().to_owned() });
                }
            }
        }
        Ok(())
    }

    pub fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
        every_row!(self.0, f)
    }
    pub fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
        match open_read!(self.0, rows(t), t.0) {
            Some(table) => walk_rows(&table, (start, end, back), f, t.0),
            None => Ok(()),
        }
    }
    pub fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match open_read!(self.0, rows(t), t.0) {
            Some(table) => get_row(&table, key, t.0),
            None => Ok(None),
        }
    }
    pub fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        match open_read!(self.0, rows(t), t.0) {
            Some(table) => scan_rows(&table, keys, t.0),
            None => Ok(Vec::new()),
        }
    }
    pub fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
        match open_read!(self.0, names(t), t.0) {
            Some(table) => get_name(&table, key, t.0),
            None => Ok(None),
        }
    }
    pub fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
        match open_read!(self.0, names(t), t.0) {
            Some(table) => scan_names(&table, t.0),
            None => Ok(Vec::new()),
        }
    }
    pub fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
        match open_read!(self.0, counts(t), t.0) {
            Some(table) => get_count(&table, key, t.0),
            None => Ok(None),
        }
    }
    pub fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
        match open_read!(self.0, counts(t), t.0) {
            Some(table) => scan_counts(&table, t.0),
            None => Ok(Vec::new()),
        }
    }
    pub fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
        match open_read!(self.0, counts(t), t.0) {
            Some(table) => range_counts(&table, start, end, t.0),
            None => Ok(Vec::new()),
        }
    }
    pub fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
        let table = match self.0.open_multimap_table(sets(t)) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            table => table.on("open", t.0)?,
        };
        get_members(&table, key, t.0)
    }
    pub fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        match open_read!(self.0, logs(t), t.0) {
            Some(table) => read_log(&table, key, after, t.0),
            None => Ok(Vec::new()),
        }
    }
}

impl WriteTx {
    pub fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
        every_row!(self.0, f)
    }
    pub fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
        walk_rows(&self.0.open_table(rows(t)).on("open", t.0)?, (start, end, back), f, t.0)
    }
    pub fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        get_row(&self.0.open_table(rows(t)).on("open", t.0)?, key, t.0)
    }
    pub fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        scan_rows(&self.0.open_table(rows(t)).on("open", t.0)?, keys, t.0)
    }
    pub fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
        get_name(&self.0.open_table(names(t)).on("open", t.0)?, key, t.0)
    }
    pub fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
        scan_names(&self.0.open_table(names(t)).on("open", t.0)?, t.0)
    }
    pub fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
        get_count(&self.0.open_table(counts(t)).on("open", t.0)?, key, t.0)
    }
    pub fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
        scan_counts(&self.0.open_table(counts(t)).on("open", t.0)?, t.0)
    }
    pub fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
        range_counts(&self.0.open_table(counts(t)).on("open", t.0)?, start, end, t.0)
    }
    pub fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
        get_members(&self.0.open_multimap_table(sets(t)).on("open", t.0)?, key, t.0)
    }
    pub fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        read_log(&self.0.open_table(logs(t)).on("open", t.0)?, key, after, t.0)
    }

    pub fn create(&self, t: Table) -> Result<(), StoreError> {
        match t {
            Table::Rows(t) => self.0.open_table(rows(t)).on("create", t.0).map(drop),
            Table::Names(t) => self.0.open_table(names(t)).on("create", t.0).map(drop),
            Table::Counts(t) => self.0.open_table(counts(t)).on("create", t.0).map(drop),
            Table::Sets(t) => self.0.open_multimap_table(sets(t)).on("create", t.0).map(drop),
            Table::Logs(t) => self.0.open_table(logs(t)).on("create", t.0).map(drop),
        }
    }
    /// The characters of the value it replaced, if any.
    pub fn put_row(&self, t: Rows, key: &str, value: &[u8]) -> Result<Option<i64>, StoreError> {
        let mut table = self.0.open_table(rows(t)).on("open", t.0)?;
        let old = table.insert(key, value).on("write", t.0)?;
        Ok(old.map(|o| chars(o.value())))
    }
    /// The characters of the value it removed, if there was one.
    pub fn delete_row(&self, t: Rows, key: &str) -> Result<Option<i64>, StoreError> {
        let mut table = self.0.open_table(rows(t)).on("open", t.0)?;
        let old = table.remove(key).on("delete", t.0)?;
        Ok(old.map(|o| chars(o.value())))
    }
    /// The characters (keys and values) it removed.
    pub fn delete_rows(&self, t: Rows, start: &str, end: &str) -> Result<i64, StoreError> {
        let mut removed = 0;
        self.0
            .open_table(rows(t))
            .on("open", t.0)?
            .retain_in(start..end, |k, v| {
                removed += chars(k.as_bytes()) + chars(v);
                false
            })
            .on("delete", t.0)?;
        Ok(removed)
    }
    pub fn put_name(&self, t: Names, key: &str, value: &str) -> Result<(), StoreError> {
        self.0.open_table(names(t)).on("open", t.0)?.insert(key, value).on("write", t.0).map(drop)
    }
    pub fn delete_name(&self, t: Names, key: &str) -> Result<(), StoreError> {
        self.0.open_table(names(t)).on("open", t.0)?.remove(key).on("delete", t.0).map(drop)
    }
    pub fn put_count(&self, t: Counts, key: &str, value: u64) -> Result<(), StoreError> {
        self.0.open_table(counts(t)).on("open", t.0)?.insert(key, value).on("write", t.0).map(drop)
    }
    pub fn delete_count(&self, t: Counts, key: &str) -> Result<(), StoreError> {
        self.0.open_table(counts(t)).on("open", t.0)?.remove(key).on("delete", t.0).map(drop)
    }
    pub fn add_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        self.0.open_multimap_table(sets(t)).on("open", t.0)?.insert(key, member).on("write", t.0).map(drop)
    }
    pub fn remove_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        self.0.open_multimap_table(sets(t)).on("open", t.0)?.remove(key, member).on("delete", t.0).map(drop)
    }
    /// The characters it added, less those of entries it replaced.
    pub fn append<'a>(&self, t: Logs, key: &str, entries: impl IntoIterator<Item = (u64, &'a str)>) -> Result<i64, StoreError> {
        let mut table = self.0.open_table(logs(t)).on("open", t.0)?;
        let mut added = 0;
        for (seq, data) in entries {
            let old = table.insert((key, seq), data).on("write", t.0)?;
            added += chars(data.as_bytes()) - old.map_or(0, |o| chars(o.value().as_bytes()));
        }
        Ok(added)
    }
    /// The characters of the entries it dropped.
    pub fn drop_log(&self, t: Logs, key: &str) -> Result<i64, StoreError> {
        let mut removed = 0;
        self.0
            .open_table(logs(t))
            .on("open", t.0)?
            .retain_in((key, 0)..=(key, u64::MAX), |_, v| {
                removed += chars(v.as_bytes());
                false
            })
            .on("delete", t.0)?;
        Ok(removed)
    }
    pub fn commit(self) -> Result<(), StoreError> {
        self.0.commit().on("commit", "a write")
    }
}
