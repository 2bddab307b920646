//! `DELETE /delete` (the spec's method; `POST` too, for clients that send no body with
//! DELETE): documents of the namespace by `ids`, by `filter` (both: either), or every
//! one with `delete_all`. Ids that name no live document are skipped; a namespace
//! without its default collection yet has nothing to delete. Answers
//! `{"success": true}` once the deletes are durable (with `Quarry-Seq` on a cluster,
//! as `/upsert`).

use std::collections::HashSet;

use hyper::StatusCode;
use serde::Serialize;

use super::input::{self, DeleteRequest, Deletion};
use crate::api::agentlex::with_seq;
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
    let Some(owned) = super::find(&call, ns.as_deref()).await? else {
        return Ok(response::json(StatusCode::OK, &Deleted { success: true }));
    };
    let search = &call.app.search;
    let ids = match what {
        Deletion::All => search.document_ids(&owned),
        Deletion::Some { ids, filters } => {
            let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
            // A plugin document by its id; one added on AgentLex (no document_id) by its own.
            let mut out: Vec<String> = search.by_field(&owned, input::DOCUMENT_ID, &wanted).into_iter().map(|(id, _)| id).collect();
            out.extend(ids.iter().cloned());
            if let Some(f) = filters {
                out.extend(search.matching(&owned, &f));
            }
            out.sort_unstable();
            out.dedup();
            out
        }
    };
    let (_, seq) = search.delete_many(&owned, &ids).await?;
    Ok(with_seq(response::json(StatusCode::OK, &Deleted { success: true }), owned.id(), seq))
}
