//! Policies (issue 37, policies.yaml): an account's permission documents (`pol_…`),
//! on the generic account-owned table. What they mean is `agents::policies`'.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::owned::owned_record;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub id: String,
    pub account_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// The document as validated (`{"statement": [...]}`), kept as written.
    pub document: Value,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(PolicyRecord, "soat_policies", "soat_policies_by_account");
