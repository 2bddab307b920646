//! One evaluation against a live server: [`index`] a data set's corpus into a fresh collection
//! once, then [`evaluate`] it in as many modes as wanted. Everything goes through the HTTP API,
//! so the numbers include whatever the server does to titles, chunking and pages.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::beir::Dataset;
use super::client::{Client, ClientError, Mode, NewDocument, SearchRequest};
use super::metrics::{mean_over_queries, mrr_at_k, ndcg_at_k, recall_at_k};
use super::pool::parallel_map;
use super::report::{ModeReport, Report, ServerInfo};

/// The API's largest `k`: pages per search. nDCG@10 reads the first ten documents of the
/// rolled-up list, recall the whole list.
pub const MAX_K: usize = 50;

/// Called as `(phase, done, total)` every few items; `phase` is "index" or a mode.
pub type Progress = fn(&str, usize, usize);

#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Pages asked of each search (1..=50).
    pub search_k: usize,
    /// The search request's `expand`: false evaluates the query as typed.
    pub expand: bool,
    pub progress: Option<Progress>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            concurrency: 4,
            search_k: MAX_K,
            expand: false,
            progress: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("indexing corpus document {doc}: {source}")]
    Index { doc: String, source: ClientError },
    #[error("{mode} search for query {query}: {source}")]
    Search {
        mode: Mode,
        query: String,
        source: ClientError,
    },
    #[error("creating the evaluation collection: {0}")]
    Collection(ClientError),
    #[error(
        "the server gave document id {server_id} to both corpus documents {first} and {second}"
    )]
    DuplicateId {
        server_id: String,
        first: String,
        second: String,
    },
}

#[derive(Debug, Clone, Default)]
pub struct IngestStats {
    pub docs: usize,
    pub pages: u64,
    pub chunks: u64,
    pub chars: u64,
    pub elapsed: Duration,
    pub concurrency: usize,
}

impl IngestStats {
    pub fn docs_per_sec(&self) -> f64 {
        self.docs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A collection holding a data set's corpus.
#[derive(Debug, Clone)]
pub struct QualityRun {
    pub collection: String,
    /// Server document id → corpus (BEIR) id.
    pub doc_ids: HashMap<String, String>,
    pub ingest: IngestStats,
}

/// Creates `collection_name` and adds every corpus document (title when not empty, text), up to
/// `options.concurrency` at a time.
pub fn index(
    client: &Client,
    data: &Dataset,
    collection_name: &str,
    options: &RunOptions,
) -> Result<QualityRun, RunError> {
    let collection = client
        .create_collection(collection_name)
        .map_err(RunError::Collection)?;
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    let total = data.corpus.len();
    let created = parallel_map(&data.corpus, options.concurrency, |doc| {
        let title = Some(doc.title.as_str()).filter(|t| !t.trim().is_empty());
        let input = NewDocument {
            title,
            text: &doc.text,
        };
        let created = client
            .add_document(&collection.id, &input)
            .map_err(|source| RunError::Index {
                doc: doc.id.clone(),
                source,
            })?;
        tick(options, "index", &done, total);
        Ok(created)
    })?;
    let mut ingest = IngestStats {
        docs: created.len(),
        elapsed: started.elapsed(),
        concurrency: options.concurrency,
        ..IngestStats::default()
    };
    let mut doc_ids = HashMap::with_capacity(created.len());
    for (doc, created) in data.corpus.iter().zip(created) {
        ingest.pages += created.pages;
        ingest.chunks += created.chunks;
        ingest.chars += created.chars;
        if let Some(first) = doc_ids.insert(created.id.clone(), doc.id.clone()) {
            return Err(RunError::DuplicateId {
                server_id: created.id,
                first,
                second: doc.id.clone(),
            });
        }
    }
    Ok(QualityRun {
        collection: collection.id,
        doc_ids,
        ingest,
    })
}

/// Searches every judged query of `data` in each mode and scores the rolled-up document lists.
pub fn evaluate(
    client: &Client,
    run: &QualityRun,
    data: &Dataset,
    modes: &[Mode],
    options: &RunOptions,
) -> Result<Report, RunError> {
    let modes = modes
        .iter()
        .map(|&mode| evaluate_mode(client, run, data, mode, options))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Report {
        dataset: data.name.clone(),
        split: data.split.clone(),
        docs: data.corpus.len(),
        queries: data.queries.len(),
        subset: None,
        ingest: run.ingest.clone(),
        modes,
        peers: Vec::new(),
        server: server_info(client),
        rate_limited: client.rate_limited_count(),
    })
}

fn evaluate_mode(
    client: &Client,
    run: &QualityRun,
    data: &Dataset,
    mode: Mode,
    options: &RunOptions,
) -> Result<ModeReport, RunError> {
    let done = AtomicUsize::new(0);
    let total = data.queries.len();
    let answers = parallel_map(&data.queries, options.concurrency, |query| {
        let request = SearchRequest {
            query: &query.text,
            mode,
            k: options.search_k,
            expand: options.expand,
        };
        let response =
            client
                .search(&run.collection, &request)
                .map_err(|source| RunError::Search {
                    mode,
                    query: query.id.clone(),
                    source,
                })?;
        tick(options, mode.as_str(), &done, total);
        let ranked = response
            .document_ids()
            .into_iter()
            .map(|id| corpus_id(run, id))
            .collect::<Vec<_>>();
        Ok((query.id.clone(), ranked, response.total_ms()))
    })?;
    let mut runs = HashMap::with_capacity(answers.len());
    let mut total_ms = Vec::with_capacity(answers.len());
    let mut empty = 0;
    for (query, ranked, ms) in answers {
        empty += usize::from(ranked.is_empty());
        total_ms.extend(ms);
        runs.insert(query, ranked);
    }
    let qrels = judged_queries(data);
    let (ndcg_at_10, queries) = mean_over_queries(&runs, &qrels, |r, j| ndcg_at_k(r, j, 10));
    let recall_k = options.search_k;
    let (recall, _) = mean_over_queries(&runs, &qrels, |r, j| recall_at_k(r, j, recall_k));
    let (mrr_at_10, _) = mean_over_queries(&runs, &qrels, |r, j| mrr_at_k(r, j, 10));
    Ok(ModeReport {
        mode,
        ndcg_at_10,
        mrr_at_10,
        recall,
        recall_k,
        queries,
        empty,
        median_total_ms: median(&mut total_ms),
    })
}

/// The judgements of the queries being run: the means are over these.
fn judged_queries(data: &Dataset) -> super::beir::Qrels {
    data.queries
        .iter()
        .filter_map(|q| data.qrels.get(&q.id).map(|j| (q.id.clone(), j.clone())))
        .collect()
}

/// A server id the harness did not add (the collection holds something else) ranks as an
/// unjudged document.
fn corpus_id(run: &QualityRun, server_id: &str) -> String {
    match run.doc_ids.get(server_id) {
        Some(id) => id.clone(),
        None => format!("(not from the corpus: {server_id})"),
    }
}

/// The embedder from `GET /v1/health` and the plan from `GET /v1/account`; what failed reads
/// as unknown, since neither changes the scores.
pub fn server_info(client: &Client) -> ServerInfo {
    let embedder = client.health().ok().and_then(|h| h.embedder);
    let plan = client.account().ok().map(|a| a.plan);
    ServerInfo { embedder, plan }
}

pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 0 {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

fn tick(options: &RunOptions, phase: &str, done: &AtomicUsize, total: usize) {
    let done = done.fetch_add(1, Ordering::Relaxed) + 1;
    if let Some(progress) = options.progress {
        if done % 100 == 0 || done == total {
            progress(phase, done, total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
