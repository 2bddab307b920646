//! Embedding and reranking through ONNX Runtime (`ort`), on CPU, synchronously.
//!
//! A [`Model`] is loaded once per process (its manifest entry and its tokenizer, which
//! for e5 takes seconds to parse); each shard then opens its own [`Embedder`] from it:
//! one ort session per shard with one intra-op thread, never a session behind a lock.

mod embedder;
mod manifest;
mod pool;
mod reranker;
pub mod runtime;
mod tokenize;

use std::path::PathBuf;

pub use embedder::{Embedder, Embeddings, Model};
pub use manifest::{Manifest, ModelSpec, Normalize, Pooling, Precision};
pub use pool::{cosine, l2_normalize, mean_pool};
pub use reranker::{Reranker, RerankerModel};
pub use tokenize::{Batch, TextEncoder};

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("model manifest {path}: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("no model `{id}` in the manifest; models: {known}")]
    UnknownModel { id: String, known: String },
    #[error("ONNX Runtime library {path}: {reason}")]
    Runtime { path: PathBuf, reason: String },
    #[error("tokenizer {path}: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    #[error("model file {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    #[error("tokenizing failed: {0}")]
    Encode(String),
    #[error("inference failed: {0}")]
    Inference(String),
}
