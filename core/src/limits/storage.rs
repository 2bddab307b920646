//! The plan's stored characters, held for the records store: each write of an account's
//! records (`store::charges`) is charged to the same meter as its documents, so
//! `stored_chars` is what the account keeps, documents and records together, and one
//! allowance caps both.

use std::sync::Arc;

use super::Meters;
use crate::plans::Plans;
use crate::store::Ledger;

pub struct StorageLedger {
    meters: Arc<Meters>,
    plans: Plans,
    /// The plan of an account whose plan is gone from the configuration.
    default_plan: String,
}

impl StorageLedger {
    pub fn new(meters: Arc<Meters>, plans: Plans, default_plan: String) -> StorageLedger {
        StorageLedger { meters, plans, default_plan }
    }
}

impl Ledger for StorageLedger {
    fn charge(&self, account_id: &str, plan: Option<&str>, delta: i64, capped: bool) -> Result<(), u64> {
        let allowance = match capped {
            true => self.plans.get_or(plan.unwrap_or(&self.default_plan), &self.default_plan).stored_chars,
            false => None,
        };
        match self.meters.account(account_id) {
            Ok(m) => m.try_store(delta, allowance).map(drop).map_err(|e| e.allowance),
            // The meters could not be read: the write is counted in the store all the
            // same, and the next start-up's recount puts the meter right.
            Err(e) => {
                tracing::error!(account = account_id, error = %e, "stored characters not metered");
                Ok(())
            }
        }
    }
}
