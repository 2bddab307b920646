//! Collection records, the first kind on the generic account-owned table ([`Owned`](super::owned::Owned)):
//! which account owns which collection, its name, settings and embedder. The table
//! names are the ones this store has always written, so old data directories read.
//!
//! Every search asks for its collection's record, so the records read are kept
//! ([`Cache`]): good while no write transaction of this process has changed the table
//! since (kv counts them), and, on a store other processes share, for at most a second
//! (another node may have changed it), except when the store is out of reach: then the
//! record last read still answers, so searches go on while PostgreSQL is down.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::owned::{owned_record, Owned};
use super::{get_json, CollectionRecord, Records, StoreError, AUTO_EMBEDDER};

owned_record!(CollectionRecord, "collections", "account_collections");

/// How long a record read from a shared store answers without being read again.
const SHARED_FRESH: Duration = Duration::from_secs(1);
/// Past this many records the cache starts again (a bound, not a working size).
const MOST: usize = 100_000;

/// Collection records read, by id, as of a count of the table's changes.
pub(super) struct Cache {
    changes: Arc<AtomicU64>,
    fresh_for: Option<Duration>,
    kept: RwLock<Kept>,
}

/// The count the records were read at, and each record with when it was read.
type Kept = (u64, HashMap<String, (CollectionRecord, Instant)>);

impl Cache {
    pub(super) fn new(changes: Arc<AtomicU64>, shared: bool) -> Cache {
        Cache { changes, fresh_for: shared.then_some(SHARED_FRESH), kept: RwLock::new((0, HashMap::new())) }
    }

    /// The record kept for `id`, if it still stands (`fresh`: within the freshness bound).
    fn get(&self, id: &str, fresh: bool) -> Option<CollectionRecord> {
        let kept = self.kept.read().unwrap_or_else(|e| e.into_inner());
        if kept.0 != self.changes.load(Ordering::Acquire) {
            return None;
        }
        let (record, at) = kept.1.get(id)?;
        let stands = !fresh || self.fresh_for.is_none_or(|f| at.elapsed() < f);
        stands.then(|| record.clone())
    }

    /// Keeps `record`, read when the count was `as_of`, unless a write has come since.
    fn put(&self, as_of: u64, record: CollectionRecord) {
        let mut kept = self.kept.write().unwrap_or_else(|e| e.into_inner());
        let now = self.changes.load(Ordering::Acquire);
        if kept.0 != now || kept.1.len() >= MOST {
            kept.1.clear();
            kept.0 = now;
        }
        if now == as_of {
            kept.1.insert(record.id.clone(), (record, Instant::now()));
        }
    }
}

impl Records {
    pub fn create_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        self.insert(c)
    }

    /// The collection when it exists and belongs to `account_id` (from the cache while
    /// it stands, see the module's note).
    pub fn collection(&self, account_id: &str, id: &str) -> Result<Option<CollectionRecord>, StoreError> {
        let mine = |r: CollectionRecord| (r.account_id == account_id).then_some(r);
        if let Some(r) = self.collections.get(id, true) {
            return Ok(mine(r));
        }
        let as_of = self.collections.changes.load(Ordering::Acquire);
        let read =
            self.kv.read().and_then(|tx| get_json::<CollectionRecord>(&tx, super::owned::records::<CollectionRecord>(), id, CollectionRecord::TABLE));
        match read {
            Ok(Some(r)) => {
                self.collections.put(as_of, r.clone());
                Ok(mine(r))
            }
            Ok(None) => Ok(None),
            Err(e) if e.is_unavailable() => self.collections.get(id, false).map(|r| Ok(mine(r))).unwrap_or(Err(e)),
            Err(e) => Err(e),
        }
    }

    /// The account's collections, oldest first.
    pub fn collections_of(&self, account_id: &str) -> Result<Vec<CollectionRecord>, StoreError> {
        let mut out: Vec<CollectionRecord> = self.list(account_id)?;
        out.retain(|c| !super::is_hidden_collection(&c.id)); // memory stores' and SOAT documents' are hidden
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Every collection, for opening them at start-up.
    pub fn all_collections(&self) -> Result<Vec<CollectionRecord>, StoreError> {
        self.all()
    }

    /// Replaces a collection's record (name, settings). A record read while its embedder
    /// was still [`AUTO_EMBEDDER`] does not undo the embedder a first document settled
    /// meanwhile: the collection's vectors are that model's.
    pub fn update_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        let found = self.update(&c.account_id, &c.id, |r: &mut CollectionRecord| {
            let settled = (r.embedder != AUTO_EMBEDDER && c.embedder == AUTO_EMBEDDER).then(|| (r.embedder.clone(), r.language.clone()));
            *r = c.clone();
            if let Some((embedder, language)) = settled {
                (r.embedder, r.language) = (embedder, language);
            }
            super::owned::Change::Write(())
        })?;
        found.ok_or_else(|| StoreError::Corrupt { what: format!("collection {}", c.id), reason: "updated after it was deleted".into() })
    }

    /// Gives a collection whose embedder is still [`AUTO_EMBEDDER`] the embedder chosen
    /// for `language`, in one transaction, and returns the record as it then stands: the
    /// first caller's choice wins, a later one reads it (two first documents racing on
    /// two shards embed with one model). `None` when the collection is gone.
    pub fn settle_embedder(&self, account_id: &str, id: &str, embedder: &str, language: &str) -> Result<Option<CollectionRecord>, StoreError> {
        self.update(account_id, id, |r: &mut CollectionRecord| {
            if r.embedder != AUTO_EMBEDDER {
                return super::owned::Change::Keep(r.clone());
            }
            r.embedder = embedder.to_owned();
            r.language = Some(language.to_owned());
            super::owned::Change::Write(r.clone())
        })
    }

    pub fn delete_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        self.remove::<CollectionRecord>(&c.account_id, &c.id).map(|_| ())
    }
}
