//! Tokenization with HuggingFace `tokenizers`, and the padded batch a session takes.
//! Padding and truncation come from the manifest, not from whatever the shipped
//! tokenizer.json says (MiniLM's fixes both at 128).

use std::path::Path;

use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::EmbedError;

/// A tokenizer bound to one model's limits. Loaded once per process and shared.
pub struct TextEncoder {
    inner: Tokenizer,
    /// The same tokenizer without the limit, to count what a long text holds.
    untruncated: Tokenizer,
    pad_id: u32,
}

/// Token ids padded to the longest sequence in the batch (dynamic padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub rows: usize,
    pub seq: usize,
    pub input_ids: Vec<i64>,
    pub attention_mask: Vec<i64>,
    pub token_type_ids: Vec<i64>,
}

impl TextEncoder {
    pub fn load(path: &Path, max_tokens: usize, pad_id: u32) -> Result<TextEncoder, EmbedError> {
        let err = |reason: String| EmbedError::Tokenizer { path: path.to_owned(), reason };
        let mut inner = Tokenizer::from_file(path).map_err(|e| err(e.to_string()))?;
        inner.with_padding(None);
        let mut untruncated = inner.clone();
        untruncated.with_truncation(None).map_err(|e| err(e.to_string()))?;
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| err(e.to_string()))?;
        Ok(TextEncoder { inner, untruncated, pad_id })
    }

    /// Ids with the model's special tokens, truncated to its maximum.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let enc = self.inner.encode(text, true).map_err(|e| EmbedError::Encode(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Where each token of `text` starts, in bytes: no special tokens, no limit.
    pub fn token_starts(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let enc = self.untruncated.encode(text, false).map_err(|e| EmbedError::Encode(e.to_string()))?;
        Ok(enc.get_offsets().iter().map(|o| o.0 as u32).collect())
    }

    /// A (query, passage) pair as a cross-encoder takes it: ids and segment ids.
    pub fn encode_pair(&self, a: &str, b: &str) -> Result<(Vec<u32>, Vec<u32>), EmbedError> {
        let enc = self.inner.encode((a, b), true).map_err(|e| EmbedError::Encode(e.to_string()))?;
        Ok((enc.get_ids().to_vec(), enc.get_type_ids().to_vec()))
    }

    /// Pads `rows` (and their segment ids, if given) into one batch.
    pub fn batch(&self, rows: &[Vec<u32>], types: Option<&[Vec<u32>]>) -> Batch {
        let seq = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let n = rows.len();
        let mut b = Batch {
            rows: n,
            seq,
            input_ids: vec![i64::from(self.pad_id); n * seq],
            attention_mask: vec![0; n * seq],
            token_type_ids: vec![0; n * seq],
        };
        for (r, ids) in rows.iter().enumerate() {
            for (t, &id) in ids.iter().enumerate() {
                b.input_ids[r * seq + t] = i64::from(id);
                b.attention_mask[r * seq + t] = 1;
            }
            if let Some(types) = types {
                for (t, &ty) in types[r].iter().enumerate() {
                    b.token_type_ids[r * seq + t] = i64::from(ty);
                }
            }
        }
        b
    }
}
