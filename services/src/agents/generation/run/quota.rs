//! Quotas (issue 37) around a model call: before it, the call's upper bound reserved
//! in every quota it falls under (its tokens, and its cost priced from the price book
//! in force; refused with `QUOTA_EXCEEDED` or `QUOTA_UNPRICED`, the model never
//! called); after it, the reservation settled to what the provider reported (its cost
//! priced as its receipt prices it), and the call metered, in the transaction that
//! saves the step (`Run::save`), which also checks the usage thresholds.

use super::route::Target;
use super::Run;
use crate::agents::generation::record::Failure;
use crate::agents::quotas::{self, Subject, Unpriced};
use crate::agents::usage;
use crate::llm::request::ChatRequest;
use crate::runtime::blocking;

impl Run {
    /// Whom this run's calls are charged to.
    fn subject(&self) -> Subject {
        let key = self.g.started_by_principal_id.as_deref().filter(|id| id.starts_with(crate::agents::api_keys::KEY_ID_PREFIX));
        Subject {
            account_id: self.g.account_id.clone(),
            project_id: self.g.project_id.clone(),
            agent_id: self.g.agent_id.clone(),
            actor_id: self.g.state.input.actor_id.clone(),
            key_id: key.map(str::to_owned),
            session_id: self.g.state.input.session_id.clone(),
        }
    }

    /// Reserves what `req` may spend on any of `targets`, bounding its output when a
    /// quota counts it.
    pub(super) async fn reserve_call(&mut self, req: &mut ChatRequest, targets: &[Target]) -> Result<(), Failure> {
        let max = req.params.max_tokens.unwrap_or(quotas::DEFAULT_MAX_OUTPUT);
        let units = quotas::upper_bound(format!("{req:?}").len(), req.messages.len(), max);
        let prompt = units - max;
        let skus: Vec<(String, String, String)> =
            targets.iter().map(|t| (t.provider.id.clone(), t.provider.provider.clone(), target_model(t))).collect();
        let (records, who) = (self.host.agents.records.clone(), self.subject());
        let reserved = blocking(move || {
            let prices = usage::prices_in_force(&records, &who.account_id, &skus)?;
            // The dearest target bounds the call; one the book cannot bound leaves it unpriced.
            let cost = prices.iter().try_fold(0u64, |most, p| {
                p.bound_nusd(prompt, max).map(|b| most.max(b)).ok_or_else(|| Unpriced { provider: p.provider.clone(), model: p.model.clone() })
            });
            let mut r = quotas::reserve(&records, &who, &[("tokens", Ok(units)), ("cost_usd", cost)])?;
            r.prices = prices;
            Ok::<_, crate::error::ApiError>(r)
        })
        .await;
        let reservation =
            reserved.map_err(|e| Failure { code: e.code, message: e.message, meta: e.meta.map(|m| *m).unwrap_or_default(), stop_reason: "error" })?;
        if reservation.bounds() {
            req.params.max_tokens = Some(max);
        }
        self.quota = Some(reservation);
        Ok(())
    }

    /// What the call spent on `target`, settled with the next save.
    pub(super) fn spent(&mut self, usage: &crate::llm::Usage, tool_calls: usize, target: &Target) {
        if let Some(r) = &mut self.quota {
            let (input, output, cached) = (usage.input, usage.output + usage.reasoning, usage.cached);
            let model = target_model(target);
            let priced = r.prices.iter().find(|p| p.ai_provider_id == target.provider.id && p.model == model);
            r.spent = quotas::Spent {
                calls: 1,
                input,
                output,
                cached,
                tool_calls: tool_calls as u64,
                costs: priced.map_or([None; 3], |p| p.costs_nusd(input, output, cached)),
            };
            r.model = Some(model);
        }
    }
}

/// The model a target is called with (its own, or its provider's default).
fn target_model(t: &Target) -> String {
    t.model.clone().unwrap_or_else(|| t.provider.default_model.clone())
}
