//! Usage (issue 37, SOAT v0.28's usage.yaml): the price book (`getPriceBook`,
//! `upsertPriceBook`) and a generation's receipt (`getUsageReceipt`). What a generation
//! spent is in its record, saved with each step (the provider's reported tokens, summed
//! over its model calls); the same step's transaction settles its quota reservation and
//! adds the call to the project's, the agent's and the actor's meters
//! (`store::quotas`).
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

/// One token component of a receipt line (SOAT's `UsageComponent`), priced when a row
/// covers it; its cost, if priced.
fn component(book: &[PriceRecord], sku: &Sku<'_>, name: &str, quantity: u64) -> (Value, Option<f64>) {
    let price = price_for(book, sku, name);
    let cost = price.map(|p| quantity as f64 * p.unit_price);
    let v = json!({
        "component": name,
        "quantity": quantity,
        "unit": "token",
        "billable": true,
        "unit_price": price.map(|p| p.unit_price),
        "cost_usd": cost,
        "price_id": price.map(|p| p.id.as_str()),
    });
    (v, cost)
}

/// The sum of the priced costs; `None` when nothing was priced.
fn sum(costs: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    costs.into_iter().flatten().fold(None, |acc, c| Some(acc.unwrap_or(0.0) + c))
}

/// The receipt of one generation the scope sees: one `llm_tokens` line for what its
/// model calls spent, on the provider and model that served it, priced from the book.
pub fn receipt(records: &Records, scope: &Scope, generation_id: &str) -> Result<Value, ApiError> {
    let g: GenerationRecord = scope.find(records, "generation", generation_id).map_err(|_| SoatError::not_found("generation", generation_id))?;
    let u = &g.state.usage;
    let provider = match &g.ai_provider_id {
        Some(id) => records.get::<crate::store::AiProviderRecord>(&g.account_id, id)?.map(|p| p.provider),
        None => None,
    };
    let (provider, model) = (provider.unwrap_or_default(), g.state.served_by.clone().unwrap_or_default());
    let at = g.completed_at.as_deref().or(g.last_activity_at.as_deref()).unwrap_or(&g.started_at);
    let sku = Sku { ai_provider_id: g.ai_provider_id.as_deref(), provider: &provider, model: &model, at };
    let book = book(records, &g.account_id)?;
    let (components, costs): (Vec<Value>, Vec<Option<f64>>) =
        [("input_tokens", u.input_tokens), ("output_tokens", u.output_tokens), ("cached_tokens", u.cached_tokens)]
            .into_iter()
            .map(|(name, quantity)| component(&book, &sku, name, quantity))
            .unzip();
    let cost = sum(costs);
    let line = json!({
        "event_id": g.id,
        "meter_type": "llm_tokens",
        "provider": provider,
        "model": model,
        "cost_usd": cost,
        "components": components,
    });
    Ok(json!({
        "generation_id": g.id,
        "currency": "USD",
        "line_items": [line],
        "by_meter_type": [{"meter_type": "llm_tokens", "cost_usd": cost}],
        "total_input_tokens": u.input_tokens,
        "total_output_tokens": u.output_tokens,
        "total_cached_tokens": u.cached_tokens,
        "total_reasoning_tokens": 0,
        "total_cost_usd": cost,
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
