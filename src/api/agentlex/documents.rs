//! `/v1/collections/{id}/documents[/{doc}[/pages/{n}]]`.

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::Call;
use super::collections::Deleted;
use super::input::document;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::limits::Meter;
use crate::search::{self, ingest};
use quarry_index::chunk::Kinds;
use quarry_index::collection::{DocAt, Snapshot};

#[derive(Serialize)]
struct Created {
    #[serde(flatten)]
    added: ingest::Added,
    meta: Value,
    identifiers: Value,
}

pub async fn add(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let account = call.principal().account_id.clone();
    let (record, coll) = search::owned(call.app, &account, &id)?;
    search::check_embedder(call.app, &record)?;
    let body = call.json_value().await?;
    let doc = document::parse(&body)?;
    let max = call.app.config.index.max_document_bytes;
    if doc.text_bytes() > max {
        return Err(ApiError::new(
            Code::DocumentTooLarge,
            format!("The document holds {} bytes of text; this server takes at most {max}.", doc.text_bytes()),
        ));
    }
    let chars: u64 = doc.pages.iter().map(|p| p.text.chars().count() as u64).sum();
    let plan = call.app.plan(&call.principal().plan);
    let meters = call.app.meters.account(&account)?;
    meters.try_store(chars as i64, plan.stored_chars).map_err(|e| {
        ApiError::new(Code::StorageExceeded, format!("This document would pass the plan's {} stored characters.", e.allowance))
    })?;
    let id = format!("doc_{}", crate::auth::keys::random_base62(16));
    let draft = doc.into_draft(id, record.embedder.clone(), crate::clock::now_rfc3339());
    let embed = record.embedder != "none";
    match ingest::add(call.app, coll, draft, embed).await {
        Ok(added) => {
            let _ = meters.try_spend(Meter::PagesIndexed, added.pages as u64, None);
            let meta = serde_json::json!({ "kind": added.chunker });
            Ok(response::json(StatusCode::CREATED, &Created { added, meta, identifiers: serde_json::json!({}) }))
        }
        Err(e) => {
            let _ = meters.try_store(-(chars as i64), None);
            Err(e)
        }
    }
}

#[derive(Serialize)]
struct DocumentOut<'a> {
    id: &'a str,
    title: Option<&'a str>,
    author: Option<&'a str>,
    metadata: Value,
    chunker: &'a str,
    pages: u32,
    chunks: u32,
    chars: u64,
    created_at: &'a str,
    meta: Value,
}

fn document_out(snap: &Snapshot, at: DocAt) -> DocumentOut<'_> {
    let d = snap.doc(at);
    DocumentOut {
        id: d.id.as_str(),
        title: d.title.as_ref().map(|s| s.as_str()),
        author: d.author.as_ref().map(|s| s.as_str()),
        metadata: serde_json::from_str(d.metadata_json.as_str()).unwrap_or(Value::Null),
        chunker: d.chunker.as_str(),
        pages: d.pages.to_native(),
        chunks: d.chunks.to_native(),
        chars: d.chars.to_native(),
        created_at: d.created_at.as_str(),
        meta: serde_json::from_str(d.meta_json.as_str()).unwrap_or(Value::Null),
    }
}

pub async fn list(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let (_, coll) = search::owned(call.app, &call.principal().account_id, &id)?;
    let snap = coll.snapshot();
    #[derive(Serialize)]
    struct List<'a> {
        documents: Vec<DocumentOut<'a>>,
    }
    let documents = snap.docs().map(|at| document_out(&snap, at)).collect();
    Ok(response::json(StatusCode::OK, &List { documents }))
}

fn find(snap: &Snapshot, doc: &str) -> Result<DocAt, ApiError> {
    snap.find(doc).ok_or_else(|| ApiError::new(Code::DocumentNotFound, format!("No document {doc} in this collection.")))
}

pub async fn get(call: Call<'_>, id: String, doc: String) -> Result<Reply, ApiError> {
    let (_, coll) = search::owned(call.app, &call.principal().account_id, &id)?;
    let snap = coll.snapshot();
    let at = find(&snap, &doc)?;
    Ok(response::json(StatusCode::OK, &document_out(&snap, at)))
}

pub async fn delete(call: Call<'_>, id: String, doc: String) -> Result<Reply, ApiError> {
    let account = call.principal().account_id.clone();
    let (_, coll) = search::owned(call.app, &account, &id)?;
    let chars = {
        let snap = coll.snapshot();
        snap.doc(find(&snap, &doc)?).chars.to_native()
    };
    let d = doc.clone();
    let done = call.app.ingest.run(move |_| coll.delete(&d)).await.map_err(|_| ApiError::internal())?;
    match done {
        Ok(()) => {}
        Err(quarry_index::collection::CollectionError::DocumentNotFound(_)) => {
            return Err(ApiError::new(Code::DocumentNotFound, format!("No document {doc} in this collection.")))
        }
        Err(e) => {
            tracing::error!(error = %e, "deleting a document failed");
            return Err(ApiError::internal());
        }
    }
    if let Ok(m) = call.app.meters.account(&account) {
        let _ = m.try_store(-(chars as i64), None);
    }
    Ok(response::json(StatusCode::OK, &Deleted { deleted: doc }))
}

pub async fn page(call: Call<'_>, id: String, doc: String, n: String) -> Result<Reply, ApiError> {
    let (_, coll) = search::owned(call.app, &call.principal().account_id, &id)?;
    let n: u32 = n.parse().map_err(|_| ApiError::new(Code::InvalidPage, format!("The page index must be a whole number from 0, not \"{n}\".")))?;
    let snap = coll.snapshot();
    let at = find(&snap, &doc)?;
    let d = snap.doc(at);
    let p = snap.page(at, n).ok_or_else(|| {
        ApiError::new(Code::PageNotFound, format!("Document {doc} has {} pages (0 to {}); there is no page {n}.", d.pages, d.pages.to_native().saturating_sub(1)))
    })?;
    let b = snap.views[at.view].batch();
    let first = p.first_chunk.to_native() as usize;
    let chunks: Vec<Value> = b.chunks[first..first + p.chunks.to_native() as usize]
        .iter()
        .map(|c| {
            serde_json::json!({
                "pos": c.pos.to_native(),
                "text": &p.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize],
                "kinds": Kinds(c.kinds.to_native()).names(),
                "heading": c.heading.as_ref().map(|h| h.as_str()),
                "start": c.start.to_native(),
                "end": c.end.to_native(),
                "meta": Value::Null,
                "footnoteOf": Value::Null,
            })
        })
        .collect();
    let out = serde_json::json!({
        "document": { "id": d.id.as_str(), "title": d.title.as_ref().map(|s| s.as_str()), "author": d.author.as_ref().map(|s| s.as_str()) },
        "page": {
            "n": n,
            "number": p.number.as_ref().map(|s| s.as_str()),
            "volume": p.volume.as_ref().map(|s| s.as_str()),
            "heading": p.heading.as_ref().map(|s| s.as_str()),
            "text": p.text.as_str(),
            "meta": Value::Null,
            "citation": format!("AL-{:08X}", p.citation.to_native()),
        },
        "chunks": chunks,
    });
    Ok(response::json(StatusCode::OK, &out))
}
