//! Usage (issue 37, SOAT v0.28's usage.yaml): a generation's receipt
//! (`getUsageReceipt`). What a generation spent is in its record, saved with each step
//! (the provider's reported tokens, summed over its model calls); the same step's
//! transaction settles its quota reservation and adds the call to the project's, the
//! agent's and the actor's meters (`store::quotas`). Costs are `null`: Quarry has no
//! price book yet, and an unpriced quantity is not a free one.

use serde_json::{json, Value};

use super::generation::record::GenerationRecord;
use super::{Scope, SoatError};
use crate::error::ApiError;
use crate::store::Records;

/// One token component of a receipt line (SOAT's `UsageComponent`), unpriced.
fn component(name: &str, quantity: u64, billable: bool) -> Value {
    json!({"component": name, "quantity": quantity, "unit": "token", "billable": billable, "unit_price": null, "cost_usd": null, "price_id": null})
}

/// The receipt of one generation the scope sees: one `llm_tokens` line for what its
/// model calls spent, on the provider and model that served it.
pub fn receipt(records: &Records, scope: &Scope, generation_id: &str) -> Result<Value, ApiError> {
    let g: GenerationRecord = scope.find(records, "generation", generation_id).map_err(|_| SoatError::not_found("generation", generation_id))?;
    let u = &g.state.usage;
    let provider = match &g.ai_provider_id {
        Some(id) => records.get::<crate::store::AiProviderRecord>(&g.account_id, id)?.map(|p| p.provider),
        None => None,
    };
    let components = vec![
        component("input_tokens", u.input_tokens, true),
        component("output_tokens", u.output_tokens, true),
        component("cached_tokens", u.cached_tokens, true),
    ];
    let line = json!({
        "event_id": g.id,
        "meter_type": "llm_tokens",
        "provider": provider.unwrap_or_default(),
        "model": g.state.served_by.clone().unwrap_or_default(),
        "cost_usd": null,
        "components": components,
    });
    Ok(json!({
        "generation_id": g.id,
        "currency": "USD",
        "line_items": [line],
        "by_meter_type": [{"meter_type": "llm_tokens", "cost_usd": null}],
        "total_input_tokens": u.input_tokens,
        "total_output_tokens": u.output_tokens,
        "total_cached_tokens": u.cached_tokens,
        "total_reasoning_tokens": 0,
        "total_cost_usd": null,
    }))
}
