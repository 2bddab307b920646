//! The price book (issue 37, SOAT v0.28's usage.yaml `Price`, `price_…`): the unit
//! prices a receipt's components are priced at. SOAT keeps one global book; Quarry keeps
//! one per account (an account-owned record, `store::owned`), since no request may change
//! what another account sees. A row prices one component of one provider/model from its
//! `effective_from` on; a row upserted with the key of one the account has (ai provider,
//! meter type, provider, model, component, effective_from) replaces it and keeps its id.

use serde::{Deserialize, Serialize};

use super::owned::{insert_in, list_in, owned_record, put_in};
use super::{Charge, Records, StoreError};

pub const PRICE_PREFIX: &str = "price_";

/// One row of an account's price book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceRecord {
    pub id: String,
    pub account_id: String,
    /// `None`: the default price; else an override for that AI provider only.
    pub ai_provider_id: Option<String>,
    pub meter_type: String,
    pub provider: String,
    pub model: String,
    pub component: String,
    pub unit: String,
    /// USD per `unit`.
    pub unit_price: f64,
    /// RFC 3339 in UTC with milliseconds (`clock::now_rfc3339`'s form), so rows
    /// compare by time as text.
    pub effective_from: String,
    pub created_at: String,
}

owned_record!(PriceRecord, "soat_prices", "soat_prices_by_account");

impl PriceRecord {
    /// Whether `o` is the row an upsert of `self` replaces.
    fn same_key(&self, o: &PriceRecord) -> bool {
        self.ai_provider_id == o.ai_provider_id
            && self.meter_type == o.meter_type
            && self.provider == o.provider
            && self.model == o.model
            && self.component == o.component
            && self.effective_from == o.effective_from
    }
}

impl Records {
    pub(super) fn ensure_prices(&self) -> Result<(), StoreError> {
        self.ensure::<PriceRecord>()
    }

    /// Writes `rows` to the account's book in one transaction, each replacing the row
    /// of its key (keeping that row's id and `created_at`); a later row of `rows`
    /// replaces an earlier one of the same key. Returns the rows as stored.
    pub fn upsert_prices(&self, account_id: &str, rows: Vec<PriceRecord>) -> Result<Vec<PriceRecord>, StoreError> {
        let mut merged: Vec<PriceRecord> = Vec::with_capacity(rows.len());
        for r in rows {
            match merged.iter_mut().find(|o| o.same_key(&r)) {
                Some(o) => *o = PriceRecord { id: o.id.clone(), created_at: o.created_at.clone(), ..r },
                None => merged.push(r),
            }
        }
        let txn = self.kv.write()?;
        let have = list_in::<PriceRecord>(&txn, account_id)?;
        for r in &mut merged {
            match have.iter().find(|o| o.same_key(r)) {
                Some(o) => {
                    r.id.clone_from(&o.id);
                    r.created_at.clone_from(&o.created_at);
                    put_in(&txn, r)?;
                }
                None => insert_in(&txn, r)?,
            }
        }
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(merged)
    }
}
