//! A memory store's side in the engine: one collection per store, with the store's id,
//! hidden from `/v1/collections` (`store::is_memory_collection`); one document per
//! entry, with the entry's id. An add returns once the engine's WAL holds it, so an
//! acknowledged entry is durable and searchable. Also the one search both knowledge
//! retrieval and the write path's near-duplicate check run: the engine's hybrid search
//! over a collection, each hit with its raw cosine to the query.

use std::collections::HashSet;

use quarry_index::ingest::PageDraft;
use quarry_index::search::{Filters, Mode, Query};

use crate::agents::tools::Env;
use crate::search::{NewDocument, Owned, SearchError};
use crate::store::{CollectionRecord, CollectionSettings, MemoryEntryRecord};

/// The store's collection, or `CollectionNotFound` (a store whose collection is gone).
pub async fn collection(env: &Env<'_>, account_id: &str, store_id: &str) -> Result<Owned, SearchError> {
    let not_found = || SearchError::CollectionNotFound(store_id.to_owned());
    let record = env.records.collection(account_id, store_id)?.ok_or_else(not_found)?;
    let coll = env.search.collection(store_id).await?.ok_or_else(not_found)?;
    Ok(Owned { record, coll })
}

/// Makes the store's collection (prose chunking, the server's default embedder).
pub async fn create(env: &Env<'_>, account_id: &str, store_id: &str) -> Result<Owned, SearchError> {
    let settings = CollectionSettings { domain: "general".into(), ..CollectionSettings::default() };
    let record = CollectionRecord {
        id: store_id.to_owned(),
        account_id: account_id.to_owned(),
        name: store_id.to_owned(),
        embedder: env.search.embedder().to_owned(),
        created_at: crate::clock::now_rfc3339(),
        settings,
        language: None,
    };
    env.search.create(record).await
}

/// Indexes the entry's content as its document (`entry.doc_id()`); durable when it returns.
pub async fn add(env: &Env<'_>, owned: &Owned, entry: &MemoryEntryRecord) -> Result<(), SearchError> {
    let page = PageDraft { text: entry.content.clone(), number: None, volume: None, heading: None, meta: None };
    let mut metadata = serde_json::Map::new();
    metadata.insert("memory_id".into(), entry.memory_id.clone().into());
    let doc = NewDocument { metadata, format: "text", pages: vec![page], ..NewDocument::default() };
    env.search.add(env.caller, owned, doc, Some(entry.doc_id().to_owned())).await.map(drop)
}

/// Removes document `doc_id`; one already gone is fine.
pub async fn remove(env: &Env<'_>, owned: &Owned, doc_id: &str) -> Result<(), SearchError> {
    match env.search.delete(owned, doc_id).await {
        Ok(_) | Err(SearchError::DocumentNotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One hit of [`search`]: the document, its page, the engine's fused score and the
/// raw cosine of its best window to the query (`None` without vectors).
#[derive(Debug, Clone)]
pub struct Hit {
    pub doc_id: String,
    pub citation: String,
    pub title: Option<String>,
    pub text: String,
    pub metadata_json: String,
    pub created_at: String,
    pub score: f64,
    pub cosine: Option<f64>,
}

/// What [`search`] asks the engine.
pub struct Ask<'q> {
    pub query: &'q str,
    pub k: usize,
    pub rrf_k: f64,
    pub documents: Option<HashSet<String>>,
    pub metadata: Vec<(String, Vec<quarry_index::segment::FieldValue>)>,
}

/// `text` embedded as a passage (as the store's entries are), for the near-duplicate
/// check: a query prefix (e5's `query: `) would keep identical texts apart.
pub fn embed_passage(env: &Env<'_>, record: &CollectionRecord, text: &str) -> Result<Option<Vec<f32>>, SearchError> {
    let (mode, slot, _) = env.search.embedders().settle(record, Mode::Hybrid)?;
    let Some(slot) = slot.filter(|_| mode != Mode::Keyword) else { return Ok(None) };
    let mut sessions = env.embedders.borrow_mut();
    let e = crate::search::embedders::session(&mut sessions, slot)?;
    let v = e.embed_passages(&[text]).map_err(|err| SearchError::Embed(err.to_string()))?;
    Ok(Some(v.data[..v.dims].to_vec()))
}

/// The query embedded by the collection's own model, when the server loads it.
pub fn embed(env: &Env<'_>, record: &CollectionRecord, query: &str) -> Result<Option<Vec<f32>>, SearchError> {
    let (mode, slot, _) = env.search.embedders().settle(record, Mode::Hybrid)?;
    let Some(slot) = slot.filter(|_| mode != Mode::Keyword) else { return Ok(None) };
    let mut sessions = env.embedders.borrow_mut();
    let e = crate::search::embedders::session(&mut sessions, slot)?;
    let text = quarry_index::text::parse(query).text;
    e.embed_query(&text).map(Some).map_err(|err| SearchError::Embed(err.to_string()))
}

/// The engine's hybrid search (keyword alone without a vector) over the collection,
/// unmetered: the caller spends the search. Quoted phrases are not enforced here.
pub fn search(env: &Env<'_>, owned: &Owned, vector: Option<Vec<f32>>, ask: Ask<'_>) -> Vec<Hit> {
    let i = env.search.index_config();
    let parsed = quarry_index::text::parse(ask.query);
    let mode = if vector.is_some() { Mode::Hybrid } else { Mode::Keyword };
    let q = Query {
        text: parsed.text,
        phrases: Vec::new(),
        emphasis: Vec::new(),
        mode,
        k: ask.k,
        passages: 1,
        filters: Filters { documents: ask.documents, metadata: ask.metadata, ..Filters::default() },
        rrf_k: ask.rrf_k,
        weights: i.weights,
        depth: i.depth.max(ask.k),
        expansions: Vec::new(),
        vector,
    };
    let snap = owned.snapshot();
    let results = quarry_index::search::search(&snap, &q);
    let qv = q.vector.as_deref();
    results
        .hits
        .iter()
        .map(|h| {
            let v = snap.hit_view(h);
            Hit {
                doc_id: v.doc.id.to_owned(),
                citation: v.page.citation_id(),
                title: v.doc.title.map(str::to_owned),
                text: v.page.text.to_owned(),
                metadata_json: v.doc.metadata_json.to_owned(),
                created_at: v.doc.created_at.to_owned(),
                score: h.score,
                cosine: qv.and_then(|qv| cosine(&snap, h, qv)),
            }
        })
        .collect()
}

/// The best cosine of the hit's page windows to `qv`.
fn cosine(snap: &quarry_index::collection::Snapshot, h: &quarry_index::search::Hit, qv: &[f32]) -> Option<f64> {
    page_cosine(snap, h.view, h.page, qv)
}

/// The best cosine of page `page` of view `v` by its windows (rows are L2-normalised,
/// and so is the query), clamped to 0–1.
fn page_cosine(snap: &quarry_index::collection::Snapshot, v: usize, page: u32, qv: &[f32]) -> Option<f64> {
    let view = &snap.views[v];
    let b = view.batch();
    let dims = b.dims.to_native() as usize;
    if dims == 0 || dims != qv.len() {
        return None;
    }
    let rows = view.data.vectors();
    let start = b.windows.as_slice().partition_point(|w| w.page.to_native() < page);
    let windows = b.windows.as_slice()[start..].iter().take_while(|w| w.page.to_native() == page);
    let at = |r: usize| &rows[r * dims..(r + 1) * dims];
    windows.enumerate().map(|(n, _)| quarry_index::embed::cosine(at(start + n), qv) as f64).reduce(f64::max).map(|c| c.clamp(0.0, 1.0))
}

/// A store's entries ranked for `query`, unfolded: unlike [`search`] (the engine's
/// path, which folds near-duplicate pages into one hit, right for documents) every
/// entry is its own fact. The engine's parts, fused here: BM25 over the store's
/// chunks (an entry by its best chunk) and the exact cosine of each entry's best
/// window, weighted by `index.weights` and fused by `1/(rrf_k + rank)`. Only entries
/// in `allowed` rank; at most `k`.
pub fn rank_entries(env: &Env<'_>, owned: &Owned, vector: Option<&[f32]>, query: &str, allowed: &HashSet<String>, k: usize, rrf_k: f64) -> Vec<Hit> {
    let snap = owned.snapshot();
    // Live documents allowed, by (view, ordinal).
    let mut live: std::collections::HashMap<(usize, u32), String> = std::collections::HashMap::new();
    for at in snap.docs() {
        let id = snap.doc_view(at).id;
        if allowed.contains(id) {
            live.insert((at.view, at.doc), id.to_owned());
        }
    }
    let keyword = keyword_list(&snap, &live, query);
    let mut semantic: Vec<((usize, u32), f64)> = Vec::new();
    if let Some(qv) = vector {
        for &(v, d) in live.keys() {
            if let Some(c) = doc_cosine(&snap, v, d, qv) {
                semantic.push(((v, d), c));
            }
        }
        semantic.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    let w = env.search.index_config().weights;
    let mut fused: std::collections::HashMap<(usize, u32), f64> = std::collections::HashMap::new();
    for (rank, (key, _)) in keyword.iter().enumerate() {
        *fused.entry(*key).or_default() += w[0] / (rrf_k + (rank + 1) as f64);
    }
    for (rank, (key, _)) in semantic.iter().enumerate() {
        *fused.entry(*key).or_default() += w[1] / (rrf_k + (rank + 1) as f64);
    }
    let mut out: Vec<Hit> = fused
        .into_iter()
        .map(|(key, score)| Hit {
            doc_id: live[&key].clone(),
            citation: live[&key].clone(),
            title: None,
            text: String::new(),
            metadata_json: String::new(),
            created_at: String::new(),
            score,
            cosine: semantic.iter().find(|(k, _)| *k == key).map(|(_, c)| *c),
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.doc_id.cmp(&b.doc_id)));
    out.truncate(k);
    out
}

/// BM25 over every view with the store's statistics: each allowed entry by its best
/// chunk, best first.
fn keyword_list(
    snap: &quarry_index::collection::Snapshot,
    live: &std::collections::HashMap<(usize, u32), String>,
    query: &str,
) -> Vec<((usize, u32), f32)> {
    let (terms, weights) = quarry_index::text::weighted_terms(&quarry_index::text::parse(query).text, &[]);
    let views: Vec<&quarry_index::bm25::Bm25> = snap.views.iter().map(|v| &v.bm25).collect();
    let Ok(stats) = quarry_index::bm25::Stats::of(&views, &terms) else { return Vec::new() };
    if terms.is_empty() {
        return Vec::new();
    }
    let mut best: std::collections::HashMap<(usize, u32), f32> = std::collections::HashMap::new();
    for (vi, view) in snap.views.iter().enumerate() {
        let chunks = view.batch().chunks.len().max(1);
        let Ok(m) = view.bm25.scored_weighted(&terms, &weights, &stats, chunks, None::<fn(u64) -> bool>) else { continue };
        for s in &m.chunks {
            let page = view.page_of_chunk(s.chunk);
            let doc = view.batch().pages[page as usize].doc.to_native();
            if live.contains_key(&(vi, doc)) && s.score > 0.0 {
                let e = best.entry((vi, doc)).or_insert(0.0);
                *e = e.max(s.score);
            }
        }
    }
    let mut out: Vec<_> = best.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// The best cosine over every window of document `doc` of view `v`.
fn doc_cosine(snap: &quarry_index::collection::Snapshot, v: usize, doc: u32, qv: &[f32]) -> Option<f64> {
    let b = snap.views[v].batch();
    let d = &b.docs[doc as usize];
    let first = d.first_page.to_native();
    (first..first + d.pages.to_native()).filter_map(|page| page_cosine(snap, v, page, qv)).reduce(f64::max)
}
