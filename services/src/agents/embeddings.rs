//! SOAT embeddings (embeddings.yaml, `POST /api/v1/embeddings`): vectors from the ONNX
//! embedders this server loads, the same models (and sessions) its collections and
//! searches use, so a vector answered here is the one a collection stores for that
//! text as a one-page document without a title (`input_type: "passage"`, the
//! default), or the one a search embeds its query as (`"query"`): each model's own
//! prefix applied, mean-pooled and L2-normalised.
//!
//! Quarry's fields beyond the spec: `model`, one of the loaded embedders (the default
//! otherwise; another is 400 naming the loaded ones), and `input_type`. Each text is
//! embedded alone, on the shard's own session, yielding between texts: a text's
//! vector never depends on what else the request holds (no padding to a batch), and a
//! long request does not hold the shard. Bounds: [`MAX_INPUTS`] texts of at most
//! [`MAX_INPUT_CHARS`] characters; a text past the model's window (`max_tokens`) is
//! read up to it, as a collection's window would be.

use std::cell::RefCell;

use quarry_index::embed::Embedder;
use serde::Deserialize;

use super::SoatError;
use crate::error::Code;
use crate::search::embedders::Loaded;

/// The most texts one request embeds.
pub const MAX_INPUTS: usize = 128;
/// The most characters of one text.
pub const MAX_INPUT_CHARS: usize = 16_384;

/// `POST /api/v1/embeddings` (strict).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedIn {
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub inputs: Option<Vec<String>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub input_type: Option<InputType>,
}

/// How the texts are embedded: as what a collection stores, or as a search's query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    #[default]
    Passage,
    Query,
}

/// The answer: `embedding` for `input`, `embeddings` for `inputs` (both when both).
#[derive(Debug)]
pub struct Embedded {
    pub model: String,
    pub dimensions: usize,
    pub embedding: Option<Vec<f32>>,
    pub embeddings: Option<Vec<Vec<f32>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Soat(#[from] SoatError),
    #[error("This server loads no embedder (QUARRY_EMBEDDER=none); embeddings need one (see models/README.md).")]
    NotConfigured,
    #[error("The embedder failed: {0}")]
    Failed(String),
}

impl crate::error::ErrorCode for EmbedError {
    fn code(&self) -> Code {
        match self {
            EmbedError::Soat(e) => e.code(),
            EmbedError::NotConfigured => Code::EmbeddingNotConfigured,
            EmbedError::Failed(_) => Code::Internal,
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            EmbedError::Soat(e) => e.meta(),
            _ => None,
        }
    }
}

/// The texts of a request, in order (`input` first), checked against the bounds; and
/// the slot of the model that embeds them. Pure.
pub fn check(req: &EmbedIn, loaded: &Loaded) -> Result<(usize, String), EmbedError> {
    let batch = req.inputs.as_deref().unwrap_or_default();
    if req.input.is_none() && batch.is_empty() {
        return Err(SoatError::invalid("input", "At least one of `input` (string) or `inputs` (string[]) is required.").into());
    }
    if batch.len() > MAX_INPUTS {
        return Err(SoatError::invalid("inputs", format!("holds {} texts; at most {MAX_INPUTS} a request.", batch.len())).into());
    }
    let texts = req.input.iter().map(|t| ("input".to_owned(), t)).chain(batch.iter().enumerate().map(|(i, t)| (format!("inputs[{i}]"), t)));
    for (field, text) in texts {
        let n = text.chars().count();
        if n > MAX_INPUT_CHARS {
            return Err(SoatError::invalid(field, format!("is {n} characters; at most {MAX_INPUT_CHARS}.")).into());
        }
    }
    if loaded.ids().is_empty() {
        return Err(EmbedError::NotConfigured);
    }
    let model = req.model.clone().unwrap_or_else(|| loaded.default_id().to_owned());
    let slot = loaded
        .slot(&model)
        .ok_or_else(|| SoatError::invalid("model", format!("\"{model}\" is not an embedder this server loads; it loads {}.", loaded.listed())))?;
    Ok((slot, model))
}

/// Embeds the request's texts with the shard's session in the checked `slot`.
pub async fn embed(req: EmbedIn, loaded: &Loaded, sessions: &RefCell<Vec<Embedder>>) -> Result<Embedded, EmbedError> {
    let (slot, model) = check(&req, loaded)?;
    let kind = req.input_type.unwrap_or_default();
    let mut dimensions = 0;
    let mut one = |text: &str| -> Result<Vec<f32>, EmbedError> {
        let mut sessions = sessions.borrow_mut();
        let e = crate::search::embedders::session(&mut sessions, slot).map_err(|_| EmbedError::NotConfigured)?;
        dimensions = e.spec().dims;
        let v = match kind {
            InputType::Query => e.embed_query(text),
            InputType::Passage => e.embed_passages(&[text]).map(|rows| rows.row(0).to_vec()),
        };
        v.map_err(|err| EmbedError::Failed(err.to_string()))
    };
    let embedding = match &req.input {
        Some(text) => Some(one(text)?),
        None => None,
    };
    let embeddings = match &req.inputs {
        Some(texts) if !texts.is_empty() => {
            let mut out = Vec::with_capacity(texts.len());
            for text in texts {
                glommio::yield_if_needed().await;
                out.push(one(text)?);
            }
            Some(out)
        }
        _ => None,
    };
    Ok(Embedded { model, dimensions, embedding, embeddings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(input: Option<&str>, inputs: Option<Vec<&str>>, model: Option<&str>) -> EmbedIn {
        EmbedIn {
            input: input.map(Into::into),
            inputs: inputs.map(|v| v.into_iter().map(Into::into).collect()),
            model: model.map(Into::into),
            input_type: None,
        }
    }

    fn code(e: EmbedError) -> Code {
        crate::error::ErrorCode::code(&e)
    }

    #[test]
    fn the_bounds_and_the_model_are_checked_before_any_embedding() {
        let loaded = Loaded::new(vec!["small".into(), "other".into()], Some("small"));
        assert_eq!(check(&req(Some("a"), None, None), &loaded).unwrap(), (0, "small".into()));
        assert_eq!(check(&req(None, Some(vec!["a"]), Some("other")), &loaded).unwrap(), (1, "other".into()));
        assert_eq!(code(check(&req(None, None, None), &loaded).unwrap_err()), Code::SoatValidation);
        assert_eq!(code(check(&req(None, Some(vec![]), None), &loaded).unwrap_err()), Code::SoatValidation);
        let many = vec!["a"; MAX_INPUTS + 1];
        assert_eq!(code(check(&req(None, Some(many), None), &loaded).unwrap_err()), Code::SoatValidation);
        let long = "x".repeat(MAX_INPUT_CHARS + 1);
        let e = check(&req(None, Some(vec!["a", &long]), None), &loaded).unwrap_err();
        assert!(e.to_string().starts_with("inputs[1]"), "{e}");
        let e = check(&req(Some("a"), None, Some("bge")), &loaded).unwrap_err();
        assert!(e.to_string().contains("small, other"), "{e}");
        let none = Loaded::new(vec![], None);
        assert_eq!(code(check(&req(Some("a"), None, None), &none).unwrap_err()), Code::EmbeddingNotConfigured);
    }
}
