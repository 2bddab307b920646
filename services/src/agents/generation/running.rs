//! How many generations each account runs now, across every shard: a run segment (a
//! start, a resume, a recovery) holds a [`Slot`] from its spawn to its end, and a new
//! generation is refused while the account holds `agents.max_running_per_account` (a
//! resume or a recovery always runs: refusing it would strand work already accepted).
//! Taken once a segment, not once an event: a lock here costs what the bucket map's
//! does on a key-cache miss.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct Running {
    counts: Mutex<HashMap<String, usize>>,
}

/// One running segment of an account's generation; dropping it ends the count.
#[derive(Debug)]
pub struct Slot {
    running: Arc<Running>,
    account_id: String,
}

impl Running {
    /// A slot for a new generation, unless the account already runs `max`: then the
    /// number it runs.
    pub fn try_take(self: &Arc<Running>, account_id: &str, max: usize) -> Result<Slot, usize> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(account_id.to_owned()).or_default();
        if *n >= max {
            return Err(*n);
        }
        *n += 1;
        Ok(Slot { running: self.clone(), account_id: account_id.to_owned() })
    }

    /// A slot whatever the count (a resume, a recovery).
    pub fn take(self: &Arc<Running>, account_id: &str) -> Slot {
        *self.counts.lock().unwrap_or_else(|p| p.into_inner()).entry(account_id.to_owned()).or_default() += 1;
        Slot { running: self.clone(), account_id: account_id.to_owned() }
    }

    /// How many the account runs now.
    pub fn of(&self, account_id: &str) -> usize {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).get(account_id).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.running.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.account_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.account_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_count_per_account_and_free_on_drop() {
        let r = Arc::new(Running::default());
        let a = r.try_take("acct_a", 2).unwrap();
        let b = r.try_take("acct_a", 2).unwrap();
        assert_eq!(r.try_take("acct_a", 2).unwrap_err(), 2);
        let other = r.try_take("acct_b", 2).unwrap();
        let resumed = r.take("acct_a");
        assert_eq!(r.of("acct_a"), 3, "a resume runs past the cap");
        drop((a, b, resumed));
        assert_eq!(r.of("acct_a"), 0);
        assert!(r.try_take("acct_a", 2).is_ok());
        drop(other);
        assert_eq!(r.of("acct_b"), 0);
    }
}
