//! Usage thresholds (issue 37, SOAT v0.28's usage.yaml: `listUsageThresholds`,
//! `createUsageThreshold`, `deleteUsageThreshold`): a project's alert on its metered
//! `tokens` (input + output + cached) or `cost_usd` (priced from the price book) over
//! the UTC `calendar_month` or `rolling_24h` (Quarry: the UTC day). Immutable apart from
//! deletion (which resets its fire state). Its crossing is checked in the transaction
//! that meters a model call and writes `usage.threshold_crossed` into the webhook outbox
//! there, once per window (`store::thresholds`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::quotas::one_of;
use super::{Scope, SoatError};
use crate::error::ApiError;
use crate::store::thresholds::THRESHOLD_PREFIX;
use crate::store::{Records, UsageThresholdRecord};

super::scope::in_project!(UsageThresholdRecord);

const METRICS: [&str; 2] = ["cost_usd", "tokens"];
const WINDOWS: [&str; 2] = ["calendar_month", "rolling_24h"];

/// `createUsageThreshold`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewThreshold {
    #[serde(default)]
    pub project_id: Option<String>,
    pub metric: String,
    pub window: String,
    pub threshold: f64,
}

/// Adds a threshold to the scope's project.
pub fn create(records: &Records, scope: &Scope, new: NewThreshold) -> Result<UsageThresholdRecord, ApiError> {
    one_of("metric", &new.metric, &METRICS)?;
    one_of("window", &new.window, &WINDOWS)?;
    if !new.threshold.is_finite() || new.threshold <= 0.0 || new.threshold > 1e15 {
        return Err(SoatError::invalid("threshold", "must be a number greater than 0.").into());
    }
    let t = UsageThresholdRecord {
        id: format!("{THRESHOLD_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        metric: new.metric,
        window: new.window,
        threshold: new.threshold,
        last_fired_at: None,
        fired_window_key: None,
        created_at: crate::clock::now_rfc3339(),
    };
    records.create_threshold(&t)?;
    Ok(t)
}

/// The thresholds the scope sees (of `project`, when named), newest first.
pub fn list(records: &Records, scope: &Scope, project: Option<&str>) -> Result<Vec<UsageThresholdRecord>, ApiError> {
    let mut all: Vec<UsageThresholdRecord> = records
        .list::<UsageThresholdRecord>(&scope.account_id)?
        .into_iter()
        .filter(|t| scope.sees(&t.project_id) && project.is_none_or(|p| p == t.project_id))
        .collect();
    all.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    Ok(all)
}

/// Removes a threshold the scope sees.
pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    let t: UsageThresholdRecord = scope.find(records, "usage threshold", id)?;
    if !records.remove_threshold(&scope.account_id, &t.id)? {
        return Err(SoatError::not_found("usage threshold", id).into());
    }
    Ok(())
}

/// SOAT's `UsageThreshold`.
pub fn view(t: &UsageThresholdRecord) -> Value {
    json!({
        "id": t.id,
        "project_id": t.project_id,
        "metric": t.metric,
        "window": t.window,
        "threshold": t.threshold,
        "last_fired_at": t.last_fired_at,
        "fired_window_key": t.fired_window_key,
        "created_at": t.created_at,
    })
}
