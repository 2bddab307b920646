//! One evaluation against a live server: [`index`] a data set's corpus into a fresh collection
//! once, with `quarry ingest`'s own code (`quarry::ingest_cli`), then [`evaluate`] it in as many modes as wanted through `POST
//! /v1/collections/{id}/evaluate`, a batch of questions per call, several calls in flight.
//! Everything goes through the HTTP API, so the numbers include whatever the server does to
//! titles, chunking and pages.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::answers::{self, AnswerError};
use super::beir::Dataset;
use quarry::ingest_cli::{self, Done, IngestError, Input, ProgressMode, Record, Target};

use super::client::{Client, ClientError, Mode, MAX_QUESTIONS};
use super::metrics::{mean_over_queries, mrr_at_k, ndcg_at_k, recall_at_k};
use super::pool::parallel_map;
use super::questions::{self, Question};
use super::report::{ModeReport, Report, ServerInfo};

/// The API's largest `k`: pages per search. nDCG@10 and MRR@10 read the first ten documents of
/// the list, recall the whole list.
pub const MAX_K: usize = 50;

/// Questions per evaluate call unless told otherwise: a call's searches run one after another
/// on one server core, so small batches spread over the cores and keep the progress moving.
pub const DEFAULT_BATCH: usize = 50;

/// Called as `(phase, done, total)` every few items; `phase` is "index" or a mode.
pub type Progress = fn(&str, usize, usize);

#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Requests in flight at once: document adds, then evaluate calls.
    pub concurrency: usize,
    /// The evaluate `k`: pages per search (1..=50), the depth recall is measured at.
    pub search_k: usize,
    /// Questions per evaluate call (1..=1000, the endpoint's cap).
    pub batch: usize,
    /// The evaluate request's `expand`: false evaluates the query as typed.
    pub expand: bool,
    pub progress: Option<Progress>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { concurrency: 4, search_k: MAX_K, batch: DEFAULT_BATCH, expand: false, progress: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("indexing corpus document {doc}: POST /v1/collections/{collection}/documents: {reason}")]
    Index { doc: String, collection: String, reason: String },
    #[error("loading the corpus with quarry ingest: {0}")]
    Ingest(IngestError),
    #[error("{mode} evaluation of the batch from query {first_query}: {source}")]
    Evaluate { mode: Mode, first_query: String, source: ClientError },
    #[error("{mode} evaluation of the batch from query {first_query}: {source}")]
    Answer { mode: Mode, first_query: String, source: Box<AnswerError> },
    #[error("the server gave document id {server_id} to both corpus documents {first} and {second}")]
    DuplicateId { server_id: String, first: String, second: String },
    #[error(
        "corpus document {doc} became {pages} pages on the server ({more} more documents did too): \
         its text holds page breaks (form feeds or `--- page N ---` lines). Evaluate ranks pages, \
         so the document-level figures BEIR defines cannot be read from it"
    )]
    MultiPage { doc: String, pages: u64, more: usize },
}

#[derive(Debug, Clone, Default)]
pub struct IngestStats {
    pub docs: usize,
    pub pages: u64,
    pub chunks: u64,
    pub chars: u64,
    pub elapsed: Duration,
    pub concurrency: usize,
    /// `429 rate_limited` answers the adds waited out.
    pub rate_limited: u64,
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
    /// Corpus documents the server split into more than one page, with their page counts.
    pub multi_page: Vec<(String, u64)>,
    pub ingest: IngestStats,
}

/// Creates `collection_name` and adds every corpus document (title when not empty, text), up to
/// `options.concurrency` at a time, through `quarry ingest`'s code: each record's `_id` becomes
/// its `metadata.source_id`, which search does not read, so the scores are those of the plain
/// adds the harness sent before. The first document refused fails the run.
pub fn index(client: &Client, data: &Dataset, collection_name: &str, options: &RunOptions) -> Result<QualityRun, RunError> {
    index_with(client, data, collection_name, None, options)
}

/// [`index`] into a collection created with `embedder` (one the server loads; its
/// default when `None`), so one server loading several models evaluates each.
pub fn index_with(
    client: &Client,
    data: &Dataset,
    collection_name: &str,
    embedder: Option<&str>,
    options: &RunOptions,
) -> Result<QualityRun, RunError> {
    let started = Instant::now();
    let progress = options.progress;
    let records = data.corpus.iter().map(|doc| Record {
        source_id: doc.id.clone(),
        title: Some(doc.title.clone()).filter(|t| !t.trim().is_empty()),
        text: doc.text.clone(),
        metadata: Default::default(),
    });
    let summary = ingest_cli::run(ingest_cli::Options {
        server: client.base().to_owned(),
        key: client.key().unwrap_or_default().to_owned(),
        collection: Target::Create { name: collection_name.to_owned(), embedder: embedder.map(str::to_owned) },
        input: Input::Records(records.collect()),
        concurrency: options.concurrency,
        // The harness shows its own progress, as it did before ingest did the adds.
        progress: ProgressMode::Off,
        max_rate_wait: client.max_rate_wait(),
        observer: Some(Arc::new(move |done, total| {
            if let Some(progress) = progress {
                let (done, total) = (done as usize, total as usize);
                if done % 100 == 0 || done == total {
                    progress("index", done, total);
                }
            }
        })),
    })
    .map_err(RunError::Ingest)?;
    let mut ingest = IngestStats {
        docs: summary.outcomes.len(),
        elapsed: started.elapsed(),
        concurrency: options.concurrency,
        rate_limited: summary.rate_limited,
        ..IngestStats::default()
    };
    let mut doc_ids = HashMap::with_capacity(summary.outcomes.len());
    let mut multi_page = Vec::new();
    for outcome in summary.outcomes {
        let created = match outcome.done {
            Done::Added(created) => created,
            other => {
                let reason = match other {
                    Done::Failed(why) | Done::Unsupported(why) => why,
                    _ => "already in the new collection".to_owned(),
                };
                return Err(RunError::Index { doc: outcome.source_id, collection: summary.collection, reason });
            }
        };
        if created.pages > 1 {
            multi_page.push((outcome.source_id.clone(), created.pages));
        }
        ingest.pages += created.pages;
        ingest.chunks += created.chunks;
        ingest.chars += created.chars;
        if let Some(first) = doc_ids.insert(created.id.clone(), outcome.source_id.clone()) {
            return Err(RunError::DuplicateId { server_id: created.id, first, second: outcome.source_id });
        }
    }
    Ok(QualityRun { collection: summary.collection, doc_ids, multi_page, ingest })
}

/// Evaluates every judged query of `data` in each mode and scores the ranked document lists as
/// BEIR does, over every judged query.
pub fn evaluate(client: &Client, run: &QualityRun, data: &Dataset, modes: &[Mode], options: &RunOptions) -> Result<Report, RunError> {
    if let Some((doc, pages)) = run.multi_page.first() {
        return Err(RunError::MultiPage { doc: doc.clone(), pages: *pages, more: run.multi_page.len() - 1 });
    }
    let questions = questions::questions(data, run);
    let mut notes = Vec::new();
    let modes = modes.iter().map(|&mode| evaluate_mode(client, run, data, &questions, mode, options, &mut notes)).collect::<Result<Vec<_>, _>>()?;
    Ok(Report {
        dataset: data.name.clone(),
        split: data.split.clone(),
        docs: data.corpus.len(),
        queries: data.queries.len(),
        unasked: data.queries.len() - questions.len(),
        subset: None,
        ingest: run.ingest.clone(),
        modes,
        peers: Vec::new(),
        server: server_info(client, &run.collection),
        rate_limited: run.ingest.rate_limited + client.rate_limited_count(),
        notes,
    })
}

/// One mode: the questions in batches, `options.concurrency` calls in flight, then the means.
/// Server notes other than gold problems are added to `notes` (each once, named by mode).
///
/// Each question is asked once, at `search_k` (50 by default), and nDCG@10 and MRR@10 are read
/// off the first ten of that same list with the k = 10 definitions; recall off the whole list.
/// Not a second call at k = 10: that is BEIR's protocol (retrieve once, deep, and cut every
/// measure from the one run), it is what the per-search harness measured, so the figures stay
/// comparable with earlier results and with the bm25s row, and it spends half the searches.
/// A k = 10 call need not even rank the same ten: the server's candidate depth is
/// max(`index.depth`, k), and `index.depth` may be set as low as 10. `answers` tests that
/// the @10 figures of a k = 50 answer are those of a k = 10 answer of the same ranking.
fn evaluate_mode(
    client: &Client,
    run: &QualityRun,
    data: &Dataset,
    questions: &[Question],
    mode: Mode,
    options: &RunOptions,
    notes: &mut Vec<String>,
) -> Result<ModeReport, RunError> {
    let done = AtomicUsize::new(0);
    let batches: Vec<&[Question]> = questions.chunks(options.batch.clamp(1, MAX_QUESTIONS)).collect();
    let read = parallel_map(&batches, options.concurrency, |batch| {
        let first_query = batch[0].query_id.clone();
        let request = questions::request(batch, mode, options.search_k, options.expand);
        let response =
            client.evaluate(&run.collection, &request).map_err(|source| RunError::Evaluate { mode, first_query: first_query.clone(), source })?;
        let read = answers::read(batch, mode, options.search_k, response).map_err(|source| RunError::Answer {
            mode,
            first_query,
            source: Box::new(source),
        })?;
        advance(options, mode.as_str(), &done, batch.len(), questions.len(), 1);
        Ok(read)
    })?;
    let mut runs = HashMap::with_capacity(questions.len());
    let mut latency_ms = Vec::with_capacity(questions.len());
    let mut empty = 0;
    let answered = read.into_iter().flat_map(|r| {
        for note in r.notes {
            let note = format!("{mode}: {note}");
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        r.answers
    });
    for (question, answer) in questions.iter().zip(answered) {
        empty += usize::from(answer.ranked.is_empty());
        latency_ms.push(answer.latency_ms);
        runs.insert(question.query_id.clone(), answer.ranked);
    }
    // The means are over every judged query, asked or not: an unasked one has no run and
    // scores 0, as in BEIR (see `questions`).
    let qrels = judged_queries(data);
    let (ndcg_at_10, queries) = mean_over_queries(&runs, &qrels, |r, j| ndcg_at_k(r, j, 10));
    let recall_k = options.search_k;
    let (recall, _) = mean_over_queries(&runs, &qrels, |r, j| recall_at_k(r, j, recall_k));
    let (mrr_at_10, _) = mean_over_queries(&runs, &qrels, |r, j| mrr_at_k(r, j, 10));
    Ok(ModeReport { mode, ndcg_at_10, mrr_at_10, recall, recall_k, queries, empty, median_latency_ms: median(&mut latency_ms) })
}

/// The judgements of the queries being run: the means are over these.
fn judged_queries(data: &Dataset) -> super::beir::Qrels {
    data.queries.iter().filter_map(|q| data.qrels.get(&q.id).map(|j| (q.id.clone(), j.clone()))).collect()
}

/// The collection's embedder (`GET /v1/collections/{id}`, else the server's default from
/// `GET /v1/health`) and the plan from `GET /v1/account`; what failed reads as unknown,
/// since neither changes the scores.
pub fn server_info(client: &Client, collection: &str) -> ServerInfo {
    let embedder = client.collection(collection).ok().and_then(|c| c.embedder).or_else(|| client.health().ok().and_then(|h| h.embedder));
    let plan = client.account().ok().map(|a| a.plan);
    ServerInfo { embedder, plan }
}

pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] })
}

/// Counts `by` more of `total` done and reports progress each time the count passes a multiple
/// of `every`, and at the end.
fn advance(options: &RunOptions, phase: &str, done: &AtomicUsize, by: usize, total: usize, every: usize) {
    let before = done.fetch_add(by, Ordering::Relaxed);
    let after = before + by;
    if let Some(progress) = options.progress {
        if after / every > before / every || after == total {
            progress(phase, after, total);
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
