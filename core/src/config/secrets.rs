//! `[secrets]`: the key that seals SOAT secrets at rest (`agents::secrets`).

use serde::Deserialize;

use super::{invalid, ConfigError};
use crate::llm::secret::Secret;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSecrets {
    pub key: String,
}

#[derive(Debug, Clone)]
pub struct SecretsConfig {
    /// The 32-byte key, as 64 hex characters; `None`: the data directory's key file.
    pub key: Option<Secret>,
}

pub fn resolve(raw: RawSecrets) -> Result<SecretsConfig, ConfigError> {
    let key = raw.key.trim();
    if key.is_empty() {
        return Ok(SecretsConfig { key: None });
    }
    if key.len() != 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        // Never the value itself in the message: it is (meant to be) a key.
        return Err(invalid("secrets.key", &format!("must be 64 hex characters (32 bytes); it has {} characters", key.len())));
    }
    Ok(SecretsConfig { key: Some(Secret::new(key)) })
}
