//! `[egress]`: where tenants' requests may go beyond the public internet
//! (`net::egress`): the operator's `allow` rules, each checked here so a bad one stops
//! start-up naming it.

use serde::Deserialize;

use super::{invalid, ConfigError};
use crate::net::egress::Rule;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEgress {
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct EgressConfig {
    /// What tenants' tools, MCP servers and AI providers may reach among the
    /// addresses the policy otherwise refuses (loopback, private, reserved…).
    pub allow: Vec<Rule>,
}

pub fn resolve(raw: RawEgress) -> Result<EgressConfig, ConfigError> {
    let rule = |(i, text): (usize, &String)| Rule::parse(text).map_err(|m| invalid(&format!("egress.allow[{i}]"), &m));
    Ok(EgressConfig { allow: raw.allow.iter().enumerate().map(rule).collect::<Result<_, _>>()? })
}
