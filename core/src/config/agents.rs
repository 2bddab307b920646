//! `[agents]`: how the SOAT agents' generations run (`agents::generation`).

use std::time::Duration;

use serde::Deserialize;

use super::{duration, invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgents {
    pub approval_expiry: String,
    pub max_chain_generations: u32,
    pub max_running_per_account: u32,
    pub ollama_base_url: String,
    pub audit_retention_days: u64,
    pub audit_sweep_interval: String,
}

#[derive(Debug, Clone)]
pub struct AgentsConfig {
    /// How long a generation paused at `requires_action` waits for its tool outputs
    /// before it expires (the agent's `on_approval_expiry` says what then).
    pub approval_expiry: Duration,
    /// The deployment's ceiling on continuation chains
    /// (`MAX_CONTINUATION_CHAIN_GENERATIONS`).
    pub max_chain_generations: u32,
    /// How many generations one account may run at once, across the shards (a new one
    /// past it is a 429; resumes and recoveries always run).
    pub max_running_per_account: u32,
    /// Where an `ollama` AI provider that names no `base_url` calls (SOAT's
    /// `OLLAMA_BASE_URL`): an http(s) URL of an OpenAI-compatible API, `…/v1`.
    /// Judged by the egress policy like any tenant's `base_url`.
    pub ollama_base_url: String,
    /// How many days an audit entry is kept (SOAT's `AUDIT_RETENTION_DAYS`).
    pub audit_retention_days: u64,
    /// How often the audit retention sweep runs.
    pub audit_sweep_interval: Duration,
}

pub fn resolve(raw: RawAgents) -> Result<AgentsConfig, ConfigError> {
    let approval_expiry = duration("agents.approval_expiry", &raw.approval_expiry)?;
    if approval_expiry.is_zero() {
        return Err(invalid("agents.approval_expiry", "must be longer than 0"));
    }
    if raw.max_chain_generations == 0 {
        return Err(invalid("agents.max_chain_generations", "must be at least 1"));
    }
    if raw.max_running_per_account == 0 {
        return Err(invalid("agents.max_running_per_account", "must be at least 1"));
    }
    let ollama = raw.ollama_base_url.trim();
    let scheme = ollama.split_once("://").map(|(s, rest)| (s, rest.is_empty()));
    if !matches!(scheme, Some(("http" | "https", false))) || ollama.chars().any(char::is_whitespace) {
        return Err(invalid("agents.ollama_base_url", "must be an http:// or https:// URL"));
    }
    if raw.audit_retention_days == 0 {
        return Err(invalid("agents.audit_retention_days", "must be at least 1"));
    }
    let audit_sweep_interval = duration("agents.audit_sweep_interval", &raw.audit_sweep_interval)?;
    if audit_sweep_interval.is_zero() {
        return Err(invalid("agents.audit_sweep_interval", "must be longer than 0"));
    }
    Ok(AgentsConfig {
        approval_expiry,
        max_chain_generations: raw.max_chain_generations,
        max_running_per_account: raw.max_running_per_account,
        ollama_base_url: ollama.trim_end_matches('/').to_owned(),
        audit_retention_days: raw.audit_retention_days,
        audit_sweep_interval,
    })
}
