//! `[cluster]`: this node's name and how membership is kept when several nodes share
//! the records store (issue 40; `store::cluster`).

use std::time::Duration;

use serde::Deserialize;

use super::{duration, invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    pub node: String,
    pub heartbeat: String,
    pub node_timeout: String,
    pub follow: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// This node's name; `None` = the one kept in DATA/NODE (made at the first start).
    pub node: Option<String>,
    pub heartbeat: Duration,
    pub node_timeout: Duration,
    /// How often a node reads the shared journal's heads to follow other nodes'
    /// writes: the bound on how stale its searches are.
    pub follow: Duration,
}

pub fn resolve(raw: RawCluster) -> Result<ClusterSettings, ConfigError> {
    let node = raw.node.trim();
    let well_formed = node.len() <= 64 && node.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !well_formed {
        return Err(invalid("cluster.node", "must be up to 64 of a-z, A-Z, 0-9, '-', '_' and '.', or \"\" for a name kept in the data directory"));
    }
    let heartbeat = duration("cluster.heartbeat", &raw.heartbeat)?;
    let node_timeout = duration("cluster.node_timeout", &raw.node_timeout)?;
    if heartbeat < Duration::from_millis(100) || node_timeout < heartbeat * 3 {
        return Err(invalid(
            "cluster.node_timeout",
            "must be at least three heartbeats (and a heartbeat at least 100ms), so one slow write does not drop a node",
        ));
    }
    let follow = duration("cluster.follow", &raw.follow)?;
    if follow < Duration::from_millis(10) || follow > Duration::from_secs(60) {
        return Err(invalid("cluster.follow", "must be from 10ms to 60s"));
    }
    Ok(ClusterSettings { node: (!node.is_empty()).then(|| node.to_owned()), heartbeat, node_timeout, follow })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(node: &str, heartbeat: &str, timeout: &str) -> RawCluster {
        RawCluster { node: node.into(), heartbeat: heartbeat.into(), node_timeout: timeout.into(), follow: "100ms".into() }
    }

    #[test]
    fn a_node_name_and_its_heartbeat_are_checked() {
        let s = resolve(raw(" node-1 ", "1s", "5s")).unwrap();
        assert_eq!((s.node.as_deref(), s.heartbeat, s.node_timeout), (Some("node-1"), Duration::from_secs(1), Duration::from_secs(5)));
        assert_eq!(resolve(raw("", "1s", "5s")).unwrap().node, None);
        for bad in [raw("a b", "1s", "5s"), raw("n", "1s", "2s"), raw("n", "10ms", "5s"), raw("n", "soon", "5s")] {
            assert!(resolve(bad).is_err());
        }
    }
}
