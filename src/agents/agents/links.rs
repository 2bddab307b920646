//! What agents name in other modules, looked up there: AI providers (the identity
//! module's) and persisted tools (the tools module's).

use super::service::Project;
use crate::store::{Records, StoreError};

/// Whether the AI provider `id` exists in the project.
pub fn provider_exists(_records: &Records, _p: &Project, id: &str) -> Result<bool, StoreError> {
    // Until the providers' records land: by shape.
    Ok(id.strip_prefix("aip_").is_some_and(|rest| !rest.is_empty()))
}

/// Whether the persisted tool `id` exists in the project (`400 TOOL_NOT_FOUND`
/// otherwise). The tools module (`tool_…` records) is built beside this one: until it
/// lands a tool id is accepted by its shape, and this is the one place to call its
/// lookup instead.
pub fn tool_exists(_records: &Records, _p: &Project, id: &str) -> Result<bool, StoreError> {
    Ok(id.strip_prefix("tool_").is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')))
}
