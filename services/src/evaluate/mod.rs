//! Retrieval evaluation (`POST /v1/collections/{id}/evaluate`): a gold set of questions
//! run through each search variant, scored with nDCG, precision, recall, MRR and MAP at
//! k. The gold is resolved to pages first ([`gold`]), on the blocking pool, so a
//! question that names nothing findable is left out instead of counted as a miss; then
//! every counted question runs in every variant on this shard, which yields between
//! searches so other requests keep being served.

pub mod gold;
pub mod metrics;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use quarry_index::collection::{Collection, Snapshot};
use quarry_index::embed::Embedder;
use quarry_index::search::Mode;

use crate::error::ApiError;
use crate::search::{self, query};
use crate::store::CollectionRecord;
use gold::{citation_text, Gold, Wanted};

/// The most questions one call may ask.
pub const MAX_QUESTIONS: usize = 1000;

/// A way of searching that an evaluation compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Keyword,
    Semantic,
    Hybrid,
    HybridRerank,
}

impl Variant {
    pub const ALL: [Variant; 4] = [Variant::Keyword, Variant::Semantic, Variant::Hybrid, Variant::HybridRerank];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Keyword => "keyword",
            Variant::Semantic => "semantic",
            Variant::Hybrid => "hybrid",
            Variant::HybridRerank => "hybrid+rerank",
        }
    }

    pub fn parse(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    fn mode(self) -> Mode {
        match self {
            Variant::Keyword => Mode::Keyword,
            Variant::Semantic => Mode::Semantic,
            Variant::Hybrid | Variant::HybridRerank => Mode::Hybrid,
        }
    }
}

/// One question: its search (query, filters, k, expand, passages) and its gold items.
#[derive(Debug, Clone)]
pub struct Question {
    pub search: search::Request,
    pub wanted: Wanted,
}

/// An evaluation request, checked.
#[derive(Debug, Clone)]
pub struct Request {
    pub questions: Vec<Question>,
    pub k: usize,
    /// Known variants, in the order asked, each once.
    pub variants: Vec<Variant>,
    /// What the request itself earned (unknown variant names).
    pub notes: Vec<String>,
}

/// What an evaluation will do, settled before anything is spent.
pub struct Prepared {
    /// (question index, its gold) for every question with a resolved page.
    counted: Vec<(usize, Gold)>,
    variants: Vec<Variant>,
    notes: Vec<String>,
}

impl Prepared {
    /// Searches the evaluation runs: one per counted question per variant.
    pub fn searches(&self) -> u64 {
        (self.counted.len() * self.variants.len()) as u64
    }

    pub fn questions(&self) -> usize {
        self.counted.len()
    }

    pub fn variants(&self) -> usize {
        self.variants.len()
    }
}

/// What an evaluation searches with: the search service, the rerankers and, for a rerank
/// API, the provider layer (`App::evaluation` lends them).
pub struct Services<'a> {
    pub search: &'a search::Service,
    pub rerankers: &'a search::rerank::Rerankers,
    pub llm: Option<&'a crate::llm::Llm>,
}

/// Resolves the gold (on the blocking pool) and settles which variants can run.
pub async fn prepare(app: &Services<'_>, record: &CollectionRecord, coll: &Collection, req: &Request) -> Prepared {
    let mut notes = req.notes.clone();
    let variants = runnable(app, record, &req.variants, &mut notes);
    let snapshot: Arc<Snapshot> = coll.snapshot();
    let wanted: Vec<Wanted> = req.questions.iter().map(|q| q.wanted.clone()).collect();
    let golds = glommio::executor().spawn_blocking(move || gold::resolve(&wanted, gold::pages(&snapshot))).await;
    let mut counted = Vec::new();
    for (i, g) in golds.into_iter().enumerate() {
        notes.extend(g.notes.iter().map(|n| format!("questions[{i}].{n}")));
        if g.pages.is_empty() {
            notes.push(format!("questions[{i}] has no relevant item that names a page here; it is not counted in n."));
        } else {
            counted.push((i, g));
        }
    }
    if counted.is_empty() {
        notes.push("No question has a resolvable relevant item; nothing was searched.".into());
    }
    Prepared { counted, variants, notes }
}

/// The variants asked for that this server can run for this collection; a note for
/// each one skipped.
fn runnable(app: &Services<'_>, record: &CollectionRecord, asked: &[Variant], notes: &mut Vec<String>) -> Vec<Variant> {
    let vectors = match app.search.embedders().for_collection(record) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err("this server runs without an embedder".to_owned()),
        Err(e) => Err(e.to_string()),
    };
    let mut out = Vec::new();
    for &v in asked {
        let skipped = match v {
            Variant::HybridRerank => match app.rerankers.choose(true, None) {
                Ok(Some(_)) => vectors.clone().err(),
                _ if app.rerankers.names().is_empty() => Some("no reranker is configured on this server".to_owned()),
                _ => Some("this server has no default reranker (rerank.default = \"none\")".to_owned()),
            },
            Variant::Semantic | Variant::Hybrid => vectors.clone().err(),
            Variant::Keyword => None,
        };
        match skipped {
            Some(why) => notes.push(format!("Variant {} skipped: {}.", v.name(), why.trim_end_matches('.'))),
            None => out.push(v),
        }
    }
    if out.is_empty() && !asked.is_empty() {
        notes.push("No variant can run; nothing was searched.".into());
    } else if asked.is_empty() {
        notes.push("No known variant was asked for; nothing was searched.".into());
    }
    out
}

/// The answer, serialized as the spec's `EvaluateResponse`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub n: usize,
    pub k: usize,
    pub embedder: Option<String>,
    pub reranker: Option<String>,
    #[serde(serialize_with = "in_order")]
    pub variants: Vec<(&'static str, VariantMetrics)>,
    #[serde(rename = "perQuestion")]
    pub per_question: Vec<PerQuestion>,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct VariantMetrics {
    pub ndcg: f64,
    pub precision: f64,
    pub recall: f64,
    pub mrr: f64,
    pub map: f64,
    pub latency: Latency,
    /// Questions with a gold page in the first k.
    pub found: usize,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
}

#[derive(Debug, Serialize)]
pub struct PerQuestion {
    pub query: String,
    pub variant: &'static str,
    pub ndcg: f64,
    #[serde(rename = "firstHit")]
    pub first_hit: Option<usize>,
    #[serde(rename = "latencyMs")]
    pub latency_ms: f64,
    /// Gold pages not in the first k, by their items' labels.
    pub missing: Vec<String>,
    /// Citations in result order.
    pub ranked: Vec<String>,
    pub hits: Vec<HitOut>,
}

#[derive(Debug, Serialize)]
pub struct HitOut {
    pub item: String,
    pub rank: usize,
    pub citation: String,
}

/// A map that keeps the variants in the order they ran.
fn in_order<S: serde::Serializer>(v: &[(&'static str, VariantMetrics)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(name, m)| (name, m)))
}

/// One variant's scores over the counted questions.
#[derive(Default)]
struct Tally {
    ndcg: Vec<f64>,
    precision: Vec<f64>,
    recall: Vec<f64>,
    rr: Vec<f64>,
    ap: Vec<f64>,
    latency_ms: Vec<f64>,
    found: usize,
}

impl Tally {
    fn add(&mut self, s: &metrics::Scores, ms: f64) {
        self.ndcg.push(s.ndcg);
        self.precision.push(s.precision);
        self.recall.push(s.recall);
        self.rr.push(s.reciprocal_rank);
        self.ap.push(s.average_precision);
        self.latency_ms.push(ms);
        self.found += usize::from(!s.hits.is_empty());
    }

    fn metrics(&self) -> VariantMetrics {
        use metrics::{mean, percentile};
        VariantMetrics {
            ndcg: round4(mean(&self.ndcg)),
            precision: round4(mean(&self.precision)),
            recall: round4(mean(&self.recall)),
            mrr: round4(mean(&self.rr)),
            map: round4(mean(&self.ap)),
            latency: Latency { p50: round2(percentile(&self.latency_ms, 50.0)), p95: round2(percentile(&self.latency_ms, 95.0)) },
            found: self.found,
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Runs every counted question in every runnable variant and scores it.
pub async fn run(
    app: &Services<'_>,
    embedders: &RefCell<Vec<Embedder>>,
    rerankers: &search::rerank::Sessions,
    record: &CollectionRecord,
    coll: &Collection,
    req: &Request,
    prepared: Prepared,
) -> Result<Report, ApiError> {
    let Prepared { counted, variants, mut notes } = prepared;
    let mut tallies: Vec<Tally> = variants.iter().map(|_| Tally::default()).collect();
    let mut per_question = Vec::with_capacity(counted.len() * variants.len());
    let mut warnings = BTreeSet::new();
    let mut reranker = None;
    for (i, gold) in &counted {
        let question = &req.questions[*i];
        for (v, tally) in variants.iter().zip(&mut tallies) {
            let mut input = question.search.clone();
            input.mode = v.mode();
            input.rerank = *v == Variant::HybridRerank;
            // Settled by `runnable`: the default reranker, for hybrid+rerank only.
            let chosen = if input.rerank { app.rerankers.choose(true, None).ok().flatten() } else { None };
            let k = input.k;
            if chosen.is_some() {
                input.k = app.rerankers.depth(k);
            }
            let settled = query::mode_for(app.search, record, &input)?;
            let started = Instant::now();
            let mut searched = query::run(app.search, embedders, coll, &input, settled)?;
            if let Some(c) = chosen {
                app.rerankers.apply(c, rerankers, app.llm, &input.query, &mut searched, k).await;
                reranker = Some(app.rerankers.name(c).to_owned());
            }
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            warnings.extend(searched.warnings.iter().cloned());
            let ranked: Vec<u32> = searched.results.hits.iter().map(|h| searched.snapshot.citation_of(h)).collect();
            let scores = metrics::score(&ranked, &gold.pages, req.k);
            tally.add(&scores, ms);
            per_question.push(entry(&input.query, *v, gold, &ranked, &scores, ms));
            glommio::yield_if_needed().await;
        }
    }
    notes.extend(warnings.into_iter().map(|w| format!("Search warning: {w}")));
    Ok(Report {
        n: counted.len(),
        k: req.k,
        embedder: Some(record.embedder.clone()).filter(|e| e != "none"),
        reranker,
        // Means over no question would read as scores of 0; leave them out instead.
        variants: if counted.is_empty() { Vec::new() } else { variants.iter().zip(&tallies).map(|(v, t)| (v.name(), t.metrics())).collect() },
        per_question,
        notes,
    })
}

fn entry(query: &str, v: Variant, gold: &Gold, ranked: &[u32], scores: &metrics::Scores, ms: f64) -> PerQuestion {
    let found: Vec<usize> = scores.hits.iter().map(|h| h.gold).collect();
    PerQuestion {
        query: query.to_owned(),
        variant: v.name(),
        ndcg: round4(scores.ndcg),
        first_hit: scores.first_hit(),
        latency_ms: round2(ms),
        missing: (0..gold.pages.len()).filter(|g| !found.contains(g)).map(|g| gold.labels[g].clone()).collect(),
        ranked: ranked.iter().map(|&c| citation_text(c)).collect(),
        hits: scores
            .hits
            .iter()
            .map(|h| HitOut { item: gold.labels[h.gold].clone(), rank: h.rank, citation: citation_text(gold.pages[h.gold].page) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_by_their_spec_names() {
        for v in Variant::ALL {
            assert_eq!(Variant::parse(v.name()), Some(v));
        }
        assert_eq!(Variant::parse("Hybrid"), None);
        assert_eq!(Variant::parse("rerank"), None);
    }

    #[test]
    fn the_variants_map_keeps_the_order_they_ran_in() {
        let m = |ndcg| VariantMetrics { ndcg, precision: 0.0, recall: 0.0, mrr: 0.0, map: 0.0, latency: Latency { p50: 0.0, p95: 0.0 }, found: 0 };
        let r = Report {
            n: 0,
            k: 10,
            embedder: None,
            reranker: None,
            variants: vec![("semantic", m(0.5)), ("keyword", m(1.0))],
            per_question: vec![],
            notes: vec![],
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""variants":{"semantic":{"ndcg":0.5"#), "{text}");
        assert!(text.find("semantic") < text.find("keyword"));
        assert!(text.contains(r#""perQuestion":[]"#) && text.contains(r#""reranker":null"#));
    }
}
