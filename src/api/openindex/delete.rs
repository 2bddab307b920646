//! `DELETE /delete` (the spec's method; `POST` too, for clients that send no body with
//! DELETE): documents of the namespace by `ids`, by `filter` (both: either), or every
//! one with `delete_all`. Ids that name no live document are skipped; a namespace
//! without its default collection yet has nothing to delete. Answers
//! `{"success": true}` once the deletes are durable.

use hyper::StatusCode;
use serde::Serialize;

use super::input::{self, DeleteRequest, Deletion};
use crate::error::{ApiError, Code};
use crate::http::call::Call;
use crate::http::response::{self, Reply};

#[derive(Serialize)]
struct Deleted {
    success: bool,
}

pub async fn delete(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let body: DeleteRequest = call.json(Code::InvalidDocument).await.map_err(input::locate_missing)?;
    let ns = input::namespace(body.namespace.as_deref(), "namespace")?.map(str::to_owned);
    let what = input::deletion(body)?;
    let Some(owned) = super::find(&call, ns.as_deref())? else {
        return Ok(response::json(StatusCode::OK, &Deleted { success: true }));
    };
    let search = &call.app.search;
    let ids = match what {
        Deletion::All => search.document_ids(&owned),
        Deletion::Some { mut ids, filters } => {
            if let Some(f) = filters {
                ids.extend(search.matching(&owned, &f));
            }
            ids.sort_unstable();
            ids.dedup();
            ids
        }
    };
    search.delete_many(&owned, &ids).await?;
    Ok(response::json(StatusCode::OK, &Deleted { success: true }))
}
