//! Quotas (issue 37, `quota_…`, SOAT v0.28's quotas.yaml): caps on a project's
//! `requests`, `tokens` (and `cost_usd`) over a fixed window, for the whole project,
//! one api key, one agent or one actor (or each actor: a `null` `scope_ref`).
//!
//! Enforced before the model is called, never after: each model call of a generation
//! first reserves an upper bound of what it can spend (its prompt's bytes, which no
//! tokenizer turns into more tokens, plus a margin for the chat template, plus its
//! `max_tokens`) in every enforced `tokens` quota it falls under, atomically in the
//! store (`store::quotas`); a reservation that does not fit refuses the call with
//! `QUOTA_EXCEEDED` (429), the model never called. The answer in, the reservation
//! settles to the usage the provider reported, with the usage meters in the same
//! transaction. A quota's first breach in a window (a refusal, or a `monitor` quota's
//! reservation past its limit, let through) raises the `quota.exceeded` webhook event,
//! in the outbox of the reservation's transaction. Every authenticated `/api/v1` request
//! takes one unit of each `requests` quota of its project (and key) at the dispatch,
//! before its handler ([`take_request`], called by `http::oversight`). `monitor`
//! quotas count and never refuse.
//!
//! `cost_usd` quotas count billionths of a USD: a model call reserves its upper bound
//! priced from the account's price book in force (`agents::usage::prices_in_force`:
//! the prompt's bound at the dearer of the input and cached prices, `max_tokens` at the
//! output price, the dearest of the call's targets), and settles to its usage priced
//! as its receipt prices it. A call the book cannot bound (no input or output price for
//! a target's provider and model) is refused with `QUOTA_UNPRICED` when an enforced
//! `cost_usd` quota applies, before the model is called: an unpriced call is not a free
//! one. (SOAT lets such a call through and files a `quota_unpriced` exception.)
//!
//! As SOAT does, windows are fixed and keyed by the truncated time (`rolling_1m`:
//! `2026-07-07T12:31Z`, `calendar_month`: `2026-07`).

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::{json, Value};

use super::agent::record::AgentRecord;
use super::{Scope, SoatError};
use crate::error::{ApiError, Code};
use crate::store::quotas::{Hold, Settle, QUOTA_PREFIX};
use crate::store::thresholds::NANOS_PER_USD;
use crate::store::webhooks::Raised;
use crate::store::{ActorRecord, ProjectKeyRecord, QuotaRecord, Records, StoreError};

super::scope::in_project!(QuotaRecord);

const SCOPES: [&str; 4] = ["project", "api_key", "agent", "actor"];
const METRICS: [&str; 3] = ["requests", "tokens", "cost_usd"];
const WINDOWS: [&str; 4] = ["rolling_1m", "rolling_1h", "rolling_24h", "calendar_month"];
const MODES: [&str; 2] = ["enforce", "monitor"];
/// The output a model call may spend when its agent sets no `max_output_tokens` and a
/// `tokens` quota applies: the call is sent with this as its `max_tokens`.
pub const DEFAULT_MAX_OUTPUT: u64 = 4096;
/// Tokens a chat template may add per message, and per call, over the text's bytes.
const TEMPLATE_PER_MESSAGE: u64 = 16;
const TEMPLATE_PER_CALL: u64 = 64;

/// `createQuota`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewQuota {
    #[serde(default)]
    pub project_id: Option<String>,
    pub scope: String,
    #[serde(default)]
    pub scope_ref: Option<String>,
    pub metric: String,
    pub window: String,
    pub limit: f64,
    #[serde(default)]
    pub mode: Option<String>,
}

/// `updateQuota`'s body: the limit and the mode; the rest is fixed at create.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaPatch {
    #[serde(default)]
    pub limit: Option<f64>,
    #[serde(default)]
    pub mode: Option<String>,
}

/// `value` is one of `allowed`, else a 400 naming `field` (usage thresholds too).
pub(super) fn one_of(field: &'static str, value: &str, allowed: &[&str]) -> Result<(), SoatError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(SoatError::invalid(field, format!("must be one of {}, not {value:?}.", allowed.join(", "))))
}

fn check_limit(metric: &str, limit: f64) -> Result<(), SoatError> {
    if !limit.is_finite() || limit <= 0.0 || limit > 1e15 {
        return Err(SoatError::invalid("limit", "must be a positive number."));
    }
    if metric != "cost_usd" && limit.fract() != 0.0 {
        return Err(SoatError::invalid("limit", format!("must be a whole number for {metric}.")));
    }
    Ok(())
}

/// The scope/metric pairs a quota can be enforced on (SOAT's rule).
fn check_pair(scope: &str, metric: &str) -> Result<(), SoatError> {
    let fits = match metric {
        "requests" => matches!(scope, "project" | "api_key"),
        _ => matches!(scope, "project" | "agent" | "actor"),
    };
    if fits {
        return Ok(());
    }
    Err(SoatError::invalid("scope", format!("a {metric} quota cannot have scope {scope}: nothing attributes {metric} to a {scope}.")))
}

/// `scope_ref` names an api key, agent or actor of the quota's project.
fn check_ref(records: &Records, scope: &Scope, kind: &str, id: &str) -> Result<(), SoatError> {
    let project = scope.project_id.as_str();
    let found = match kind {
        "api_key" => records.get::<ProjectKeyRecord>(&scope.account_id, id)?.is_some_and(|k| k.project_id.as_deref().is_none_or(|p| p == project)),
        "agent" => scope.agent::<AgentRecord>(records, id).is_ok_and(|a| a.project_id == project),
        "actor" => scope.get::<ActorRecord>(records, id)?.is_some_and(|a| a.project_id == project),
        _ => return Err(SoatError::invalid("scope_ref", "scope project does not take a scope_ref.")),
    };
    if found {
        return Ok(());
    }
    Err(SoatError::invalid("scope_ref", format!("{id} is no {kind} of this project.")))
}

pub fn create(records: &Records, scope: &Scope, new: NewQuota) -> Result<QuotaRecord, ApiError> {
    one_of("scope", &new.scope, &SCOPES)?;
    one_of("metric", &new.metric, &METRICS)?;
    one_of("window", &new.window, &WINDOWS)?;
    let mode = new.mode.unwrap_or_else(|| "enforce".to_owned());
    one_of("mode", &mode, &MODES)?;
    check_pair(&new.scope, &new.metric)?;
    check_limit(&new.metric, new.limit)?;
    if let Some(r) = &new.scope_ref {
        check_ref(records, scope, &new.scope, r)?;
    }
    let now = crate::clock::now_rfc3339();
    let q = QuotaRecord {
        id: format!("{QUOTA_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        scope: new.scope,
        scope_ref: new.scope_ref,
        metric: new.metric,
        window: new.window,
        limit: new.limit,
        mode,
        created_at: now.clone(),
        updated_at: now,
    };
    match records.create_quota(&q) {
        Ok(()) => Ok(q),
        Err(StoreError::Conflict { what }) => Err(ApiError::new(
            Code::QuotaConflict,
            format!("The project has a quota with this scope, scope_ref, metric and window already: {what}; update it instead."),
        )
        .with_meta("quota_id", what)),
        Err(e) => Err(SoatError::from(e).into()),
    }
}

/// The scope's project's quotas, oldest first.
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<QuotaRecord>, ApiError> {
    let mut all: Vec<QuotaRecord> = scope.list(records)?;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<QuotaRecord, ApiError> {
    Ok(scope.find(records, "quota", id)?)
}

pub fn update(records: &Records, scope: &Scope, id: &str, patch: QuotaPatch) -> Result<QuotaRecord, ApiError> {
    let q = get(records, scope, id)?;
    if let Some(limit) = patch.limit {
        check_limit(&q.metric, limit)?;
    }
    if let Some(mode) = &patch.mode {
        one_of("mode", mode, &MODES)?;
    }
    let changed = records.update::<QuotaRecord, QuotaRecord>(&scope.account_id, id, |q| {
        q.limit = patch.limit.unwrap_or(q.limit);
        q.mode = patch.mode.clone().unwrap_or_else(|| q.mode.clone());
        q.updated_at = crate::clock::now_rfc3339();
        crate::store::owned::Change::Write(q.clone())
    })?;
    changed.ok_or_else(|| SoatError::not_found("quota", id).into())
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), ApiError> {
    get(records, scope, id)?;
    if !records.remove_quota(&scope.account_id, id)? {
        return Err(SoatError::not_found("quota", id).into());
    }
    Ok(())
}

/// The quota as the API shows it; `with_usage`: its current window's count (gets,
/// not lists), for the metrics Quarry counts (`requests`, `tokens`).
pub fn view(records: &Records, q: &QuotaRecord, with_usage: bool) -> Value {
    let usage = (with_usage && q.metric != "cost_usd").then(|| {
        let now = SystemTime::now();
        let key = window_key(&q.window, now);
        // A per-actor or per-key quota counts each subject apart; this is the pooled one.
        let count = records.quota_window(&format!("{}/-/{key}", q.id)).unwrap_or(0);
        json!({"window_key": key, "count": count, "resets_at": humantime::format_rfc3339_millis(resets_at(&q.window, now)).to_string()})
    });
    json!({
        "id": q.id,
        "project_id": q.project_id,
        "scope": q.scope,
        "scope_ref": q.scope_ref,
        "metric": q.metric,
        "window": q.window,
        "limit": q.limit,
        "mode": q.mode,
        "current_usage": usage,
        "created_at": q.created_at,
        "updated_at": q.updated_at,
    })
}

/// The fixed window `at` falls in.
pub fn window_key(window: &str, at: SystemTime) -> String {
    let iso = humantime::format_rfc3339_seconds(at).to_string(); // 2026-07-07T12:31:45Z
    match window {
        "rolling_1h" => format!("{}Z", &iso[..13]),
        "rolling_24h" => format!("{}Z", &iso[..10]),
        "calendar_month" => iso[..7].to_owned(),
        _ => format!("{}Z", &iso[..16]),
    }
}

/// When the window `at` falls in ends.
pub fn resets_at(window: &str, at: SystemTime) -> SystemTime {
    let secs = at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let len = match window {
        "rolling_1h" => 3600,
        "rolling_24h" => 86_400,
        // The next month's first second, counted from now (`at` is now here).
        "calendar_month" => return at + Duration::from_secs(crate::clock::seconds_to_next_month()),
        _ => 60,
    };
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs - secs % len + len)
}

/// Who a model call or a generation is charged to.
#[derive(Debug, Clone)]
pub struct Subject {
    pub account_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub actor_id: Option<String>,
    /// The project key that started it (`key_…`), if one did.
    pub key_id: Option<String>,
    /// The session it runs in, if any (for the usage meters).
    pub session_id: Option<String>,
}

/// The counter of `q` that `who` spends from, if `q` applies to `who`.
fn counter(q: &QuotaRecord, who: &Subject, now: SystemTime) -> Option<String> {
    let id = match q.scope.as_str() {
        "project" => None,
        "agent" => Some(who.agent_id.as_str()),
        "actor" => Some(who.actor_id.as_deref()?),
        "api_key" => Some(who.key_id.as_deref()?),
        _ => return None,
    };
    let subject = match (&q.scope_ref, id) {
        (None, None) => "-",
        (Some(r), Some(id)) if r == id => "-",
        (Some(_), _) => return None,
        // One budget per actor (or per key) when no ref names one.
        (None, Some(id)) => id,
    };
    Some(format!("{}/{subject}/{}", q.id, window_key(&q.window, now)))
}

/// A reservation held while a model call runs; [`Reservation::settle`] it once, with
/// what the call spent.
#[derive(Debug)]
pub struct Reservation {
    who: Subject,
    /// Each hold with the metric it counts.
    holds: Vec<(Hold, &'static str)>,
    /// The prices of the call's targets in force when it was reserved (a model
    /// call's; none for a generation's start).
    pub prices: Vec<crate::agents::usage::TargetPrices>,
    /// What the call spent, once its answer is in (nothing, until then).
    pub spent: Spent,
    /// The model that answered it.
    pub model: Option<String>,
}

/// A call the price book cannot price, for a `cost_usd` reservation.
#[derive(Debug, Clone)]
pub struct Unpriced {
    pub provider: String,
    pub model: String,
}

/// Units of one metric a call asks to reserve (`Err`: a cost it cannot price).
pub type Ask = (&'static str, Result<u64, Unpriced>);

/// A quota's limit in the units its counter counts (billionths of a USD for cost).
fn limit_units(q: &QuotaRecord) -> u64 {
    if q.metric == "cost_usd" {
        return (q.limit * NANOS_PER_USD).floor() as u64;
    }
    q.limit as u64
}

/// The holds of `units` on the quotas of `metric` that apply to `who`, with their quota.
fn holds(all: &[QuotaRecord], who: &Subject, metric: &str, units: u64) -> Vec<(Hold, QuotaRecord)> {
    let now = SystemTime::now();
    all.iter()
        .filter(|q| q.project_id == who.project_id && q.metric == metric)
        .filter_map(|q| {
            let key = counter(q, who, now)?;
            let breach = Raised {
                event_type: "quota.exceeded".into(),
                resource_type: "quota",
                resource_id: q.id.clone(),
                data: json!({
                    "quota_id": q.id, "scope": q.scope, "scope_ref": q.scope_ref, "metric": q.metric, "window": q.window,
                    "window_key": window_key(&q.window, now), "limit": q.limit, "mode": q.mode,
                    "agent_id": who.agent_id, "actor_id": who.actor_id,
                }),
            };
            Some((Hold { key, limit: limit_units(q), enforce: q.mode == "enforce", units, breach: Some(breach) }, q.clone()))
        })
        .collect()
}

/// What a QUOTA_UNPRICED says: the quota, and the provider and model it cannot price.
fn unpriced(q: &QuotaRecord, u: &Unpriced) -> ApiError {
    ApiError::new(
        Code::QuotaUnpriced,
        format!(
            "Quota {} caps cost_usd, and the price book prices no input or output tokens of {} model {}: add its prices (PUT /api/v1/usage/prices) to run it under a cost quota.",
            q.id, u.provider, u.model
        ),
    )
    .with_meta("quota_id", q.id.clone())
    .with_meta("provider", u.provider.clone())
    .with_meta("model", u.model.clone())
}

/// What a QUOTA_EXCEEDED says: the quota, its limit and when its window resets.
pub fn exceeded(q: &QuotaRecord) -> ApiError {
    let at = resets_at(&q.window, SystemTime::now());
    let wait = at.duration_since(SystemTime::now()).map_or(1, |d| d.as_secs().max(1));
    let who = q.scope_ref.as_deref().map(|r| format!(" {r}")).unwrap_or_default();
    let mut e = ApiError::new(Code::QuotaExceeded, format!("Quota exceeded for {}{who}: {} {} per {}.", q.scope, q.limit, q.metric, q.window))
        .with_meta("quota_id", q.id.clone())
        .with_meta("metric", q.metric.clone())
        .with_meta("limit", q.limit)
        .with_meta("window", q.window.clone())
        .with_meta("resets_at", humantime::format_rfc3339_seconds(at).to_string());
    e.retry_after = Some(wait);
    e
}

/// Takes each ask's units of its metric from every quota that applies to `who`, or
/// refuses with the first enforced one it would pass (nothing taken). An unpriced ask
/// is refused by an enforced quota of its metric (`QUOTA_UNPRICED`); a `monitor` one
/// counts it as nothing.
pub fn reserve(records: &Records, who: &Subject, asks: &[Ask]) -> Result<Reservation, ApiError> {
    let all = records.list::<QuotaRecord>(&who.account_id)?;
    let (mut holds_of, mut quotas) = (Vec::new(), Vec::new());
    for (metric, units) in asks {
        let found = holds(&all, who, metric, *units.as_ref().unwrap_or(&0));
        if let (Err(u), Some((_, q))) = (units, found.iter().find(|(h, _)| h.enforce)) {
            return Err(unpriced(q, u));
        }
        for (h, q) in found {
            holds_of.push((h, *metric));
            quotas.push(q);
        }
    }
    let bare: Vec<Hold> = holds_of.iter().map(|(h, _)| h.clone()).collect();
    match records.reserve_quota(&who.account_id, &who.project_id, &bare)? {
        Ok(()) => Ok(Reservation { who: who.clone(), holds: holds_of, prices: Vec::new(), spent: Spent::default(), model: None }),
        Err(i) => Err(exceeded(&quotas[i])),
    }
}

/// One request of `project` by the account's key `key_id` (a project key's `key_…`, if
/// one made it): a unit of each `requests` quota it falls under, or `QUOTA_EXCEEDED`.
/// Only reads when the project has no `requests` quota; `Ok(false)` then, and the
/// caller need not wait for a write.
pub fn has_request_quotas(records: &Records, account_id: &str, project_id: &str) -> Result<bool, ApiError> {
    Ok(records.list::<QuotaRecord>(account_id)?.iter().any(|q| q.project_id == project_id && q.metric == "requests"))
}

/// Takes one unit of every `requests` quota `key_id`'s request in `project_id` falls under.
pub fn take_request(records: &Records, account_id: &str, project_id: &str, key_id: Option<String>) -> Result<(), ApiError> {
    let who = Subject {
        account_id: account_id.to_owned(),
        project_id: project_id.to_owned(),
        agent_id: String::new(),
        actor_id: None,
        key_id: key_id.filter(|id| id.starts_with(crate::agents::api_keys::KEY_ID_PREFIX)),
        session_id: None,
    };
    reserve(records, &who, &[("requests", Ok(1))]).map(drop)
}

/// The tokens a model call may spend at most: its request's bytes (a token is at
/// least one byte of the text it stands for) with the chat template's margin, and
/// its `max_tokens`.
pub fn upper_bound(request_bytes: usize, messages: usize, max_tokens: u64) -> u64 {
    request_bytes as u64 + TEMPLATE_PER_MESSAGE * messages as u64 + TEMPLATE_PER_CALL + max_tokens
}

/// What one model call spent, for the meters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    /// Model calls answered (0 or 1).
    pub calls: u64,
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub tool_calls: u64,
    /// Each token component's cost (input, output, cached) priced from the book, in
    /// billionths of a USD (`None`: no price for it).
    pub costs: [Option<u64>; 3],
}

impl Spent {
    /// The call's priced cost, in billionths of a USD (unpriced parts add nothing).
    pub fn cost_nusd(&self) -> u64 {
        self.costs.iter().flatten().sum()
    }
}

impl Reservation {
    /// Whether a quota counts this call's tokens or cost (it then needs a `max_tokens`).
    pub fn bounds(&self) -> bool {
        self.holds.iter().any(|(_, m)| *m != "requests")
    }

    /// The store's settle of this reservation to what the call spent, with the call
    /// metered under the project, the agent, the actor, the session and the model
    /// (`agents::usage::metered`): written in the step's own transaction
    /// (`Records::save_step_settling`).
    pub fn settle(self) -> Settle {
        let (who, spent) = (self.who, self.spent);
        let hour = humantime::format_rfc3339_seconds(SystemTime::now()).to_string()[..13].to_owned();
        let by = crate::agents::usage::Meter {
            account_id: &who.account_id,
            project_id: &who.project_id,
            agent_id: &who.agent_id,
            actor_id: who.actor_id.as_deref(),
            session_id: who.session_id.as_deref(),
            model: self.model.as_deref(),
            hour,
        };
        let metered = crate::agents::usage::metered(by, [spent.input, spent.output, spent.cached], spent.costs, spent.calls, spent.tool_calls);
        let holds = self
            .holds
            .into_iter()
            .map(|(h, metric)| {
                let used = match metric {
                    "cost_usd" => spent.cost_nusd(),
                    "tokens" => spent.input + spent.output,
                    _ => h.units,
                };
                (h, used)
            })
            .collect();
        Settle { holds, metered }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_keyed_by_the_truncated_time_and_reset_at_the_next() {
        let at = humantime::parse_rfc3339("2026-07-07T12:31:45Z").unwrap();
        assert_eq!(window_key("rolling_1m", at), "2026-07-07T12:31Z");
        assert_eq!(window_key("rolling_1h", at), "2026-07-07T12Z");
        assert_eq!(window_key("rolling_24h", at), "2026-07-07Z");
        assert_eq!(window_key("calendar_month", at), "2026-07");
        assert_eq!(resets_at("rolling_1m", at), humantime::parse_rfc3339("2026-07-07T12:32:00Z").unwrap());
        assert_eq!(resets_at("rolling_24h", at), humantime::parse_rfc3339("2026-07-08T00:00:00Z").unwrap());
    }

    #[test]
    fn a_quota_applies_to_its_subject_and_a_null_actor_ref_counts_each_actor_apart() {
        let q = |scope: &str, r: Option<&str>| QuotaRecord {
            id: "quota_1".into(),
            account_id: "acct".into(),
            project_id: "proj".into(),
            scope: scope.into(),
            scope_ref: r.map(str::to_owned),
            metric: "tokens".into(),
            window: "rolling_1m".into(),
            limit: 10.0,
            mode: "enforce".into(),
            created_at: String::new(),
            updated_at: String::new(),
        };
        let who = Subject {
            account_id: "acct".into(),
            project_id: "proj".into(),
            agent_id: "agt_1".into(),
            actor_id: Some("actor_1".into()),
            key_id: None,
            session_id: None,
        };
        let at = humantime::parse_rfc3339("2026-07-07T12:31:45Z").unwrap();
        assert_eq!(counter(&q("project", None), &who, at).as_deref(), Some("quota_1/-/2026-07-07T12:31Z"));
        assert_eq!(counter(&q("agent", Some("agt_2")), &who, at), None);
        assert_eq!(counter(&q("agent", Some("agt_1")), &who, at).as_deref(), Some("quota_1/-/2026-07-07T12:31Z"));
        assert_eq!(counter(&q("actor", None), &who, at).as_deref(), Some("quota_1/actor_1/2026-07-07T12:31Z"));
        assert_eq!(counter(&q("api_key", None), &who, at), None, "no key started it");
    }
}
