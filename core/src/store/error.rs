//! The records store's errors: each names the operation and, where there is one,
//! the path.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data directory {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("data directory {path} is in use by another process (is a quarry server running on this data directory?)")]
    Locked { path: PathBuf },
    #[error("cannot open records store {path}: {source}")]
    Open { path: PathBuf, source: redb::DatabaseError },
    #[error(
        "records store {at} has schema version {found}, newer than this quarry understands ({expected}); \
         run a newer quarry, or restore a backup made by this version"
    )]
    Version { at: String, found: u64, expected: u64 },
    /// `[store]` names a database this build cannot use as written.
    #[error("records store: {reason}")]
    Settings { reason: String },
    /// The shared store could not be reached at start-up.
    #[error("records store {at} is unavailable: {reason}")]
    Connect { at: String, reason: String },
    /// The shared store cannot be reached (refused, lost, or every connection busy past
    /// the timeout): nothing was written; the client may retry. What it says is the
    /// client's to read (where and why went to the log when it happened).
    #[error("The records store is unavailable: nothing was changed; retry shortly.")]
    Unavailable { at: String, reason: String },
    #[error("records store (PostgreSQL): {op} {table} failed: {source}")]
    Postgres { op: &'static str, table: &'static str, source: postgres::Error },
    #[error("records store: {op} {table} failed: {source}")]
    Table { op: &'static str, table: &'static str, source: redb::Error },
    #[error("records store: corrupt {what}: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("records store: {what} already exists")]
    Conflict { what: String },
    /// The lease a write depended on passed to another node (`cluster::fenced_in`):
    /// nothing was written.
    #[error("records store: lease {lease} (epoch {epoch}) is no longer held")]
    Fenced { lease: String, epoch: u64 },
    /// Not a fault: the account already holds its plan's most active keys.
    #[error("records store: the account holds {active} active keys, its cap is {max}")]
    TooManyKeys { active: u64, max: u64 },
    /// Not a fault: the write would take the account past its plan's stored characters.
    #[error("This would pass the plan's {allowance} stored characters (documents and records together); delete some, or move to a larger plan.")]
    StorageExceeded { allowance: u64 },
}

/// A store failure is never the client's: logged in full, answered as 500 `internal`;
/// a write past the plan's storage is the client's, 429 `storage_exceeded`; a shared
/// store out of reach is 503 `store_unavailable` (retry later), its address logged, not told.
impl crate::error::ErrorCode for StoreError {
    fn code(&self) -> crate::error::Code {
        match self {
            StoreError::StorageExceeded { .. } => crate::error::Code::StorageExceeded,
            StoreError::Unavailable { .. } => crate::error::Code::StoreUnavailable,
            _ => crate::error::Code::Internal,
        }
    }

    fn retry_after(&self) -> Option<u64> {
        self.is_unavailable().then_some(1)
    }
}

impl StoreError {
    /// Whether this is the shared store out of reach (nothing was written).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}
