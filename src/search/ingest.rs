//! Adding a document: chunk → embed (on an ingest worker) → WAL → snapshot, metered.

use std::sync::Arc;

use quarry_index::chunk::ChunkOptions;
use quarry_index::collection::{Collection, CollectionError};
use quarry_index::ingest::{self, DocDraft};

use crate::app::App;
use crate::error::{ApiError, Code};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Added {
    pub id: String,
    pub pages: u32,
    pub chunks: u32,
    pub chars: u64,
    pub chunker: &'static str,
    pub embedder: String,
    pub format: String,
}

/// Chunks, embeds (when `embed`) and adds the document; returns once it is durable
/// and searchable.
pub async fn add(app: &Arc<App>, coll: Arc<Collection>, draft: DocDraft, embed: bool) -> Result<Added, ApiError> {
    let opts = ChunkOptions { target_chars: app.config.index.chunk_target_chars, max_chars: app.config.index.chunk_max_chars };
    let (embedder, format, id) = (draft.embedder.clone(), draft.format.clone(), draft.id.clone());
    // Chunking and embedding take CPU: an ingest worker does them at idle priority.
    let prepared = app
        .ingest
        .run(move |w| {
            let mut batch = ingest::prepare(draft, &opts);
            if embed {
                let e = w.embedder.as_mut().ok_or(IngestError::NoEmbedder)?;
                let inputs = ingest::embedding_inputs(&batch);
                let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
                let v = e.embed_passages(&refs).map_err(|e| IngestError::Embed(e.to_string()))?;
                ingest::attach_vectors(&mut batch, v.dims, v.data);
            }
            Ok::<_, IngestError>(batch)
        })
        .await
        .map_err(|_| ApiError::internal())??;
    // Logging waits on the WAL's sync: a blocking thread waits, so every add in flight
    // shares one group commit and no worker sits idle meanwhile.
    let d = &prepared.docs[0];
    let (pages, chunks, chars) = (d.pages, d.chunks, d.chars);
    crate::runtime::blocking(move || coll.add(prepared)).await.map_err(IngestError::Index)?;
    Ok(Added { id, pages, chunks, chars, chunker: ingest::CHUNKER, embedder, format })
}

#[derive(Debug, thiserror::Error)]
enum IngestError {
    #[error("this server has no embedder")]
    NoEmbedder,
    #[error("embedding: {0}")]
    Embed(String),
    #[error(transparent)]
    Index(CollectionError),
}

impl From<IngestError> for ApiError {
    fn from(e: IngestError) -> ApiError {
        match e {
            IngestError::Index(CollectionError::DuplicateId(id)) => ApiError::new(Code::InvalidDocument, format!("Document {id} already exists.")),
            e => {
                tracing::error!(error = %e, "adding a document failed");
                ApiError::internal()
            }
        }
    }
}
