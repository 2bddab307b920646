//! The shared journal over PostgreSQL (`quarry_index::journal`): a collection's
//! write-ahead log as rows of `quarry_journal`, its head in `quarry_journal_heads`
//! (migration 0002), and its flushes and merges under a lease of the cluster's
//! (`maintain/<collection>`, [`super::cluster`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quarry_index::journal::{Head, Journal, PublishError};

use super::cluster::{kept_in, Lease};
use super::{Records, StoreError};

/// The journal of the records store's PostgreSQL database, as one node uses it.
pub struct SharedJournal {
    records: Arc<Records>,
    /// Who holds the leases this node takes: its boot's id, so a restarted node never
    /// writes under an epoch its earlier boot was granted.
    holder: String,
    lease: Duration,
    /// Leases as last granted or refused, so the background round does not write to
    /// the store for every collection every 100 ms: a held lease is renewed once half
    /// of it has run, a refused one asked again after a quarter.
    leases: Mutex<HashMap<String, (Option<u64>, Instant)>>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn lease_name(id: &str) -> String {
    format!("maintain/{id}")
}

impl SharedJournal {
    /// `None` unless the records store is PostgreSQL.
    pub fn open(records: Arc<Records>, holder: &str, lease: Duration) -> Option<SharedJournal> {
        records.kv.postgres()?;
        Some(SharedJournal { records, holder: holder.to_owned(), lease, leases: Mutex::new(HashMap::new()) })
    }

    fn db(&self) -> &super::kv::postgres::Db {
        self.records.kv.postgres().expect("checked at open")
    }
}

fn say(e: StoreError) -> String {
    e.to_string()
}

impl Journal for SharedJournal {
    fn create(&self, id: &str) -> Result<(), String> {
        self.db().journal_create(id).map_err(say)
    }

    fn remove(&self, id: &str) -> Result<(), String> {
        self.leases.lock().expect("leases lock").remove(id);
        self.db().journal_remove(id).map_err(say)
    }

    fn append(&self, id: &str, records: &[Vec<u8>]) -> Result<u64, String> {
        self.db().journal_append(id, records).map_err(say)?.ok_or_else(|| format!("collection {id} has no journal (it was deleted)"))
    }

    fn read(&self, id: &str, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, String> {
        self.db().journal_read(id, after, limit).map_err(say)
    }

    fn head(&self, id: &str) -> Result<Option<Head>, String> {
        let heads = self.db().journal_heads(Some(id)).map_err(say)?;
        Ok(heads.into_iter().next().map(|(_, [lsn, manifest, covered, publisher])| Head { lsn, manifest, covered, publisher }))
    }

    fn heads(&self) -> Result<HashMap<String, Head>, String> {
        let heads = self.db().journal_heads(None).map_err(say)?;
        Ok(heads.into_iter().map(|(id, [lsn, manifest, covered, publisher])| (id, Head { lsn, manifest, covered, publisher })).collect())
    }

    fn lease(&self, id: &str) -> Result<Option<u64>, String> {
        let now = Instant::now();
        if let Some((held, next)) = self.leases.lock().expect("leases lock").get(id) {
            if now < *next {
                return Ok(*held);
            }
        }
        let ttl = self.lease.as_millis() as u64;
        let granted = self.records.acquire_lease(&lease_name(id), &self.holder, now_ms(), ttl).map_err(say)?;
        let epoch = granted.map(|l| l.epoch);
        let next = now + if epoch.is_some() { self.lease / 2 } else { self.lease / 4 };
        self.leases.lock().expect("leases lock").insert(id.to_owned(), (epoch, next));
        Ok(epoch)
    }

    /// Renews, in one write, the held leases due for renewal that the maintenance
    /// round has not renewed (it is busy, or starved at idle priority).
    fn keep(&self) -> Result<(), String> {
        let now = Instant::now();
        let due: Vec<(String, u64)> = self
            .leases
            .lock()
            .expect("leases lock")
            .iter()
            .filter_map(|(id, (held, next))| held.filter(|_| now >= *next).map(|e| (id.clone(), e)))
            .collect();
        if due.is_empty() {
            return Ok(());
        }
        let leases: Vec<Lease> =
            due.iter().map(|(id, epoch)| Lease { name: lease_name(id), holder: self.holder.clone(), epoch: *epoch, expires_ms: 0 }).collect();
        let kept = self.records.renew_leases(&leases, now_ms(), self.lease.as_millis() as u64).map_err(say)?;
        let mut held = self.leases.lock().expect("leases lock");
        for ((id, epoch), kept) in due.into_iter().zip(kept) {
            // Unless the round asked again meanwhile: its answer is the newer.
            if held.get(&id).is_some_and(|(h, _)| *h == Some(epoch)) {
                let next = now + if kept { self.lease / 2 } else { self.lease / 4 };
                held.insert(id, (kept.then_some(epoch), next));
            }
        }
        Ok(())
    }

    fn publish(&self, id: &str, epoch: u64, from: u64, to: u64, covered: u64) -> Result<(), PublishError> {
        let unavailable = |e: StoreError| PublishError::Unavailable(e.to_string());
        let txn = self.records.kv.write().map_err(unavailable)?;
        let lease = Lease { name: lease_name(id), holder: self.holder.clone(), epoch, expires_ms: 0 };
        // Fenced only if another holder was granted the lease: a flush that outlasted
        // what was left of it (a slow upload) lands, and renews it.
        match kept_in(&txn, &lease, now_ms(), self.lease.as_millis() as u64) {
            Ok(()) => {}
            Err(StoreError::Fenced { .. }) => {
                self.leases.lock().expect("leases lock").remove(id);
                return Err(PublishError::Fenced(id.to_owned()));
            }
            Err(e) => return Err(unavailable(e)),
        }
        if !txn.journal_publish(id, from, to, covered, epoch).map_err(unavailable)? {
            return Err(PublishError::Moved(id.to_owned()));
        }
        txn.commit().map_err(unavailable)?;
        self.leases.lock().expect("leases lock").insert(id.to_owned(), (Some(epoch), Instant::now() + self.lease / 2));
        Ok(())
    }

    fn adopt(&self, id: &str, gen: u64) -> Result<bool, String> {
        self.db().journal_adopt(id, gen).map_err(say)
    }

    fn describe(&self) -> String {
        format!("{} (quarry_journal)", self.records.kv.at())
    }
}
