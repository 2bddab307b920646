//! `[expand]`: query expansion by a model (`expand: "llm"`): which model is asked for
//! paraphrases, how many, and how long a search waits for them.

use std::time::Duration;

use serde::Deserialize;

use super::{duration, invalid, ConfigError};
use crate::llm::LlmConfig;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpand {
    pub model: String,
    pub timeout: String,
    pub paraphrases: usize,
}

#[derive(Debug, Clone)]
pub struct ExpandConfig {
    /// The model asked (an alias or `provider/model`); `None`: no model expansion.
    pub model: Option<String>,
    /// The most a search waits for the model; past it the search runs without.
    pub timeout: Duration,
    pub paraphrases: usize,
}

/// `model = ""` is the supervised local model when `[llm.local]` is enabled, else none.
pub fn resolve(raw: RawExpand, llm: &LlmConfig) -> Result<ExpandConfig, ConfigError> {
    let model = match raw.model.trim() {
        "" => llm.local.as_ref().map(|l| format!("{}/{}", crate::llm::local::PROVIDER, l.name)),
        "none" => None,
        m => Some(m.to_owned()),
    };
    if !(1..=5).contains(&raw.paraphrases) {
        return Err(invalid("expand.paraphrases", "must be 1 to 5"));
    }
    let timeout = duration("expand.timeout", &raw.timeout)?;
    if timeout.is_zero() || timeout > Duration::from_secs(30) {
        return Err(invalid("expand.timeout", "must be above 0 and at most 30s"));
    }
    Ok(ExpandConfig { model, timeout, paraphrases: raw.paraphrases })
}
