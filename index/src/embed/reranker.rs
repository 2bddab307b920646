//! The reranker slot: a cross-encoder scoring (query, passage) pairs. None ships (no
//! cross-encoder weights can be had from the registries this project installs from);
//! an operator supplies an ONNX model taking input_ids and attention_mask (and
//! token_type_ids, when the model declares it) with a [batch, 1] (or [batch]) logit
//! output, plus its tokenizer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ort::session::Session;
use ort::value::TensorRef;

use super::embedder::session;
use super::tokenize::TextEncoder;
use super::EmbedError;

/// A cross-encoder loaded once per process (its tokenizer parsed, its file checked);
/// each shard opens its own [`Reranker`] session from it.
pub struct RerankerModel {
    env: &'static ort::environment::Environment,
    onnx: PathBuf,
    encoder: Arc<TextEncoder>,
}

impl RerankerModel {
    /// Loads an operator's cross-encoder. `runtime_lib` as for the embedder.
    pub fn load(runtime_lib: &Path, onnx: &Path, tokenizer: &Path, max_tokens: usize, pad_id: u32) -> Result<RerankerModel, EmbedError> {
        let env = super::runtime::init(runtime_lib)?;
        if !onnx.is_file() {
            return Err(EmbedError::Model { path: onnx.to_owned(), reason: "missing".into() });
        }
        let encoder = Arc::new(TextEncoder::load(tokenizer, max_tokens, pad_id)?);
        Ok(RerankerModel { env, onnx: onnx.to_owned(), encoder })
    }

    /// A new session of this model: one per shard, never shared.
    pub fn session(&self) -> Result<Reranker, EmbedError> {
        let session = session(self.env, &self.onnx)?;
        let takes_types = session.inputs().iter().any(|i| i.name() == "token_type_ids");
        Ok(Reranker { encoder: self.encoder.clone(), session, takes_types })
    }
}

pub struct Reranker {
    encoder: Arc<TextEncoder>,
    session: Session,
    takes_types: bool,
}

impl Reranker {
    /// Loads an operator's cross-encoder and opens one session of it.
    pub fn load(runtime_lib: &Path, onnx: &Path, tokenizer: &Path, max_tokens: usize, pad_id: u32) -> Result<Reranker, EmbedError> {
        RerankerModel::load(runtime_lib, onnx, tokenizer, max_tokens, pad_id)?.session()
    }

    /// A relevance score per passage, higher is better.
    pub fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(passages.len());
        let mut types = Vec::with_capacity(passages.len());
        for p in passages {
            let (i, t) = self.encoder.encode_pair(query, p)?;
            ids.push(i);
            types.push(t);
        }
        let batch = self.encoder.batch(&ids, Some(&types));
        let shape = [batch.rows, batch.seq];
        let fail = |e: ort::Error| EmbedError::Inference(e.to_string());
        let mut inputs = ort::inputs![
            "input_ids" => TensorRef::from_array_view((shape, batch.input_ids.as_slice())).map_err(fail)?,
            "attention_mask" => TensorRef::from_array_view((shape, batch.attention_mask.as_slice())).map_err(fail)?,
        ];
        if self.takes_types {
            let types = TensorRef::from_array_view((shape, batch.token_type_ids.as_slice())).map_err(fail)?;
            inputs.push(("token_type_ids".into(), types.into()));
        }
        let outputs = self.session.run(inputs).map_err(fail)?;
        let (_, logits) = outputs[0].try_extract_tensor::<f32>().map_err(fail)?;
        if logits.len() < passages.len() {
            return Err(EmbedError::Inference(format!("{} scores for {} passages", logits.len(), passages.len())));
        }
        let per_row = logits.len() / passages.len();
        Ok((0..passages.len()).map(|r| logits[r * per_row]).collect())
    }
}
