//! Open connections per client address, across every shard. One client (an address;
//! an IPv6 client by its /64, as [`super::per_address`] counts signups) holds at most
//! `http.max_connections_per_client` connections at once, so a client holding idle
//! connections cannot fill the shards' caps (`http.max_connections_per_shard`) and turn
//! every other client away. A count changes only when a connection opens or closes,
//! under one of a few striped locks, never per request.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::per_address::client_of;

/// Locks the counts are spread over, so shards accepting at once rarely meet.
const STRIPES: usize = 16;

pub struct PerClient {
    /// `None`: no cap (the count is not kept either).
    max: Option<u32>,
    hasher: std::hash::RandomState,
    stripes: Box<[Mutex<HashMap<IpAddr, u32>>]>,
}

/// A connection counted against its client; dropping it gives the place back.
pub struct ClientSlot {
    of: Arc<PerClient>,
    client: IpAddr,
}

/// The client already holds its `max` connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub max: u32,
}

impl PerClient {
    /// `max` connections per client at once; 0 = no cap.
    pub fn new(max: u32) -> Arc<PerClient> {
        Arc::new(PerClient {
            max: (max > 0).then_some(max),
            hasher: std::hash::RandomState::new(),
            stripes: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
        })
    }

    /// Counts one more connection of `ip`'s client, refused when it holds its `max`;
    /// `Ok(None)` when there is no cap.
    pub fn open(self: &Arc<Self>, ip: IpAddr) -> Result<Option<ClientSlot>, Held> {
        let Some(max) = self.max else { return Ok(None) };
        let client = client_of(ip);
        let mut counts = self.stripe(client).lock().unwrap_or_else(|p| p.into_inner());
        let held = counts.entry(client).or_insert(0);
        if *held >= max {
            return Err(Held { max });
        }
        *held += 1;
        Ok(Some(ClientSlot { of: self.clone(), client }))
    }

    /// The connections `ip`'s client holds now.
    pub fn held(&self, ip: IpAddr) -> u32 {
        let client = client_of(ip);
        self.stripe(client).lock().unwrap_or_else(|p| p.into_inner()).get(&client).copied().unwrap_or(0)
    }

    fn stripe(&self, client: IpAddr) -> &Mutex<HashMap<IpAddr, u32>> {
        &self.stripes[self.hasher.hash_one(client) as usize % STRIPES]
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut counts = self.of.stripe(self.client).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = counts.get_mut(&self.client) {
            *held -= 1;
            if *held == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_client_holds_at_most_max_and_a_closed_one_frees_its_place() {
        let limit = PerClient::new(2);
        let a = limit.open(ip("192.0.2.1")).unwrap();
        let _b = limit.open(ip("192.0.2.1")).unwrap();
        assert_eq!(limit.open(ip("192.0.2.1")).err(), Some(Held { max: 2 }));
        assert!(limit.open(ip("192.0.2.2")).unwrap().is_some(), "another client has its own count");
        drop(a);
        assert_eq!(limit.held(ip("192.0.2.1")), 1);
        assert!(limit.open(ip("192.0.2.1")).is_ok());
    }

    #[test]
    fn ipv6_counts_by_its_slash_64() {
        let limit = PerClient::new(1);
        let _a = limit.open(ip("2001:db8:1:2::1")).unwrap();
        assert!(limit.open(ip("2001:db8:1:2:ffff::9")).is_err(), "same /64");
        assert!(limit.open(ip("2001:db8:1:3::1")).is_ok());
    }

    #[test]
    fn no_cap_keeps_no_count() {
        let limit = PerClient::new(0);
        let slots: Vec<_> = (0..1000).map(|_| limit.open(ip("192.0.2.1")).unwrap()).collect();
        assert!(slots.iter().all(Option::is_none));
        assert_eq!(limit.held(ip("192.0.2.1")), 0);
    }

    #[test]
    fn the_map_forgets_a_client_with_nothing_open() {
        let limit = PerClient::new(3);
        drop(limit.open(ip("192.0.2.1")).unwrap());
        assert!(limit.stripes.iter().all(|s| s.lock().unwrap().is_empty()));
    }
}
