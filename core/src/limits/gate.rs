//! At most N of something per account at once, across every shard: a count per account
//! under one lock, taken on admission and given back when the [`Slot`] drops (the work
//! ended, failed, or its client went away). Taken once per piece of work (a research, a
//! generation's run segment), never per event. Research admits two at once per
//! account; generations `agents.max_running_per_account`, and a resumed or recovered
//! run takes its slot whatever the count, so work already accepted is never stranded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct Gate {
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// A place in the gate, held for one piece of work; it owns what it gives back, so it
/// can move into a task of its own.
#[derive(Debug)]
pub struct Slot {
    running: Arc<Mutex<HashMap<String, usize>>>,
    account: String,
}

impl Gate {
    /// A place for `account` when fewer than `most` of its own run; else how many do.
    pub fn enter(&self, account: &str, most: usize) -> Result<Slot, usize> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let n = running.entry(account.to_owned()).or_insert(0);
        if *n >= most {
            return Err(*n);
        }
        *n += 1;
        Ok(self.slot(account))
    }

    /// A place for `account` whatever the count (a resume, a recovery).
    pub fn take(&self, account: &str) -> Slot {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()).entry(account.to_owned()).or_insert(0) += 1;
        self.slot(account)
    }

    pub fn running(&self, account: &str) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).get(account).copied().unwrap_or(0)
    }

    fn slot(&self, account: &str) -> Slot {
        Slot { running: self.running.clone(), account: account.to_owned() }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = running.get_mut(&self.account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_at_once_per_account_and_a_dropped_slot_frees_its_place() {
        let g = Gate::default();
        let a = g.enter("acc_a", 2).unwrap();
        let _b = g.enter("acc_a", 2).unwrap();
        assert_eq!(g.enter("acc_a", 2).err(), Some(2));
        let _other = g.enter("acc_b", 2).unwrap();
        drop(a);
        assert_eq!(g.running("acc_a"), 1);
        let _c = g.enter("acc_a", 2).unwrap();
        assert_eq!(g.running("acc_a"), 2);
    }

    #[test]
    fn a_taken_slot_runs_past_the_cap_and_every_slot_frees_on_drop() {
        let g = Gate::default();
        let held: Vec<Slot> = vec![g.enter("acc_a", 2).unwrap(), g.enter("acc_a", 2).unwrap(), g.take("acc_a")];
        assert_eq!(g.running("acc_a"), 3, "a resume runs past the cap");
        assert_eq!(g.enter("acc_a", 2).err(), Some(3));
        drop(held);
        assert_eq!(g.running("acc_a"), 0);
        assert!(g.enter("acc_a", 2).is_ok());
    }
}
