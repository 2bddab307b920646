//! One search as AgentLex asks it, with what surrounds the engine's: the reranker
//! chosen before anything is spent, the model's paraphrases for `expand: "llm"` fetched
//! before the search (within `[expand] timeout`), the engine asked for as many pages as
//! the reranker reorders, the reranked results cut to `k`, and the domain the answer
//! says the search ran in.

use std::cell::RefCell;

use crate::search::domain::Domain;
use quarry_index::embed::Embedder;
use quarry_index::search::Mode;

use super::rerank::{Rerankers, Sessions};
use super::{expand, Caller, Expand, Owned, Request, SearchError, Searched, Service};
use crate::config::ExpandConfig;
use crate::llm::Llm;

/// What a search uses besides the request: the service, this shard's embedder and
/// reranker sessions, the configured rerankers, and the model for paraphrases.
pub struct Searcher<'a> {
    pub service: &'a Service,
    pub embedders: &'a RefCell<Vec<Embedder>>,
    pub rerankers: &'a Rerankers,
    pub sessions: &'a Sessions,
    pub llm: Option<&'a Llm>,
    pub expand: &'a ExpandConfig,
}

/// A search's results and the domain it ran in (the request's, else the collection's;
/// classical is searched as general).
pub struct Answered {
    pub searched: Searched,
    pub domain: Domain,
}

impl Searcher<'_> {
    /// Runs `req` on `owned`'s collection, reranked by `reranker` when named (else by
    /// the default unless `req.rerank` is false). `req` gains the model's paraphrases
    /// it asked for; it is otherwise as given when this returns.
    pub async fn search(&self, caller: Caller<'_>, owned: &Owned, req: &mut Request, reranker: Option<&str>) -> Result<Answered, SearchError> {
        let chosen = self.rerankers.choose(req.rerank, reranker)?;
        if req.expand == Expand::Llm && req.mode != Mode::Semantic {
            let query = quarry_index::text::parse(&req.query).text;
            req.expansion.paraphrases = expand::paraphrase(self.llm, self.expand, caller.account_id, &query).await;
        }
        // A reranked search asks the engine for the pages it reranks, then keeps k.
        let k = req.k;
        if chosen.is_some() {
            req.k = self.rerankers.depth(k);
        }
        let searched = self.service.search(self.embedders, caller, owned, req).await;
        req.k = k;
        let mut searched = searched.map_err(|e| match e {
            SearchError::Searches { allowance, plan, .. } => SearchError::SearchesSpent { allowance, plan },
            e => e,
        })?;
        if let Some(chosen) = chosen {
            self.rerankers.apply(chosen, self.sessions, self.llm, &req.query, &mut searched, k).await;
        }
        Ok(Answered { searched, domain: super::domain(req.expansion.domain, &owned.record).searched() })
    }
}
