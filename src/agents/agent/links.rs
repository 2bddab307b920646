//! What agents name in other modules, looked up there: AI providers (the identity
//! module's records) and persisted tools (the tools module's).

use crate::store::{AiProviderRecord, Records, StoreError};

/// Whether the AI provider `id` exists in the agent's project.
pub fn provider_exists(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    Ok(records.get::<AiProviderRecord>(account_id, id)?.is_some_and(|p| p.project_id == project_id))
}

/// Whether the persisted tool `id` exists in the agent's project (`400 TOOL_NOT_FOUND`
/// otherwise). The tools module (`tool_…` records) is built beside this one: until it
/// lands a tool id is accepted by its shape, and this is the one place to call its
/// lookup instead.
pub fn tool_exists(_records: &Records, _account_id: &str, _project_id: &str, id: &str) -> Result<bool, StoreError> {
    Ok(id.strip_prefix("tool_").is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')))
}
