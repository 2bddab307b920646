//! SOAT files (`/api/v1/files`): a file's record here, its bytes under
//! `DATA/files/<id>` (written by `agents::files`, checksummed). The bytes count as
//! stored characters of the account: a write charges the file's size with its record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::owned::{get_in, insert_in, owned_record, remove_in};
use super::{Charge, Records, StoreError};

/// A file (`file_…`) of one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub filename: String,
    /// The directory: `/` or `/a/b`.
    pub prefix: String,
    pub content_type: Option<String>,
    pub size: Option<u64>,
    /// A JSON string, as the spec keeps it.
    pub metadata: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// SHA-256 of the bytes, hex, when the file has content.
    pub sha256: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(FileRecord, "soat_files", "soat_files_by_account");

impl Records {
    pub(super) fn ensure_files(&self) -> Result<(), StoreError> {
        self.ensure::<FileRecord>()
    }

    /// Adds a file's record, charging its bytes (already durable on disk) with it.
    pub fn insert_file(&self, f: &FileRecord, charge: Charge<'_>) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        insert_in(&txn, f)?;
        txn.wrote_outside(stored_bytes(f));
        self.commit_charged(txn, charge)
    }

    /// Writes a file's record over the one of its id (or as new), charging the change
    /// in its bytes: what a trace's file is rewritten with (counted, never refused:
    /// the steps it holds are stored already).
    pub fn replace_file(&self, f: &FileRecord) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if let Some(old) = get_in::<FileRecord>(&txn, &f.account_id, &f.id)? {
            remove_in::<FileRecord>(&txn, &f.account_id, &f.id)?;
            txn.wrote_outside(-stored_bytes(&old));
        }
        insert_in(&txn, f)?;
        txn.wrote_outside(stored_bytes(f));
        self.commit_charged(txn, Charge::Counted(&f.account_id))
    }

    /// Removes a file's record, giving its bytes back; the record removed.
    pub fn remove_file(&self, account_id: &str, id: &str) -> Result<Option<FileRecord>, StoreError> {
        let txn = self.kv.write()?;
        let Some(f) = get_in::<FileRecord>(&txn, account_id, id)? else { return Ok(None) };
        remove_in::<FileRecord>(&txn, account_id, id)?;
        txn.wrote_outside(-stored_bytes(&f));
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(f))
    }
}

fn stored_bytes(f: &FileRecord) -> i64 {
    if f.sha256.is_some() {
        f.size.unwrap_or(0) as i64
    } else {
        0
    }
}
