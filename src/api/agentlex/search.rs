//! `POST /v1/collections/{id}/search`.

use std::collections::BTreeMap;
use std::time::Instant;

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::Call;
use super::input::search::{self as input, Echo};
use crate::http::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::limits::Meter;
use crate::search::{self, query};
use quarry_index::chunk::Kinds;
use quarry_index::collection::Snapshot;
use quarry_index::search::{Hit, Mode};

#[derive(Serialize)]
struct Response<'a> {
    query: &'a str,
    mode: &'static str,
    domain: &'a str,
    expand: bool,
    intent: &'static str,
    phrases: &'a [String],
    expansions: [(); 0],
    filters: &'a Echo,
    warnings: &'a [String],
    results: Vec<ResultOut<'a>>,
    reranker: Option<()>,
    timings: BTreeMap<&'static str, f64>,
    considered: usize,
}

#[derive(Serialize)]
struct ResultOut<'a> {
    rank: usize,
    citation: String,
    score: f64,
    document: DocRef<'a>,
    page: PageRef<'a>,
    heading: Option<&'a str>,
    passages: Vec<PassageOut<'a>>,
    retrievers: Vec<&'static str>,
    duplicates: u32,
    #[serde(rename = "alsoIn")]
    also_in: u32,
}

#[derive(Serialize)]
struct DocRef<'a> {
    id: &'a str,
    title: Option<&'a str>,
    author: Option<&'a str>,
}

#[derive(Serialize)]
struct PageRef<'a> {
    n: u32,
    number: Option<&'a str>,
    volume: Option<&'a str>,
    heading: Option<&'a str>,
}

#[derive(Serialize)]
struct PassageOut<'a> {
    id: u64,
    pos: u32,
    text: &'a str,
    kinds: Vec<&'static str>,
    heading: Option<&'a str>,
    offsets: Offsets,
    matched: Vec<String>,
    meta: Option<()>,
}

#[derive(Serialize)]
struct Offsets {
    start: u32,
    end: u32,
}

fn mode_str(m: Mode) -> &'static str {
    match m {
        Mode::Keyword => "keyword",
        Mode::Semantic => "semantic",
        Mode::Hybrid => "hybrid",
    }
}

pub async fn search(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let started = Instant::now();
    let account = call.principal().account_id.clone();
    let (record, coll) = search::owned(call.app, &account, &id)?;
    let body: Value = call.json_value().await?;
    let req = input::parse(&body)?;
    let plan = call.app.plan(&call.principal().plan);
    let mode = query::mode_for(call.app, &record, &req)?;
    let meters = call.app.meters.account(&account)?;
    meters.try_spend(Meter::Search, 1, plan.search).map_err(|e| {
        ApiError::new(Code::AllowanceExceeded, format!("This month's {} searches of the {} plan are spent.", e.allowance, plan.name))
    })?;
    let s = query::run(call.app, call.embedders, &coll, &req, mode)?;
    let domain = req.domain.as_deref().unwrap_or(match record.settings.domain.as_str() {
        "medical" => "medical",
        "legal" => "legal",
        _ => "general",
    });
    let out = render(&req, &s, domain, started);
    Ok(response::json_sized(StatusCode::OK, &out, size_hint(&out)))
}

/// The response body of a search as the handler sends it, serialized. Public for the
/// serialisation bench (`bench/benches/serialize.rs`), which times it on real results.
#[doc(hidden)]
pub fn body(req: &input::SearchIn, s: &query::Searched, domain: &str, started: Instant) -> Vec<u8> {
    serde_json::to_vec(&render(req, s, domain, started)).expect("responses serialize")
}

/// About the serialized size of `r`: its passages' text and ~600 bytes for the rest of
/// each result (a SciFact result with two passages is ~2 kB, most of it text).
fn size_hint(r: &Response) -> usize {
    1024 + r.results.iter().map(|x| 600 + x.passages.iter().map(|p| p.text.len() + 200).sum::<usize>()).sum::<usize>()
}

/// `totalMs` runs from `started` to when the results are built.
fn render<'a>(req: &'a input::SearchIn, s: &'a query::Searched, domain: &'a str, started: Instant) -> Response<'a> {
    let snap = &s.snapshot;
    let results = s.results.hits.iter().enumerate().map(|(i, h)| result(snap, i + 1, h)).collect();
    let t = &s.results.timings;
    let mut timings = BTreeMap::from([("keywordMs", t.keyword_ms), ("semanticMs", t.semantic_ms), ("phraseMs", t.phrase_ms)]);
    if let Some(e) = s.embed_ms {
        timings.insert("embedMs", e);
    }
    timings.insert("totalMs", started.elapsed().as_secs_f64() * 1000.0);
    Response {
        query: &req.query,
        mode: mode_str(req.mode),
        domain,
        expand: false,
        intent: s.intent.as_str(),
        phrases: &s.phrases,
        expansions: [],
        filters: &req.echo,
        warnings: &s.warnings,
        results,
        reranker: None,
        timings,
        considered: s.results.considered,
    }
}

fn result<'a>(snap: &'a Snapshot, rank: usize, h: &'a Hit) -> ResultOut<'a> {
    let b = snap.views[h.view].batch();
    let p = &b.pages[h.page as usize];
    let d = &b.docs[p.doc.to_native() as usize];
    let passages: Vec<PassageOut<'a>> = h
        .passages
        .iter()
        .map(|ps| {
            let c = &b.chunks[ps.chunk as usize];
            PassageOut {
                id: (p.citation.to_native() as u64) << 16 | c.pos.to_native() as u64,
                pos: c.pos.to_native(),
                text: &p.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize],
                kinds: Kinds(c.kinds.to_native()).names(),
                heading: c.heading.as_ref().map(|s| s.as_str()),
                offsets: Offsets { start: c.start.to_native(), end: c.end.to_native() },
                matched: ps.matched.clone(),
                meta: None,
            }
        })
        .collect();
    let page_heading = p.heading.as_ref().map(|s| s.as_str());
    let mut retrievers = Vec::with_capacity(2);
    if h.keyword {
        retrievers.push("keyword");
    }
    if h.semantic {
        retrievers.push("semantic");
    }
    ResultOut {
        rank,
        citation: format!("AL-{:08X}", p.citation.to_native()),
        score: h.score,
        document: DocRef { id: d.id.as_str(), title: d.title.as_ref().map(|s| s.as_str()), author: d.author.as_ref().map(|s| s.as_str()) },
        page: PageRef {
            n: p.n.to_native(),
            number: p.number.as_ref().map(|s| s.as_str()),
            volume: p.volume.as_ref().map(|s| s.as_str()),
            heading: page_heading,
        },
        heading: page_heading.or_else(|| passages.first().and_then(|ps| ps.heading)),
        passages,
        retrievers,
        duplicates: h.duplicates,
        also_in: h.also_in,
    }
}
