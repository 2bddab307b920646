//! Adding a document: chunk → embed (on an ingest worker) → WAL → snapshot.

use std::sync::Arc;

use quarry_index::chunk::{ChunkOptions, Chunker};
use quarry_index::collection::Collection;
use quarry_index::ingest::{self, DocDraft};

use super::pool::IngestPool;
use super::SearchError;
use crate::config::IndexConfig;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Added {
    pub id: String,
    pub pages: u32,
    pub chunks: u32,
    pub chars: u64,
    /// What the storage allowance counts of it (`quarry_index::segment::stored_chars`).
    #[serde(skip)]
    pub stored: u64,
    pub chunker: &'static str,
    pub embedder: String,
    pub format: String,
    /// What the chunker found in the document (`{ kind, … }`).
    pub meta: serde_json::Value,
    /// The identifiers the document held, by kind (the spec's `Identifiers`).
    pub identifiers: Identifiers,
    /// Its place in the collection's shared journal (0 on a local WAL): the
    /// read-your-writes token the API hands back (`Quarry-Seq`).
    #[serde(skip)]
    pub seq: u64,
}

/// The spec's `Identifiers`: how many identifiers a document held, by kind.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Identifiers {
    pub total: u64,
    pub counts: serde_json::Map<String, serde_json::Value>,
}

/// The batch an add of `draft` would log, without vectors: chunked by the same
/// [`ingest::prepare`] on an ingest worker, nothing stored.
pub async fn preview(pool: &IngestPool, index: &IndexConfig, draft: DocDraft) -> Result<quarry_index::segment::Batch, SearchError> {
    let opts = ChunkOptions { target_chars: index.chunk_target_chars, max_chars: index.chunk_max_chars };
    pool.run(move |_| ingest::prepare(draft, &opts)).await.map_err(|_| SearchError::WorkerGone)
}

/// Chunks, embeds (with the worker's session in slot `embed`, the collection's model,
/// when there is one) and adds the document; returns once it is durable and searchable.
pub async fn add(pool: &IngestPool, index: &IndexConfig, coll: Arc<Collection>, draft: DocDraft, embed: Option<usize>) -> Result<Added, SearchError> {
    let opts = ChunkOptions { target_chars: index.chunk_target_chars, max_chars: index.chunk_max_chars };
    let (embedder, format, id) = (draft.embedder.clone(), draft.format.clone(), draft.id.clone());
    // Chunking and embedding take CPU: an ingest worker does them at idle priority.
    let prepared = pool
        .run(move |w| {
            let mask = draft.privacy.mask_embedding;
            let (mut batch, found) = ingest::prepare_counted(draft, &opts);
            if let Some(slot) = embed {
                let e = super::embedders::session(&mut w.embedders, slot)?;
                // A page longer than the model's window is embedded in windows.
                let plan = quarry_index::windows::plan(&batch, mask, &*e).map_err(|e| SearchError::Embed(e.to_string()))?;
                let v = quarry_index::windows::embed(e, &plan).map_err(|e| SearchError::Embed(e.to_string()))?;
                ingest::attach_vectors(&mut batch, plan.windows, v.dims, v.data);
            }
            Ok::<_, SearchError>((batch, found))
        })
        .await
        .map_err(|_| SearchError::WorkerGone)??;
    let (prepared, found) = prepared;
    let identifiers = Identifiers { total: found.total() as u64, counts: ingest::counts_json(&found) };
    // Logging waits on the WAL's sync: a blocking thread waits, so every add in flight
    // shares one group commit and no worker sits idle meanwhile.
    let d = &prepared.docs[0];
    let (pages, chunks, chars, stored) = (d.pages, d.chunks, d.chars, prepared.stored_chars(0));
    let chunker = Chunker::parse(&d.chunker).expect("prepare names a chunker");
    let meta = serde_json::from_str(&d.meta_json).expect("prepare writes its meta as JSON");
    let seq = crate::runtime::blocking(move || coll.add(prepared)).await.map_err(SearchError::of_index)?;
    Ok(Added { id, pages, chunks, chars, stored, chunker: chunker.as_str(), embedder, format, meta, identifiers, seq })
}
