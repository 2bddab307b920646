//! Usage thresholds (issue 37, SOAT v0.28's usage.yaml `UsageThreshold`, `uthr_…`): a
//! project's alert on its metered `tokens` or `cost_usd` over a window. A threshold is
//! an account-owned record (`store::owned`), immutable apart from deletion, and
//! carries its fire state.
//!
//! It is checked where usage is metered: [`cross_in`] runs in the transaction that
//! settles a model call's quota reservation and adds the call to the usage meters (the
//! step's save, `store::quotas::settle_in`), reads the project's meters over the
//! threshold's window, and on the first crossing in that window marks the threshold
//! fired and writes `usage.threshold_crossed` into the webhook outbox of that same
//! transaction: the event is there exactly when the usage that crossed is.
//!
//! Windows are fixed and keyed by the truncated time, as the quotas' are:
//! `calendar_month` is the UTC month (`2026-07`), `rolling_24h` the UTC day
//! (`2026-07-07Z`). A threshold fires at most once per window. (SOAT sums a trailing 24
//! hours and re-arms a fired `rolling_24h` threshold once usage falls under 90 %;
//! Quarry keeps fixed windows, as its quotas do.)

use serde::{Deserialize, Serialize};

use super::kv::{Read, WriteTx};
use super::owned::{insert_in, list_in, owned_record, put_in, remove_in};
use super::webhooks::Raised;
use super::{Charge, Records, StoreError};

pub const THRESHOLD_PREFIX: &str = "uthr_";
/// The webhook event a crossing raises (SOAT's name).
pub const CROSSED_EVENT: &str = "usage.threshold_crossed";
/// The meter a call's priced cost is kept in, in billionths of a USD (counters are
/// whole numbers).
pub const COST_METER: &str = "cost_nusd";
/// Billionths of a USD in one.
pub const NANOS_PER_USD: f64 = 1e9;
/// The meters a `tokens` threshold sums (SOAT's billable token components).
const TOKEN_METERS: [&str; 3] = ["input_tokens", "output_tokens", "cached_tokens"];

/// A usage threshold of one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageThresholdRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// `cost_usd` or `tokens`.
    pub metric: String,
    /// `calendar_month` or `rolling_24h`.
    pub window: String,
    pub threshold: f64,
    pub last_fired_at: Option<String>,
    /// The window it last fired in (see the module's note for the keys).
    pub fired_window_key: Option<String>,
    pub created_at: String,
}

owned_record!(UsageThresholdRecord, "soat_usage_thresholds", "soat_usage_thresholds_by_account");

/// The key of the window `day` (`YYYY-MM-DD`, UTC) falls in.
pub fn window_key(window: &str, day: &str) -> String {
    match window {
        "calendar_month" => day[..7].to_owned(),
        _ => format!("{day}Z"),
    }
}

/// The project's metered `metric` over the window of `window` that `day` falls in.
pub(super) fn windowed_in(txn: &impl Read, account_id: &str, project_id: &str, metric: &str, window: &str, day: &str) -> Result<f64, StoreError> {
    let dimension = format!("project:{project_id}");
    let meters: &[&str] = if metric == "cost_usd" { &[COST_METER] } else { &TOKEN_METERS };
    // The window's hours are those its key's prefix of the date starts.
    let within = if window == "calendar_month" { &day[..7] } else { day };
    let units = super::quotas::meters_in(txn, account_id, project_id, Some(within), Some(within))?
        .into_iter()
        .filter(|(_, dim, m, _)| *dim == dimension && meters.contains(&m.as_str()))
        .fold(0u64, |sum, (_, _, _, u)| sum.saturating_add(u));
    Ok(if metric == "cost_usd" { units as f64 / NANOS_PER_USD } else { units as f64 })
}

/// Checks the project's thresholds against its meters after a call metered in `hour`:
/// each one crossed for the first time in its window is marked fired and raises
/// `usage.threshold_crossed`, into the outbox of this transaction.
pub(super) fn cross_in(txn: &WriteTx, account_id: &str, project_id: &str, hour: &str) -> Result<(), StoreError> {
    let day = &hour[..10];
    let mine: Vec<UsageThresholdRecord> =
        list_in::<UsageThresholdRecord>(txn, account_id)?.into_iter().filter(|t| t.project_id == project_id).collect();
    let mut raised = Vec::new();
    for mut t in mine {
        let key = window_key(&t.window, day);
        if t.fired_window_key.as_deref() == Some(key.as_str()) {
            continue;
        }
        let value = windowed_in(txn, account_id, project_id, &t.metric, &t.window, day)?;
        if value < t.threshold {
            continue;
        }
        let now = crate::clock::now_rfc3339();
        t.last_fired_at = Some(now);
        t.fired_window_key = Some(key.clone());
        put_in(txn, &t)?;
        raised.push(Raised {
            event_type: CROSSED_EVENT.into(),
            resource_type: "usage_threshold",
            resource_id: t.id.clone(),
            data: serde_json::json!({
                "threshold_id": t.id, "project_id": project_id, "metric": t.metric, "window": t.window,
                "window_key": key, "threshold": t.threshold, "observed_value": value,
            }),
        });
    }
    super::webhooks::enqueue_in(txn, account_id, project_id, &raised)
}

impl Records {
    pub(super) fn ensure_thresholds(&self) -> Result<(), StoreError> {
        self.ensure::<UsageThresholdRecord>()
    }

    /// Adds a threshold (charged to the account's stored characters).
    pub fn create_threshold(&self, t: &UsageThresholdRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        insert_in(&txn, t)?;
        self.commit_charged(txn, Charge::Capped(&t.account_id))
    }

    /// Removes the account's threshold, and with it its fire state; whether there was one.
    pub fn remove_threshold(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let removed = remove_in::<UsageThresholdRecord>(&txn, account_id, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(removed)
    }

    /// The project's metered `metric` over the current `window` (tests, views).
    pub fn usage_windowed(&self, account_id: &str, project_id: &str, metric: &str, window: &str, day: &str) -> Result<f64, StoreError> {
        windowed_in(&self.kv.read()?, account_id, project_id, metric, window, day)
    }
}

#[cfg(test)]
mod tests {
    use super::super::quotas::{Metered, Settle};
    use super::*;

    #[test]
    fn a_threshold_fires_once_in_its_window_when_the_meters_cross_it() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        let t = UsageThresholdRecord {
            id: "uthr_1".into(),
            account_id: "acct_a".into(),
            project_id: "proj_a".into(),
            metric: "tokens".into(),
            window: "calendar_month".into(),
            threshold: 100.0,
            last_fired_at: None,
            fired_window_key: None,
            created_at: "2026-12-01T00:00:00.000Z".into(),
        };
        r.create_threshold(&t).unwrap();
        let spend = |day: &str, tokens: u64| {
            let metered = Metered {
                account_id: "acct_a".into(),
                project_id: "proj_a".into(),
                hour: format!("{day}T10"),
                dimensions: vec!["project:proj_a".into()],
                units: vec![("input_tokens", tokens), (COST_METER, 1)],
            };
            r.settle_quota(&Settle { holds: Vec::new(), metered }).unwrap();
            r.get::<UsageThresholdRecord>("acct_a", "uthr_1").unwrap().unwrap().fired_window_key
        };
        assert_eq!(spend("2026-12-01", 60), None);
        assert_eq!(spend("2026-12-02", 60).as_deref(), Some("2026-12"), "the month's days sum");
        let fired = r.get::<UsageThresholdRecord>("acct_a", "uthr_1").unwrap().unwrap().last_fired_at;
        assert_eq!(spend("2026-12-03", 60).as_deref(), Some("2026-12"));
        assert_eq!(r.get::<UsageThresholdRecord>("acct_a", "uthr_1").unwrap().unwrap().last_fired_at, fired, "once per window");
        assert_eq!(spend("2027-01-01", 60), Some("2026-12".into()), "a new window starts from nothing");
        assert_eq!(r.usage_windowed("acct_a", "proj_a", "tokens", "calendar_month", "2026-12-31").unwrap(), 180.0);
        assert_eq!(r.usage_windowed("acct_a", "proj_a", "cost_usd", "rolling_24h", "2026-12-03").unwrap(), 1e-9);
    }
}
