//! The SOAT Agents API's services (`/api/v1`): who acts where ([`Scope`]), projects,
//! project-scoped keys and AI providers here; agents, versions, secrets and tools in
//! their own files. Services take a [`Scope`] and typed requests, call the store, and
//! answer typed records or their own errors (each with its code); they import neither
//! `api` nor `http`.

// SOAT actors (issue 36, actors).
pub mod actors;
pub mod agent;
pub mod api_keys;
// sessions: conversations and sessions.
pub mod conversation;
// SOAT documents (issue 36, knowledge).
pub mod documents;
pub mod error;
// evaluations (issue 37)
pub mod evals;
pub mod generation;
pub mod knowledge;
pub mod memory;
pub mod patch;
pub mod projects;
pub mod providers;
// quotas and usage (issue 37)
pub mod quotas;
pub mod refs;
pub mod scope;
pub mod secrets;
pub mod service;
pub mod usage;
// usage thresholds (issue 37)
pub mod usage_thresholds;
// sessions
pub mod session;
pub mod tools;
// SOAT users and login (issue 36, users).
pub mod users;
// SOAT files (issue 36, files).
pub mod files;
pub mod trace_files;
// webhooks (issue 36)
pub mod webhooks;
// chats and embeddings (issue 36)
pub mod chats;
pub mod embeddings;
// guardrails and approvals (issue 37)
pub mod approvals;
pub mod guardrails;
// policies, audit log, activity, exceptions (issue 37, policies)
pub mod audit;
pub mod exceptions;
pub mod policies;

pub use error::SoatError;

/// The most bytes of JSON of a free-form object a record keeps as given (`metadata`,
/// `tags`, `tool_context`, `guardrail_context`, an AI provider's `config`): checked on
/// every `/api/v1` body (`api::soat::bounds`), and on what a merge makes of it.
pub const MAX_FREE_FORM_BYTES: usize = 64 * 1024;
pub use patch::Patch;
pub use scope::{InProject, KeyRef, Scope};
pub use service::Service;

/// One project of one account, exactly: where a secret reference resolves (a tool's
/// own project), never widened to the projects an account key can see.
#[derive(Debug, Clone, Copy)]
pub struct Project<'a> {
    pub account_id: &'a str,
    pub project_id: &'a str,
}

impl Scope {
    /// The scope's own project, exactly.
    pub fn project(&self) -> Project<'_> {
        Project { account_id: &self.account_id, project_id: &self.project_id }
    }
}
