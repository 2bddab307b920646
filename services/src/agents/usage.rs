//! Usage (issue 37, SOAT v0.28's usage.yaml): the price book (`getPriceBook`,
//! `upsertPriceBook`) and a generation's receipt (`getUsageReceipt`). What a generation
//! spent is in its record, saved with each step (the provider's reported tokens, summed
//! over its model calls); the same step's transaction settles its quota reservation and
//! adds the call, priced, to the hourly meters of its project, agent, actor, session
//! and model (`store::quotas`, [`metered`]). The receipts and the usage events
//! (`listUsageMeters`) are the generations' records; the totals (`getUsage`, the
//! thresholds) are the meters', read by key range: one record of each.
//!
//! The price book is the account's (`store::prices`). A receipt prices each component
//! at the row in force when its generation last ran (its `completed_at`, else its last
//! activity): of the rows for its provider and model, an override for its AI provider
//! before a default, and of those the one with the latest `effective_from` not after
//! that time. Since a row's `effective_from` must be in the future when it is written,
//! a receipt's price never changes once it could be read. A component no row prices
//! has a `null` cost: an unpriced quantity is not a free one.

use serde::Deserialize;
use serde_json::{json, Value};

use super::generation::record::GenerationRecord;
use super::{Scope, SoatError};
use crate::error::ApiError;
use crate::store::prices::PRICE_PREFIX;
use crate::store::{PriceRecord, Records};

/// The longest provider, model, component, unit or meter type a price row names.
const MAX_NAME_CHARS: usize = 256;

/// `upsertPriceBook`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPrices {
    pub prices: Vec<NewPrice>,
}

/// One row of `upsertPriceBook`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPrice {
    #[serde(default)]
    pub ai_provider_id: Option<String>,
    #[serde(default)]
    pub meter_type: Option<String>,
    pub provider: String,
    pub model: String,
    pub component: String,
    pub unit: String,
    pub unit_price: f64,
    pub effective_from: String,
}

fn price_view(p: &PriceRecord) -> Value {
    json!({
        "id": p.id,
        "ai_provider_id": p.ai_provider_id,
        "meter_type": p.meter_type,
        "provider": p.provider,
        "model": p.model,
        "component": p.component,
        "unit": p.unit,
        "unit_price": p.unit_price,
        "effective_from": p.effective_from,
        "created_at": p.created_at,
    })
}

/// The account's price book, by provider, model, component, then effective time.
fn book(records: &Records, account_id: &str) -> Result<Vec<PriceRecord>, ApiError> {
    let mut all: Vec<PriceRecord> = records.list(account_id)?;
    all.sort_by(|a, b| {
        (&a.provider, &a.model, &a.component, &a.effective_from, &a.ai_provider_id, &a.id).cmp(&(
            &b.provider,
            &b.model,
            &b.component,
            &b.effective_from,
            &b.ai_provider_id,
            &b.id,
        ))
    });
    Ok(all)
}

/// `getPriceBook`: the scope's account's rows (any key of the account reads them).
pub fn price_book(records: &Records, scope: &Scope) -> Result<Value, ApiError> {
    let rows: Vec<Value> = book(records, &scope.account_id)?.iter().map(price_view).collect();
    Ok(json!({"prices": rows}))
}

fn name(field: String, value: String) -> Result<String, SoatError> {
    if value.trim().is_empty() || value.chars().count() > MAX_NAME_CHARS {
        return Err(SoatError::invalid(field, format!("give 1 to {MAX_NAME_CHARS} characters.")));
    }
    Ok(value)
}

/// `upsertPriceBook`: checks every row, then writes them all in one transaction (or,
/// any row refused, none). The book is the account's: a project key may not change it.
pub fn upsert_prices(records: &Records, scope: &Scope, new: NewPrices) -> Result<Value, ApiError> {
    if scope.is_project_key() {
        return Err(SoatError::Forbidden("The price book is the account's: a project key cannot change it.".into()).into());
    }
    let now = std::time::SystemTime::now();
    let created_at = crate::clock::now_rfc3339();
    let mut rows = Vec::with_capacity(new.prices.len());
    for (i, p) in new.prices.into_iter().enumerate() {
        let field = |f: &str| format!("prices[{i}].{f}");
        if !p.unit_price.is_finite() || p.unit_price < 0.0 {
            return Err(SoatError::invalid(field("unit_price"), "give a price of 0 or more (USD per unit).").into());
        }
        let at = humantime::parse_rfc3339_weak(&p.effective_from)
            .map_err(|_| SoatError::invalid(field("effective_from"), "give an RFC 3339 time in UTC, like 2027-01-01T00:00:00Z."))?;
        if at <= now {
            return Err(SoatError::invalid(
                field("effective_from"),
                "give a time in the future: past prices are immutable, so recorded costs stay explainable.",
            )
            .into());
        }
        if let Some(id) = &p.ai_provider_id {
            scope
                .get::<crate::store::AiProviderRecord>(records, id)?
                .ok_or_else(|| SoatError::invalid(field("ai_provider_id"), format!("no AI provider {id} in this account.")))?;
        }
        rows.push(PriceRecord {
            id: format!("{PRICE_PREFIX}{}", crate::ids::random_base62(16)),
            account_id: scope.account_id.clone(),
            ai_provider_id: p.ai_provider_id,
            meter_type: name(field("meter_type"), p.meter_type.unwrap_or_else(|| "llm_tokens".to_owned()))?,
            provider: name(field("provider"), p.provider)?,
            model: name(field("model"), p.model)?,
            component: name(field("component"), p.component)?,
            unit: name(field("unit"), p.unit)?,
            unit_price: p.unit_price,
            effective_from: humantime::format_rfc3339_millis(at).to_string(),
            created_at: created_at.clone(),
        });
    }
    let stored = records.upsert_prices(&scope.account_id, rows)?;
    Ok(json!({"prices": stored.iter().map(price_view).collect::<Vec<_>>()}))
}

/// What prices one model's calls: the provider the generation ran on.
struct Sku<'a> {
    ai_provider_id: Option<&'a str>,
    provider: &'a str,
    model: &'a str,
    /// When the call ran (the form of `PriceRecord::effective_from`).
    at: &'a str,
}

/// The row that prices `component` of `sku` (see the module's note), if any.
fn price_for<'a>(book: &'a [PriceRecord], sku: &Sku<'_>, component: &str) -> Option<&'a PriceRecord> {
    book.iter()
        .filter(|p| {
            p.meter_type == "llm_tokens"
                && p.provider == sku.provider
                && p.model == sku.model
                && p.component == component
                && p.effective_from.as_str() <= sku.at
                && (p.ai_provider_id.is_none() || p.ai_provider_id.as_deref() == sku.ai_provider_id)
        })
        .max_by(|a, b| (a.ai_provider_id.is_some(), &a.effective_from).cmp(&(b.ai_provider_id.is_some(), &b.effective_from)))
}

/// The unit prices of one target of a model call (an AI provider and a model), in
/// force when the call was reserved; `None`: no row prices that component.
#[derive(Debug, Clone)]
pub struct TargetPrices {
    pub ai_provider_id: String,
    pub provider: String,
    pub model: String,
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cached: Option<f64>,
}

impl TargetPrices {
    /// The most a call of `prompt` prompt tokens and `max_output` output tokens can
    /// cost, in billionths of a USD; `None` without an input and an output price.
    pub fn bound_nusd(&self, prompt: u64, max_output: u64) -> Option<u64> {
        let input = self.input?.max(self.cached.unwrap_or(0.0));
        Some(nanos(prompt as f64 * input + max_output as f64 * self.output?).ceil() as u64)
    }

    /// What each component of a call's reported usage costs as its receipt prices it
    /// (input, output, cached; `None`: unpriced), in billionths of a USD.
    pub fn costs_nusd(&self, input: u64, output: u64, cached: u64) -> [Option<u64>; 3] {
        let part = |q: u64, p: Option<f64>| p.map(|p| nanos(q as f64 * p).round() as u64);
        [part(input, self.input), part(output, self.output), part(cached, self.cached)]
    }
}

/// The token components of a usage event, with their meters: the quantity, the cost
/// in billionths of a USD, and the calls a row priced (a cost no row priced is `null`,
/// not 0).
const COMPONENTS: [(&str, &str, &str); 3] = [
    ("input_tokens", "input_tokens_cost_nusd", "input_tokens_priced"),
    ("output_tokens", "output_tokens_cost_nusd", "output_tokens_priced"),
    ("cached_tokens", "cached_tokens_cost_nusd", "cached_tokens_priced"),
];
/// Model calls metered (a bucket with none is empty).
const CALLS: &str = "model_calls";

/// Whose usage a metering is, and its UTC hour (`YYYY-MM-DDTHH`).
pub struct Meter<'a> {
    pub account_id: &'a str,
    pub project_id: &'a str,
    pub agent_id: &'a str,
    pub actor_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub model: Option<&'a str>,
    pub hour: String,
}

/// What the usage meters gain for `calls` model calls that spent `quantities` of the
/// input, output and cached tokens at `costs`: under the project, the agent, and the
/// actor, session and model when there are ones (the dimensions `getUsage` groups by).
pub fn metered(by: Meter<'_>, quantities: [u64; 3], costs: [Option<u64>; 3], calls: u64, tool_calls: u64) -> crate::store::quotas::Metered {
    let mut dimensions = vec![format!("project:{}", by.project_id), format!("agent:{}", by.agent_id)];
    dimensions.extend(by.actor_id.map(|a| format!("actor:{a}")));
    dimensions.extend(by.session_id.map(|s| format!("session:{s}")));
    dimensions.extend(by.model.map(|m| format!("model:{m}")));
    let mut units = vec![(CALLS, calls), ("tool_calls", tool_calls)];
    for (i, (name, cost, priced)) in COMPONENTS.into_iter().enumerate() {
        units.extend([(name, quantities[i]), (cost, costs[i].unwrap_or(0)), (priced, u64::from(costs[i].is_some()) * calls)]);
    }
    units.push((crate::store::thresholds::COST_METER, costs.iter().flatten().sum()));
    crate::store::quotas::Metered { account_id: by.account_id.to_owned(), project_id: by.project_id.to_owned(), hour: by.hour, dimensions, units }
}

/// Rebuilds the usage meters from the generations' records, once (a store whose
/// meters were kept by day, without model, session or cost): each generation that
/// spent is metered at the hour it ran, priced as its receipt is.
pub fn rebuild_meters_once(records: &Records) -> Result<bool, crate::store::StoreError> {
    records.rebuild_meters_once(|| {
        let gens: Vec<GenerationRecord> = records.all::<GenerationRecord>()?.into_iter().filter(metered_any).collect();
        let mut by_account: std::collections::BTreeMap<String, Vec<GenerationRecord>> = std::collections::BTreeMap::new();
        for g in gens {
            by_account.entry(g.account_id.clone()).or_default().push(g);
        }
        let mut out = Vec::new();
        for (account, gens) in by_account {
            let priced = events(records, &account, gens)
                .map_err(|e| crate::store::StoreError::Corrupt { what: "usage meters' rebuild".into(), reason: e.message })?;
            for e in priced {
                let g = &e.g;
                let by = Meter {
                    account_id: &g.account_id,
                    project_id: &g.project_id,
                    agent_id: &g.agent_id,
                    actor_id: g.state.input.actor_id.as_deref(),
                    session_id: g.state.input.session_id.as_deref(),
                    model: Some(e.model.as_str()),
                    hour: e.at.chars().take(13).collect(),
                };
                let quantities = [e.tokens("input_tokens"), e.tokens("output_tokens"), e.tokens("cached_tokens")];
                let costs = [0, 1, 2].map(|i| e.parts[i].cost().map(|c| nanos(c).round() as u64));
                out.push(metered(by, quantities, costs, 1, 0));
            }
        }
        Ok(out)
    })
}

fn nanos(usd: f64) -> f64 {
    usd * crate::store::thresholds::NANOS_PER_USD
}

/// The prices in force now of each `(ai_provider_id, provider, model)` a call may run on.
pub fn prices_in_force(records: &Records, account_id: &str, targets: &[(String, String, String)]) -> Result<Vec<TargetPrices>, ApiError> {
    let book = book(records, account_id)?;
    let at = crate::clock::now_rfc3339();
    Ok(targets
        .iter()
        .map(|(aip, provider, model)| {
            let sku = Sku { ai_provider_id: Some(aip), provider, model, at: &at };
            let price = |c: &str| price_for(&book, &sku, c).map(|p| p.unit_price);
            TargetPrices {
                ai_provider_id: aip.clone(),
                provider: provider.clone(),
                model: model.clone(),
                input: price("input_tokens"),
                output: price("output_tokens"),
                cached: price("cached_tokens"),
            }
        })
        .collect())
}

/// The sum of the priced costs; `None` when nothing was priced.
fn sum(costs: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    costs.into_iter().flatten().fold(None, |acc, c| Some(acc.unwrap_or(0.0) + c))
}

/// One token component of an event, and the row that priced it.
struct Part {
    name: &'static str,
    quantity: u64,
    price: Option<(f64, String)>,
}

impl Part {
    fn cost(&self) -> Option<f64> {
        self.price.as_ref().map(|(unit_price, _)| self.quantity as f64 * unit_price)
    }

    /// SOAT's `UsageComponent`.
    fn view(&self) -> Value {
        json!({
            "component": self.name,
            "quantity": self.quantity,
            "unit": "token",
            "billable": true,
            "unit_price": self.price.as_ref().map(|p| p.0),
            "cost_usd": self.cost(),
            "price_id": self.price.as_ref().map(|p| p.1.as_str()),
        })
    }
}

/// A usage event: what one generation's model calls spent. Quarry meters each
/// generation as one `llm_tokens` event whose id is the generation's (its record holds
/// the provider's reported tokens, saved in the step's transaction that also adds them
/// to the project's, agent's and actor's meters), priced from the book.
struct Event {
    g: GenerationRecord,
    provider: String,
    model: String,
    /// When it ran: its `completed_at`, else its last activity, else its start.
    at: String,
    parts: Vec<Part>,
}

impl Event {
    fn of(g: GenerationRecord, provider: Option<String>, book: &[PriceRecord]) -> Event {
        let (provider, model) = (provider.unwrap_or_default(), g.state.served_by.clone().unwrap_or_default());
        let at = g.completed_at.clone().or_else(|| g.last_activity_at.clone()).unwrap_or_else(|| g.started_at.clone());
        let sku = Sku { ai_provider_id: g.ai_provider_id.as_deref(), provider: &provider, model: &model, at: &at };
        let u = &g.state.usage;
        let parts = [("input_tokens", u.input_tokens), ("output_tokens", u.output_tokens), ("cached_tokens", u.cached_tokens)]
            .into_iter()
            .map(|(name, quantity)| Part { name, quantity, price: price_for(book, &sku, name).map(|p| (p.unit_price, p.id.clone())) })
            .collect();
        Event { g, provider, model, at, parts }
    }

    fn cost(&self) -> Option<f64> {
        sum(self.parts.iter().map(Part::cost))
    }

    fn tokens(&self, name: &str) -> u64 {
        self.parts.iter().find(|p| p.name == name).map_or(0, |p| p.quantity)
    }

    /// SOAT's `UsageEvent`.
    fn view(&self) -> Value {
        let g = &self.g;
        json!({
            "id": g.id,
            "project_id": g.project_id,
            "orchestration_run_id": null,
            "node_id": null,
            "agent_id": g.agent_id,
            "generation_id": g.id,
            "trace_id": g.trace_id,
            "actor_id": g.state.input.actor_id,
            "session_id": g.state.input.session_id,
            "ai_provider_id": g.ai_provider_id,
            "trigger_id": null,
            "action_id": g.action_id,
            "meter_type": "llm_tokens",
            "source": null,
            "provider": self.provider,
            "model": self.model,
            "cost_usd": self.cost(),
            "components": self.parts.iter().map(Part::view).collect::<Vec<_>>(),
            "created_at": self.at,
        })
    }
}

/// The generations' events, each priced from the account's book (providers looked up
/// once each).
fn events(records: &Records, account_id: &str, gens: Vec<GenerationRecord>) -> Result<Vec<Event>, ApiError> {
    let book = book(records, account_id)?;
    let mut providers: std::collections::HashMap<String, Option<String>> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(gens.len());
    for g in gens {
        let provider = match &g.ai_provider_id {
            Some(id) => match providers.get(id) {
                Some(p) => p.clone(),
                None => {
                    let p = records.get::<crate::store::AiProviderRecord>(account_id, id)?.map(|p| p.provider);
                    providers.insert(id.clone(), p.clone());
                    p
                }
            },
            None => None,
        };
        out.push(Event::of(g, provider, &book));
    }
    Ok(out)
}

/// The receipt of one generation the scope sees: one `llm_tokens` line for what its
/// model calls spent, on the provider and model that served it, priced from the book.
pub fn receipt(records: &Records, scope: &Scope, generation_id: &str) -> Result<Value, ApiError> {
    let g: GenerationRecord = scope.find(records, "generation", generation_id).map_err(|_| SoatError::not_found("generation", generation_id))?;
    let account_id = g.account_id.clone();
    let e = events(records, &account_id, vec![g])?.pop().expect("one generation, one event");
    let (cost, view) = (e.cost(), e.view());
    let line = json!({
        "event_id": e.g.id,
        "meter_type": "llm_tokens",
        "provider": e.provider,
        "model": e.model,
        "cost_usd": cost,
        "components": view["components"],
    });
    Ok(json!({
        "generation_id": e.g.id,
        "currency": "USD",
        "line_items": [line],
        "by_meter_type": [{"meter_type": "llm_tokens", "cost_usd": cost}],
        "total_input_tokens": e.tokens("input_tokens"),
        "total_output_tokens": e.tokens("output_tokens"),
        "total_cached_tokens": e.tokens("cached_tokens"),
        "total_reasoning_tokens": 0,
        "total_cost_usd": cost,
    }))
}

/// `listUsageMeters`'s filters (each absent: any). Quarry's events have no trigger
/// and no source (no triggers, and evaluation spend is not told apart yet), so
/// naming one matches none.
#[derive(Debug, Default)]
pub struct MeterFilter {
    pub agent_id: Option<String>,
    pub generation_id: Option<String>,
    pub trace_id: Option<String>,
    pub actor_id: Option<String>,
    pub session_id: Option<String>,
    pub trigger_id: Option<String>,
    pub action_id: Option<String>,
    pub meter_type: Option<String>,
    pub source: Option<String>,
}

impl MeterFilter {
    fn admits(&self, g: &GenerationRecord) -> bool {
        let is = |want: &Option<String>, have: Option<&String>| want.as_ref().is_none_or(|w| Some(w) == have);
        is(&self.agent_id, Some(&g.agent_id))
            && is(&self.generation_id, Some(&g.id))
            && is(&self.trace_id, Some(&g.trace_id))
            && is(&self.actor_id, g.state.input.actor_id.as_ref())
            && is(&self.session_id, g.state.input.session_id.as_ref())
            && is(&self.action_id, g.action_id.as_ref())
            && self.meter_type.as_deref().is_none_or(|m| m == "llm_tokens")
            && self.trigger_id.is_none()
            && self.source.is_none()
    }
}

/// Whether a generation metered anything (one refused before its model call did not).
fn metered_any(g: &GenerationRecord) -> bool {
    let u = &g.state.usage;
    u.input_tokens + u.output_tokens + u.cached_tokens > 0
}

/// `listUsageMeters`: the events of the scope's project the filter admits, most
/// recent first, as SOAT's `UsageEvent`.
pub fn meters(records: &Records, scope: &Scope, filter: &MeterFilter) -> Result<Vec<Value>, ApiError> {
    let gens: Vec<GenerationRecord> = scope.list::<GenerationRecord>(records)?.into_iter().filter(|g| metered_any(g) && filter.admits(g)).collect();
    let mut all = events(records, &scope.account_id, gens)?;
    all.sort_by(|a, b| (&b.at, &b.g.id).cmp(&(&a.at, &a.g.id)));
    Ok(all.iter().map(Event::view).collect())
}

/// `getUsage`'s dimensions.
const GROUP_BY: [&str; 8] = ["model", "agent", "run", "day", "meter_type", "actor", "session", "source"];

/// `getUsage`'s query.
#[derive(Debug, Default)]
pub struct Rollup {
    pub group_by: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub meter_type: Option<String>,
}

/// A bound of `getUsage`'s window, in `PriceRecord::effective_from`'s form.
fn bound(field: &str, t: Option<String>) -> Result<Option<String>, SoatError> {
    t.map(|t| {
        humantime::parse_rfc3339_weak(&t)
            .map(|at| humantime::format_rfc3339_millis(at).to_string())
            .map_err(|_| SoatError::invalid(field, "give an RFC 3339 time in UTC, like 2027-01-01T00:00:00Z."))
    })
    .transpose()
}

/// A bucket's meters summed (SOAT's `UsageAggregateTotals` once viewed): metric → units.
#[derive(Default, Clone)]
struct Totals(std::collections::BTreeMap<String, u64>);

impl Totals {
    fn add(&mut self, metric: &str, units: u64) {
        *self.0.entry(metric.to_owned()).or_default() += units;
    }

    fn get(&self, metric: &str) -> u64 {
        self.0.get(metric).copied().unwrap_or(0)
    }

    /// What is left of `self` once `parts` are taken out (what no group holds).
    fn less(&self, parts: &[&Totals]) -> Totals {
        let mut rest = self.clone();
        for (metric, units) in rest.0.iter_mut() {
            *units = units.saturating_sub(parts.iter().map(|p| p.get(metric)).sum());
        }
        rest
    }

    fn view(&self) -> Value {
        let calls = self.get(CALLS);
        let costs: Vec<(&str, u64, Option<f64>)> = COMPONENTS
            .iter()
            .map(|(name, cost, priced)| {
                let usd = (self.get(priced) > 0).then(|| self.get(cost) as f64 / crate::store::thresholds::NANOS_PER_USD);
                (*name, self.get(name), usd)
            })
            .collect();
        let components: Vec<Value> = if calls == 0 {
            Vec::new()
        } else {
            costs.iter().map(|(name, q, c)| json!({"component": name, "unit": "token", "quantity": q, "cost_usd": c})).collect()
        };
        json!({
            "cost_usd": sum(costs.iter().map(|c| c.2)),
            "input_tokens": self.get("input_tokens"),
            "output_tokens": self.get("output_tokens"),
            "cached_tokens": self.get("cached_tokens"),
            "reasoning_tokens": 0,
            "components": components,
        })
    }
}

/// `getUsage`: the project's usage meters of the hours `from ..= to` (of one meter
/// type, if named), summed per value of `group_by` and in all; groups in key order,
/// `null` first. Read from the meters (`store::quotas`), a key range of the project's,
/// not from its generations: the window is whole UTC hours.
pub fn rollup(records: &Records, scope: &Scope, q: Rollup) -> Result<Value, ApiError> {
    let group_by = q.group_by.ok_or_else(|| SoatError::invalid("group_by", format!("name one of {}.", GROUP_BY.join(", "))))?;
    if !GROUP_BY.contains(&group_by.as_str()) {
        return Err(SoatError::invalid("group_by", format!("{group_by} is none of {}.", GROUP_BY.join(", "))).into());
    }
    let (from, to) = (bound("from", q.from)?, bound("to", q.to)?);
    let hour = |t: &Option<String>| t.as_ref().map(|t| t.chars().take(13).collect::<String>());
    let rows = match q.meter_type.as_deref() {
        Some(m) if m != "llm_tokens" => Vec::new(),
        _ => records.usage_meters(&scope.account_id, &scope.project_id, hour(&from).as_deref(), hour(&to).as_deref())?,
    };
    let project = format!("project:{}", scope.project_id);
    // The dimension a group_by reads, when it is one the meters keep apart.
    let apart = match group_by.as_str() {
        "model" => Some("model:"),
        "agent" => Some("agent:"),
        "actor" => Some("actor:"),
        "session" => Some("session:"),
        _ => None,
    };
    let (mut groups, mut totals) = (std::collections::BTreeMap::<Option<String>, Totals>::new(), Totals::default());
    for (hour, dim, metric, units) in rows {
        if dim == project {
            totals.add(&metric, units);
            let key = match group_by.as_str() {
                "day" => Some(Some(hour.chars().take(10).collect())),
                "meter_type" => Some(Some("llm_tokens".to_owned())),
                "run" | "source" => Some(None), // no Quarry event has one
                _ => None,
            };
            if let Some(key) = key {
                groups.entry(key).or_default().add(&metric, units);
            }
        } else if let Some(id) = apart.and_then(|p| dim.strip_prefix(p)) {
            groups.entry(Some(id.to_owned())).or_default().add(&metric, units);
        }
    }
    // What no actor (session) spent is the `null` group.
    if matches!(group_by.as_str(), "actor" | "session") {
        let rest = totals.less(&groups.values().collect::<Vec<_>>());
        if rest.get(CALLS) > 0 {
            groups.insert(None, rest);
        }
    }
    let groups: Vec<Value> = groups
        .iter()
        .map(|(key, t)| {
            let mut v = t.view();
            v["key"] = json!(key);
            v
        })
        .collect();
    Ok(json!({
        "project_id": scope.project_id,
        "from": from,
        "to": to,
        "group_by": group_by,
        "meter_type": q.meter_type,
        "groups": groups,
        "totals": totals.view(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, override_of: Option<&str>, from: &str, price: f64) -> PriceRecord {
        PriceRecord {
            id: id.into(),
            account_id: "acct_a".into(),
            ai_provider_id: override_of.map(str::to_owned),
            meter_type: "llm_tokens".into(),
            provider: "openai".into(),
            model: "m".into(),
            component: "input_tokens".into(),
            unit: "token".into(),
            unit_price: price,
            effective_from: from.into(),
            created_at: from.into(),
        }
    }

    #[test]
    fn the_row_in_force_prices_a_call_and_an_override_before_a_default() {
        let book = [
            row("price_old", None, "2026-01-01T00:00:00.000Z", 1.0),
            row("price_new", None, "2026-06-01T00:00:00.000Z", 2.0),
            row("price_later", None, "2027-01-01T00:00:00.000Z", 3.0),
            row("price_mine", Some("aip_1"), "2026-03-01T00:00:00.000Z", 0.5),
        ];
        let at = |at, aip| Sku { ai_provider_id: aip, provider: "openai", model: "m", at };
        let id = |sku: Sku<'_>| price_for(&book, &sku, "input_tokens").map(|p| p.id.clone());
        assert_eq!(id(at("2025-12-31T00:00:00.000Z", None)), None, "before any row");
        assert_eq!(id(at("2026-02-01T00:00:00.000Z", None)).as_deref(), Some("price_old"));
        assert_eq!(id(at("2026-07-01T00:00:00.000Z", None)).as_deref(), Some("price_new"), "the latest in force");
        assert_eq!(id(at("2026-07-01T00:00:00.000Z", Some("aip_2"))).as_deref(), Some("price_new"), "another provider's override");
        assert_eq!(id(at("2026-07-01T00:00:00.000Z", Some("aip_1"))).as_deref(), Some("price_mine"), "its own override");
        assert_eq!(id(at("2026-02-01T00:00:00.000Z", Some("aip_1"))).as_deref(), Some("price_old"), "the override not yet in force");
        assert_eq!(sum([None, Some(1.5), None, Some(0.25)]), Some(1.75));
        assert_eq!(sum([None, None]), None);
    }
}
