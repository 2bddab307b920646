//! What the search service refuses, each with its code.

use quarry_index::collection::CollectionError;

use crate::error::{Code, ErrorCode};
use crate::limits::meters::Exceeded;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("No collection {0}.")]
    CollectionNotFound(String),
    /// The caller's key reads no `/v1` data ([`crate::access::Reach`]).
    #[error("{}", crate::access::Reach::REFUSED)]
    OutOfReach,
    #[error("No document {0} in this collection.")]
    DocumentNotFound(String),
    #[error("Document {doc} has {pages} pages (0 to {last}); there is no page {n}.", last = pages.saturating_sub(1))]
    PageNotFound { doc: String, pages: u32, n: u32 },
    #[error("Collection {collection} was built with the embedder {built}, and this server runs {server}; search it with mode \"keyword\", or re-index it.")]
    EmbedderMismatch { collection: String, built: String, server: String },
    #[error("This server runs without an embedder; use mode \"keyword\".")]
    NoEmbedder,
    #[error("This server does not load the embedder {asked}; settings.embedder may name one of: {loaded}.")]
    UnknownEmbedder { asked: String, loaded: String },
    #[error("Collection {collection} holds {documents} documents embedded with {built}; its embedder can change only while it is empty (delete its documents, or create a new collection with settings.embedder = \"{asked}\").")]
    EmbedderLocked { collection: String, documents: u64, built: String, asked: String },
    #[error("The document holds {bytes} bytes of text; this server takes at most {max}.")]
    DocumentTooLarge { bytes: usize, max: usize },
    #[error("The document's {field} holds {len} {unit}; at most {max}.")]
    FieldTooLong { field: &'static str, len: usize, max: usize, unit: &'static str },
    #[error("This document would pass the plan's {} stored characters.", .0.allowance)]
    Storage(Exceeded),
    #[error("This needs {needed} searches and {left} of this month's {allowance} searches of the {plan} plan are left.")]
    Searches { needed: u64, left: u64, allowance: u64, plan: String },
    /// One search asked when none is left (`Searches` as a single search says it).
    #[error("This month's {allowance} searches of the {plan} plan are spent.")]
    SearchesSpent { allowance: u64, plan: String },
    #[error(transparent)]
    Rerank(#[from] super::rerank::RerankError),
    #[error("Document {0} already exists.")]
    DuplicateId(String),
    #[error("embedding: {0}")]
    Embed(String),
    #[error("the index: {0}")]
    Index(#[source] CollectionError),
    /// A collection evicted from the local segment cache could not be fetched again;
    /// where and why go to the log.
    #[error("This collection's segments are kept in object storage, which is out of reach; try again shortly.")]
    SegmentsUnavailable,
    #[error("Quarry-After names write {0}, which this collection never had; send back the Quarry-Seq a write to this collection returned.")]
    UnknownSeq(u64),
    /// The shared journal (a cluster's write-ahead log) is out of reach: nothing was
    /// written; where and why go to the log.
    #[error("This collection's write-ahead log is kept in PostgreSQL, which is out of reach; nothing was written; try again shortly.")]
    JournalUnavailable,
    #[error("an ingest worker is gone")]
    WorkerGone,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SearchError {
    /// The engine's error as the API says it: an out-of-reach bucket or journal is a
    /// 503 the client retries (the details go to the log), anything else internal.
    pub fn of_index(e: CollectionError) -> SearchError {
        match e {
            CollectionError::Remote { .. } => {
                tracing::warn!(error = %e, "segments in object storage are out of reach");
                SearchError::SegmentsUnavailable
            }
            CollectionError::Journal { .. } => {
                tracing::warn!(error = %e, "the shared journal is out of reach");
                SearchError::JournalUnavailable
            }
            CollectionError::DuplicateId(id) => SearchError::DuplicateId(id),
            CollectionError::DocumentNotFound(id) => SearchError::DocumentNotFound(id),
            e => SearchError::Index(e),
        }
    }
}

impl ErrorCode for SearchError {
    fn code(&self) -> Code {
        match self {
            SearchError::CollectionNotFound(_) => Code::CollectionNotFound,
            SearchError::OutOfReach => Code::ApiKeyProjectScope,
            SearchError::DocumentNotFound(_) => Code::DocumentNotFound,
            SearchError::PageNotFound { .. } => Code::PageNotFound,
            SearchError::EmbedderMismatch { .. } | SearchError::NoEmbedder => Code::EmbedderMismatch,
            SearchError::UnknownEmbedder { .. } => Code::UnknownEmbedder,
            SearchError::EmbedderLocked { .. } => Code::EmbedderLocked,
            SearchError::DocumentTooLarge { .. } => Code::DocumentTooLarge,
            SearchError::Storage(_) => Code::StorageExceeded,
            SearchError::Searches { .. } | SearchError::SearchesSpent { .. } => Code::AllowanceExceeded,
            SearchError::Rerank(e) => e.code(),
            SearchError::DuplicateId(_) | SearchError::FieldTooLong { .. } => Code::InvalidDocument,
            SearchError::Store(e) => e.code(),
            SearchError::SegmentsUnavailable | SearchError::JournalUnavailable => Code::StoreUnavailable,
            SearchError::UnknownSeq(_) => Code::InvalidSeq,
            SearchError::Embed(_) | SearchError::Index(_) | SearchError::WorkerGone => Code::Internal,
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            SearchError::Store(e) => e.retry_after(),
            SearchError::SegmentsUnavailable | SearchError::JournalUnavailable => Some(1),
            _ => None,
        }
    }
}
