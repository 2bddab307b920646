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
    Ok(AgentsConfig { approval_expiry, max_chain_generations: raw.max_chain_generations, max_running_per_account: raw.max_running_per_account })
}
