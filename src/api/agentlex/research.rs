//! `POST /v1/collections/{id}/research`: parse → the research service → one JSON result,
//! or with `stream: true` an `application/x-ndjson` body of events, one per line, in the
//! spec's order, whose status is always 200: a failure is the last line, an `error`
//! event. The streamed research runs inside the body, so a client that goes away drops
//! it, and with it the model call under way.

use std::convert::Infallible;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::Call;
use super::input::research::{self as input, ResearchIn};
use super::input::search::Echo;
use super::search::{DocRef, Offsets, PageRef};
use crate::app::App;
use crate::auth::Principal;
use crate::error::{ApiError, ErrorCode};
use crate::http::response::{self, Reply};
use crate::research::claims::Counts;
use crate::research::{Event, ResearchError, Researched, Researcher, Source};
use crate::search::{Caller, Owned};

#[derive(Serialize)]
struct ResultJson<'a> {
    answer: &'a str,
    sources: Vec<SourceJson<'a>>,
    verification: VerificationJson<'a>,
    queries: Vec<QueryJson<'a>>,
    note: Option<&'a str>,
    tier: &'static str,
    domain: &'a str,
    filters: &'a Echo,
    usage: Usage,
    timings: TimingsJson,
    model: &'a str,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u64,
    /// Of `input_tokens`, those the model's prompt cache held: the local model keeps
    /// the prompts of recent calls, so a second research over the same sources reads
    /// them again at no cost.
    cached_input_tokens: u64,
    output_tokens: u64,
}

/// The spec's SourceSummary, as the `sources` events list them.
#[derive(Serialize)]
struct SummaryJson<'a> {
    n: u32,
    citation: &'a str,
    document: DocRef<'a>,
    page: PageRef<'a>,
    heading: Option<&'a str>,
    kinds: &'a [&'static str],
    meta: Option<&'a Value>,
}

#[derive(Serialize)]
struct SourceJson<'a> {
    #[serde(flatten)]
    summary: SummaryJson<'a>,
    cited: bool,
    passages: Vec<&'a str>,
}

#[derive(Serialize)]
struct VerificationJson<'a> {
    quotes: Vec<QuoteJson<'a>>,
    verified: usize,
    total: usize,
    claims: Vec<ClaimJson<'a>>,
    counts: CountsJson,
    summary: &'a str,
    /// Quarry's: the markers that named no source, removed from the answer.
    removed: Vec<RemovedJson<'a>>,
}

#[derive(Serialize)]
struct QuoteJson<'a> {
    quote: &'a str,
    source: Option<u32>,
    status: &'static str,
    /// Quarry's: where a verified quotation is in its source's page text, in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<Offsets>,
}

#[derive(Serialize)]
struct ClaimJson<'a> {
    text: &'a str,
    sources: &'a [u32],
    status: &'static str,
    evidence: Option<&'a str>,
    start: u32,
    end: u32,
    /// Quarry's: the evidence's source and its offsets in that page's text.
    #[serde(rename = "evidenceOffset", skip_serializing_if = "Option::is_none")]
    evidence_offset: Option<EvidenceAt>,
}

#[derive(Serialize)]
struct EvidenceAt {
    source: u32,
    start: u32,
    end: u32,
}

#[derive(Serialize)]
struct CountsJson {
    supported: u32,
    partial: u32,
    unsupported: u32,
    uncited: u32,
    unchecked: u32,
    total: u32,
}

impl From<Counts> for CountsJson {
    fn from(c: Counts) -> CountsJson {
        CountsJson {
            supported: c.supported,
            partial: c.partial,
            unsupported: c.unsupported,
            uncited: c.uncited,
            unchecked: c.unchecked,
            total: c.total(),
        }
    }
}

#[derive(Serialize)]
struct RemovedJson<'a> {
    marker: &'a str,
    missing: &'a [u32],
}

#[derive(Serialize)]
struct QueryJson<'a> {
    query: &'a str,
    mode: &'static str,
    results: usize,
    filters: &'a Echo,
}

#[derive(Serialize)]
struct TimingsJson {
    #[serde(rename = "researchMs")]
    research_ms: u64,
    #[serde(rename = "answerMs")]
    answer_ms: u64,
    #[serde(rename = "verifyMs")]
    verify_ms: u64,
    #[serde(rename = "totalMs")]
    total_ms: u64,
    steps: u32,
    /// Quarry's: waiting for models, searching, and the rest (the server's own work).
    #[serde(rename = "modelMs")]
    model_ms: f64,
    #[serde(rename = "searchMs")]
    search_ms: f64,
    #[serde(rename = "serverMs")]
    server_ms: f64,
}

/// Milliseconds to three decimals.
fn ms3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn summary(s: &Source) -> SummaryJson<'_> {
    SummaryJson {
        n: s.n,
        citation: &s.citation,
        document: DocRef { id: &s.doc_id, title: s.title.as_deref(), author: s.author.as_deref() },
        page: PageRef { n: s.page_n, number: s.number.as_deref(), volume: s.volume.as_deref(), heading: s.heading.as_deref() },
        heading: s.heading.as_deref(),
        kinds: &s.kinds,
        meta: s.meta.as_ref(),
    }
}

fn render<'a>(r: &'a Researched, echo: &'a Echo) -> ResultJson<'a> {
    let t = &r.timings;
    let verified = r.quotes.iter().filter(|q| crate::research::verified(q.status)).count();
    ResultJson {
        answer: &r.answer,
        sources: r
            .sources
            .iter()
            .map(|s| SourceJson { summary: summary(s), cited: s.cited, passages: s.passages.iter().map(|p| p.1.as_str()).collect() })
            .collect(),
        verification: VerificationJson {
            quotes: r
                .quotes
                .iter()
                .map(|q| QuoteJson {
                    quote: &q.quote,
                    source: q.source,
                    status: q.status,
                    offset: q.offset.map(|(start, end)| Offsets { start, end }),
                })
                .collect(),
            verified,
            total: r.quotes.len(),
            claims: r
                .claims
                .iter()
                .map(|c| ClaimJson {
                    text: &c.text,
                    sources: &c.sources,
                    status: c.status.as_str(),
                    evidence: c.evidence.as_deref(),
                    start: c.start,
                    end: c.end,
                    evidence_offset: c.evidence_at.map(|(source, start, end)| EvidenceAt { source, start, end }),
                })
                .collect(),
            counts: r.counts.into(),
            summary: &r.summary,
            removed: r.removed.iter().map(|x| RemovedJson { marker: &x.marker, missing: &x.missing }).collect(),
        },
        queries: r.queries.iter().map(|q| QueryJson { query: &q.query, mode: q.mode, results: q.results, filters: echo }).collect(),
        note: r.note.as_deref(),
        tier: r.tier.as_str(),
        domain: &r.domain,
        filters: echo,
        usage: Usage { input_tokens: r.input_tokens, cached_input_tokens: r.cached_input_tokens, output_tokens: r.output_tokens },
        timings: TimingsJson {
            research_ms: t.research_ms.round() as u64,
            answer_ms: t.answer_ms.round() as u64,
            verify_ms: t.verify_ms.round() as u64,
            total_ms: t.total_ms.round() as u64,
            steps: t.steps,
            model_ms: ms3(t.model_ms),
            search_ms: ms3(t.search_ms),
            server_ms: ms3((t.total_ms - t.model_ms - t.search_ms).max(0.0)),
        },
        model: &r.model,
        warnings: &r.warnings,
    }
}

fn researcher(app: &App) -> Researcher<'_> {
    Researcher {
        search: &app.search,
        llm: app.llm.as_deref(),
        meters: &app.meters,
        config: &app.config.research,
        gate: &app.research_gate,
        local_ready: app.local_ready(),
    }
}

pub async fn research(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    let req = input::parse(&call.bytes().await?)?;
    let app = call.app.clone();
    let principal = call.principal.clone().expect("authenticated routes carry a principal");
    if !req.stream {
        let r = researcher(&app);
        let caller = Caller { account_id: &principal.account_id, plan: app.plan(&principal.plan), reach: principal.reach() };
        let admitted = r.admit(caller, req.request.tier).await?;
        let out = r.run(&admitted, call.embedders, &principal.account_id, &owned, &req.request, None).await?;
        let body = serde_json::to_vec(&render(&out, &req.echo)).expect("responses serialize");
        return Ok(response::json_bytes(StatusCode::OK, body.into()));
    }
    let body = events(app, call.embedders.clone(), principal, owned, req);
    let mut r = response::stream(StatusCode::OK, HeaderValue::from_static("application/x-ndjson"), body);
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(r)
}

type Embedders = Rc<std::cell::RefCell<Vec<quarry_index::embed::Embedder>>>;

/// The research as a body of NDJSON events: it runs as the body is polled, and stops
/// where it is when the body is dropped.
fn events(app: Arc<App>, embedders: Embedders, principal: Rc<Principal>, owned: Owned, req: ResearchIn) -> crate::http::response::Streamed {
    let (tx, rx) = glommio::channels::local_channel::new_unbounded::<Bytes>();
    let work = async move {
        let send = |line: Vec<u8>| {
            let mut line = line;
            line.push(b'\n');
            let _ = tx.try_send(Bytes::from(line));
        };
        let on_event = |e: Event<'_>| send(event_line(e));
        let r = researcher(&app);
        let caller = Caller { account_id: &principal.account_id, plan: app.plan(&principal.plan), reach: principal.reach() };
        let out = match r.admit(caller, req.request.tier).await {
            Ok(admitted) => r.run(&admitted, &embedders, &principal.account_id, &owned, &req.request, Some(&on_event)).await,
            Err(e) => Err(e),
        };
        match out {
            Ok(out) => send(serde_json::to_vec(&serde_json::json!({"type": "done", "result": render(&out, &req.echo)})).expect("events serialize")),
            Err(e) => send(error_line(&e)),
        }
    };
    let lines = stream::unfold(rx, |rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let body = stream::select(lines.map(Some), stream::once(work).map(|()| None))
        .filter_map(|b| async move { b.map(|b| Ok::<_, Infallible>(Frame::data(b))) });
    http_body_util::StreamBody::new(Box::pin(body))
}

fn event_line(e: Event<'_>) -> Vec<u8> {
    use serde_json::json;
    let v = match e {
        Event::Status { stage, step: Some(step) } => json!({"type": "status", "stage": stage, "step": step}),
        Event::Status { stage, step: None } => json!({"type": "status", "stage": stage}),
        Event::Query(q) => json!({"type": "query", "query": q.query, "mode": q.mode, "results": q.results}),
        Event::Sources(s) => json!({"type": "sources", "sources": s.iter().map(summary).collect::<Vec<_>>()}),
        Event::Delta(text) => json!({"type": "delta", "text": text}),
        Event::Answer(text) => json!({"type": "answer", "text": text}),
        Event::Claims { counts, summary } => json!({"type": "claims", "counts": CountsJson::from(counts), "summary": summary}),
    };
    serde_json::to_vec(&v).expect("events serialize")
}

fn error_line(e: &ResearchError) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"type": "error", "code": e.code().as_str(), "message": e.message()})).expect("events serialize")
}
