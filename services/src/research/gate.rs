//! At most N researches of one account at once, across every shard: a count per
//! account under one lock, taken on admission and given back when the [`Slot`] drops
//! (the research ended, failed, or its client went away).

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Gate {
    running: Mutex<HashMap<String, usize>>,
}

/// A place in the gate, held for one research.
pub struct Slot<'a> {
    gate: &'a Gate,
    account: String,
}

impl Gate {
    /// A place for `account` when fewer than `most` of its researches run; else how many do.
    pub fn enter(&self, account: &str, most: usize) -> Result<Slot<'_>, usize> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let n = running.entry(account.to_owned()).or_insert(0);
        if *n >= most {
            return Err(*n);
        }
        *n += 1;
        Ok(Slot { gate: self, account: account.to_owned() })
    }

    pub fn running(&self, account: &str) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).get(account).copied().unwrap_or(0)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut running = self.gate.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = running.get_mut(&self.account) {
            *n -= 1;
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
}
