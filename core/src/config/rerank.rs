//! `[rerank]` and `[rerankers.NAME]` → [`RerankConfig`]: the rerankers by name, each a
//! local ONNX cross-encoder (its files checked here, so a missing one stops start-up)
//! or a remote rerank API reached through a configured `[llm.providers.ID]` whose
//! manifest declares a `rerank` endpoint; the default one; how many pages the stage
//! reranks and how long a remote reranker may take.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::raw::{RawRerank, RawReranker};
use super::{duration, invalid, ConfigError};
use crate::llm::LlmConfig;

#[derive(Debug, Clone)]
pub struct RerankConfig {
    /// In name order.
    pub rerankers: Vec<RerankerConfig>,
    /// The index in `rerankers` of the one a search runs when it names none.
    pub default: Option<usize>,
    /// The pages reranked (the fused order's first `top`); the rest keep their order.
    pub top: usize,
    /// The longest a remote reranker may take before the fused order stands.
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct RerankerConfig {
    pub name: String,
    /// What the answer's `reranker.model` says: the remote model, or the ONNX file's stem.
    pub model: String,
    pub kind: RerankerKind,
}

#[derive(Debug, Clone)]
pub enum RerankerKind {
    Onnx { model: PathBuf, tokenizer: PathBuf, max_tokens: usize, pad_id: u32 },
    Remote { provider: String, model: String },
}

impl RerankConfig {
    pub fn none() -> RerankConfig {
        RerankConfig { rerankers: Vec::new(), default: None, top: 20, timeout: Duration::from_secs(3) }
    }
}

pub fn resolve(raw: RawRerank, rerankers: BTreeMap<String, RawReranker>, llm: &LlmConfig, models_dir: &Path) -> Result<RerankConfig, ConfigError> {
    let list = rerankers.into_iter().map(|(name, r)| reranker(name, r, llm, models_dir)).collect::<Result<Vec<_>, _>>()?;
    let default = match raw.default.as_str() {
        "none" => None,
        "" => (!list.is_empty()).then_some(0),
        name => Some(list.iter().position(|r| r.name == name).ok_or_else(|| invalid("rerank.default", &format!("names no [rerankers.{name}]")))?),
    };
    if !(1..=200).contains(&raw.top) {
        return Err(invalid("rerank.top", "must be 1 to 200"));
    }
    Ok(RerankConfig { rerankers: list, default, top: raw.top, timeout: duration("rerank.timeout", &raw.timeout)? })
}

fn reranker(name: String, r: RawReranker, llm: &LlmConfig, models_dir: &Path) -> Result<RerankerConfig, ConfigError> {
    let key = |f: &str| format!("rerankers.{name}.{f}");
    if name.is_empty() || name == "none" || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.') {
        return Err(invalid(&key("kind"), "a reranker's name is letters, digits, - _ or . (and not \"none\")"));
    }
    match r.kind.as_str() {
        "onnx" => {
            if !r.provider.is_empty() {
                return Err(invalid(&key("provider"), "is for kind = \"remote\""));
            }
            let file = |field: &str, v: &str| -> Result<PathBuf, ConfigError> {
                if v.is_empty() {
                    return Err(invalid(&key(field), "must name a file"));
                }
                let path = models_dir.join(v);
                if !path.is_file() {
                    return Err(invalid(&key(field), &format!("{} does not exist (relative paths are taken from models.dir)", path.display())));
                }
                Ok(path)
            };
            let model = file("model", &r.model)?;
            let tokenizer = file("tokenizer", &r.tokenizer)?;
            let max_tokens = match r.max_tokens {
                0 => 512,
                n if n < 8 => return Err(invalid(&key("max_tokens"), "must be at least 8")),
                n => n,
            };
            let label = model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(RerankerConfig { name, model: label, kind: RerankerKind::Onnx { model, tokenizer, max_tokens, pad_id: r.pad_id } })
        }
        "remote" => {
            if !r.tokenizer.is_empty() {
                return Err(invalid(&key("tokenizer"), "is for kind = \"onnx\""));
            }
            if r.model.is_empty() {
                return Err(invalid(&key("model"), "must name the provider's rerank model"));
            }
            let p = llm
                .providers
                .iter()
                .find(|p| p.id == r.provider)
                .ok_or_else(|| invalid(&key("provider"), &format!("names no [llm.providers.{}]", r.provider)))?;
            if p.manifest.rerank.is_none() {
                return Err(invalid(
                    &key("provider"),
                    &format!("the manifest `{}` has no rerank endpoint (jina, cohere and voyage have)", p.manifest.id),
                ));
            }
            Ok(RerankerConfig { name, model: r.model.clone(), kind: RerankerKind::Remote { provider: r.provider, model: r.model } })
        }
        other => Err(invalid(&key("kind"), &format!("`{other}` is not \"onnx\" or \"remote\""))),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::{Config, ConfigError, Flags};
    use super::*;

    fn load(toml: &str) -> Result<Config, ConfigError> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        write!(f, "[llm.local]\nenabled = false\n{toml}").unwrap();
        Config::load(Some(f.path()), Vec::new(), &Flags::default())
    }

    fn key_of(e: ConfigError) -> String {
        match e {
            ConfigError::Invalid { key, .. } | ConfigError::UnknownKey { key, .. } => key,
            e => panic!("{e}"),
        }
    }

    #[test]
    fn none_by_default() {
        let c = Config::defaults().rerank;
        assert!(c.rerankers.is_empty() && c.default.is_none());
        assert_eq!((c.top, c.timeout), (20, Duration::from_secs(3)));
    }

    #[test]
    fn onnx_files_must_exist_and_the_first_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let (model, tok) = (dir.path().join("x.onnx"), dir.path().join("x.tokenizer.json"));
        let onnx = |name: &str, model: &Path| {
            format!("[rerankers.{name}]\nkind = \"onnx\"\nmodel = \"{}\"\ntokenizer = \"{}\"\n", model.display(), tok.display())
        };
        let e = load(&onnx("local", &model)).unwrap_err();
        assert!(e.to_string().contains("x.onnx does not exist"), "{e}");
        assert_eq!(key_of(e), "rerankers.local.model");
        std::fs::write(&model, b"onnx").unwrap();
        std::fs::write(&tok, b"{}").unwrap();
        let c = load(&(onnx("b", &model) + &onnx("a", &model))).unwrap().rerank;
        let names: Vec<&str> = c.rerankers.iter().map(|r| r.name.as_str()).collect();
        assert_eq!((names, c.default), (vec!["a", "b"], Some(0)));
        assert_eq!(c.rerankers[0].model, "x");
        assert!(matches!(c.rerankers[0].kind, RerankerKind::Onnx { max_tokens: 512, pad_id: 0, .. }));
        let c = load(&(onnx("a", &model) + "[rerank]\ndefault = \"none\"\n")).unwrap().rerank;
        assert_eq!(c.default, None);
        assert_eq!(key_of(load(&(onnx("a", &model) + "[rerank]\ndefault = \"b\"\n")).unwrap_err()), "rerank.default");
        assert_eq!(key_of(load(&(onnx("a", &model) + "max_tokenz = 3\n")).unwrap_err()), "rerankers.a.max_tokenz");
    }

    #[test]
    fn a_remote_reranker_needs_a_provider_with_a_rerank_endpoint() {
        let remote = |provider: &str| format!("[rerankers.r]\nkind = \"remote\"\nprovider = \"{provider}\"\nmodel = \"m\"\n");
        assert_eq!(key_of(load(&remote("jina")).unwrap_err()), "rerankers.r.provider");
        let with = |manifest: &str| format!("[llm.providers.p]\nmanifest = \"{manifest}\"\n{}", remote("p"));
        let e = load(&with("openai")).unwrap_err();
        assert!(e.to_string().contains("no rerank endpoint"), "{e}");
        for vendor in ["jina", "cohere", "voyage"] {
            let c = load(&with(vendor)).unwrap().rerank;
            assert!(matches!(&c.rerankers[0].kind, RerankerKind::Remote { provider, model } if provider == "p" && model == "m"), "{vendor}");
        }
        assert_eq!(key_of(load("[rerankers.r]\nkind = \"cloud\"\n").unwrap_err()), "rerankers.r.kind");
        assert_eq!(key_of(load("[rerank]\ntop = 0\n").unwrap_err()), "rerank.top");
    }
}
