//! The minimal records the spec names but does not define, as far as agents' rules
//! need them (see docs/agents.md): guardrails (ids `guardrail_ids` must find) and model routes (an
//! agent's `model_route_id`, as `soat/model-routes.yaml` shapes them).

use serde::Deserialize;

use super::error::{AgentError, RefKind};
use super::record::{GuardrailRecord, ModelRouteRecord, RetryOn, RouteTarget};
use super::service::Agents;
use crate::agents::{InProject, Scope};

fn id(prefix: &str) -> String {
    format!("{prefix}{}", crate::ids::random_base62(16))
}

fn name_of(field: &str, name: &str) -> Result<String, AgentError> {
    crate::names::check(name, 200).map_err(|problem| AgentError::invalid(field, format!("{field} {problem}")))?;
    Ok(name.to_owned())
}

// guardrails (issue 37): createGuardrail's body is agents::guardrails'.
pub use crate::agents::guardrails::NewGuardrail;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewModelRoute {
    pub name: String,
    pub targets: Vec<RouteTarget>,
    #[serde(default)]
    pub retry_on: Option<Vec<RetryOn>>,
    #[serde(default)]
    pub failure_threshold: Option<u64>,
    #[serde(default)]
    pub cooldown_seconds: Option<u64>,
}

/// The most attempts a route may make: the sum of `1 + max_retries` over its targets.
pub const MAX_ROUTE_ATTEMPTS: u64 = 10;

impl Agents {
    pub fn create_guardrail(&self, p: &Scope, body: NewGuardrail) -> Result<GuardrailRecord, AgentError> {
        // guardrails (issue 37): one create, with its first version.
        crate::agents::guardrails::create(self.records(), p, body).map_err(|e| AgentError::invalid("name", e.message))
    }

    pub fn create_model_route(&self, p: &Scope, body: NewModelRoute) -> Result<ModelRouteRecord, AgentError> {
        let name = name_of("name", &body.name)?;
        if body.targets.is_empty() {
            return Err(AgentError::invalid("targets", "targets needs at least one provider and model."));
        }
        let attempts: u64 = body.targets.iter().map(|t| 1 + t.max_retries).sum();
        if attempts > MAX_ROUTE_ATTEMPTS {
            return Err(AgentError::invalid(
                "targets",
                format!("The route would make {attempts} attempts (1 + max_retries per target); at most {MAX_ROUTE_ATTEMPTS}."),
            ));
        }
        for (i, t) in body.targets.iter().enumerate() {
            if !super::links::provider_exists(self.records(), &p.account_id, &p.project_id, &t.ai_provider_id)? {
                return Err(AgentError::Missing {
                    kind: RefKind::AiProvider,
                    id: t.ai_provider_id.clone(),
                    field: format!("targets[{i}].ai_provider_id"),
                    archived: true,
                });
            }
        }
        if self.all_in_project::<ModelRouteRecord>(p)?.iter().any(|r| r.name == name) {
            return Err(AgentError::invalid("name", format!("A model route named {name:?} already exists in this project.")));
        }
        let at = crate::clock::now_rfc3339();
        let r = ModelRouteRecord {
            id: id("route_"),
            account_id: p.account_id.clone(),
            project_id: p.project_id.clone(),
            name,
            targets: body.targets,
            retry_on: body.retry_on.unwrap_or_else(|| vec![RetryOn::ProviderError, RetryOn::Timeout, RetryOn::RateLimited]),
            failure_threshold: body.failure_threshold.unwrap_or(3),
            cooldown_seconds: body.cooldown_seconds.unwrap_or(60),
            created_at: at.clone(),
            updated_at: at,
        };
        self.records().insert(&r)?;
        Ok(r)
    }

    /// The record, or 404.
    pub fn found<R: InProject>(&self, p: &Scope, id: &str) -> Result<R, AgentError> {
        p.get::<R>(self.records(), id)?.ok_or_else(|| AgentError::NotFound { id: id.to_owned() })
    }

    /// The project's records of a kind, oldest first.
    pub fn all_in_project<R: InProject>(&self, p: &Scope) -> Result<Vec<R>, AgentError> {
        let mut all: Vec<R> = p.list(self.records())?;
        all.sort_by(|a, b| a.id().cmp(b.id()));
        Ok(all)
    }

    /// Deletes a guardrail or model route no agent names (409 otherwise), or an eval.
    pub fn delete_related<R: InProject>(&self, p: &Scope, id: &str, kind: Option<RefKind>) -> Result<(), AgentError> {
        self.found::<R>(p, id)?;
        if let Some(kind) = kind {
            let agents = self.list(p)?;
            let count = agents
                .iter()
                .filter(|a| match kind {
                    RefKind::Guardrail => a.config.guardrail_ids.iter().flatten().any(|g| g == id),
                    _ => a.config.model_route_id.as_deref() == Some(id),
                })
                .count();
            if count > 0 {
                return Err(AgentError::Referenced { kind, what: format!("{} {id}", kind.as_str()), count: count as u64 });
            }
        }
        self.records().remove::<R>(&p.account_id, id)?;
        Ok(())
    }
}
