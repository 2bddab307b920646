//! The retrieval plugin (`/query`, `/upsert`, `/upsert-file`, `/delete`, the same under
//! `/sub/`): OpenAI's ChatGPT retrieval-plugin API, as OpenIndex serves it, over the
//! same search service and engine as AgentLex. One file per resource; `input.rs` holds
//! the request bodies.
//!
//! A request's `namespace` names one of the caller's collections, by id or by name;
//! without one it is the account's collection named `default`, which the first upsert
//! creates (a query or delete before then finds nothing and says so with empty
//! answers). A namespace the caller does not own is 404, as on AgentLex.
//!
//! A plugin document's id is its `metadata.document_id`, not the engine's id: the
//! engine gives each version its own id (its tombstones are by id, so an id cannot be
//! reused), and an upsert adds the new version, then deletes the old.

pub mod delete;
pub mod form;
pub mod input;
pub mod query;
pub mod upsert;

use crate::error::ApiError;
use crate::http::call::Call;
use crate::search::{Owned, SearchError};

/// The collection a request without a namespace works in.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The caller's collection `ns` names (by id, then by name), or without one the
/// default collection if it exists yet.
pub async fn find(call: &Call<'_>, ns: Option<&str>) -> Result<Option<Owned>, ApiError> {
    Ok(call.app.search.namespace(&call.principal().account_id, ns, DEFAULT_NAMESPACE).await?)
}

/// As [`find`], creating the default collection when there is none yet.
pub async fn find_or_create(call: &Call<'_>, ns: Option<&str>) -> Result<Owned, ApiError> {
    match (ns, find(call, ns).await?) {
        (_, Some(o)) => Ok(o),
        (None, None) => Ok(call.app.search.named_or_created(&call.principal().account_id, DEFAULT_NAMESPACE).await?),
        (Some(ns), None) => Err(SearchError::CollectionNotFound(ns.to_owned()).into()),
    }
}
