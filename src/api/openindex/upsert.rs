//! `POST /upsert` and `POST /upsert-file`: documents added to the namespace (the
//! default collection is created by the first), each replacing the live document of
//! the same id (its `metadata.document_id`; see [`input::DOCUMENT_ID`]). A 200 means
//! every document is durable and searchable; on a cluster it carries `Quarry-Seq`,
//! which a `/query` sends back as `Quarry-After` to see the upsert on any node.

use std::collections::HashMap;

use hyper::StatusCode;
use serde::Serialize;

use super::form;
use super::input::{self, UpsertRequest};
use crate::api::agentlex::{caller, with_seq};
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
    if docs.is_empty() {
        return Ok(response::json(StatusCode::OK, &Ids { ids: Vec::new() }));
    }
    let owned = super::find_or_create(&call, ns.as_deref()).await?;
    let (ids, seq) = add_all(&call, &owned, docs).await?;
    Ok(with_seq(response::json(StatusCode::OK, &Ids { ids }), owned.id(), seq))
}

pub async fn upsert_file(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let content_type = call.parts.headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = call.bytes().await?;
    let form = form::read(content_type.as_deref(), body).await?;
    let ns = input::namespace(form.namespace.as_deref(), "namespace")?.map(str::to_owned);
    let metadata = input::metadata(form.metadata, "metadata")?;
    let doc = input::text_document(&form.text, form.format, metadata, "file")?;
    let owned = super::find_or_create(&call, ns.as_deref()).await?;
    let id = format!("doc_{}", crate::ids::random_base62(16));
    let mut doc = doc;
    doc.metadata.insert(input::DOCUMENT_ID.into(), id.as_str().into());
    let (ids, seq) = add_all(&call, &owned, vec![(id, doc)]).await?;
    Ok(with_seq(response::json(StatusCode::OK, &Ids { ids }), owned.id(), seq))
}

/// Upserts every document at once (their log records share syncs); the answer lists
/// their ids in request order. A document whose id comes again later in the batch is
/// not added: the later one replaces it, as if sent one after the other. The seq is
/// the upsert's last place in the shared journal (`Quarry-Seq`; 0 on one node).
async fn add_all(call: &Call<'_>, owned: &Owned, docs: Vec<(String, NewDocument)>) -> Result<(Vec<String>, u64), ApiError> {
    let ids: Vec<String> = docs.iter().map(|(id, _)| id.clone()).collect();
    let last: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let kept: Vec<(String, NewDocument)> = docs.into_iter().enumerate().filter(|(i, (id, _))| last[id.as_str()] == *i).map(|(_, d)| d).collect();
    let (_, seq) = call.app.search.upsert_by(caller(call), owned, input::DOCUMENT_ID, kept).await?;
    Ok((ids, seq))
}
