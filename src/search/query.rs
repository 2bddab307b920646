//! Running one search: the query parsed (phrases, intent), embedded on the shard's own
//! session when the mode needs it, then the engine's search over the current snapshot.

use std::cell::RefCell;
use std::time::Instant;

use quarry_index::collection::Collection;
use quarry_index::embed::Embedder;
use quarry_index::search::{self, Mode, Query, Results};
use quarry_index::text::{self, Intent};

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
}

/// The mode a search can run in: keyword when the server has no embedder (a warning
/// for hybrid, 409 for semantic), 409 when the collection's embedder is another.
pub fn mode_for(service: &Service, record: &CollectionRecord, req: &Request) -> Result<(Mode, Vec<String>), SearchError> {
    let mut warnings = req.warnings.clone();
    let mut mode = req.mode;
    if mode != Mode::Keyword {
        if !service.has_embedder() && record.embedder == "none" {
            if mode == Mode::Semantic {
                return Err(SearchError::NoEmbedder);
            }
            warnings.push("This server runs without an embedder; the search used keywords only.".into());
            mode = Mode::Keyword;
        } else {
            service.check_embedder(record)?;
        }
    }
    if req.expand.asked() {
        warnings.push("Query expansion is not available in this version; the query was searched as typed.".into());
    }
    Ok((mode, warnings))
}

/// Runs the search in the mode [`mode_for`] settled (with its warnings).
pub fn run(
    service: &Service,
    embedders: &RefCell<Vec<Embedder>>,
    coll: &Collection,
    req: &Request,
    (mode, mut warnings): (Mode, Vec<String>),
) -> Result<Searched, SearchError> {
    let parsed = text::parse(&req.query);
    let mut embed_ms = None;
    let vector = if mode == Mode::Keyword {
        None
    } else {
        let t = Instant::now();
        let mut e = embedders.borrow_mut();
        let e = e.first_mut().ok_or(SearchError::NoEmbedder)?;
        let v = e.embed_query(&parsed.text).map_err(|err| SearchError::Embed(err.to_string()))?;
        embed_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
        Some(v)
    };
    let i = service.index_config();
    let q = Query {
        text: parsed.text.clone(),
        phrases: parsed.phrases.clone(),
        emphasis: parsed.emphasis.clone(),
        mode,
        k: req.k,
        passages: req.passages,
        vector,
        filters: req.filters.clone(),
        rrf_k: i.rrf_k,
        weights: i.weights,
        depth: i.depth.max(req.k),
    };
    let snapshot = coll.snapshot();
    let mut results = search::search(&snapshot, &q);
    warnings.append(&mut results.warnings);
    Ok(Searched { results, snapshot, mode, intent: parsed.intent, phrases: parsed.phrases, embed_ms, warnings })
}
