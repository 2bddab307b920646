//! `[research]` → [`ResearchConfig`]: the models of the two tiers of `POST …/research`,
//! the judge, and how much of the collection the model sees and may write.

use serde::Deserialize;

use super::{at_least, invalid, ConfigError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawResearch {
    pub fast: String,
    pub deep: String,
    pub judge: String,
    pub k: usize,
    pub page_chars: usize,
    pub source_chars: usize,
    pub max_tokens: u64,
    pub concurrency: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResearchConfig {
    /// Tier `fast`'s model (an alias or `provider/model`); `None`: the local model.
    pub fast: Option<String>,
    /// Tier `deep`'s model; `None`: the fast tier's, which the answer says.
    pub deep: Option<String>,
    /// Who judges the claims: `Judge::Tier` the tier's own model.
    pub judge: Judge,
    /// Pages each search returns to the model.
    pub k: usize,
    /// The most characters of a page the model reads at once.
    pub page_chars: usize,
    /// The most characters of sources the answer's prompt holds, over all sources.
    pub source_chars: usize,
    /// The longest answer, in tokens.
    pub max_tokens: u64,
    /// Researches of one account at once (more: 429 `too_many_concurrent`).
    pub concurrency: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judge {
    Tier,
    Model(String),
    /// No judge: every cited claim is `unchecked`.
    None,
}

pub fn resolve(raw: RawResearch) -> Result<ResearchConfig, ConfigError> {
    let model = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
    let judge = match raw.judge.trim() {
        "" => Judge::Tier,
        "none" => Judge::None,
        m => Judge::Model(m.to_owned()),
    };
    if !(1..=20).contains(&raw.k) {
        return Err(invalid("research.k", "must be 1 to 20"));
    }
    Ok(ResearchConfig {
        fast: model(&raw.fast),
        deep: model(&raw.deep),
        judge,
        k: raw.k,
        page_chars: at_least("research.page_chars", raw.page_chars, 200)?,
        source_chars: at_least("research.source_chars", raw.source_chars, 500)?,
        max_tokens: at_least("research.max_tokens", raw.max_tokens as usize, 32)? as u64,
        concurrency: at_least("research.concurrency", raw.concurrency, 1)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_defaults_resolve_to_the_local_model_and_two_at_once() {
        let c = crate::config::Config::load(None, Vec::new(), &crate::config::Flags::default()).unwrap();
        let r = c.research;
        assert_eq!((r.fast, r.deep, r.judge, r.concurrency), (None, None, Judge::Tier, 2));
    }

    #[test]
    fn models_and_bounds_are_read() {
        let raw = |judge: &str, k: usize| RawResearch {
            fast: " ".into(),
            deep: "openai/gpt-4.1".into(),
            judge: judge.into(),
            k,
            page_chars: 3000,
            source_chars: 9000,
            max_tokens: 700,
            concurrency: 2,
        };
        let r = resolve(raw("none", 5)).unwrap();
        assert_eq!((r.fast, r.deep.as_deref(), r.judge), (None, Some("openai/gpt-4.1"), Judge::None));
        assert_eq!(resolve(raw("openai/gpt-4.1-mini", 5)).unwrap().judge, Judge::Model("openai/gpt-4.1-mini".into()));
        assert!(resolve(raw("", 0)).unwrap_err().to_string().contains("research.k"));
    }
}
