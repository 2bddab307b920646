//! What agents name in other modules, looked up there: AI providers (the identity
//! module's records) and persisted tools (the tools module's).

use crate::store::{AiProviderRecord, Records, StoreError};

/// Whether the AI provider `id` exists in the agent's project.
pub fn provider_exists(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    Ok(records.get::<AiProviderRecord>(account_id, id)?.is_some_and(|p| p.project_id == project_id))
}

/// Whether the persisted tool `id` exists in the agent's project (`400 TOOL_NOT_FOUND`
/// otherwise): the tools module's lookup.
pub fn tool_exists(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    crate::agents::refs::tool_in_project(records, account_id, project_id, id)
}
