//! Quotas (issue 37) around a model call: before it, the call's upper bound reserved
//! in every quota it falls under (refused with `QUOTA_EXCEEDED`, the model never
//! called); after it, the reservation settled to what the provider reported, and the
//! call metered, in the transaction that saves the step (`Run::save`).

use super::Run;
use crate::agents::generation::record::Failure;
use crate::agents::quotas::{self, Subject};
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
        }
    }

    /// Reserves what `req` may spend, bounding its output when a quota counts it.
    pub(super) async fn reserve_call(&mut self, req: &mut ChatRequest) -> Result<(), Failure> {
        let max = req.params.max_tokens.unwrap_or(quotas::DEFAULT_MAX_OUTPUT);
        let units = quotas::upper_bound(format!("{req:?}").len(), req.messages.len(), max);
        let (records, who) = (self.host.agents.records.clone(), self.subject());
        let reserved = blocking(move || quotas::reserve(&records, &who, "tokens", units)).await;
        let reservation =
            reserved.map_err(|e| Failure { code: e.code, message: e.message, meta: e.meta.map(|m| *m).unwrap_or_default(), stop_reason: "error" })?;
        if reservation.bounds() {
            req.params.max_tokens = Some(max);
        }
        self.quota = Some(reservation);
        Ok(())
    }

    /// What the call spent, settled with the next save.
    pub(super) fn spent(&mut self, usage: &crate::llm::Usage, tool_calls: usize) {
        if let Some(r) = &mut self.quota {
            r.spent = quotas::Spent {
                calls: 1,
                input: usage.input,
                output: usage.output + usage.reasoning,
                cached: usage.cached,
                tool_calls: tool_calls as u64,
            };
        }
    }
}
