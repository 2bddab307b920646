//! The per-key token bucket, as GCRA (generic cell rate algorithm) on one atomic
//! word, so every shard spends from the same bucket without a lock: a key's rate
//! holds across all shards together, exactly. The state is the "theoretical arrival
//! time" (TAT): the instant at which the bucket would be full again.
//!
//! In a cluster of N live nodes (issue 40) each node's bucket for a key is its share:
//! the plan's rate and burst divided by N (a burst share rounded up). Behind a
//! balancer that spreads a client's requests, the nodes together serve the plan's
//! rate plus its burst (rounded up by fewer than N tokens), with no shared counter: a
//! request costs no round trip to the store. A call dearer than a node's burst share
//! (a batch the plan's burst allows) is served when that share is full and leaves
//! the bucket in debt for as long as its cost takes to come back, so the rate holds.
//! A client pinned to one node gets a share of its rate, not all of it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::plans::Rate;

/// What a request learns from the bucket; it fills the `x-ratelimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The plan's burst (`x-ratelimit-limit`).
    pub limit: u64,
    /// Whole tokens left after this request (`x-ratelimit-remaining`).
    pub remaining: u64,
    /// Seconds until the bucket can serve again (`x-ratelimit-reset`): 0 while it can
    /// serve; on a refusal, until it can serve *this* request (its cost), so never less
    /// than `retry_after_secs`.
    pub reset_secs: u64,
    /// On a refusal, seconds until this request's cost is available (`retry-after`).
    pub retry_after_secs: u64,
}

/// A bucket's shape: how many tokens it holds and how long one takes to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub burst: u64,
    /// Nanoseconds for one token to come back.
    pub interval: u64,
}

impl Pace {
    /// A plan's rate: `per_minute` tokens a minute.
    pub fn of(rate: Rate) -> Pace {
        Pace { burst: rate.burst, interval: 60_000_000_000 / rate.per_minute.max(1) }
    }

    /// One of `nodes` nodes' share of it: the burst divided (rounded up), one token
    /// coming back `nodes` times as slowly.
    pub fn share(self, nodes: u64) -> Pace {
        let n = nodes.max(1);
        Pace { burst: self.burst.div_ceil(n).max(1), interval: self.interval.saturating_mul(n) }
    }

    pub fn per_hour(burst: u64, per_hour: u64) -> Pace {
        Pace { burst, interval: 3_600_000_000_000 / per_hour.max(1) }
    }
}

pub struct Bucket {
    pace: Pace,
    /// The plan's burst (what `x-ratelimit-limit` says and a batch may cost), which a
    /// cluster node's share (`pace`) may hold less of.
    limit: u64,
    /// Nanoseconds since [`epoch`] at which the bucket is full again.
    tat: AtomicU64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the process-wide epoch, the clock buckets run on.
pub fn now_nanos() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

impl Bucket {
    pub fn new(rate: Rate) -> Bucket {
        Bucket::paced(Pace::of(rate))
    }

    pub fn paced(pace: Pace) -> Bucket {
        Bucket { pace, limit: pace.burst, tat: AtomicU64::new(0) }
    }

    /// One of `nodes` cluster nodes' share of `rate` (see the module's note).
    pub fn shared(rate: Rate, nodes: u64) -> Bucket {
        Bucket { pace: Pace::of(rate).share(nodes), limit: rate.burst, tat: AtomicU64::new(0) }
    }

    /// Nanoseconds for one token to come back.
    fn interval(&self) -> u64 {
        self.pace.interval
    }

    /// Whether the bucket is full at `now` (nothing spent is still coming back).
    pub fn is_full_at(&self, now: u64) -> bool {
        self.tat.load(Ordering::Acquire) <= now
    }

    /// Tries to spend `cost` tokens at time `now` (nanoseconds on the bucket clock).
    pub fn spend_at(&self, cost: u64, now: u64) -> Decision {
        let t = self.interval();
        let capacity = self.pace.burst * t;
        let mut tat = self.tat.load(Ordering::Acquire);
        loop {
            let backlog = tat.saturating_sub(now);
            let needed = backlog + cost * t;
            // A call dearer than the whole bucket (a node's share of a plan's burst)
            // is served once the bucket is full, leaving it in debt.
            let dear = cost * t > capacity && backlog == 0;
            if needed > capacity && !dear {
                return self.decision(false, backlog, needed - capacity.max(cost * t));
            }
            let new_tat = now.max(tat) + cost * t;
            match self.tat.compare_exchange_weak(tat, new_tat, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return self.decision(true, new_tat - now, 0),
                Err(actual) => tat = actual,
            }
        }
    }

    /// Whether `cost` tokens could be spent at `now`, spending nothing: the decision a
    /// spend would get.
    pub fn peek_at(&self, cost: u64, now: u64) -> Decision {
        let t = self.interval();
        let capacity = self.pace.burst * t;
        let backlog = self.tat.load(Ordering::Acquire).saturating_sub(now);
        let needed = backlog + cost * t;
        self.decision(needed <= capacity, backlog, needed.saturating_sub(capacity))
    }

    pub fn spend(&self, cost: u64) -> Decision {
        self.spend_at(cost, now_nanos())
    }

    /// The plan's burst: the most one call can cost.
    pub fn burst(&self) -> u64 {
        self.limit
    }

    fn decision(&self, allowed: bool, backlog: u64, wait_for_cost: u64) -> Decision {
        let t = self.interval();
        let capacity = self.pace.burst * t;
        let remaining = capacity.saturating_sub(backlog) / t;
        // Time until one whole token is free again.
        let until_one = (backlog + t).saturating_sub(capacity);
        let retry_after_secs = if allowed { 0 } else { ceil_secs(wait_for_cost).max(1) };
        // A refused call may leave tokens (3 left, evaluate costs 5): the bucket serves
        // it again only once its cost is back, so the reset is its retry-after.
        let reset_secs = match (allowed, remaining) {
            (false, _) => retry_after_secs,
            (true, 0) => ceil_secs(until_one),
            (true, _) => 0,
        };
        Decision { allowed, limit: self.limit, remaining, reset_secs, retry_after_secs }
    }
}

fn ceil_secs(nanos: u64) -> u64 {
    Duration::from_nanos(nanos).as_secs() + u64::from(!nanos.is_multiple_of(1_000_000_000))
}

/// Every key's bucket, shared by the shards. Looked up only when a shard's key cache
/// misses; the cached entry keeps its `Arc<Bucket>`.
pub struct Buckets {
    map: Mutex<HashMap<String, Arc<Bucket>>>,
    /// Live nodes sharing each key's rate (1 alone).
    nodes: AtomicU64,
}

impl Default for Buckets {
    fn default() -> Buckets {
        Buckets { map: Mutex::default(), nodes: AtomicU64::new(1) }
    }
}

impl Buckets {
    /// Sets how many live nodes share each rate; buckets taken from here after it are
    /// shares of that many (the caller moves the key epoch, so caches take them).
    /// Whether it changed.
    pub fn set_nodes(&self, nodes: u64) -> bool {
        self.nodes.swap(nodes.max(1), Ordering::AcqRel) != nodes.max(1)
    }

    /// The key's bucket; a new one (full) when none exists or the plan's rate or the
    /// cluster's size changed.
    pub fn get(&self, prefix: &str, rate: Rate) -> Arc<Bucket> {
        let nodes = self.nodes.load(Ordering::Acquire);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(prefix) {
            Some(b) if b.pace == Pace::of(rate).share(nodes) && b.limit == rate.burst => b.clone(),
            _ => {
                let b = Arc::new(Bucket::shared(rate, nodes));
                map.insert(prefix.to_owned(), b.clone());
                b
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn a_full_bucket_serves_its_burst_then_refuses() {
        let b = Bucket::new(Rate { per_minute: 60, burst: 3 });
        let d: Vec<_> = (0..4).map(|_| b.spend_at(1, 10 * SEC)).collect();
        assert_eq!(d.iter().map(|d| d.remaining).collect::<Vec<_>>(), [2, 1, 0, 0]);
        assert!(d[..3].iter().all(|d| d.allowed));
        assert!(!d[3].allowed);
        assert_eq!(d[2].reset_secs, 1);
        assert_eq!(d[3].retry_after_secs, 1);
        assert_eq!(d[0].reset_secs, 0);
    }

    #[test]
    fn tokens_come_back_at_the_sustained_rate() {
        let b = Bucket::new(Rate { per_minute: 60, burst: 2 });
        assert!(b.spend_at(2, 100 * SEC).allowed);
        assert!(!b.spend_at(1, 100 * SEC).allowed);
        assert!(!b.spend_at(1, 100 * SEC + SEC / 2).allowed);
        assert!(b.spend_at(1, 101 * SEC).allowed);
    }

    #[test]
    fn costly_calls_spend_five() {
        let b = Bucket::new(Rate { per_minute: 60, burst: 6 });
        assert_eq!(b.spend_at(5, 50 * SEC).remaining, 1);
        let refused = b.spend_at(5, 50 * SEC);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 4);
        assert!(b.spend_at(1, 50 * SEC).allowed);
    }

    #[test]
    fn a_refusal_for_cost_says_reset_no_sooner_than_retry_after() {
        let b = Bucket::new(Rate { per_minute: 60, burst: 20 });
        assert!(b.spend_at(17, 7 * SEC).allowed);
        let refused = b.spend_at(5, 7 * SEC);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 3, "three tokens are left, too few for five");
        assert_eq!(refused.retry_after_secs, 2);
        assert_eq!(refused.reset_secs, refused.retry_after_secs, "was 0 beside retry-after 2");
        // Half a second on, the wait is shorter and still whole seconds, rounded up.
        let later = b.spend_at(5, 7 * SEC + SEC / 2);
        assert_eq!((later.allowed, later.retry_after_secs, later.reset_secs), (false, 2, 2));
        assert!(b.spend_at(5, 9 * SEC).allowed, "served when the reset said it would be");
    }

    #[test]
    fn many_threads_never_overspend() {
        let b = Arc::new(Bucket::new(Rate { per_minute: 1, burst: 100 }));
        let allowed: u64 = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..1000).filter(|_| b.spend_at(1, 5 * SEC).allowed).count() as u64)
            })
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(allowed, 100);
    }

    #[test]
    fn three_nodes_shares_serve_the_plans_rate_and_burst_together() {
        let rate = Rate { per_minute: 60, burst: 6 };
        let nodes: Vec<Bucket> = (0..3).map(|_| Bucket::shared(rate, 3)).collect();
        // Requests spread over the nodes for 60 s, ten a second offered: the nodes
        // together serve the burst at once, then a token a second.
        let mut served = 0;
        for i in 0..600u64 {
            let now = 1_000 * SEC + i * SEC / 10;
            if nodes[(i % 3) as usize].spend_at(1, now).allowed {
                served += 1;
            }
        }
        assert!((60..=60 + 6).contains(&served), "{served}");
        // What a client is told is the plan's, not a node's share.
        assert_eq!(nodes[0].burst(), 6);
        assert_eq!(nodes[1].spend_at(1, 5_000 * SEC).limit, 6);
    }

    #[test]
    fn a_call_dearer_than_a_nodes_share_is_served_when_it_is_full_and_leaves_a_debt() {
        // Burst 6 over 3 nodes: 2 a node. A batch of 5 (the plan allows it)...
        let b = Bucket::shared(Rate { per_minute: 60, burst: 6 }, 3);
        assert!(b.spend_at(5, 10 * SEC).allowed, "served from a full share");
        // ...is paid back at the share's pace (a token every 3 s): 15 s of debt, and
        // the share's two tokens after it.
        let refused = b.spend_at(1, 20 * SEC);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 2, "until the debt is paid down to the burst share");
        assert!(b.spend_at(1, 22 * SEC).allowed);
        assert!(!b.spend_at(5, 22 * SEC).allowed, "a dear call waits for a full share");
    }

    #[test]
    fn a_plan_change_gives_a_new_bucket() {
        let buckets = Buckets::default();
        let a = buckets.get("al_x", Rate { per_minute: 60, burst: 1 });
        assert!(Arc::ptr_eq(&a, &buckets.get("al_x", Rate { per_minute: 60, burst: 1 })));
        assert!(!Arc::ptr_eq(&a, &buckets.get("al_x", Rate { per_minute: 600, burst: 1 })));
        // And so does a change in the cluster's size.
        let b = buckets.get("al_x", Rate { per_minute: 600, burst: 1 });
        assert!(buckets.set_nodes(2) && !buckets.set_nodes(2));
        assert!(!Arc::ptr_eq(&b, &buckets.get("al_x", Rate { per_minute: 600, burst: 1 })));
    }
}
