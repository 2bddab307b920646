//! The cluster's own records (issue 40): which nodes share this store, and leases on
//! the work one node at a time must do.
//!
//! - **Membership.** Each node writes its record (`quarry_nodes`) once a heartbeat;
//!   a node whose last heartbeat is older than the timeout is not live. A node that
//!   stops cleanly removes its record; one that dies is aged out.
//! - **Leases** (`quarry_work_leases`): a named piece of work (a collection's flusher,
//!   a generation's run) is held by one node until its expiry, renewed by its holder.
//!   Taking a lease another node held bumps its epoch, and a holder's protected write
//!   checks, in its own transaction, that the lease still carries its epoch
//!   ([`fenced_in`]): a holder that stalled past its expiry (a long pause, a partition)
//!   and was replaced can no longer write, even if it does not know yet.
//!
//! Times are milliseconds of the nodes' wall clocks: nodes are assumed to keep them
//! within a fraction of the lease's length of each other (NTP does; leases last
//! seconds). The store runs writes one at a time (kv's promise), so two nodes taking
//! the same lease are ordered and exactly one gets it.

use serde::{Deserialize, Serialize};

use super::kv::{Keys, Read, Rows, Table, WriteTx};
use super::{get_json, to_json, Records, StoreError};

const NODES: Rows = Rows("quarry_nodes");
const WORK_LEASES: Rows = Rows("quarry_work_leases");

/// One node of the cluster as its last heartbeat wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub id: String,
    /// Where it listens, as it was told to (for operators; nodes never call each other).
    pub addr: String,
    pub version: String,
    /// Its boot's id: what the runs it holds carry as their lease (a generation's
    /// `state.lease`), so another node knows which runs have a live holder.
    #[serde(default)]
    pub boot: String,
    pub started_ms: u64,
    pub heartbeat_ms: u64,
}

/// A lease as held: who, under which epoch, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub name: String,
    pub holder: String,
    /// Bumped each time the lease passes to another holder (or is taken again after
    /// it lapsed), never lowered: the fence a stale holder's writes are checked against.
    pub epoch: u64,
    pub expires_ms: u64,
}

impl Records {
    pub(super) fn ensure_cluster(&self) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.create(Table::Rows(NODES))?;
        txn.create(Table::Rows(WORK_LEASES))?;
        txn.commit()
    }

    /// Writes `node`'s record: its heartbeat.
    pub fn heartbeat(&self, node: &NodeRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.put_row(NODES, &node.id, &to_json(node))?;
        txn.commit()
    }

    /// Removes node `id`'s record (it stops cleanly).
    pub fn leave(&self, id: &str) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.delete_row(NODES, id)?;
        txn.commit()
    }

    /// The nodes whose last heartbeat is at most `timeout_ms` before `now_ms`.
    pub fn live_nodes(&self, now_ms: u64, timeout_ms: u64) -> Result<Vec<NodeRecord>, StoreError> {
        let txn = self.kv.read()?;
        let mut live = Vec::new();
        for (key, bytes) in txn.rows(NODES, Keys::All)? {
            let node: NodeRecord =
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt { what: format!("node record {key}"), reason: e.to_string() })?;
            if node.heartbeat_ms + timeout_ms >= now_ms {
                live.push(node);
            }
        }
        Ok(live)
    }

    /// Takes or renews lease `name` for `holder` until `now_ms + ttl_ms`: granted when
    /// nobody holds it, its holder's expiry has passed, or `holder` holds it already.
    /// `None` while another holder's lease runs.
    pub fn acquire_lease(&self, name: &str, holder: &str, now_ms: u64, ttl_ms: u64) -> Result<Option<Lease>, StoreError> {
        let txn = self.kv.write()?;
        let current: Option<Lease> = get_json(&txn, WORK_LEASES, name, "lease")?;
        let epoch = match &current {
            Some(l) if l.holder == holder && l.expires_ms >= now_ms => l.epoch,
            Some(l) if l.expires_ms >= now_ms => return Ok(None),
            Some(l) => l.epoch + 1,
            None => 1,
        };
        let lease = Lease { name: name.to_owned(), holder: holder.to_owned(), epoch, expires_ms: now_ms + ttl_ms };
        txn.put_row(WORK_LEASES, name, &to_json(&lease))?;
        txn.commit()?;
        Ok(Some(lease))
    }

    /// Renews each of `leases` for `ttl_ms` that still carries its holder and epoch
    /// (lapsed or not: see [`kept_in`]), in one write; per lease, false when another
    /// holder was granted it since.
    pub fn renew_leases(&self, leases: &[Lease], now_ms: u64, ttl_ms: u64) -> Result<Vec<bool>, StoreError> {
        let txn = self.kv.write()?;
        let mut kept = Vec::with_capacity(leases.len());
        for lease in leases {
            kept.push(match kept_in(&txn, lease, now_ms, ttl_ms) {
                Ok(()) => true,
                Err(StoreError::Fenced { .. }) => false,
                Err(e) => return Err(e),
            });
        }
        txn.commit()?;
        Ok(kept)
    }

    /// Gives `lease` up if it is still the one held (an expiry now, the epoch kept, so
    /// the next holder's is higher).
    pub fn release_lease(&self, lease: &Lease, now_ms: u64) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if fenced_in(&txn, lease, now_ms).is_ok() {
            let lapsed = Lease { expires_ms: now_ms.saturating_sub(1), ..lease.clone() };
            txn.put_row(WORK_LEASES, &lease.name, &to_json(&lapsed))?;
        }
        txn.commit()
    }

    /// The lease `name` as the store holds it.
    pub fn lease(&self, name: &str) -> Result<Option<Lease>, StoreError> {
        get_json(&self.kv.read()?, WORK_LEASES, name, "lease")
    }
}

/// As [`fenced_in`], for a holder ending work it began under `lease` (a flush's publish):
/// a lease that ran out meanwhile but that nobody was granted since is still its
/// holder's (every grant, to its own holder too, once lapsed, bumps the epoch, so an
/// unchanged epoch means no one else could have started the same work), and it is
/// renewed for `ttl_ms` in the same transaction. Without this, work that takes longer
/// than what is left of the lease (a slow upload on a loaded machine) is fenced every
/// time and never lands.
pub fn kept_in(txn: &WriteTx, lease: &Lease, now_ms: u64, ttl_ms: u64) -> Result<(), StoreError> {
    let current: Option<Lease> = get_json(txn, WORK_LEASES, &lease.name, "lease")?;
    match current {
        Some(l) if l.holder == lease.holder && l.epoch == lease.epoch => {
            let renewed = Lease { expires_ms: l.expires_ms.max(now_ms + ttl_ms), ..l };
            txn.put_row(WORK_LEASES, &lease.name, &to_json(&renewed))
        }
        _ => Err(StoreError::Fenced { lease: lease.name.clone(), epoch: lease.epoch }),
    }
}

/// Checks, inside the transaction of a write the lease protects, that `lease` is still
/// held as it was granted (same holder, same epoch, not expired at `now_ms`); `Fenced`
/// otherwise, and the caller drops the transaction, writing nothing.
pub fn fenced_in(txn: &WriteTx, lease: &Lease, now_ms: u64) -> Result<(), StoreError> {
    let current: Option<Lease> = get_json(txn, WORK_LEASES, &lease.name, "lease")?;
    match current {
        Some(l) if l.holder == lease.holder && l.epoch == lease.epoch && l.expires_ms >= now_ms => Ok(()),
        _ => Err(StoreError::Fenced { lease: lease.name.clone(), epoch: lease.epoch }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records on redb, and on the test PostgreSQL when there is one.
    fn stores() -> Vec<(&'static str, Records, tempfile::TempDir)> {
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec![("redb", Records::open(dir.path()).unwrap(), dir)];
        if let Some(url) = super::super::kv::tests::postgres_schema() {
            let dir = tempfile::tempdir().unwrap();
            let settings = crate::store::StoreSettings::Postgres(super::super::kv::PostgresSettings {
                url,
                pool: 4,
                connect_timeout: std::time::Duration::from_secs(5),
                ca_pem: None,
            });
            all.push(("postgres", Records::open_with(dir.path(), &settings).unwrap(), dir));
        }
        all
    }

    fn node(id: &str, at: u64) -> NodeRecord {
        NodeRecord { id: id.into(), addr: "127.0.0.1:1".into(), version: "t".into(), boot: format!("boot-{id}"), started_ms: 0, heartbeat_ms: at }
    }

    #[test]
    fn a_node_is_live_while_its_heartbeats_land_and_gone_once_they_stop_or_it_leaves() {
        for (name, r, _dir) in stores() {
            r.heartbeat(&node("a", 10_000)).unwrap();
            r.heartbeat(&node("b", 10_000)).unwrap();
            r.heartbeat(&node("a", 14_000)).unwrap();
            let ids = |now| r.live_nodes(now, 5_000).unwrap().into_iter().map(|n| n.id).collect::<Vec<_>>();
            assert_eq!(ids(15_000), ["a", "b"], "{name}");
            assert_eq!(ids(15_001), ["a"], "{name}: b's last heartbeat is over 5 s old");
            r.leave("a").unwrap();
            assert!(ids(15_001).is_empty(), "{name}");
        }
    }

    #[test]
    fn one_holder_at_a_time_and_a_replaced_holder_is_fenced() {
        for (name, r, _dir) in stores() {
            let a = r.acquire_lease("flush/col_1", "a", 1_000, 3_000).unwrap().expect("free");
            assert_eq!(a.epoch, 1, "{name}");
            assert_eq!(r.acquire_lease("flush/col_1", "b", 2_000, 3_000).unwrap(), None, "{name}: a holds it");
            // Renewed by its holder: the same epoch, a later expiry.
            let renewed = r.acquire_lease("flush/col_1", "a", 3_500, 3_000).unwrap().unwrap();
            assert_eq!((renewed.epoch, renewed.expires_ms), (1, 6_500), "{name}");
            // a stalls past its expiry; b takes over under a higher epoch.
            let b = r.acquire_lease("flush/col_1", "b", 7_000, 3_000).unwrap().expect("lapsed");
            assert_eq!(b.epoch, 2, "{name}");
            // a's write, checked in its own transaction, is refused; b's passes.
            let txn = r.kv.write().unwrap();
            assert!(matches!(fenced_in(&txn, &renewed, 7_100), Err(StoreError::Fenced { epoch: 1, .. })), "{name}");
            assert!(fenced_in(&txn, &b, 7_100).is_ok(), "{name}");
            // Nor may it end work it began under its lapsed lease.
            assert!(matches!(kept_in(&txn, &renewed, 7_100, 3_000), Err(StoreError::Fenced { epoch: 1, .. })), "{name}");
            drop(txn);
            // a cannot renew over b, nor release b's lease.
            assert_eq!(r.acquire_lease("flush/col_1", "a", 7_200, 3_000).unwrap(), None, "{name}");
            r.release_lease(&renewed, 7_300).unwrap();
            assert_eq!(r.lease("flush/col_1").unwrap().unwrap().holder, "b", "{name}");
            // b gives it up; the next holder's epoch is higher still.
            r.release_lease(&b, 7_400).unwrap();
            let c = r.acquire_lease("flush/col_1", "c", 7_500, 3_000).unwrap().expect("released");
            assert_eq!(c.epoch, 3, "{name}");
        }
    }

    #[test]
    fn work_outlasting_its_lease_lands_unless_another_holder_was_granted_it() {
        for (name, r, _dir) in stores() {
            let a = r.acquire_lease("maintain/col_1", "a", 1_000, 1_000).unwrap().expect("free");
            // a's flush took 3 s: its lease lapsed at 2 s, but nobody took it.
            let txn = r.kv.write().unwrap();
            assert!(fenced_in(&txn, &a, 4_000).is_err(), "{name}: lapsed");
            kept_in(&txn, &a, 4_000, 1_000).expect("no one was granted it since");
            txn.commit().unwrap();
            let held = r.lease("maintain/col_1").unwrap().unwrap();
            assert_eq!((held.holder.as_str(), held.epoch, held.expires_ms), ("a", 1, 5_000), "{name}: renewed in the same write");
            assert_eq!(r.acquire_lease("maintain/col_1", "b", 4_500, 1_000).unwrap(), None, "{name}: still a's");
            // Once b is granted it (a lapsed again), a's work no longer lands.
            let b = r.acquire_lease("maintain/col_1", "b", 6_000, 1_000).unwrap().expect("lapsed");
            let txn = r.kv.write().unwrap();
            assert!(matches!(kept_in(&txn, &a, 6_100, 1_000), Err(StoreError::Fenced { epoch: 1, .. })), "{name}");
            kept_in(&txn, &b, 6_100, 1_000).unwrap();
            drop(txn);
            // Renewing (the heartbeat's keep) follows the same rule.
            assert_eq!(r.renew_leases(&[a, b], 6_200, 1_000).unwrap(), [false, true], "{name}");
            assert_eq!(r.lease("maintain/col_1").unwrap().unwrap().expires_ms, 7_200, "{name}");
        }
    }
}
