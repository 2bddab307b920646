//! What ends a `quarry ingest` run. A document the server refuses is not one of these: it is
//! reported and the run goes on (see `Done::Failed`).

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("server URL {url:?}: {reason}")]
    Url { url: String, reason: &'static str },
    #[error("{endpoint}: {source}")]
    Transport { endpoint: String, source: Box<ureq::Error> },
    /// An answer that no other document would get either: a bad key, a missing collection, an
    /// embedder the collection was not built with.
    #[error("{endpoint}: HTTP {status} {code}: {message}")]
    Refused { endpoint: String, status: u16, code: String, message: String },
    #[error("{endpoint}: unexpected answer ({reason}): {body}")]
    Decode { endpoint: String, reason: String, body: String },
}

impl IngestError {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> IngestError {
        IngestError::Io { op, path: path.to_owned(), source }
    }
}
