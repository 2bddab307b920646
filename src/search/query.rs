//! Running one search: the query parsed (phrases, intent), embedded on the shard's own
//! session when the mode needs it, then the engine's search over the current snapshot.

use std::cell::RefCell;
use std::time::Instant;

use quarry_index::collection::Collection;
use quarry_index::embed::Embedder;
use quarry_index::search::{self, Mode, Query, Results};
use quarry_index::text::{self, Intent};

use crate::api::agentlex::input::search::SearchIn;
use crate::app::App;
use crate::error::{ApiError, Code};
use crate::store::CollectionRecord;

pub struct Searched {
    pub results: Results,
    pub snapshot: std::sync::Arc<quarry_index::collection::Snapshot>,
    pub intent: Intent,
    pub phrases: Vec<String>,
    pub embed_ms: Option<f64>,
    pub warnings: Vec<String>,
}

/// The mode a search can run in: keyword when the server has no embedder (a warning
/// for hybrid, 409 for semantic), 409 when the collection's embedder is another.
pub fn mode_for(app: &App, record: &CollectionRecord, input: &SearchIn) -> Result<(Mode, Vec<String>), ApiError> {
    let mut warnings = input.warnings.clone();
    let mut mode = input.mode;
    if mode != Mode::Keyword {
        if app.config.embedder.is_none() && record.embedder == "none" {
            if mode == Mode::Semantic {
                return Err(ApiError::new(Code::EmbedderMismatch, "This server runs without an embedder; use mode \"keyword\"."));
            }
            warnings.push("This server runs without an embedder; the search used keywords only.".into());
            mode = Mode::Keyword;
        } else {
            super::check_embedder(app, record)?;
        }
    }
    if input.expand != serde_json::Value::Bool(false) {
        warnings.push("Query expansion is not available in this version; the query was searched as typed.".into());
    }
    Ok((mode, warnings))
}

/// Runs the search in the mode [`mode_for`] settled (with its warnings).
pub fn run(
    app: &App,
    embedders: &RefCell<Vec<Embedder>>,
    coll: &Collection,
    input: &SearchIn,
    (mode, mut warnings): (Mode, Vec<String>),
) -> Result<Searched, ApiError> {
    let parsed = text::parse(&input.query);
    let mut embed_ms = None;
    let vector = if mode == Mode::Keyword {
        None
    } else {
        let t = Instant::now();
        let mut e = embedders.borrow_mut();
        let e = e.first_mut().ok_or_else(ApiError::internal)?;
        let v = e.embed_query(&parsed.text).map_err(|err| {
            tracing::error!(error = %err, "embedding a query failed");
            ApiError::internal()
        })?;
        embed_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
        Some(v)
    };
    let i = &app.config.index;
    let q = Query {
        text: parsed.text.clone(),
        phrases: parsed.phrases.clone(),
        mode,
        k: input.k,
        passages: input.passages,
        vector,
        filters: input.filters.clone(),
        rrf_k: i.rrf_k,
        weights: i.weights,
        depth: i.depth.max(input.k),
    };
    let snapshot = coll.snapshot();
    let mut results = search::search(&snapshot, &q);
    warnings.append(&mut results.warnings);
    Ok(Searched { results, snapshot, intent: parsed.intent, phrases: parsed.phrases, embed_ms, warnings })
}
