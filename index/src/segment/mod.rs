//! Segments: immutable batches of documents in one memory-mapped rkyv file each, plus
//! the tantivy index of their chunks. See `format` for what a segment holds.

pub mod format;
mod v1;
mod v2;
mod view;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

pub use format::{
    stored_chars, ArchivedBatch, ArchivedChunkRec, ArchivedDocRec, ArchivedFieldValue, ArchivedPageRec, Batch, ChunkRec, DocRec, Field, FieldValue,
    PageRec, WindowRec,
};
pub use view::BatchView;

/// A format-1 archive (a WAL record written before format 2) upgraded to today's batch.
pub fn upgrade_v1(archive: &[u8]) -> Result<Batch, String> {
    v1::upgrade(archive)
}

/// A format-2 archive (a WAL record written before format 3) upgraded to today's batch.
pub fn upgrade_v2(archive: &[u8]) -> Result<Batch, String> {
    v2::upgrade(archive)
}

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("corrupt segment {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

/// Serializes a batch.
pub fn archive(batch: &Batch) -> rkyv::util::AlignedVec {
    rkyv::to_bytes::<rkyv::rancor::Error>(batch).expect("a batch always serializes")
}

/// Writes `batch` to `path` durably: a temporary file, fsync, rename, fsync of the
/// directory. A crash leaves either no file or the whole file.
pub fn write(path: &Path, batch: &Batch) -> Result<(), SegmentError> {
    let bytes = archive(batch);
    let tmp = path.with_extension("seg.tmp");
    let io = |op: &'static str, p: &Path| {
        let p = p.to_owned();
        move |source| SegmentError::Io { op, path: p, source }
    };
    let mut f = File::create(&tmp).map_err(io("create", &tmp))?;
    f.write_all(&view::header(&bytes)).map_err(io("write", &tmp))?;
    f.write_all(&bytes).map_err(io("write", &tmp))?;
    f.sync_all().map_err(io("fsync", &tmp))?;
    fs::rename(&tmp, path).map_err(io("rename", path))?;
    sync_dir(path.parent().expect("a segment lives in a directory"))
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), SegmentError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|source| SegmentError::Io { op: "fsync directory", path: dir.to_owned(), source })
}

#[cfg(test)]
mod tests;
