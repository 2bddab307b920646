//! `/v1/collections/{id}/documents[/{doc}[/pages/{n}]]`.

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::Call;
use super::caller;
use super::chunk::{self, ChunkOut};
use super::collections::Deleted;
use super::input::document;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::search::SearchError;
use quarry_index::collection::{DocAt, DocView, Snapshot};

pub async fn add(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    call.app.search.check_embedder(&owned.record)?;
    let doc = document::parse_off_shard(call.bytes().await?).await?;
    let added = call.app.search.add(caller(&call), &owned, doc, None).await?;
    Ok(super::with_seq(response::json(StatusCode::CREATED, &added), &id, added.seq))
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

fn document_out(d: DocView<'_>) -> DocumentOut<'_> {
    DocumentOut {
        id: d.id,
        title: d.title,
        author: d.author,
        metadata: serde_json::from_str(d.metadata_json).unwrap_or(Value::Null),
        chunker: d.chunker,
        pages: d.pages,
        chunks: d.chunks,
        chars: d.chars,
        created_at: d.created_at,
        meta: serde_json::from_str(d.meta_json).unwrap_or(Value::Null),
    }
}

pub async fn list(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = super::owned_after(&call, &id).await?;
    let snap = owned.snapshot();
    #[derive(Serialize)]
    struct List<'a> {
        documents: Vec<DocumentOut<'a>>,
    }
    let documents = snap.docs().map(|at| document_out(snap.doc_view(at))).collect();
    Ok(response::json(StatusCode::OK, &List { documents }))
}

fn find(snap: &Snapshot, doc: &str) -> Result<DocAt, SearchError> {
    snap.find(doc).ok_or_else(|| SearchError::DocumentNotFound(doc.to_owned()))
}

pub async fn get(call: Call<'_>, id: String, doc: String) -> Result<Reply, ApiError> {
    let owned = super::owned_after(&call, &id).await?;
    let snap = owned.snapshot();
    let at = find(&snap, &doc)?;
    Ok(response::json(StatusCode::OK, &document_out(snap.doc_view(at))))
}

pub async fn delete(call: Call<'_>, id: String, doc: String) -> Result<Reply, ApiError> {
    let owned = super::owned_after(&call, &id).await?;
    let seq = call.app.search.delete(&owned, &doc).await?;
    Ok(super::with_seq(response::json(StatusCode::OK, &Deleted { deleted: doc }), &id, seq))
}

pub async fn page(call: Call<'_>, id: String, doc: String, n: String) -> Result<Reply, ApiError> {
    let owned = super::owned_after(&call, &id).await?;
    let n: u32 = n.parse().map_err(|_| ApiError::new(Code::InvalidPage, format!("The page index must be a whole number from 0, not \"{n}\".")))?;
    let snap = owned.snapshot();
    let at = find(&snap, &doc)?;
    let d = snap.doc_view(at);
    let p = snap.page_view(at, n).ok_or_else(|| SearchError::PageNotFound { doc: doc.clone(), pages: d.pages, n })?;
    let views = snap.chunk_views(at, n);
    let chunks: Vec<ChunkOut> = views.iter().map(ChunkOut::of_view).collect();
    let out = serde_json::json!({
        "document": { "id": d.id, "title": d.title, "author": d.author },
        "page": {
            "n": n,
            "number": p.number,
            "volume": p.volume,
            "heading": p.heading,
            "text": p.text,
            "meta": chunk::meta(p.meta_json),
            "citation": p.citation_id(),
        },
        "chunks": chunks,
    });
    Ok(response::json(StatusCode::OK, &out))
}
