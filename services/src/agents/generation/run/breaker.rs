//! Model routes' circuit breaker (issue 37): a route target (an AI provider and a
//! model) that failed `failure_threshold` times in a row, on a failure the route fails
//! over on, is skipped until `cooldown_seconds` have passed since its last failure;
//! then it is tried again (half-open): a success closes it, one more failure opens it
//! for another cooldown. When every target of a route is open the first is tried
//! anyway, as SOAT v0.28 does: refusing to call would turn a passing outage into a
//! cooldown-long one. A skipped target is an attempt of the generation's `routing`
//! with `skipped: "circuit_open"`.
//!
//! As SOAT keeps it, the state lives in this process only, keyed by provider and
//! model (a dead backend is dead for every route that names it), each route bringing
//! its own threshold and cooldown. It is shared by the shards behind one short-held
//! lock: a breaker per shard would let each shard spend the threshold again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Breakers {
    states: Mutex<HashMap<String, State>>,
}

struct State {
    failures: u64,
    last_failure: Instant,
}

/// A target's breaker: its key and the route's policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub key: String,
    pub failure_threshold: u64,
    pub cooldown: Duration,
}

impl Policy {
    pub fn new(ai_provider_id: &str, model: &str, failure_threshold: u64, cooldown_seconds: u64) -> Policy {
        Policy { key: format!("{ai_provider_id}\u{1f}{model}"), failure_threshold, cooldown: Duration::from_secs(cooldown_seconds) }
    }
}

impl Breakers {
    /// How long the target stays skipped, if its circuit is open now.
    pub fn open(&self, p: &Policy) -> Option<Duration> {
        if p.failure_threshold == 0 {
            return None;
        }
        let states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let s = states.get(&p.key)?;
        let since = s.last_failure.elapsed();
        (s.failures >= p.failure_threshold && since < p.cooldown).then(|| p.cooldown - since)
    }

    /// One more failure in a row.
    pub fn failed(&self, p: &Policy) {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let s = states.entry(p.key.clone()).or_insert(State { failures: 0, last_failure: Instant::now() });
        s.failures += 1;
        s.last_failure = Instant::now();
    }

    /// A success closes the circuit.
    pub fn succeeded(&self, p: &Policy) {
        self.states.lock().unwrap_or_else(|e| e.into_inner()).remove(&p.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_circuit_opens_at_the_threshold_half_opens_after_the_cooldown_and_closes_on_success() {
        let b = Breakers::default();
        let p = Policy { key: "aip_1/m".into(), failure_threshold: 2, cooldown: Duration::from_millis(50) };
        b.failed(&p);
        assert_eq!(b.open(&p), None, "one failure of two");
        b.failed(&p);
        assert!(b.open(&p).is_some(), "open at the threshold");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(b.open(&p), None, "half-open after the cooldown");
        b.failed(&p);
        assert!(b.open(&p).is_some(), "one failure half-open opens it again");
        b.succeeded(&p);
        assert_eq!(b.open(&p), None);
        let off = Policy { failure_threshold: 0, ..p };
        b.failed(&off);
        assert_eq!(b.open(&off), None, "a threshold of 0 never opens");
    }
}
