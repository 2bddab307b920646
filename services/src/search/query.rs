//! Running one search: the query parsed (phrases, intent), embedded on the shard's own
//! session when the mode needs it, then the engine's search over the current snapshot.

use std::cell::RefCell;
use std::time::Instant;

use quarry_index::collection::Collection;
use quarry_index::embed::Embedder;
use quarry_index::search::{self, Mode, Query, Results};
use quarry_index::text::{self, Intent, ParsedQuery};

use super::expand::Expanded;
use super::{Request, SearchError, Service};
use crate::store::CollectionRecord;

pub struct Searched {
    pub results: Results,
    pub snapshot: std::sync::Arc<quarry_index::collection::Snapshot>,
    /// The mode the search ran in (keyword when the server has no embedder).
    pub mode: Mode,
    pub intent: Intent,
    pub phrases: Vec<String>,
    pub embed_ms: Option<f64>,
    pub warnings: Vec<String>,
    /// The reranker that reordered the results ([`super::rerank`]), and its time.
    pub reranker: Option<super::rerank::Ran>,
    pub rerank_ms: Option<f64>,
    /// The expansions that ran (services/src/search/expand.rs).
    pub expanded: Expanded,
}

/// How a search will run, settled before one is spent: the mode, the session slot that
/// embeds the query (the collection's own model, [`super::embedders::Loaded`]), the
/// warnings so far, and the collection's expansion inputs (domain, glossary) applied.
pub struct Settled {
    pub mode: Mode,
    pub slot: Option<usize>,
    pub warnings: Vec<String>,
    expanded: Expanded,
    /// The query parsed once, for the expansions and the search.
    parsed: ParsedQuery,
}

/// The mode a search can run in: keyword when the server does not load the
/// collection's embedder (a warning for hybrid, 409 for semantic).
pub fn mode_for(service: &Service, record: &CollectionRecord, req: &Request) -> Result<Settled, SearchError> {
    let mut warnings = req.warnings.clone();
    let (mode, slot, fallback) = service.embedders().settle(record, req.mode)?;
    warnings.extend(fallback);
    let parsed = text::parse(&req.query);
    let expanded = super::expand::resolve(record, req, &parsed.text, mode, &mut warnings);
    Ok(Settled { mode, slot, warnings, expanded, parsed })
}

/// Runs the search in the mode [`mode_for`] settled (with its warnings).
pub fn run(
    service: &Service,
    embedders: &RefCell<Vec<Embedder>>,
    coll: &Collection,
    req: &Request,
    Settled { mode, slot, mut warnings, expanded, parsed }: Settled,
) -> Result<Searched, SearchError> {
    let mut embed_ms = None;
    let vector = if let Some(slot) = slot.filter(|_| mode != Mode::Keyword) {
        let t = Instant::now();
        let mut e = embedders.borrow_mut();
        let e = super::embedders::session(&mut e, slot)?;
        let v = e.embed_query(&parsed.text).map_err(|err| SearchError::Embed(err.to_string()))?;
        embed_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
        Some(v)
    } else {
        None
    };
    let i = service.index_config();
    let q = Query {
        text: parsed.text,
        phrases: parsed.phrases.clone(),
        emphasis: parsed.emphasis,
        mode,
        k: req.k,
        passages: req.passages,
        vector,
        filters: req.filters.clone(),
        rrf_k: i.rrf_k,
        weights: i.weights,
        depth: i.depth.max(req.k),
        expansions: expanded.list.clone(),
    };
    let snapshot = coll.snapshot();
    let mut results = search::search(&snapshot, &q);
    warnings.append(&mut results.warnings);
    Ok(Searched {
        results,
        snapshot,
        mode,
        intent: parsed.intent,
        phrases: parsed.phrases,
        embed_ms,
        warnings,
        reranker: None,
        rerank_ms: None,
        expanded,
    })
}
