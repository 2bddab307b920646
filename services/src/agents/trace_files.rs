//! A trace's steps as a file: SOAT's `Trace.file_id` names a file holding the trace's
//! steps as one JSON array (the tutorial `debug-session-generation-trace-history` reads
//! it with `download-file-base64 | base64 -d | jq '.[0]'`). Each step is the
//! transcript's step object (`generation::reads::transcript`), the trace's generations
//! in the order they started.
//!
//! The file's id is the trace's (`file_<trace id>`), so a trace names it before it is
//! written. It is written, durably and checksummed as every file, when first read once
//! every generation of the trace has settled, and written again if the trace has
//! changed since (a generation joined it, its content was purged): so no crash can lose
//! it or leave it behind its trace. Until then the file is 404.

use std::path::Path;

use super::files::{self, FileError, FILE_ID_PREFIX};
use super::generation::{reads, GenerationRecord, TraceRecord};
use super::scope::Scope;
use super::SoatError;
use crate::store::{FileRecord, Records};

/// The id of a trace's file.
pub fn file_id_of(trace_id: &str) -> String {
    format!("{FILE_ID_PREFIX}{trace_id}")
}

/// The file `id` as [`files::get`] finds it, a trace's written (or brought up to date)
/// first when it is one.
pub fn find(records: &Records, data: &Path, scope: &Scope, id: &str) -> Result<FileRecord, FileError> {
    let Some(trace_id) = id.strip_prefix(FILE_ID_PREFIX).filter(|t| t.starts_with("trace_")) else { return files::get(records, scope, id) };
    let Some(trace) = scope.get::<TraceRecord>(records, trace_id)? else { return Err(SoatError::not_found("file", id).into()) };
    write(records, data, &trace)?.ok_or_else(|| SoatError::not_found("file", id).into())
}

/// The trace's file, written unless it is up to date; `None` while a generation of the
/// trace still runs.
pub fn write(records: &Records, data: &Path, trace: &TraceRecord) -> Result<Option<FileRecord>, FileError> {
    let id = file_id_of(&trace.id);
    let mut gens: Vec<GenerationRecord> =
        records.list::<GenerationRecord>(&trace.account_id)?.into_iter().filter(|g| g.trace_id == trace.id).collect();
    if gens.is_empty() || gens.iter().any(|g| !g.status().settled()) {
        return Ok(None);
    }
    gens.sort_by(|a, b| a.started_at.cmp(&b.started_at).then_with(|| a.id.cmp(&b.id)));
    let steps: Vec<serde_json::Value> = gens
        .iter()
        .flat_map(|g| match reads::transcript(g)["steps"].take() {
            serde_json::Value::Array(s) => s,
            _ => Vec::new(),
        })
        .collect();
    let bytes = serde_json::to_vec(&steps).expect("steps serialize");
    let sha = files::sha256_hex(&bytes);
    let existing = records.get::<FileRecord>(&trace.account_id, &id)?;
    if let Some(f) = existing.as_ref().filter(|f| f.sha256.as_deref() == Some(sha.as_str())) {
        if files::read(data, f).is_ok() {
            return Ok(Some(f.clone()));
        }
    }
    let now = crate::clock::now_rfc3339();
    let f = FileRecord {
        id: id.clone(),
        account_id: trace.account_id.clone(),
        project_id: trace.project_id.clone(),
        filename: format!("{}.json", trace.id),
        prefix: "/traces".into(),
        content_type: Some("application/json".into()),
        size: Some(bytes.len() as u64),
        metadata: Some(serde_json::json!({"trace_id": trace.id, "step_count": steps.len()}).to_string()),
        tags: existing.as_ref().map(|f| f.tags.clone()).unwrap_or_default(),
        sha256: Some(sha),
        created_at: existing.as_ref().map_or_else(|| now.clone(), |f| f.created_at.clone()),
        updated_at: now,
    };
    files::write_durably(&files::dir(data), &id, &bytes)?;
    records.replace_file(&f)?;
    Ok(Some(f))
}
