//! Signups per client address: one token bucket per address, so a person signing up
//! never waits and a script making accounts is slowed to `auth.signup_per_ip`. The
//! address is the connection's peer (an IPv6 client by its /64, which one host is
//! commonly given whole). Signups are rare, so one lock over the map is cheap; buckets
//! that have filled again are dropped whenever the map has doubled.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;

use super::bucket::{now_nanos, Bucket, Decision, Pace};

/// The map is swept of full buckets once it holds this many, then at twice what is left.
const FIRST_SWEEP: usize = 1024;

pub struct PerAddress {
    /// `None`: no limit.
    pace: Option<Pace>,
    state: Mutex<State>,
}

struct State {
    buckets: HashMap<IpAddr, Bucket>,
    sweep_at: usize,
}

impl PerAddress {
    pub fn new(pace: Option<Pace>) -> PerAddress {
        PerAddress { pace, state: Mutex::new(State { buckets: HashMap::new(), sweep_at: FIRST_SWEEP }) }
    }

    /// Spends one token of `ip`'s bucket; `None` when there is no limit.
    pub fn spend(&self, ip: IpAddr) -> Option<Decision> {
        self.spend_at(ip, now_nanos())
    }

    pub fn spend_at(&self, ip: IpAddr, now: u64) -> Option<Decision> {
        let pace = self.pace?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.buckets.len() >= state.sweep_at {
            state.buckets.retain(|_, b| !b.is_full_at(now));
            state.sweep_at = (state.buckets.len() * 2).max(FIRST_SWEEP);
        }
        let bucket = state.buckets.entry(client_of(ip)).or_insert_with(|| Bucket::paced(pace));
        Some(bucket.spend_at(1, now))
    }

    /// What a spend of one token of `ip`'s bucket would be told, spending nothing (a
    /// login checks it before the password; only failures spend); `None`: no limit.
    pub fn peek(&self, ip: IpAddr) -> Option<Decision> {
        let pace = self.pace?;
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = now_nanos();
        Some(state.buckets.get(&client_of(ip)).map_or_else(|| Bucket::paced(pace).peek_at(1, now), |b| b.peek_at(1, now)))
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.state.lock().unwrap().buckets.len()
    }
}

/// The address a limit counts: IPv4 as it is (also when mapped into IPv6), IPv6 by
/// its /64 network.
pub fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_gets_its_burst_then_waits_for_the_hourly_rate() {
        let limit = PerAddress::new(Some(Pace::per_hour(5, 10)));
        let at = 100 * SEC;
        let d: Vec<_> = (0..6).map(|_| limit.spend_at(ip("203.0.113.7"), at).unwrap()).collect();
        assert!(d[..5].iter().all(|d| d.allowed));
        assert!(!d[5].allowed);
        assert_eq!(d[5].retry_after_secs, 360, "10 an hour: one every 6 minutes");
        assert!(limit.spend_at(ip("203.0.113.8"), at).unwrap().allowed, "another address has its own bucket");
        assert!(limit.spend_at(ip("203.0.113.7"), at + 360 * SEC).unwrap().allowed);
    }

    #[test]
    fn ipv6_counts_by_its_slash_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(client_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(client_of(ip("::ffff:198.51.100.4")), ip("198.51.100.4"));
        let limit = PerAddress::new(Some(Pace::per_hour(1, 1)));
        assert!(limit.spend_at(ip("2001:db8:1:2::1"), SEC).unwrap().allowed);
        assert!(!limit.spend_at(ip("2001:db8:1:2:ffff::9"), SEC).unwrap().allowed, "same /64");
        assert!(limit.spend_at(ip("2001:db8:1:3::1"), SEC).unwrap().allowed);
    }

    #[test]
    fn no_pace_is_no_limit() {
        assert_eq!(PerAddress::new(None).spend_at(ip("192.0.2.1"), SEC), None);
    }

    #[test]
    fn buckets_that_filled_again_are_swept() {
        let limit = PerAddress::new(Some(Pace::per_hour(5, 3600)));
        for i in 0..FIRST_SWEEP as u32 {
            limit.spend_at(IpAddr::V4(i.into()), SEC);
        }
        assert_eq!(limit.tracked(), FIRST_SWEEP);
        // One token a second: ten seconds on, every one of them is full again.
        limit.spend_at(ip("192.0.2.1"), 11 * SEC);
        assert_eq!(limit.tracked(), 1);
    }
}
