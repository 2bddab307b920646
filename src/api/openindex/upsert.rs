//! `POST /upsert` and `POST /upsert-file`: documents added to the namespace (the
//! default collection is created by the first), each replacing a live document of
//! the same id. A 200 means every document is durable and searchable.

use hyper::StatusCode;
use serde::Serialize;

use super::form;
use super::input::{self, UpsertRequest};
use crate::api::agentlex::caller;
use crate::error::{ApiError, Code};
use crate::http::call::Call;
use crate::http::response::{self, Reply};
use crate::search::{NewDocument, Owned};

/// `UpsertResponse`.
#[derive(Serialize)]
struct Ids {
    ids: Vec<String>,
}

pub async fn upsert(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let body: UpsertRequest = call.json(Code::InvalidDocument).await.map_err(input::locate_missing)?;
    let ns = input::namespace(body.namespace.as_deref(), "namespace")?.map(str::to_owned);
    let docs = body.documents.into_iter().enumerate().map(|(i, d)| input::document(d, i)).collect::<Result<Vec<_>, _>>()?;
    let owned = super::find_or_create(&call, ns.as_deref()).await?;
    let ids = add_all(&call, &owned, docs).await?;
    Ok(response::json(StatusCode::OK, &Ids { ids }))
}

pub async fn upsert_file(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let content_type = call.parts.headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = call.bytes().await?;
    let form = form::read(content_type.as_deref(), body).await?;
    let ns = input::namespace(form.namespace.as_deref(), "namespace")?.map(str::to_owned);
    let metadata = input::metadata(form.metadata, "metadata")?;
    let doc = input::text_document(&form.text, form.format, metadata, "file")?;
    let owned = super::find_or_create(&call, ns.as_deref()).await?;
    let ids = add_all(&call, &owned, vec![(doc, None)]).await?;
    Ok(response::json(StatusCode::OK, &Ids { ids }))
}

/// Adds every document at once (their log records share syncs), in request order in
/// the answer. A document whose id comes again later in the batch is not added: the
/// later one replaces it, as if sent one after the other.
async fn add_all(call: &Call<'_>, owned: &Owned, docs: Vec<(NewDocument, Option<String>)>) -> Result<Vec<String>, ApiError> {
    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, (_, id)) in docs.iter().enumerate() {
        if let Some(id) = id {
            last.insert(id, i);
        }
    }
    let keep: Vec<bool> = docs.iter().enumerate().map(|(i, (_, id))| id.as_deref().is_none_or(|id| last[id] == i)).collect();
    drop(last);
    let given: Vec<Option<String>> = docs.iter().map(|(_, id)| id.clone()).collect();
    let search = &call.app.search;
    let adds = docs.into_iter().zip(&keep).filter(|(_, k)| **k).map(|((doc, id), _)| search.replace(caller(call), owned, doc, id));
    let added = futures_util::future::join_all(adds).await;
    let mut added = added.into_iter();
    let mut ids = Vec::with_capacity(given.len());
    for (id, kept) in given.into_iter().zip(keep) {
        match (kept, id) {
            (true, _) => ids.push(added.next().expect("one per kept document")?.id),
            (false, Some(id)) => ids.push(id),
            (false, None) => unreachable!("documents without an id are always kept"),
        }
    }
    Ok(ids)
}
