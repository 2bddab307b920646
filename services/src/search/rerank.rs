//! The reranker stage: after fusion, phrases and duplicate folding, the first
//! `rerank.top` pages are scored by a cross-encoder on (query, the page's best
//! passage) and reordered by it; pages past them keep the fused order below. Each
//! result keeps its fused `score` (the spec's: comparable within one response).
//!
//! A reranker is local (an ONNX cross-encoder loaded once in [`Rerankers`], run on the
//! calling shard's own session in [`Sessions`], nothing shared or locked) or remote (a
//! rerank API through the provider layer, awaited within `rerank.timeout`). A reranker
//! that fails never fails the search: the fused order stands and a warning says why.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quarry_index::embed::{EmbedError, Reranker, RerankerModel};

use super::query::Searched;
use crate::config::{RerankConfig, RerankerKind};
use crate::error::{Code, ErrorCode};

/// Characters of page text sent for a page whose search asked for no passages.
const PAGE_TEXT_CHARS: usize = 2000;

enum Kind {
    Local(Arc<RerankerModel>),
    Remote { provider: String, model: String },
}

struct Configured {
    name: String,
    model: String,
    kind: Kind,
}

/// Every configured reranker, loaded once at start-up.
pub struct Rerankers {
    list: Vec<Configured>,
    default: Option<usize>,
    top: usize,
    timeout: Duration,
}

/// Which reranker a search runs, chosen before it spends anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen(usize);

/// What the answer says of a reranker that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub name: String,
    pub model: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    #[error("No reranker {asked} is configured on this server; it has {}.", list(.known))]
    Unknown { asked: String, known: Vec<String> },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

impl ErrorCode for RerankError {
    fn code(&self) -> Code {
        Code::UnknownReranker
    }
}

impl Rerankers {
    /// Loads each local reranker's tokenizer (ONNX Runtime from `runtime_lib`); the
    /// sessions are each shard's ([`Rerankers::sessions`]).
    pub fn load(c: &RerankConfig, runtime_lib: &std::path::Path) -> Result<Rerankers, (String, EmbedError)> {
        let list = c
            .rerankers
            .iter()
            .map(|r| {
                let kind = match &r.kind {
                    RerankerKind::Onnx { model, tokenizer, max_tokens, pad_id } => Kind::Local(Arc::new(
                        RerankerModel::load(runtime_lib, model, tokenizer, *max_tokens, *pad_id).map_err(|e| (r.name.clone(), e))?,
                    )),
                    RerankerKind::Remote { provider, model } => Kind::Remote { provider: provider.clone(), model: model.clone() },
                };
                Ok(Configured { name: r.name.clone(), model: r.model.clone(), kind })
            })
            .collect::<Result<_, _>>()?;
        Ok(Rerankers { list, default: c.default, top: c.top, timeout: c.timeout })
    }

    pub fn none() -> Rerankers {
        Rerankers { list: Vec::new(), default: None, top: 20, timeout: Duration::from_secs(3) }
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|r| r.name.clone()).collect()
    }

    /// One shard's sessions of the local rerankers.
    pub fn sessions(&self) -> Result<Sessions, EmbedError> {
        let s = self
            .list
            .iter()
            .map(|r| match &r.kind {
                Kind::Local(m) => m.session().map(Some),
                Kind::Remote { .. } => Ok(None),
            })
            .collect::<Result<_, _>>()?;
        Ok(Sessions(RefCell::new(s)))
    }

    /// The reranker a search runs: `named` when given (400 `unknown_reranker` when no
    /// such one is configured), else the default unless `rerank` is false.
    pub fn choose(&self, rerank: bool, named: Option<&str>) -> Result<Option<Chosen>, RerankError> {
        match named {
            Some(name) => match self.list.iter().position(|r| r.name == name) {
                Some(i) => Ok(Some(Chosen(i))),
                None => Err(RerankError::Unknown { asked: name.to_owned(), known: self.names() }),
            },
            None if rerank => Ok(self.default.map(Chosen)),
            None => Ok(None),
        }
    }

    pub fn name(&self, c: Chosen) -> &str {
        &self.list[c.0].name
    }

    /// How many pages the engine must return so that `k` can be cut from `top` reranked.
    pub fn depth(&self, k: usize) -> usize {
        k.max(self.top)
    }

    /// Reranks the first `top` hits of `s` with `chosen`, then cuts them to `k`.
    pub async fn apply(&self, chosen: Chosen, sessions: &Sessions, llm: Option<&crate::llm::Llm>, query: &str, s: &mut Searched, k: usize) {
        let r = &self.list[chosen.0];
        let n = self.top.min(s.results.hits.len());
        let started = Instant::now();
        if n > 0 {
            let texts = passages(s, n);
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            match self.score(chosen, r, sessions, llm, query, &texts).await {
                Ok(scores) => {
                    reorder(&mut s.results.hits, &scores);
                    s.reranker = Some(Ran { name: r.name.clone(), model: r.model.clone() });
                    s.rerank_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                }
                Err(why) => {
                    tracing::warn!(reranker = %r.name, error = %why, "the reranker failed; the fused order stands");
                    s.warnings.push(format!("The reranker {} failed ({why}); the results are in the fused order.", r.name));
                }
            }
        }
        s.results.hits.truncate(k);
    }

    /// A score per text, higher is better.
    async fn score(
        &self,
        chosen: Chosen,
        r: &Configured,
        sessions: &Sessions,
        llm: Option<&crate::llm::Llm>,
        query: &str,
        texts: &[&str],
    ) -> Result<Vec<f64>, String> {
        match &r.kind {
            Kind::Local(_) => {
                let mut sessions = sessions.0.borrow_mut();
                let session = sessions.get_mut(chosen.0).and_then(Option::as_mut).ok_or("this shard has no session of it")?;
                let scores = session.score(query, texts).map_err(|e| e.to_string())?;
                Ok(scores.into_iter().map(f64::from).collect())
            }
            Kind::Remote { provider, model } => {
                let llm = llm.ok_or("the provider layer is not running")?;
                let call = async { Some(llm.rerank(provider, model, query, texts).await) };
                let timeout = async {
                    glommio::timer::sleep(self.timeout).await;
                    None
                };
                match futures_lite::future::or(call, timeout).await {
                    None => Err(format!("no answer within {}", humantime::format_duration(self.timeout))),
                    Some(Err(e)) => Err(e.to_string()),
                    Some(Ok(ranked)) => {
                        // A document the provider did not rank goes below those it did.
                        let mut scores = vec![f64::NEG_INFINITY; texts.len()];
                        for (i, score) in ranked {
                            scores[i] = score;
                        }
                        Ok(scores)
                    }
                }
            }
        }
    }
}

/// One shard's own sessions of the local rerankers (`None` for a remote one), in the
/// order of [`Rerankers`]; never shared.
#[derive(Default)]
pub struct Sessions(RefCell<Vec<Option<Reranker>>>);

/// Each of the first `n` hits' best passage; a page without one (the search asked for
/// no passages) gives the start of its text.
fn passages(s: &Searched, n: usize) -> Vec<String> {
    s.results.hits[..n]
        .iter()
        .map(|h| {
            let v = s.snapshot.hit_view(h);
            match v.passages.first() {
                Some((c, _)) => c.text.to_owned(),
                None => v.page.text.chars().take(PAGE_TEXT_CHARS).collect(),
            }
        })
        .collect()
}

/// Sorts the first `scores.len()` of `hits` by `scores`, best first (ties keep the
/// fused order); the rest stay below as they were.
fn reorder<T>(hits: &mut Vec<T>, scores: &[f64]) {
    let rest = hits.split_off(scores.len());
    let mut head: Vec<(usize, T)> = hits.drain(..).enumerate().collect();
    head.sort_by(|(a, _), (b, _)| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    hits.extend(head.into_iter().map(|(_, h)| h));
    hits.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reranked_head_is_sorted_and_the_tail_keeps_its_order() {
        let mut hits = vec!["a", "b", "c", "d", "e"];
        reorder(&mut hits, &[0.1, 0.9, 0.5]);
        assert_eq!(hits, ["b", "c", "a", "d", "e"]);
        let mut tied = vec!["a", "b", "c"];
        reorder(&mut tied, &[1.0, f64::NEG_INFINITY, 1.0]);
        assert_eq!(tied, ["a", "c", "b"]);
    }

    #[test]
    fn a_named_reranker_must_exist_and_false_turns_the_default_off() {
        let none = Rerankers::none();
        assert_eq!(none.choose(true, None).unwrap(), None);
        let e = none.choose(true, Some("jina")).unwrap_err();
        assert_eq!(e.code(), Code::UnknownReranker);
        assert!(e.to_string().contains("it has none"), "{e}");
        let two = Rerankers {
            list: ["a", "b"]
                .map(|n| Configured { name: n.into(), model: "m".into(), kind: Kind::Remote { provider: "p".into(), model: "m".into() } })
                .into(),
            default: Some(0),
            top: 20,
            timeout: Duration::from_secs(1),
        };
        assert_eq!(two.choose(true, None).unwrap(), Some(Chosen(0)));
        assert_eq!(two.choose(false, None).unwrap(), None);
        assert_eq!(two.choose(true, Some("b")).unwrap(), Some(Chosen(1)));
        assert!(two.choose(true, Some("c")).unwrap_err().to_string().contains("it has a, b"));
    }
}
