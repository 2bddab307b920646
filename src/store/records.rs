//! The record types kept in the store. Stored as JSON so that fields can be added
//! with defaults without a migration.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountRecord {
    pub id: String,
    pub email: String,
    pub plan: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub prefix: String,
    pub account_id: String,
    /// SHA-256 of the whole key, hex.
    pub hash: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// One account's counts for one calendar month (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthCounts {
    #[serde(default)]
    pub search: u64,
    #[serde(default)]
    pub extract: u64,
    #[serde(default)]
    pub research: u64,
    #[serde(default)]
    pub pages_indexed: u64,
}

/// A new key as the store receives it: never the secret, only what identifies and
/// verifies it.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub prefix: String,
    pub hash: String,
}
