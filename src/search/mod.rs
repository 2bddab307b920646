//! The search service: collections as an account sees them, the ingest path and the
//! search path, between the API handlers and the engine.

pub mod ingest;
pub mod pool;
pub mod query;

use std::sync::Arc;

use quarry_index::collection::Collection;

use crate::app::App;
use crate::http::error::{ApiError, Code};
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
