//! Staged rollout: which version serves a request. With a release, `canary_percent`
//! of callers get `canary_version` and the rest `stable_version`; the split hashes the
//! actor behind the request's session, else the session, so one end user never flips
//! between configs mid-conversation; a request with neither is split at random.
//! Without a release every request gets the live config.

use sha2::{Digest, Sha256};

use super::record::{AgentRecord, Release};

/// Who a request comes from, as far as the split needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller<'a> {
    Actor(&'a str),
    Session(&'a str),
    Anonymous,
}

impl<'a> Caller<'a> {
    /// The actor when there is one, else the session.
    pub fn of(actor_id: Option<&'a str>, session_id: Option<&'a str>) -> Caller<'a> {
        match (actor_id.filter(|a| !a.is_empty()), session_id.filter(|s| !s.is_empty())) {
            (Some(a), _) => Caller::Actor(a),
            (None, Some(s)) => Caller::Session(s),
            (None, None) => Caller::Anonymous,
        }
    }
}

/// What serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// No release: the live config, at the agent's version.
    Live(u64),
    Stable(u64),
    Canary(u64),
}

impl Served {
    /// The version whose archived config serves (the live one for `Live`).
    pub fn version(self) -> u64 {
        match self {
            Served::Live(v) | Served::Stable(v) | Served::Canary(v) => v,
        }
    }
}

pub fn serve(agent: &AgentRecord, caller: Caller<'_>) -> Served {
    match &agent.active_release {
        None => Served::Live(agent.version),
        Some(release) if in_canary(&agent.id, release, caller) => Served::Canary(release.canary_version),
        Some(release) => Served::Stable(release.stable_version),
    }
}

/// Whether the caller lands in the canary: its bucket (0–99) below the percentage.
pub fn in_canary(agent_id: &str, release: &Release, caller: Caller<'_>) -> bool {
    bucket(agent_id, caller) < u64::from(release.canary_percent)
}

/// A stable bucket from 0 to 99 for the caller on this agent (SHA-256, so it is the
/// same on every shard, node and release); random for an anonymous request.
fn bucket(agent_id: &str, caller: Caller<'_>) -> u64 {
    let (kind, key) = match caller {
        Caller::Actor(a) => ("actor", a),
        Caller::Session(s) => ("session", s),
        Caller::Anonymous => {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).expect("the OS random source is available");
            return u64::from_le_bytes(b) % 100;
        }
    };
    let mut h = Sha256::new();
    for part in [agent_id, kind, key] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let digest = h.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("eight bytes")) % 100
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(percent: u8) -> Release {
        Release { stable_version: 1, canary_version: 2, canary_percent: percent, promotion_gate: None }
    }

    #[test]
    fn ten_thousand_actors_split_within_two_points_and_each_keeps_its_side() {
        for percent in [0u8, 1, 5, 20, 50, 73, 99, 100] {
            let r = release(percent);
            let actors: Vec<String> = (0..10_000).map(|i| format!("actor_{i:05}")).collect();
            let canary = actors.iter().filter(|a| in_canary("agent_x", &r, Caller::Actor(a))).count();
            let share = canary as f64 / 100.0;
            assert!((share - f64::from(percent)).abs() <= 2.0, "{percent}%: {share}% of actors in the canary");
            for a in actors.iter().step_by(97) {
                let first = in_canary("agent_x", &r, Caller::Actor(a));
                assert!((0..20).all(|_| in_canary("agent_x", &r, Caller::Actor(a)) == first), "{a} flipped sides");
            }
        }
    }

    #[test]
    fn the_actor_wins_over_the_session_and_sessions_are_stable_too() {
        assert_eq!(Caller::of(Some("act_1"), Some("ses_1")), Caller::Actor("act_1"));
        assert_eq!(Caller::of(None, Some("ses_1")), Caller::Session("ses_1"));
        assert_eq!(Caller::of(Some(""), None), Caller::Anonymous);
        let r = release(50);
        let sessions: Vec<String> = (0..2000).map(|i| format!("ses_{i}")).collect();
        for s in &sessions {
            assert_eq!(in_canary("agent_x", &r, Caller::Session(s)), in_canary("agent_x", &r, Caller::Session(s)));
        }
        // One actor across many sessions: the same side whatever the session.
        let side = in_canary("agent_x", &r, Caller::of(Some("act_7"), Some("ses_a")));
        assert!(sessions.iter().all(|s| in_canary("agent_x", &r, Caller::of(Some("act_7"), Some(s))) == side));
    }

    #[test]
    fn anonymous_requests_split_at_random() {
        let r = release(30);
        let canary = (0..10_000).filter(|_| in_canary("agent_x", &r, Caller::Anonymous)).count();
        assert!((canary as f64 / 100.0 - 30.0).abs() <= 3.0, "{canary}");
    }
}
