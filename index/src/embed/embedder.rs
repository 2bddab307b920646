//! The embedder: text → tokens → one ort session → mean pooling → L2.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::TensorRef;

use super::manifest::{Manifest, ModelSpec, Normalize, Precision};
use super::pool::{l2_normalize, mean_pool};
use super::tokenize::{Batch, TextEncoder};
use super::{runtime, EmbedError};

/// Texts per inference call when embedding many; rows are sorted by length first so a
/// call pads little.
pub const MAX_BATCH: usize = 32;

/// A model loaded once per process: its description, its tokenizer, its ONNX file.
pub struct Model {
    env: &'static ort::environment::Environment,
    pub spec: ModelSpec,
    pub precision: Precision,
    onnx: PathBuf,
    encoder: Arc<TextEncoder>,
}

/// Vectors, row-major, `dims` floats each.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub dims: usize,
    pub data: Vec<f32>,
}

impl Embeddings {
    pub fn len(&self) -> usize {
        self.data.len() / self.dims.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dims..(i + 1) * self.dims]
    }
}

impl Model {
    /// Loads model `id` from `models_dir` (its manifest, tokenizer and ONNX file),
    /// loading ONNX Runtime from `runtime_lib` first if this process has not yet.
    pub fn load(models_dir: &Path, runtime_lib: &Path, id: &str, precision: Precision) -> Result<Model, EmbedError> {
        let env = runtime::init(runtime_lib)?;
        let manifest = Manifest::load(models_dir)?;
        let spec = manifest.model(id)?.clone();
        let onnx = models_dir.join(&spec.onnx.get(precision).file);
        if !onnx.is_file() {
            return Err(EmbedError::Model { path: onnx, reason: "missing; run ops/setup to install the models".into() });
        }
        let encoder = Arc::new(TextEncoder::load(&models_dir.join(&spec.tokenizer.file), spec.max_tokens, spec.pad_id)?);
        Ok(Model { env, spec, precision, onnx, encoder })
    }

    /// A new embedder with its own session: one per shard.
    pub fn embedder(&self) -> Result<Embedder, EmbedError> {
        Ok(Embedder { spec: self.spec.clone(), encoder: self.encoder.clone(), session: session(self.env, &self.onnx)? })
    }

    pub fn encoder(&self) -> &TextEncoder {
        &self.encoder
    }
}

/// An ort session with one intra-op thread (the shard is the unit of parallelism).
// The closures' error is ort's own builder error, large and not ours to shrink.
#[allow(clippy::result_large_err)]
pub(super) fn session(env: &ort::environment::Environment, path: &Path) -> Result<Session, EmbedError> {
    let err = |e: String| EmbedError::Model { path: path.to_owned(), reason: e };
    Session::builder(env)
        .map_err(|e| err(e.to_string()))?
        .with_intra_threads(1)
        .and_then(|b| b.with_inter_threads(1))
        .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::Level3))
        .map_err(|e| err(e.to_string()))?
        .commit_from_file(path)
        .map_err(|e| err(e.to_string()))
}

pub struct Embedder {
    spec: ModelSpec,
    encoder: Arc<TextEncoder>,
    session: Session,
}

impl Embedder {
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// One search query (with the model's query prefix).
    pub fn embed_query(&mut self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let prefixed = format!("{}{text}", self.spec.query_prefix);
        let ids = self.encoder.encode(&prefixed)?;
        Ok(self.run(&self.encoder.batch(&[ids], None))?.data)
    }

    /// Passages to index (with the model's passage prefix), in batches.
    pub fn embed_passages(&mut self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        let prefix = self.spec.passage_prefix.clone();
        self.embed_with_prefix(texts, &prefix)
    }

    /// Tokens `text` takes as a passage input (prefix and special tokens included, up
    /// to the model's limit).
    pub fn passage_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(self.encoder.encode(&format!("{}{text}", self.spec.passage_prefix))?.len())
    }

    /// Where each token of `text` starts, in bytes, with no limit (see [`TextEncoder::token_starts`]).
    pub fn token_starts(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.encoder.token_starts(text)
    }

    /// Texts exactly as given, no prefix.
    pub fn embed_raw(&mut self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        self.embed_with_prefix(texts, "")
    }

    fn embed_with_prefix(&mut self, texts: &[&str], prefix: &str) -> Result<Embeddings, EmbedError> {
        let dims = self.spec.dims;
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.encoder.encode(&format!("{prefix}{t}"))).collect::<Result<_, _>>()?;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut data = vec![0f32; texts.len() * dims];
        for chunk in order.chunks(MAX_BATCH) {
            let rows: Vec<Vec<u32>> = chunk.iter().map(|&i| ids[i].clone()).collect();
            let out = self.run(&self.encoder.batch(&rows, None))?;
            for (k, &i) in chunk.iter().enumerate() {
                data[i * dims..(i + 1) * dims].copy_from_slice(out.row(k));
            }
        }
        Ok(Embeddings { dims, data })
    }

    fn run(&mut self, batch: &Batch) -> Result<Embeddings, EmbedError> {
        let shape = [batch.rows, batch.seq];
        let fail = |e: ort::Error| EmbedError::Inference(e.to_string());
        let ids = TensorRef::from_array_view((shape, batch.input_ids.as_slice())).map_err(fail)?;
        let mask = TensorRef::from_array_view((shape, batch.attention_mask.as_slice())).map_err(fail)?;
        let outputs = self.session.run(ort::inputs!["input_ids" => ids, "attention_mask" => mask]).map_err(fail)?;
        let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(fail)?;
        let dims = self.spec.dims;
        if out_shape.len() != 3 || out_shape[2] as usize != dims {
            return Err(EmbedError::Inference(format!("unexpected output shape {out_shape:?}")));
        }
        let mut data = mean_pool(hidden, &batch.attention_mask, batch.rows, batch.seq, dims);
        if self.spec.normalize == Normalize::L2 {
            data.chunks_mut(dims).for_each(l2_normalize);
        }
        Ok(Embeddings { dims, data })
    }
}
