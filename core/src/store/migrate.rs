//! `quarry migrate`, the records' half: a data directory's redb store copied into the
//! PostgreSQL store `[store]` names, then compared entry by entry. Safe to re-run: an
//! entry already copied is left alone, and a database holding anything the data
//! directory does not (a store some server already writes) is refused untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::kv::{Entry, Kv};
use super::{Records, StoreError};

/// What a migration copied, by shape.
#[derive(Debug, Default)]
pub struct Copied {
    /// Entries in the data directory's store, by shape ("rows", "names", ...).
    pub by_shape: BTreeMap<&'static str, usize>,
    /// How many this run wrote (the rest were there from an earlier run).
    pub written: usize,
}

/// Entries written per transaction.
const BATCH: usize = 500;

impl Records {
    /// Copies every record of the redb store at `source` into this store (PostgreSQL),
    /// then reads both back and checks that every entry arrived unchanged.
    pub fn migrate_from(&self, source: &Path) -> Result<Copied, StoreError> {
        if !self.kv.shared() {
            return Err(StoreError::Settings { reason: "quarry migrate copies into PostgreSQL: set [store] kind = \"postgres\" and its url".into() });
        }
        if !source.is_file() {
            return Err(StoreError::Settings { reason: format!("there is no records store at {} to copy", source.display()) });
        }
        let from = Kv::open_redb(source)?;
        let mut src: BTreeMap<(u8, String, String, String), Entry> = BTreeMap::new();
        from.every_entry(&mut |e| {
            src.insert(e.place(), e);
        })?;
        let mut dst: BTreeMap<(u8, String, String, String), Entry> = BTreeMap::new();
        self.kv.every_entry(&mut |e| {
            dst.insert(e.place(), e);
        })?;
        if let Some(e) = dst.iter().find_map(|(place, e)| (src.get(place) != Some(e)).then_some(e)) {
            let (_, table, key, _) = e.place();
            return Err(StoreError::Settings {
                reason: format!(
                    "{} already holds records this data directory does not (its {} {key:?} of {table}): migrate into an empty database",
                    self.at(),
                    e.shape()
                ),
            });
        }
        let todo: Vec<Entry> = src.iter().filter(|(place, _)| !dst.contains_key(*place)).map(|(_, e)| e.clone()).collect();
        for batch in todo.chunks(BATCH) {
            self.kv.put_entries(batch)?;
        }
        let mut after: BTreeSet<Entry> = BTreeSet::new();
        self.kv.every_entry(&mut |e| {
            after.insert(e);
        })?;
        let missing: Vec<&Entry> = src.values().filter(|e| !after.contains(*e)).collect();
        if let Some(e) = missing.first() {
            let (_, table, key, _) = e.place();
            return Err(StoreError::Corrupt {
                what: format!("the copy in {}", self.at()),
                reason: format!("{} entries did not arrive as written, the first the {} {key:?} of {table}", missing.len(), e.shape()),
            });
        }
        let mut copied = Copied { written: todo.len(), ..Copied::default() };
        for e in src.values() {
            *copied.by_shape.entry(e.shape()).or_default() += 1;
        }
        Ok(copied)
    }
}
