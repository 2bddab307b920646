//! The `/api/v1` services' errors: each carries its SOAT code and, where SOAT's body
//! has one, its `error.meta` (the field at fault, a delete's dependents).

use serde_json::{json, Map, Value};

use crate::error::{Code, ErrorCode};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SoatError {
    /// Absent, or another account's, or in a project the scope does not see.
    #[error("No {kind} {id}.")]
    NotFound { kind: &'static str, id: String },
    /// A request value SOAT refuses; `field` is its path (`limit`, `tool_bindings[0].tool_id`).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// A project key naming another project, or making an unscoped key.
    #[error("{0}")]
    ProjectScope(String),
    /// What no key of this kind may do (a project key creating a project).
    #[error("{0}")]
    Forbidden(String),
    /// A `*_id` in a body names no record of this project (`code`: which kind's code).
    #[error("{field}: no {kind} {id} in this project.")]
    Reference { code: Code, kind: &'static str, field: &'static str, id: String },
    #[error("The AI provider {id} is used by {} agent(s) and {} chat(s); delete or repoint them first.", agent_ids.len(), chat_ids.len())]
    ProviderHasDependents { id: String, agent_ids: Vec<String>, chat_ids: Vec<String> },
    #[error("The project {id} still holds records ({}); send ?force=true to delete them with it.", describe(counts))]
    ProjectHasDependents { id: String, counts: Vec<(&'static str, usize)> },
    #[error("{0}")]
    Misconfigured(String),
    #[error("{0}")]
    ListingUnsupported(String),
    #[error("{0}")]
    ListingFailed(String),
    /// An AI provider's `base_url` (or its kind's default) is where the egress policy
    /// does not let a tenant go: refused on write when it says so as written, else when
    /// a call connects (then `CallError`'s `LlmError::Refused`).
    #[error("{}", crate::net::egress::REFUSED)]
    EgressRefused { base_url: String },
    /// The plan's cap on active keys.
    #[error("This account has {active} active keys and its plan allows {max}; delete one first.")]
    KeyLimitReached { active: u64, max: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn describe(counts: &[(&'static str, usize)]) -> String {
    counts.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

impl SoatError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> SoatError {
        SoatError::Invalid { field: field.into(), message: message.into() }
    }

    pub fn not_found(kind: &'static str, id: impl Into<String>) -> SoatError {
        SoatError::NotFound { kind, id: id.into() }
    }
}

impl ErrorCode for SoatError {
    fn code(&self) -> Code {
        match self {
            SoatError::NotFound { .. } => Code::SoatNotFound,
            SoatError::Invalid { .. } => Code::SoatValidation,
            SoatError::ProjectScope(_) => Code::ApiKeyProjectScope,
            SoatError::Forbidden(_) => Code::SoatForbidden,
            SoatError::Reference { code, .. } => *code,
            SoatError::ProviderHasDependents { .. } => Code::AiProviderHasDependents,
            SoatError::ProjectHasDependents { .. } => Code::ProjectHasDependents,
            SoatError::Misconfigured(_) => Code::AiProviderMisconfigured,
            SoatError::ListingUnsupported(_) => Code::ModelListingUnsupported,
            SoatError::ListingFailed(_) => Code::ModelListingFailed,
            SoatError::KeyLimitReached { .. } => Code::KeyLimitReached,
            SoatError::EgressRefused { .. } => Code::EgressRefused,
            SoatError::Store(e) => e.code(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            SoatError::Store(e) => e.retry_after(),
            _ => None,
        }
    }

    fn meta(&self) -> Option<Map<String, Value>> {
        let v = match self {
            SoatError::Invalid { field, .. } => json!({"field": field}),
            SoatError::Reference { field, id, .. } => json!({"field": field, "id": id}),
            SoatError::ProviderHasDependents { agent_ids, chat_ids, .. } => json!({
                "agent_count": agent_ids.len(), "agent_ids": agent_ids.iter().take(10).collect::<Vec<_>>(),
                "chat_count": chat_ids.len(), "chat_ids": chat_ids.iter().take(10).collect::<Vec<_>>(), "forcible": false
            }),
            SoatError::ProjectHasDependents { counts, .. } => {
                Value::Object(counts.iter().map(|(k, n)| (format!("{k}_count"), Value::from(*n))).collect())
            }
            SoatError::KeyLimitReached { active, max } => json!({"active": active, "max": max}),
            SoatError::EgressRefused { base_url } => json!({"field": "base_url", "base_url": base_url}),
            _ => return None,
        };
        match v {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
}
