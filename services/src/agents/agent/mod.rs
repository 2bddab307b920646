//! SOAT agents: an agent's typed configuration and every rule it must keep
//! (`config`, `validate`, `inline_tool`), its records and archived versions
//! (`record`, kept by `store::agents`), the service behind every agents, versions and
//! release route (`service`), which version serves a request during a staged rollout
//! (`rollout`), and the minimal records the spec names without defining them
//! (`related`: guardrails, evals and their runs, model routes).

pub mod config;
pub mod error;
pub mod inline_tool;
pub mod links;
pub mod record;
pub mod related;
pub mod rollout;
pub mod service;
pub mod validate;

pub use error::{AgentError, Dependents, RefKind};
pub use service::Agents;
