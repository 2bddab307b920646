//! `models/models.toml`: what each model is and where its files are. ops/setup
//! installs and verifies the files; this reads the description the engine needs.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::EmbedError;

#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub onnxruntime: RuntimeSpec,
    #[serde(rename = "model")]
    pub models: Vec<ModelSpec>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuntimeSpec {
    pub version: String,
    /// Relative to the models directory.
    pub file: PathBuf,
    pub sha256: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ModelSpec {
    pub id: String,
    #[serde(default)]
    pub default: bool,
    pub dims: usize,
    pub max_tokens: usize,
    pub pooling: Pooling,
    pub normalize: Normalize,
    #[serde(default)]
    pub query_prefix: String,
    #[serde(default)]
    pub passage_prefix: String,
    pub pad_id: u32,
    pub tokenizer: FileSpec,
    pub onnx: OnnxFiles,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    Mean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Normalize {
    L2,
    None,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileSpec {
    pub file: PathBuf,
    pub sha256: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OnnxFiles {
    pub int8: FileSpec,
    pub fp32: FileSpec,
}

/// Which of a model's two ONNX files to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Int8,
    Fp32,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Int8 => "int8",
            Precision::Fp32 => "fp32",
        }
    }
}

impl OnnxFiles {
    pub fn get(&self, p: Precision) -> &FileSpec {
        match p {
            Precision::Int8 => &self.int8,
            Precision::Fp32 => &self.fp32,
        }
    }
}

impl Manifest {
    /// Reads `dir/models.toml`.
    pub fn load(dir: &Path) -> Result<Manifest, EmbedError> {
        let path = dir.join("models.toml");
        let text = std::fs::read_to_string(&path).map_err(|source| EmbedError::Io { op: "read", path: path.clone(), source })?;
        toml::from_str(&text).map_err(|e| EmbedError::Manifest { path, reason: e.to_string() })
    }

    pub fn model(&self, id: &str) -> Result<&ModelSpec, EmbedError> {
        self.models.iter().find(|m| m.id == id).ok_or_else(|| EmbedError::UnknownModel {
            id: id.to_owned(),
            known: self.models.iter().map(|m| m.id.clone()).collect::<Vec<_>>().join(", "),
        })
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.models.iter().map(|m| m.id.as_str())
    }
}
