//! The records store's errors: each names the operation and, where there is one,
//! the path.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data directory {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("records store {path} is in use by another process (is a quarry server running on this data directory?)")]
    Locked { path: PathBuf },
    #[error("cannot open records store {path}: {source}")]
    Open { path: PathBuf, source: redb::DatabaseError },
    #[error(
        "records store {path} has schema version {found}, newer than this quarry understands ({expected}); \
         run a newer quarry, or restore a backup made by this version"
    )]
    Version { path: PathBuf, found: u64, expected: u64 },
    #[error("records store: {op} {table} failed: {source}")]
    Table { op: &'static str, table: &'static str, source: redb::Error },
    #[error("records store: corrupt {what}: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("records store: {what} already exists")]
    Conflict { what: String },
    /// Not a fault: the account already holds its plan's most active keys.
    #[error("records store: the account holds {active} active keys, its cap is {max}")]
    TooManyKeys { active: u64, max: u64 },
    /// Not a fault: the write would take the account past its plan's stored characters.
    #[error("This would pass the plan's {allowance} stored characters (documents and records together); delete some, or move to a larger plan.")]
    StorageExceeded { allowance: u64 },
}

/// A store failure is never the client's: logged in full, answered as 500 `internal`;
/// a write past the plan's storage is the client's, 429 `storage_exceeded`.
impl crate::error::ErrorCode for StoreError {
    fn code(&self) -> crate::error::Code {
        match self {
            StoreError::StorageExceeded { .. } => crate::error::Code::StorageExceeded,
            _ => crate::error::Code::Internal,
        }
    }
}
