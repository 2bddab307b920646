//! The SOAT agents API's secrets and tools, as records on the generic
//! account-owned table ([`Owned`](super::owned::Owned)). Each also names its project; the services
//! (`agents::secrets`, `agents::tools`) keep a record of another project out of sight
//! the way the table keeps another account's.
//!
//! A secret's value is stored only sealed (`agents::secrets` encrypts it before it gets
//! here); this module never sees the plain text.

use serde::{Deserialize, Serialize};

use super::owned::owned_record;

/// A secret (`sec_…`): its name, and its value sealed with the server's secrets key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    /// Nonce then ciphertext and tag, hex; `None` when no value is stored.
    pub sealed: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(SecretRecord, "soat_secrets", "soat_secrets_by_account");

/// A tool (`tool_…`): its definition as the service checked it (`agents::tools::def`),
/// stored as JSON so fields can be added without a migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// The definition: every field of the spec's `Tool` but the identity and times.
    pub def: serde_json::Value,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ToolRecord, "soat_tools", "soat_tools_by_account");
