//! The search service: collections as an account sees them, the ingest path and the
//! search path, between the API handlers and the engine.

pub mod ingest;
pub mod pool;
pub mod query;

use std::sync::Arc;

use quarry_index::collection::Collection;

use crate::app::App;
use crate::error::{ApiError, Code};
use crate::store::CollectionRecord;

/// The embedder name this server indexes with ("none" without one).
pub fn server_embedder(app: &App) -> &str {
    app.config.embedder.as_deref().unwrap_or("none")
}

/// The account's collection, or 404 `collection_not_found` (also for another
/// account's collection: it does not exist for this caller).
pub fn owned(app: &App, account_id: &str, id: &str) -> Result<(CollectionRecord, Arc<Collection>), ApiError> {
    let not_found = || ApiError::new(Code::CollectionNotFound, format!("No collection {id}."));
    let record = app.records.collection(account_id, id)?.ok_or_else(not_found)?;
    let engine = app.engine.get(id).ok_or_else(not_found)?;
    Ok((record, engine))
}

/// 409 when the collection's vectors come from another model than this server's.
pub fn check_embedder(app: &App, record: &CollectionRecord) -> Result<(), ApiError> {
    let server = server_embedder(app);
    if record.embedder == server {
        return Ok(());
    }
    Err(ApiError::new(
        Code::EmbedderMismatch,
        format!(
            "Collection {} was built with the embedder {}, and this server runs {server}; search it with mode \"keyword\", or re-index it.",
            record.id, record.embedder
        ),
    ))
}

/// The index's gauges for `/metrics`: collections, live documents, segment files and
/// write-ahead-log bytes over every collection of the server.
pub fn gauges(app: &App) -> Vec<crate::metrics::Gauge> {
    use crate::metrics::Gauge;
    let all = app.engine.all();
    let mut sum = quarry_index::collection::Stats::default();
    for c in &all {
        let s = c.stats();
        sum.documents += s.documents;
        sum.segments += s.segments;
        sum.wal_bytes += s.wal_bytes;
    }
    vec![
        Gauge { name: "quarry_collections", help: "Collections on this server.", value: all.len() as u64 },
        Gauge { name: "quarry_documents", help: "Live documents over every collection.", value: sum.documents },
        Gauge { name: "quarry_segments", help: "Segment files over every collection.", value: sum.segments },
        Gauge { name: "quarry_wal_bytes", help: "Bytes of write-ahead log over every collection.", value: sum.wal_bytes },
    ]
}
