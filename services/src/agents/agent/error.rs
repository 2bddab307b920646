//! What agents operations refuse, each with the SOAT code and status the spec gives
//! it (`Code` in `crate::error`, rendered by the SOAT surface), and the `meta` some
//! carry (`current_version`, the dependents' counts).

use serde_json::{json, Value};

use crate::error::{Code, ErrorCode};
use crate::store::StoreError;

/// A kind of record an agent names by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    AiProvider,
    ModelRoute,
    Tool,
    Guardrail,
    Eval,
    MemoryStore,
}

impl RefKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::AiProvider => "AI provider",
            RefKind::ModelRoute => "model route",
            RefKind::Tool => "tool",
            RefKind::Guardrail => "guardrail",
            RefKind::Eval => "eval",
            RefKind::MemoryStore => "memory store",
        }
    }
}

/// What an agent's own project holds that names it (`DELETE` refuses while any is
/// nonzero, unless `force`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dependents {
    pub generation_count: u64,
    pub trace_count: u64,
    pub accepted_share_count: u64,
    pub ingestion_rule_count: u64,
}

impl Dependents {
    pub fn any(&self) -> bool {
        self.generation_count + self.trace_count + self.accepted_share_count + self.ingestion_rule_count > 0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A value the spec's schema or rules refuse (400 `VALIDATION_FAILED`).
    #[error("{message}")]
    Invalid { field: String, message: String },
    #[error(
        "tool_choice {choice} forces a tool call on every step, so a turn could never end with an answer: add a stop condition \
         {{\"type\": \"has_tool_call\", \"tool_name\": …}}, or set tool_choice to \"auto\"."
    )]
    ForcedToolChoiceCannotStop { choice: String },
    #[error("{field}: {key:?} cannot be a tool context key: {reason}")]
    ToolContextKey { field: String, key: String, reason: String },
    #[error("{field} holds a literal credential; store it as a secret and reference it as {{{{secret:sec_…}}}}.")]
    LiteralCredential { field: String },
    #[error("{field}: the tag key {key:?} is reserved (keys starting with `system.` belong to the platform).")]
    ReservedTagKey { field: String, key: String },
    /// A referenced record that is not in the agent's project. `archived`: the config
    /// came from a version (restore, release), so the agent's own write is what fails.
    #[error("{field}: there is no {} {id} in this project.", kind.as_str())]
    Missing { kind: RefKind, id: String, field: String, archived: bool },
    /// `/v1` documents named by a key that reads none ([`crate::access`]).
    #[error("{field}: {}", crate::access::Reach::REFUSED)]
    OutOfReach { field: String },
    #[error("There is no agent {id} in this project.")]
    NotFound { id: String },
    #[error("Agent {agent_id} has no version {version}.")]
    VersionNotFound { agent_id: String, version: u64 },
    #[error("The agent is at version {current}, not {expected}; nothing was written. Read it again, then retry.")]
    VersionConflict { current: u64, expected: u64 },
    #[error(
        "The agent has dependents in its project ({} generations, {} traces, {} accepted shares, {} ingestion rules); pass force=true to delete it anyway.",
        .0.generation_count, .0.trace_count, .0.accepted_share_count, .0.ingestion_rule_count
    )]
    HasDependents(Dependents),
    #[error("The agent has no active release; set one with PUT /api/v1/agents/{{agent_id}}/release first.")]
    NoActiveRelease,
    #[error(
        "The release's promotion_gate {eval_id} has no run this server executed on the canary version {canary_version} that completed with passed: true; start one (POST /api/v1/evals/{eval_id}/runs with agent_version {canary_version}), or abort the rollout."
    )]
    PromotionGateUnmet { eval_id: String, canary_version: u64 },
    /// A record this module keeps (model route, guardrail) that agents still name.
    #[error("{what} is still referenced by {count} agents or routes; repoint or delete them first.")]
    Referenced { kind: RefKind, what: String, count: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AgentError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> AgentError {
        AgentError::Invalid { field: field.into(), message: message.into() }
    }

    /// The error's `meta` on the SOAT body: the field at fault, a conflict's
    /// `current_version`, a delete's dependents.
    pub fn meta_value(&self) -> Option<Value> {
        match self {
            AgentError::VersionConflict { current, .. } => Some(json!({"current_version": current})),
            AgentError::HasDependents(d) => Some(serde_json::to_value(d).expect("counts serialize")),
            AgentError::PromotionGateUnmet { eval_id, canary_version } => Some(json!({"promotion_gate": eval_id, "canary_version": canary_version})),
            AgentError::Missing { field, id, .. } => Some(json!({"field": field, "id": id})),
            AgentError::Referenced { count, .. } => Some(json!({"reference_count": count})),
            _ => self.field().map(|f| json!({"field": f})),
        }
    }

    /// The request field at fault, when one is.
    pub fn field(&self) -> Option<&str> {
        match self {
            AgentError::Invalid { field, .. }
            | AgentError::ToolContextKey { field, .. }
            | AgentError::LiteralCredential { field }
            | AgentError::ReservedTagKey { field, .. }
            | AgentError::Missing { field, .. }
            | AgentError::OutOfReach { field } => Some(field).filter(|f| !f.is_empty()).map(String::as_str),
            _ => None,
        }
    }
}

impl ErrorCode for AgentError {
    fn code(&self) -> Code {
        match self {
            AgentError::Invalid { .. } => Code::SoatValidation,
            AgentError::ForcedToolChoiceCannotStop { .. } => Code::ForcedToolChoiceCannotStop,
            AgentError::ToolContextKey { .. } => Code::InvalidToolContextKey,
            AgentError::LiteralCredential { .. } => Code::LiteralCredential,
            AgentError::ReservedTagKey { .. } => Code::ReservedTagKey,
            AgentError::OutOfReach { .. } => Code::ApiKeyProjectScope,
            AgentError::Missing { kind, archived, .. } => match kind {
                RefKind::AiProvider if *archived => Code::AiProviderNotFound,
                RefKind::AiProvider => Code::AgentAiProviderNotFound,
                RefKind::ModelRoute => Code::ModelRouteNotFound,
                RefKind::Tool => Code::ToolNotFound,
                RefKind::Guardrail => Code::GuardrailNotFound,
                RefKind::Eval | RefKind::MemoryStore => Code::SoatValidation,
            },
            AgentError::NotFound { .. } | AgentError::VersionNotFound { .. } => Code::SoatNotFound,
            AgentError::VersionConflict { .. } => Code::VersionConflict,
            AgentError::HasDependents(_) => Code::AgentHasDependents,
            AgentError::NoActiveRelease => Code::NoActiveRelease,
            AgentError::PromotionGateUnmet { .. } => Code::PromotionGateUnmet,
            AgentError::Referenced { kind: RefKind::Guardrail, .. } => Code::GuardrailHasReferences,
            AgentError::Referenced { .. } => Code::ModelRouteHasDependents,
            AgentError::Store(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, Value>> {
        match self.meta_value()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
}
