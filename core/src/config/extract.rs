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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(model: &str, concurrency: usize) -> RawExtract {
        RawExtract { model: model.into(), concurrency, page_chars: 6000, max_tokens: 512 }
    }

    #[test]
    fn an_empty_model_is_the_local_one_and_bounds_are_checked() {
        assert_eq!(resolve(raw(" ", 4)).unwrap().model, None);
        assert_eq!(resolve(raw("openai/gpt-4.1-mini", 4)).unwrap().model.as_deref(), Some("openai/gpt-4.1-mini"));
        let e = resolve(raw("", 0)).unwrap_err().to_string();
        assert!(e.contains("extract.concurrency"), "{e}");
    }

    #[test]
    fn the_shipped_defaults_resolve() {
        let c = crate::config::Config::load(None, Vec::new(), &crate::config::Flags::default()).unwrap();
        assert_eq!(c.extract, ExtractConfig { model: None, concurrency: 4, page_chars: 6000, max_tokens: 512 });
    }
}
