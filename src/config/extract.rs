//! `[extract]` → [`ExtractConfig`]: which model reads pages for `POST …/extract`, how
//! many pages it reads at once, and how much of each page and answer it may use.

use serde::Deserialize;

use super::{at_least, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtract {
    pub model: String,
    pub concurrency: usize,
    pub page_chars: usize,
    pub max_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractConfig {
    /// The reader: an alias or `provider/model`; `None` = research's fast tier, the
    /// local model (`local/<name>`).
    pub model: Option<String>,
    /// Pages read at once per request.
    pub concurrency: usize,
    /// The most characters of a page the reader is shown.
    pub page_chars: usize,
    /// The longest answer the reader may write per page, in tokens.
    pub max_tokens: u64,
}

pub fn resolve(raw: RawExtract) -> Result<ExtractConfig, ConfigError> {
    Ok(ExtractConfig {
        model: (!raw.model.trim().is_empty()).then(|| raw.model.trim().to_owned()),
        concurrency: at_least("extract.concurrency", raw.concurrency, 1)?,
        page_chars: at_least("extract.page_chars", raw.page_chars, 200)?,
        max_tokens: at_least("extract.max_tokens", raw.max_tokens as usize, 16)? as u64,
    })
}
