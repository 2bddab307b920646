//! This node in a cluster (issue 40): its name, and its membership among the nodes that
//! share the records store, kept by the heartbeat the server's background thread writes
//! (`store::cluster`). On the embedded store a node is alone and writes none.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::config::ClusterSettings;
use crate::metrics::Gauge;
use crate::store::cluster::NodeRecord;
use crate::store::Records;

pub struct Cluster {
    /// This node's name.
    pub node: String,
    /// This boot's id (the lease its generation runs carry).
    boot: String,
    started_ms: u64,
    settings: ClusterSettings,
    /// Whether the records are shared (a cluster is possible at all).
    shared: bool,
    /// Whether this node's last heartbeat landed.
    member: AtomicBool,
    /// Live nodes as the last heartbeat read them (this one included).
    live: AtomicU64,
}

/// What `/v1/health` says of the cluster.
#[derive(serde::Serialize)]
pub struct View {
    pub member: bool,
    pub nodes: u64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Cluster {
    /// This node as `settings` and the data directory name it: the configured name, or
    /// the one kept in `data/NODE`, made (and written durably) at the first start.
    pub fn open(settings: &ClusterSettings, data: &Path, shared: bool, boot: &str) -> std::io::Result<Cluster> {
        let node = match &settings.node {
            Some(n) => n.clone(),
            None => kept_name(data)?,
        };
        Ok(Cluster {
            node,
            boot: boot.to_owned(),
            started_ms: now_ms(),
            settings: settings.clone(),
            shared,
            member: AtomicBool::new(false),
            live: AtomicU64::new(0),
        })
    }

    /// Whether this node writes heartbeats (its records are shared).
    pub fn shared(&self) -> bool {
        self.shared
    }

    pub fn heartbeat_every(&self) -> std::time::Duration {
        self.settings.heartbeat
    }

    /// Writes this node's heartbeat and reads who else is live. A failure (the store
    /// out of reach) makes this node no member until one lands again. `addr` is where
    /// it serves. The live nodes counted, when it landed.
    pub fn beat(&self, records: &Records, addr: &str) -> Option<u64> {
        let node = NodeRecord {
            id: self.node.clone(),
            addr: addr.to_owned(),
            version: crate::version::VERSION.to_owned(),
            boot: self.boot.clone(),
            started_ms: self.started_ms,
            heartbeat_ms: now_ms(),
        };
        let live = records.heartbeat(&node).and_then(|()| records.live_nodes(now_ms(), self.settings.node_timeout.as_millis() as u64));
        match live {
            Ok(nodes) => {
                if !self.member.swap(true, Ordering::AcqRel) {
                    tracing::info!(node = %self.node, nodes = nodes.len(), "this node is in the cluster");
                }
                self.live.store(nodes.len() as u64, Ordering::Relaxed);
                Some(nodes.len() as u64)
            }
            Err(e) => {
                if self.member.swap(false, Ordering::AcqRel) {
                    tracing::warn!(node = %self.node, error = %e, "this node's heartbeat failed: out of the cluster until one lands");
                }
                None
            }
        }
    }

    /// The boots whose runs have a live holder: this one, and with shared records every
    /// other node's whose heartbeat is within the timeout (read now, from the store).
    /// Node names are unique: each node has its own data directory (and `DATA/NODE`).
    pub fn live_boots(&self, records: &Records) -> Result<std::collections::HashSet<String>, crate::store::StoreError> {
        let mut boots = std::collections::HashSet::from([self.boot.clone()]);
        if self.shared {
            // This node's own record may still name its previous boot (killed, then
            // restarted before the record aged out): that boot is gone for certain.
            let others = records.live_nodes(now_ms(), self.settings.node_timeout.as_millis() as u64)?.into_iter().filter(|n| n.id != self.node);
            boots.extend(others.map(|n| n.boot));
        }
        Ok(boots)
    }

    /// Whether this node leads the cluster-wide work `name` (the webhook outbox): it
    /// takes or renews a lease of `node_timeout` on it, held by this boot; call again
    /// well within that to keep it. Always true on the embedded store (a node alone).
    /// When the leader dies, another node's next call takes the lease once it lapses.
    pub fn lead(&self, records: &Records, name: &str) -> bool {
        if !self.shared {
            return true;
        }
        match records.acquire_lease(name, &self.boot, now_ms(), self.settings.node_timeout.as_millis() as u64) {
            Ok(lease) => lease.is_some(),
            Err(e) => {
                tracing::warn!(lease = name, error = %e, "could not take or renew a lease");
                false
            }
        }
    }

    /// How long after its last heartbeat a node counts as gone.
    pub fn node_timeout(&self) -> std::time::Duration {
        self.settings.node_timeout
    }

    /// Removes this node's record (a clean stop), so the others see it gone at once.
    pub fn leave(&self, records: &Records) {
        if let Err(e) = records.leave(&self.node) {
            tracing::warn!(node = %self.node, error = %e, "could not remove this node's record; it ages out");
        }
    }

    /// The cluster as this node sees it; `None` on the embedded store.
    pub fn view(&self) -> Option<View> {
        self.shared.then(|| View { member: self.member.load(Ordering::Acquire), nodes: self.live.load(Ordering::Relaxed) })
    }

    /// Its gauges for `/metrics` (none on the embedded store).
    pub fn gauges(&self) -> Vec<Gauge> {
        match self.view() {
            Some(v) => vec![
                Gauge { name: "quarry_cluster_member", help: "1 while this node's heartbeats land in the shared store.", value: u64::from(v.member) },
                Gauge {
                    name: "quarry_cluster_nodes",
                    help: "Live nodes sharing the records store, as the last heartbeat read them.",
                    value: v.nodes,
                },
            ],
            None => Vec::new(),
        }
    }
}

/// The name kept in `data/NODE`, made at the first start: `node-` and 8 hex digits.
fn kept_name(data: &Path) -> std::io::Result<String> {
    let path = data.join("NODE");
    match std::fs::read_to_string(&path) {
        Ok(name) if !name.trim().is_empty() => return Ok(name.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_err(std::io::Error::other)?;
    let name = format!("node-{:08x}", u32::from_le_bytes(b));
    std::fs::create_dir_all(data)?;
    let tmp = data.join("NODE.tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(name.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(data)?.sync_all()?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_the_name_it_made_at_its_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let settings = ClusterSettings {
            node: None,
            heartbeat: std::time::Duration::from_secs(1),
            node_timeout: std::time::Duration::from_secs(5),
            follow: std::time::Duration::from_millis(100),
        };
        let first = Cluster::open(&settings, dir.path(), false, "b").unwrap().node;
        assert!(first.starts_with("node-") && first.len() == 13, "{first}");
        assert_eq!(Cluster::open(&settings, dir.path(), false, "b").unwrap().node, first);
        let named = ClusterSettings { node: Some("east-1".into()), ..settings };
        assert_eq!(Cluster::open(&named, dir.path(), false, "b").unwrap().node, "east-1");
    }
}
