//! Quotas (issue 37, `quota_…`, SOAT v0.28's quotas.yaml) and the windows they count.
//!
//! A quota is an account-owned record (`store::owned`). What it has counted in its
//! current window is a counter in `soat_quota_windows` (`quota id/subject/window key` →
//! units), and a model call takes its units before it is made: [`Records::reserve_quota`]
//! checks every counter it names against its limit and adds the call's upper bound to
//! each, in one write transaction, or adds nothing and names the first counter that
//! would pass its limit. The store runs writes one at a time, so no two calls can both
//! see room that only one of them fits in: concurrency cannot overspend a quota. When
//! the answer is in, [`Records::settle_quota`] gives back the part of the reservation the
//! call did not spend, in the same transaction that adds the call's usage to the usage
//! meters (`soat_usage_meters`: `account/project/hour/dimension/metric` → units; the
//! call's priced cost is the metric `cost_nusd`, in billionths of a USD), and checks
//! the project's usage thresholds against them (`store::thresholds`). The meters are
//! the one record of usage totals: the rollup (`getUsage`) and the thresholds read
//! them, by key range, never the generations.
//!
//! A reservation that passes a quota's limit raises `quota.exceeded` (a webhook
//! event, in the outbox of the same transaction) the first time in that window.
//!
//! A crash between a reservation and its settle leaves the reservation counted: the
//! window counts more than was spent, never less.

use serde::{Deserialize, Serialize};

use super::kv::{Counts, Read, Table, WriteTx};
use super::owned::{insert_in, list_in, owned_record, remove_in};
use super::webhooks::Raised;
use super::{Charge, Records, StoreError};

pub const QUOTA_PREFIX: &str = "quota_";

/// `quota id/subject/window key` → units counted in that window (reserved or spent).
const WINDOWS: Counts = Counts("soat_quota_windows");
/// `account/project/hour/dimension/metric` → units metered that UTC hour (usage meters).
pub(super) const METERS: Counts = Counts("soat_usage_meters");

/// A quota of one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// `project`, `api_key`, `agent` or `actor`.
    pub scope: String,
    /// The api key, agent or actor it caps; `None`: every one of its scope (for
    /// `actor`, one budget per actor).
    pub scope_ref: Option<String>,
    /// `requests`, `tokens` or `cost_usd`.
    pub metric: String,
    /// `rolling_1m`, `rolling_1h`, `rolling_24h` or `calendar_month`.
    pub window: String,
    pub limit: f64,
    /// `enforce` or `monitor`.
    pub mode: String,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(QuotaRecord, "soat_quotas", "soat_quotas_by_account");

/// One counter a reservation takes units of.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    /// `quota id/subject/window key`.
    pub key: String,
    /// The most units the window may count.
    pub limit: u64,
    /// Refused past the limit (`enforce`); else counted and let through (`monitor`).
    pub enforce: bool,
    pub units: u64,
    /// The `quota.exceeded` event its first breach in a window raises (once).
    pub breach: Option<Raised>,
}

/// What a call spent, metered under each of its dimensions (`project:ID`, `agent:ID`,
/// `actor:ID`, `session:ID`, `model:NAME`) for the UTC hour `hour` (`YYYY-MM-DDTHH`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metered {
    pub account_id: String,
    pub project_id: String,
    pub hour: String,
    pub dimensions: Vec<String>,
    /// `(metric, units)`.
    pub units: Vec<(&'static str, u64)>,
}

/// A reservation's settle: each hold gives back its units and gains what the call
/// spent of its metric (the pair's second), and the meters gain `metered`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settle {
    pub holds: Vec<(Hold, u64)>,
    pub metered: Metered,
}

impl Records {
    pub(super) fn ensure_quotas(&self) -> Result<(), StoreError> {
        self.ensure::<QuotaRecord>()?;
        let txn = self.kv.write()?;
        txn.create(Table::Counts(WINDOWS))?;
        txn.create(Table::Counts(METERS))?;
        txn.commit()
    }

    /// Adds a quota unless its project has one with the same scope, ref, metric and
    /// window (then `Conflict` naming that one), in one transaction.
    pub fn create_quota(&self, q: &QuotaRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        let same = list_in::<QuotaRecord>(&txn, &q.account_id)?.into_iter().find(|o| {
            o.project_id == q.project_id && o.scope == q.scope && o.scope_ref == q.scope_ref && o.metric == q.metric && o.window == q.window
        });
        if let Some(o) = same {
            return Err(StoreError::Conflict { what: o.id });
        }
        insert_in(&txn, q)?;
        self.commit_charged(txn, Charge::Capped(&q.account_id))
    }

    /// Removes the account's quota and its counters; whether there was one.
    pub fn remove_quota(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        if !remove_in::<QuotaRecord>(&txn, account_id, id)? {
            return Ok(false);
        }
        let prefix = format!("{id}/");
        for (key, _) in txn.counts(WINDOWS)?.into_iter().filter(|(k, _)| k.starts_with(&prefix)) {
            txn.delete_count(WINDOWS, &key)?;
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }

    /// Units a window has counted so far.
    pub fn quota_window(&self, key: &str) -> Result<u64, StoreError> {
        Ok(self.kv.read()?.count(WINDOWS, key)?.unwrap_or(0))
    }

    /// Takes `units` of every hold's counter, or none: `Ok(Err(i))` names the first
    /// enforced hold whose counter would pass its limit (no counter written). A hold's
    /// first breach in its window (refused, or let through by a `monitor` quota)
    /// raises its `quota.exceeded` webhook event, written as the outbox in this same
    /// transaction, with the mark that it fired. One transaction.
    pub fn reserve_quota(&self, account_id: &str, project_id: &str, holds: &[Hold]) -> Result<Result<(), usize>, StoreError> {
        if holds.is_empty() {
            return Ok(Ok(()));
        }
        let txn = self.kv.write()?;
        let (mut next, mut refused, mut raised) = (Vec::with_capacity(holds.len()), None, Vec::new());
        for (i, h) in holds.iter().enumerate() {
            let after = txn.count(WINDOWS, &h.key)?.unwrap_or(0).saturating_add(h.units);
            if after > h.limit {
                let fired = format!("{}/fired", h.key);
                if txn.count(WINDOWS, &fired)?.is_none() {
                    txn.put_count(WINDOWS, &fired, 1)?;
                    raised.extend(h.breach.clone());
                }
                if h.enforce && refused.is_none() {
                    refused = Some(i);
                }
            }
            next.push(after);
        }
        if refused.is_none() {
            for (h, after) in holds.iter().zip(next) {
                txn.put_count(WINDOWS, &h.key, after)?;
            }
        }
        super::webhooks::enqueue_in(&txn, account_id, project_id, &raised)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(refused.map_or(Ok(()), Err))
    }

    /// Settles a reservation in a transaction of its own (see [`settle_in`]).
    pub fn settle_quota(&self, s: &Settle) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        settle_in(&txn, s)?;
        self.commit_charged(txn, Charge::Counted(&s.metered.account_id))
    }

    /// The project's meters of the hours `from ..= to` (`YYYY-MM-DDTHH`, or a prefix
    /// of one; `None`: unbounded): `(hour, dimension, metric, units)`, in key order.
    pub fn usage_meters(
        &self,
        account_id: &str,
        project_id: &str,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Vec<(String, String, String, u64)>, StoreError> {
        meters_in(&self.kv.read()?, account_id, project_id, from, to)
    }

    /// Rebuilds the usage meters once (the store's first start with them keyed by
    /// hour, with model, session and cost): drops every meter and writes `all()`'s,
    /// in one transaction, which holds the store's writes while `all` reads. Whether
    /// it ran.
    pub fn rebuild_meters_once(&self, all: impl FnOnce() -> Result<Vec<Metered>, StoreError>) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        if txn.count(super::META, METERS_REBUILT)?.is_some() {
            return Ok(false);
        }
        for (key, _) in txn.counts(METERS)? {
            txn.delete_count(METERS, &key)?;
        }
        for m in all()? {
            meter_in(&txn, &m)?;
        }
        txn.put_count(super::META, METERS_REBUILT, 1)?;
        txn.commit()?;
        Ok(true)
    }
}

/// The `meta` mark that the meters were rebuilt by hour (see `rebuild_meters_once`).
const METERS_REBUILT: &str = "usage_meters_by_hour";

/// See [`Records::usage_meters`].
pub(super) fn meters_in(
    txn: &impl Read,
    account_id: &str,
    project_id: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<(String, String, String, u64)>, StoreError> {
    let prefix = format!("{account_id}/{project_id}/");
    let start = format!("{prefix}{}", from.unwrap_or(""));
    // '~' sorts after every character of an hour and '/'; '0' right after '/'.
    let end = to.map_or_else(|| format!("{account_id}/{project_id}0"), |to| format!("{prefix}{to}~"));
    Ok(txn
        .counts_between(METERS, &start, &end)?
        .into_iter()
        .filter_map(|(k, v)| {
            // A dimension may hold a '/' (a model `openai/gpt-4o`); an hour and a metric never do.
            let (hour, rest) = k.strip_prefix(&prefix)?.split_once('/')?;
            let (dim, metric) = rest.rsplit_once('/')?;
            Some((hour.to_owned(), dim.to_owned(), metric.to_owned(), v))
        })
        .collect())
}

/// Adds what `m` metered to the meters.
fn meter_in(txn: &WriteTx, m: &Metered) -> Result<(), StoreError> {
    for dim in &m.dimensions {
        for (metric, units) in m.units.iter().filter(|(_, u)| *u > 0) {
            let key = meter_key(&m.account_id, &m.project_id, &m.hour, dim, metric);
            let now = txn.count(METERS, &key)?.unwrap_or(0);
            txn.put_count(METERS, &key, now.saturating_add(*units))?;
        }
    }
    Ok(())
}

/// Each hold's counter loses the `units` it took and gains what was spent (the call's
/// actual usage), the usage meters gain what was metered, and the project's usage
/// thresholds are checked against them (`store::thresholds`), all in `txn`.
pub(super) fn settle_in(txn: &WriteTx, s: &Settle) -> Result<(), StoreError> {
    for (h, spent) in &s.holds {
        let now = txn.count(WINDOWS, &h.key)?.unwrap_or(0);
        txn.put_count(WINDOWS, &h.key, now.saturating_sub(h.units).saturating_add(*spent))?;
    }
    let m = &s.metered;
    meter_in(txn, m)?;
    // usage thresholds (issue 37): crossed by what this call metered, in its transaction.
    if m.units.iter().any(|(_, u)| *u > 0) {
        super::thresholds::cross_in(txn, &m.account_id, &m.project_id, &m.hour)?;
    }
    Ok(())
}

pub(super) fn meter_key(account_id: &str, project_id: &str, hour: &str, dimension: &str, metric: &str) -> String {
    format!("{account_id}/{project_id}/{hour}/{dimension}/{metric}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(key: &str, limit: u64, units: u64) -> Hold {
        Hold { key: key.into(), limit, enforce: true, units, breach: None }
    }

    #[test]
    fn concurrent_reservations_never_take_more_than_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let r = std::sync::Arc::new(Records::open(dir.path()).unwrap());
        let taken: u64 = (0..16)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || r.reserve_quota("acct_a", "proj_a", &[hold("quota_1/-/w", 100, 30)]).unwrap().is_ok() as u64)
            })
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(taken, 3, "three reservations of 30 fit in 100");
        assert_eq!(r.quota_window("quota_1/-/w").unwrap(), 90);
        let m = Metered {
            account_id: "acct_a".into(),
            project_id: "proj_a".into(),
            hour: "2026-12-04T10".into(),
            dimensions: vec!["project:proj_a".into()],
            units: vec![("input_tokens", 7)],
        };
        r.settle_quota(&Settle { holds: vec![(hold("quota_1/-/w", 100, 30), 12)], metered: m }).unwrap();
        assert_eq!(r.quota_window("quota_1/-/w").unwrap(), 72);
        assert_eq!(r.reserve_quota("acct_a", "proj_a", &[hold("quota_1/-/w", 100, 10), hold("quota_2/-/w", 5, 10)]).unwrap(), Err(1));
        assert_eq!(r.quota_window("quota_1/-/w").unwrap(), 72, "a refused reservation takes nothing");
        let seven = vec![("2026-12-04T10".into(), "project:proj_a".into(), "input_tokens".into(), 7)];
        assert_eq!(r.usage_meters("acct_a", "proj_a", None, None).unwrap(), seven);
        assert_eq!(r.usage_meters("acct_a", "proj_a", Some("2026-12-04T10"), Some("2026-12-04T10")).unwrap(), seven);
        assert_eq!(r.usage_meters("acct_a", "proj_a", Some("2026-12-04T11"), None).unwrap(), vec![]);
        assert_eq!(r.usage_meters("acct_a", "proj_a", None, Some("2026-12-04T09")).unwrap(), vec![]);
        assert_eq!(r.usage_meters("acct_a", "proj_b", None, None).unwrap(), vec![]);
    }

    #[test]
    fn the_meters_are_rebuilt_once_replacing_what_they_held() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        // A meter kept by day, as builds before this one wrote them.
        let txn = r.kv.write().unwrap();
        txn.put_count(METERS, "acct_a/proj_a/2026-12-04/project:proj_a/input_tokens", 99).unwrap();
        txn.commit().unwrap();
        let m = |hour: &str, n: u64| Metered {
            account_id: "acct_a".into(),
            project_id: "proj_a".into(),
            hour: hour.into(),
            dimensions: vec!["project:proj_a".into(), "model:org/m".into()],
            units: vec![("input_tokens", n)],
        };
        assert!(r.rebuild_meters_once(|| Ok(vec![m("2026-12-04T10", 5), m("2026-12-04T10", 2)])).unwrap());
        assert!(!r.rebuild_meters_once(|| panic!("not asked twice")).unwrap());
        let got = r.usage_meters("acct_a", "proj_a", None, None).unwrap();
        assert_eq!(
            got,
            vec![
                ("2026-12-04T10".into(), "model:org/m".into(), "input_tokens".into(), 7),
                ("2026-12-04T10".into(), "project:proj_a".into(), "input_tokens".into(), 7),
            ],
            "the day-keyed meter is gone"
        );
    }
}
