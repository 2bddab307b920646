//! Cited research (`POST /v1/collections/{id}/research`): a model searches and reads the
//! collection in a tool loop, an answer is written from the sources it found with `[n]`
//! citations, and code checks what the answer says.
//!
//! 1. **Research.** The question's own search runs first (so a model that never calls a
//!    tool still has sources), then up to `steps` model calls (fast 3, deep 8) with the
//!    tools `search` and `read`; every search is bounded by the request's `documents`,
//!    `kinds` and `filters`. Sources are pages, numbered in the order they were found.
//! 2. **Answer.** A separate call writes the answer from the sources (read pages whole,
//!    others by their passages, within `source_chars`), streamed as `delta`s when asked.
//! 3. **Verification**, by code: every `[n]` resolves to a retrieved source or is removed
//!    and reported ([`cite`]), numbering is made dense in order of first use; every
//!    quotation is located in the page it cites ([`claims::locate_quote`]); every
//!    sentence is a claim, judged against its cited sources by one judge call, with
//!    `evidence` located by code in a cited source (the judge's span, else the cited
//!    sentence sharing most words). `supported` is only ever returned with such a span;
//!    a claim whose quotation is not on its page is `unsupported`.
//!
//! One research of the allowance is spent before the first model call and given back
//! if anything fails; searches spend none. At most `concurrency` run per account.

pub mod cite;
pub mod claims;
pub mod gate;
pub mod prompt;

use std::cell::RefCell;
use std::time::Instant;

use quarry_index::embed::Embedder;
use quarry_index::search::Mode;
use quarry_index::verify::{Match, Page};
use serde_json::Value;

use crate::config::{Judge, ResearchConfig};
use crate::error::{Code, ErrorCode};
use crate::limits::{Meter, Meters};
use crate::llm::request::{Block, Message, Role};
use crate::llm::{ChatRequest, Completion, Delta, Llm, LlmError};
use crate::search::{query, Caller, Owned, SearchError, Service};
use crate::store::StoreError;
use claims::{Counts, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Fast,
    Deep,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Deep => "deep",
        }
    }

    /// Model calls the research loop may make.
    pub fn steps(self) -> u32 {
        match self {
            Tier::Fast => 3,
            Tier::Deep => 8,
        }
    }
}

/// A research as the service takes it.
#[derive(Debug, Clone)]
pub struct Request {
    pub question: String,
    pub tier: Tier,
    /// Earlier turns, oldest first (only the last six are kept).
    pub history: Vec<(Role, String)>,
    /// The search every query runs as: filters, mode; `query` is replaced.
    pub search: crate::search::Request,
    pub domain: Option<String>,
}

/// What a stream is told as the research goes.
pub enum Event<'a> {
    Status {
        stage: &'static str,
        step: Option<u32>,
    },
    Query(&'a QueryRun),
    /// Every source found so far, numbered as found.
    Sources(&'a [Source]),
    Delta(&'a str),
    Answer(&'a str),
    Claims {
        counts: Counts,
        summary: &'a str,
    },
}

pub type Events<'a> = Option<&'a dyn Fn(Event<'_>)>;

/// A page the research found.
#[derive(Debug, Clone)]
pub struct Source {
    pub n: u32,
    pub citation: String,
    pub doc_id: String,
    pub title: Option<String>,
    pub author: Option<String>,
    pub page_n: u32,
    pub number: Option<String>,
    pub volume: Option<String>,
    pub heading: Option<String>,
    pub kinds: Vec<&'static str>,
    pub meta: Option<Value>,
    pub cited: bool,
    /// The passages the model was shown, in page order (by position).
    pub passages: Vec<(u32, String)>,
    /// The whole page text (what quotations and evidence are checked against).
    pub text: String,
    /// Whether the model read the page whole.
    pub read: bool,
}

impl Source {
    fn label(&self) -> String {
        let page = self.number.clone().unwrap_or_else(|| (self.page_n + 1).to_string());
        let mut s = format!("{}, page {page}", self.title.as_deref().unwrap_or(&self.doc_id));
        if let Some(h) = &self.heading {
            s.push_str(&format!(" ({h})"));
        }
        s
    }
}

#[derive(Debug, Clone)]
pub struct QueryRun {
    pub query: String,
    pub mode: &'static str,
    pub results: usize,
}

#[derive(Debug, Clone)]
pub struct QuoteOut {
    pub quote: String,
    pub source: Option<u32>,
    pub status: &'static str,
    /// Where it is in its source's page, in characters.
    pub offset: Option<(u32, u32)>,
}

#[derive(Debug, Clone)]
pub struct ClaimOut {
    pub text: String,
    pub sources: Vec<u32>,
    pub status: Status,
    pub evidence: Option<String>,
    /// The evidence's source and its character offsets in that page.
    pub evidence_at: Option<(u32, u32, u32)>,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, Clone, Default)]
pub struct Timings {
    pub research_ms: f64,
    pub answer_ms: f64,
    pub verify_ms: f64,
    pub total_ms: f64,
    pub steps: u32,
    /// Time spent waiting for models, and in searches (the rest is the server's own).
    pub model_ms: f64,
    pub search_ms: f64,
}

pub struct Researched {
    pub answer: String,
    /// Cited sources first, in order of first use, then the others as found.
    pub sources: Vec<Source>,
    pub quotes: Vec<QuoteOut>,
    pub claims: Vec<ClaimOut>,
    pub counts: Counts,
    pub summary: String,
    /// Markers that named no source, removed from the answer.
    pub removed: Vec<cite::Removed>,
    pub queries: Vec<QueryRun>,
    pub note: Option<String>,
    pub tier: Tier,
    pub domain: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub timings: Timings,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error("This server has no language model for research; configure [research] fast or install the local model.")]
    NotConfigured,
    #[error("The local model is still starting; retry shortly.")]
    Busy,
    #[error("{running} researches of this account are running, the most at once; retry when one ends.")]
    TooMany { running: usize },
    #[error("This month's {allowance} researches of the {plan} plan are spent.")]
    Allowance { allowance: u64, plan: String },
    #[error("The research model failed: {0}")]
    Model(Box<LlmError>),
    #[error("The research model wrote citation markers but no answer, twice.")]
    NoAnswer,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for ResearchError {
    fn code(&self) -> Code {
        match self {
            ResearchError::Search(e) => e.code(),
            ResearchError::NotConfigured => Code::LlmNotConfigured,
            ResearchError::Busy => Code::LlmBusy,
            ResearchError::TooMany { .. } => Code::TooManyConcurrent,
            ResearchError::Allowance { .. } => Code::AllowanceExceeded,
            ResearchError::Model(e) => match **e {
                LlmError::Unreachable { .. } | LlmError::TransportDown => Code::LlmUnreachable,
                LlmError::NotConfigured | LlmError::UnknownModel(_) => Code::LlmNotConfigured,
                _ => Code::LlmError,
            },
            ResearchError::NoAnswer => Code::LlmError,
            ResearchError::Store(_) => Code::Internal,
        }
    }

    fn message(&self) -> String {
        match self {
            ResearchError::Search(e) => e.message(),
            e => e.to_string(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            ResearchError::Allowance { .. } => Some(crate::clock::seconds_to_next_month()),
            ResearchError::Busy | ResearchError::TooMany { .. } => Some(5),
            _ => None,
        }
    }
}

fn model_error(e: LlmError) -> ResearchError {
    ResearchError::Model(Box::new(e))
}

/// What a research needs of the server.
pub struct Researcher<'a> {
    pub search: &'a Service,
    pub llm: Option<&'a Llm>,
    pub meters: &'a Meters,
    pub config: &'a ResearchConfig,
    pub gate: &'a gate::Gate,
    /// Whether the local model answers yet (`None`: there is none).
    pub local_ready: Option<bool>,
}

/// A research admitted: its model, its place in the account's gate, its allowance spent.
/// Dropped before it [`Researcher::run`]s to an answer (a failure, or a client that
/// went away and dropped the streamed body), it gives the research back.
pub struct Admitted<'a> {
    llm: &'a Llm,
    model: String,
    warnings: Vec<String>,
    _slot: gate::Slot<'a>,
    meters: std::sync::Arc<crate::limits::AccountMeters>,
    answered: std::cell::Cell<bool>,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        if !self.answered.get() {
            self.meters.refund(Meter::Research, 1);
        }
    }
}

/// How long since `t`, in milliseconds.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The research under way.
struct Run<'r, 'a> {
    r: &'r Researcher<'a>,
    llm: &'a Llm,
    model: String,
    account: &'r str,
    owned: &'r Owned,
    embedders: &'r RefCell<Vec<Embedder>>,
    req: &'r Request,
    events: Events<'r>,
    sources: Vec<Source>,
    queries: Vec<QueryRun>,
    input_tokens: u64,
    output_tokens: u64,
    timings: Timings,
    warnings: Vec<String>,
}

impl<'a> Researcher<'a> {
    /// The tier's model: `[research] fast` / `deep`, else the local model; deep without
    /// its own model uses fast's and says so.
    fn model(&self, tier: Tier) -> Result<(&'a Llm, String, Vec<String>), ResearchError> {
        let llm = self.llm.ok_or(ResearchError::NotConfigured)?;
        let mut warnings = Vec::new();
        let configured = match tier {
            Tier::Fast => self.config.fast.clone(),
            Tier::Deep => self.config.deep.clone().or_else(|| self.config.fast.clone()),
        };
        let model = match configured {
            Some(m) => m,
            None => {
                let local = llm.models().into_iter().find(|m| m.provider == crate::llm::local::PROVIDER).ok_or(ResearchError::NotConfigured)?;
                if self.local_ready == Some(false) {
                    return Err(ResearchError::Busy);
                }
                local.id
            }
        };
        if tier == Tier::Deep && self.config.deep.is_none() {
            warnings.push(format!("No deep model is configured ([research] deep); tier deep used {model}, the fast tier's model."));
        }
        Ok((llm, model, warnings))
    }

    /// Checks what can refuse a research before anything is spent: the model, the
    /// account's concurrent researches, its allowance. Dropping the admission frees
    /// its place; [`Admitted::refund`] gives the allowance back.
    pub fn admit(&self, caller: Caller<'_>, tier: Tier) -> Result<Admitted<'a>, ResearchError> {
        let (llm, model, warnings) = self.model(tier)?;
        let slot = self.gate.enter(caller.account_id, self.config.concurrency).map_err(|running| ResearchError::TooMany { running })?;
        let meters = self.meters.account(caller.account_id)?;
        meters
            .try_spend(Meter::Research, 1, caller.plan.research)
            .map_err(|e| ResearchError::Allowance { allowance: e.allowance, plan: caller.plan.name.clone() })?;
        Ok(Admitted { llm, model, warnings, _slot: slot, meters, answered: Default::default() })
    }

    /// Runs an admitted research; unless it answers, dropping `admitted` gives its
    /// research back to the allowance.
    pub async fn run(
        &self,
        admitted: &Admitted<'a>,
        embedders: &RefCell<Vec<Embedder>>,
        account: &str,
        owned: &Owned,
        req: &Request,
        events: Events<'_>,
    ) -> Result<Researched, ResearchError> {
        let out: Result<Researched, ResearchError> = async {
            let started = Instant::now();
            let mut run = Run {
                r: self,
                llm: admitted.llm,
                model: admitted.model.clone(),
                account,
                owned,
                embedders,
                req,
                events,
                sources: Vec::new(),
                queries: Vec::new(),
                input_tokens: 0,
                output_tokens: 0,
                timings: Timings::default(),
                warnings: admitted.warnings.clone(),
            };
            let domain = domain(req, owned);
            let history: Vec<(Role, String)> = req.history.iter().rev().take(6).rev().cloned().collect();
            let guidance = owned.record.settings.guidance.clone();
            let ctx = prompt::Context { question: &req.question, domain: &domain, guidance: guidance.as_deref(), history: &history };

            run.emit(Event::Status { stage: "searching", step: None });
            let note = run.research(&ctx).await?;
            run.timings.research_ms = ms(started);

            let answering = Instant::now();
            run.emit(Event::Status { stage: "answering", step: None });
            let raw = run.answer(&ctx).await?;
            run.timings.answer_ms = ms(answering);

            let verifying = Instant::now();
            let cited = cite::resolve(&raw, run.sources.len());
            if !cited.removed.is_empty() {
                let listed: Vec<&str> = cited.removed.iter().map(|r| r.marker.as_str()).collect();
                run.warnings.push(format!("The answer cited {} that no source found by the research has; removed.", listed.join(", ")));
            }
            run.emit(Event::Answer(&cited.text));
            run.emit(Event::Status { stage: "verifying", step: None });
            let sources = number(std::mem::take(&mut run.sources), &cited.order);
            let quotes = quotes(&cited.text, &sources);
            let claims = run.claims(&ctx, &cited.text, &sources, &quotes).await;
            let counts = Counts::of(claims.iter().map(|c| c.status));
            let summary = counts.summary();
            run.emit(Event::Claims { counts, summary: &summary });
            run.timings.verify_ms = ms(verifying);
            run.timings.total_ms = ms(started);
            Ok(Researched {
                answer: cited.text,
                sources,
                quotes,
                claims,
                counts,
                summary,
                removed: cited.removed,
                queries: run.queries,
                note,
                tier: req.tier,
                domain,
                model: run.model,
                input_tokens: run.input_tokens,
                output_tokens: run.output_tokens,
                timings: run.timings,
                warnings: run.warnings,
            })
        }
        .await;
        admitted.answered.set(out.is_ok());
        out
    }
}

/// The request's domain, else the collection's, else general.
fn domain(req: &Request, owned: &Owned) -> String {
    match req.domain.as_deref() {
        Some(d) => d.to_owned(),
        None => match owned.record.settings.domain.as_str() {
            d @ ("medical" | "legal" | "classical") => d.to_owned(),
            _ => "general".to_owned(),
        },
    }
}

/// The sources renumbered: the cited ones as `order` lists them, then the rest as found.
fn number(mut found: Vec<Source>, order: &[usize]) -> Vec<Source> {
    let mut out = Vec::with_capacity(found.len());
    let mut taken = vec![false; found.len()];
    for &i in order {
        taken[i] = true;
    }
    let mut slots: Vec<Option<Source>> = found.drain(..).map(Some).collect();
    for &i in order {
        let mut s = slots[i].take().expect("order names each source once");
        s.cited = true;
        out.push(s);
    }
    out.extend(slots.into_iter().flatten());
    for (k, s) in out.iter_mut().enumerate() {
        s.n = k as u32 + 1;
        s.passages.sort_by_key(|p| p.0);
    }
    out
}

/// Every quotation of the answer, checked against the page it cites.
fn quotes(answer: &str, sources: &[Source]) -> Vec<QuoteOut> {
    claims::quotations(answer)
        .into_iter()
        .map(|q| {
            let Some(n) = q.source else {
                return QuoteOut { quote: q.quote, source: None, status: "uncited", offset: None };
            };
            let found = sources.get(n as usize - 1).and_then(|s| claims::locate_quote(&Page::new(&s.text), &q.quote));
            match found {
                Some(at) => QuoteOut { status: at.matched.as_str(), offset: Some((at.start, at.end)), quote: q.quote, source: Some(n) },
                None => QuoteOut { quote: q.quote, source: Some(n), status: "unverified", offset: None },
            }
        })
        .collect()
}

/// The most tool calls of one step that are run (the rest are told so).
const CALLS_PER_STEP: usize = 4;
/// The characters of a passage a search result shows the model, and how many passages
/// of a page it shows (the rest it can `read`): a small model's context is short.
const PASSAGE_CHARS: usize = 280;
const PASSAGES_SHOWN: usize = 1;

impl Run<'_, '_> {
    fn emit(&self, e: Event<'_>) {
        if let Some(f) = self.events {
            f(e);
        }
    }

    async fn call(&mut self, req: ChatRequest) -> Result<Completion, ResearchError> {
        let t = Instant::now();
        let done = self.llm.complete(self.account, req).await.map_err(model_error);
        self.timings.model_ms += ms(t);
        let done = done?;
        self.input_tokens += done.output.usage.input;
        self.output_tokens += done.output.usage.output;
        Ok(done)
    }

    /// The question's search, then the loop; the model's closing note, if it gave one.
    async fn research(&mut self, ctx: &prompt::Context<'_>) -> Result<Option<String>, ResearchError> {
        let first = self.search(&self.req.question.clone())?;
        let (system, user) = prompt::loop_start(ctx, &first);
        let mut messages = vec![user];
        let budget = self.req.tier.steps();
        for step in 1..=budget {
            self.emit(Event::Status { stage: "deepening", step: Some(step) });
            self.timings.steps = step;
            let done = self.call(prompt::step(&self.model, &system, &messages)).await?;
            let out = done.output;
            if out.tool_calls.is_empty() {
                return Ok(note(&out.text, &self.req.question));
            }
            let mut asked: Vec<Block> = Vec::new();
            if !out.text.trim().is_empty() {
                asked.push(Block::Text(out.text.clone()));
            }
            let mut results = Vec::new();
            for (i, call) in out.tool_calls.iter().enumerate() {
                let input: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                asked.push(Block::ToolUse { id: call.id.clone(), name: call.name.clone(), input: input.clone() });
                let (content, is_error) = if i >= CALLS_PER_STEP {
                    (format!("Not run: at most {CALLS_PER_STEP} tool calls a step."), true)
                } else {
                    self.tool(&call.name, &input)?
                };
                results.push(Block::ToolResult { tool_use_id: call.id.clone(), content, is_error });
            }
            messages.push(Message { role: Role::Assistant, content: asked });
            messages.push(Message { role: Role::User, content: results });
        }
        self.warnings
            .push(format!("The research used its {budget} steps before the model stopped searching; the answer is written from what it found."));
        Ok(None)
    }

    /// One tool call: its result for the model, and whether it is an error.
    fn tool(&mut self, name: &str, input: &Value) -> Result<(String, bool), ResearchError> {
        match name {
            prompt::SEARCH => match input.get("query").and_then(Value::as_str).map(str::trim).filter(|q| !q.is_empty()) {
                Some(q) => Ok((self.search(&q.chars().take(500).collect::<String>())?, false)),
                None => Ok(("search needs a non-empty \"query\" string.".into(), true)),
            },
            prompt::READ => {
                let n = input.get("source").and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().trim_matches(['[', ']']).parse().ok()));
                match n.filter(|&n| n >= 1 && n as usize <= self.sources.len()) {
                    Some(n) => {
                        let s = &mut self.sources[n as usize - 1];
                        s.read = true;
                        let text = cut(&s.text, self.r.config.page_chars);
                        Ok((format!("[{n}] {}\n{text}", s.label()), false))
                    }
                    None => Ok((format!("read needs \"source\": a number from 1 to {}.", self.sources.len()), true)),
                }
            }
            other => Ok((format!("There is no tool \"{other}\"; the tools are search and read."), true)),
        }
    }

    /// Runs a search bounded by the request's filters; the pages it found, for the model.
    fn search(&mut self, q: &str) -> Result<String, ResearchError> {
        let t = Instant::now();
        let mut req = self.req.search.clone();
        req.query = q.to_owned();
        req.k = self.r.config.k;
        req.expansion.domain = self.req.domain.as_deref().map(quarry_index::expand::Domain::parse);
        let settled = query::mode_for(self.r.search, &self.owned.record, &req)?;
        let s = query::run(self.r.search, self.embedders, &self.owned.coll, &req, settled)?;
        let mut listed = Vec::new();
        for h in &s.results.hits {
            let v = s.snapshot.hit_view(h);
            let at = self.sources.iter().position(|x| x.doc_id == v.doc.id && x.page_n == v.page.n);
            let i = match at {
                Some(i) => i,
                None => {
                    let own = |s: Option<&str>| s.map(str::to_owned);
                    self.sources.push(Source {
                        n: self.sources.len() as u32 + 1,
                        citation: v.page.citation_id(),
                        doc_id: v.doc.id.to_owned(),
                        title: own(v.doc.title),
                        author: own(v.doc.author),
                        page_n: v.page.n,
                        number: own(v.page.number),
                        volume: own(v.page.volume),
                        heading: own(v.page.heading),
                        kinds: Vec::new(),
                        meta: v.page.meta_json.and_then(|m| serde_json::from_str(m).ok()),
                        cited: false,
                        passages: Vec::new(),
                        text: v.page.text.to_owned(),
                        read: false,
                    });
                    self.sources.len() - 1
                }
            };
            let src = &mut self.sources[i];
            for (c, _) in &v.passages {
                for k in c.kinds.names() {
                    if !src.kinds.contains(&k) {
                        src.kinds.push(k);
                    }
                }
                if !src.passages.iter().any(|p| p.0 == c.pos) {
                    src.passages.push((c.pos, c.text.to_owned()));
                }
            }
            let shown: Vec<String> = v.passages.iter().take(PASSAGES_SHOWN).map(|(c, _)| cut(c.text, PASSAGE_CHARS)).collect();
            listed.push(format!("[{}] {}\n{}", i + 1, src.label(), shown.join("\n…\n")));
        }
        let run = QueryRun { query: q.to_owned(), mode: mode_str(s.mode), results: s.results.hits.len() };
        self.timings.search_ms += ms(t);
        self.emit(Event::Query(&run));
        self.queries.push(run);
        self.emit(Event::Sources(&self.sources));
        Ok(if listed.is_empty() { format!("No page matches \"{q}\".") } else { listed.join("\n\n") })
    }

    /// The sources as the answer and judge prompts list them: pages read whole, others
    /// by their passages, each within its share of `source_chars`.
    fn listing<'s>(&self, sources: impl Iterator<Item = (u32, &'s Source)> + Clone) -> String {
        let count = sources.clone().count().max(1);
        let share = (self.r.config.source_chars / count).max(300);
        sources
            .map(|(n, s)| {
                let body = if s.read || s.passages.is_empty() {
                    s.text.clone()
                } else {
                    let mut ps = s.passages.clone();
                    ps.sort_by_key(|p| p.0);
                    ps.into_iter().map(|p| p.1).collect::<Vec<_>>().join("\n…\n")
                };
                format!("[{n}] {}\n{}", s.label(), cut(&body, share))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The answer as the model wrote it (markers not yet resolved).
    async fn answer(&mut self, ctx: &prompt::Context<'_>) -> Result<String, ResearchError> {
        if self.sources.is_empty() {
            let text = "The collection holds no page that answers this question.";
            self.emit(Event::Delta(text));
            return Ok(text.into());
        }
        let listing = self.listing(self.sources.iter().enumerate().map(|(i, s)| (i as u32 + 1, s)));
        let req = prompt::answer(&self.model, ctx, &listing, self.r.config.max_tokens);
        let first = self.write(req.clone()).await?;
        if claims::has_words(&first) {
            return Ok(first);
        }
        // Markers and no words (a small model's habit): asked once more, plainly.
        let again = self.call(prompt::again(req, &first)).await?.output.text.trim().to_owned();
        if !claims::has_words(&again) {
            return Err(ResearchError::NoAnswer);
        }
        self.emit(Event::Delta(&format!("\n\n{again}")));
        Ok(again)
    }

    /// The answer's call, streamed as deltas when the research streams.
    async fn write(&mut self, req: ChatRequest) -> Result<String, ResearchError> {
        if self.events.is_none() {
            return Ok(self.call(req).await?.output.text.trim().to_owned());
        }
        let t = Instant::now();
        let mut stream = match self.llm.stream(self.account, req.clone()).await {
            Ok(s) => s,
            // A provider that does not stream answers whole.
            Err(LlmError::InvalidRequest { field, .. }) if field == "stream" => {
                self.timings.model_ms += ms(t);
                let text = self.call(req).await?.output.text.trim().to_owned();
                self.emit(Event::Delta(&text));
                return Ok(text);
            }
            Err(e) => {
                self.timings.model_ms += ms(t);
                return Err(model_error(e));
            }
        };
        let mut failed = None;
        while let Some(d) = stream.next().await {
            match d {
                Ok(Delta::Text(piece)) => self.emit(Event::Delta(&piece)),
                Ok(_) => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.timings.model_ms += ms(t);
        if let Some(e) = failed {
            return Err(model_error(e));
        }
        let done = stream.completion();
        self.input_tokens += done.output.usage.input;
        self.output_tokens += done.output.usage.output;
        Ok(done.output.text.trim().to_owned())
    }

    /// Every sentence as a claim, judged against its cited sources. A cited claim no
    /// judge rated still gets the evidence code finds on its cited pages.
    async fn claims(&mut self, ctx: &prompt::Context<'_>, answer: &str, sources: &[Source], quotes: &[QuoteOut]) -> Vec<ClaimOut> {
        let mut out = self.judged(ctx, answer, sources, quotes).await;
        for c in out.iter_mut().filter(|c| c.status == Status::Unchecked && c.evidence.is_none()) {
            evidence(c, Status::Unchecked, "", sources);
        }
        out
    }

    async fn judged(&mut self, ctx: &prompt::Context<'_>, answer: &str, sources: &[Source], quotes: &[QuoteOut]) -> Vec<ClaimOut> {
        let mut out: Vec<ClaimOut> = claims::sentences(answer)
            .into_iter()
            .filter(claims::is_claim)
            .map(|s| {
                let status = if s.sources.is_empty() { Status::Uncited } else { Status::Unchecked };
                ClaimOut { text: s.text, sources: s.sources, status, evidence: None, evidence_at: None, start: s.start, end: s.end }
            })
            .collect();
        let judged: Vec<usize> = (0..out.len()).filter(|&i| out[i].status == Status::Unchecked).collect();
        if judged.is_empty() || sources.is_empty() {
            return out;
        }
        let judge_model = match &self.r.config.judge {
            Judge::None => return out,
            Judge::Tier => self.model.clone(),
            Judge::Model(m) => m.clone(),
        };
        let mut cited: Vec<u32> = judged.iter().flat_map(|&i| out[i].sources.clone()).collect();
        cited.sort_unstable();
        cited.dedup();
        let listing = self.listing(cited.iter().map(|&n| (n, &sources[n as usize - 1])));
        let listed: Vec<(String, Vec<u32>)> = judged.iter().map(|&i| (out[i].text.clone(), out[i].sources.clone())).collect();
        let verdicts = match self.call(prompt::judge(&judge_model, ctx, &listing, &listed)).await {
            Ok(done) => prompt::verdicts(&done.output.text),
            Err(e) => {
                tracing::warn!(error = %e, "the research judge failed; claims left unchecked");
                self.warnings.push("The judge model failed, so the claims are unchecked.".into());
                return out;
            }
        };
        let Some(verdicts) = verdicts else {
            self.warnings.push("The judge's answer could not be read, so the claims are unchecked.".into());
            return out;
        };
        for (k, &i) in judged.iter().enumerate() {
            let Some(v) = verdicts.iter().find(|v| v.claim == k + 1) else { continue };
            let Some(status) = Status::parse(&v.verdict) else { continue };
            let claim = &mut out[i];
            evidence(claim, status, &v.evidence, sources);
            // A claim whose quotation is not on the page it cites is not supported as written.
            let false_quote = quotes.iter().any(|q| q.status == "unverified" && claim.text.contains(q.quote.as_str()));
            if false_quote && claim.status != Status::Unsupported {
                claim.status = Status::Unsupported;
            }
        }
        out
    }
}

/// Sets the claim's verdict and evidence: the judge's span located in a cited source,
/// else (for a claim said to be stated, or not rated) the cited sentence sharing most words; a
/// `supported` claim with no evidence on a page is `partial`.
fn evidence(claim: &mut ClaimOut, status: Status, given: &str, sources: &[Source]) {
    let cited: Vec<(usize, &str)> =
        claim.sources.iter().filter_map(|&n| sources.get(n as usize - 1).map(|s| (n as usize - 1, s.text.as_str()))).collect();
    let mut found = None;
    if given.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
        for &(i, text) in &cited {
            let page = Page::new(text);
            if let Some(at) = claims::locate_quote(&page, given) {
                found = Some((i, page.slice(&at).to_owned(), at.start, at.end));
                break;
            }
        }
    }
    if found.is_none() && matches!(status, Status::Supported | Status::Partial | Status::Unchecked) {
        if let Some((i, start, end)) = claims::overlap_evidence(&claim.text, &cited) {
            let text = &sources[i].text;
            let span = &text[claims::byte_of(text, start)..claims::byte_of(text, end)];
            found = Some((i, span.to_owned(), start, end));
        }
    }
    claim.status = match (status, &found) {
        (Status::Supported, None) => Status::Partial,
        (s, _) => s,
    };
    if let Some((i, text, start, end)) = found {
        claim.evidence = Some(text);
        claim.evidence_at = Some((i as u32 + 1, start, end));
    }
}

/// The model's closing note: its first line that says something (three words or more,
/// not a lead-in ending in `:`, not the question again).
fn note(text: &str, question: &str) -> Option<String> {
    let q = question.trim().to_lowercase();
    text.lines()
        .map(|l| l.trim().trim_start_matches(['-', '*', '#', ' ']))
        .find(|l| {
            l.split_whitespace().count() >= 3 && !l.ends_with(':') && l.to_lowercase() != q && !l.to_lowercase().starts_with("what the sources cover")
        })
        .map(|l| l.chars().take(300).collect())
}

/// `s` cut to `n` characters, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

fn mode_str(m: Mode) -> &'static str {
    match m {
        Mode::Keyword => "keyword",
        Mode::Semantic => "semantic",
        Mode::Hybrid => "hybrid",
    }
}

/// Whether a verified quotation's match counts as verified.
pub fn verified(status: &str) -> bool {
    status == Match::Exact.as_str() || status == Match::NormalizedExact.as_str()
}
