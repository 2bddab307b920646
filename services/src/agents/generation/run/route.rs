//! Where a step's model call goes: the agent's own provider, or its model route's
//! targets in order, with the failures a route may fail over on (`retry_on`) and the
//! generation's cumulative `routing`.

use serde_json::{json, Value};

use super::breaker::Policy;
use super::Run;
use crate::agents::agent::record::{ModelRouteRecord, RetryOn};
use crate::agents::generation::record::Failure;
use crate::agents::providers::{self, CallError};
use crate::error::{Code, ErrorCode};
use crate::llm::LlmError;
use crate::runtime::blocking;
use crate::store::AiProviderRecord;

impl Run {
    /// Where model calls go: the agent's provider (its model), or its route's
    /// targets in order.
    pub(super) async fn targets(&self) -> Result<Vec<Target>, Failure> {
        let config = &self.g.state.config;
        let records = self.host.agents.records.clone();
        let scope = self.scope();
        if let Some(id) = config.ai_provider_id.clone() {
            let model = config.model.clone();
            let found = blocking(move || providers::in_project(&records, &scope, &id)).await.map_err(|e| Failure::new(e.code(), e.message()))?;
            return Ok(vec![Target { index: None, provider: found, model, retry_on: Vec::new(), breaker: None }]);
        }
        let route_id = config
            .model_route_id
            .clone()
            .ok_or_else(|| Failure::new(Code::AiProviderError, "The agent names neither an AI provider nor a model route."))?;
        let route = blocking(move || -> Result<(ModelRouteRecord, Vec<AiProviderRecord>), Failure> {
            let route: ModelRouteRecord = crate::agents::agent::service::in_project(&records, &scope.account_id, &scope.project_id, &route_id)
                .map_err(|e| Failure::new(Code::Internal, e.to_string()))?
                .ok_or_else(|| {
                    Failure::new(Code::ModelRouteNotFound, format!("The agent's model route {route_id} does not exist in this project."))
                })?;
            let providers = route
                .targets
                .iter()
                .map(|t| providers::in_project(&records, &scope, &t.ai_provider_id).map_err(|e| Failure::new(e.code(), e.message())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((route, providers))
        })
        .await?;
        let (route, found) = route;
        let retry_on: Vec<&'static str> = route
            .retry_on
            .iter()
            .map(|r| match r {
                RetryOn::ProviderError => "provider_error",
                RetryOn::Timeout => "timeout",
                RetryOn::RateLimited => "rate_limited",
            })
            .collect();
        Ok(route
            .targets
            .iter()
            .zip(found)
            .enumerate()
            .map(|(i, (t, provider))| {
                let breaker = Policy::new(&provider.id, &t.model, route.failure_threshold, route.cooldown_seconds);
                Target { index: Some(i), provider, model: Some(t.model.clone()), retry_on: retry_on.clone(), breaker: Some(breaker) }
            })
            .collect())
    }
}

/// One place a model call may go.
pub(super) struct Target {
    /// Its position in the route's targets (`None`: the agent's own provider).
    pub(super) index: Option<usize>,
    pub(super) provider: AiProviderRecord,
    pub(super) model: Option<String>,
    pub(super) retry_on: Vec<&'static str>,
    /// Its circuit breaker, for a route's target (issue 37).
    pub(super) breaker: Option<Policy>,
}

/// The route's `error_class` of a failure that may fail over; `None` for a
/// deterministic one (a bad request, a refused credential), which fails the generation.
pub(crate) fn failover_class(e: &CallError) -> Option<&'static str> {
    use crate::llm::ErrorClass as C;
    match e {
        CallError::Llm(LlmError::Provider { error, .. }) => match error.class {
            C::RateLimited | C::QuotaExhausted => Some("rate_limited"),
            C::Timeout => Some("timeout"),
            C::ServerError | C::Overloaded | C::Other => Some("provider_error"),
            _ => None,
        },
        CallError::Llm(LlmError::Unreachable { message, .. }) if message.contains("timed out") => Some("timeout"),
        CallError::Llm(LlmError::Unreachable { .. } | LlmError::Stream { .. }) => Some("provider_error"),
        _ => None,
    }
}

/// The generation's `routing`, cumulative across its model calls.
pub(super) fn routing(route_id: &str, index: Option<usize>, fallbacks: u64, attempts: Vec<Value>, before: Option<Value>) -> Value {
    let (mut all, before_fallbacks) = match before {
        Some(b) => (b["attempts"].as_array().cloned().unwrap_or_default(), b["fallbacks"].as_u64().unwrap_or(0)),
        None => (Vec::new(), 0),
    };
    all.extend(attempts);
    json!({"route_id": route_id, "target_index": index, "fallbacks": before_fallbacks + fallbacks, "attempts": all})
}
