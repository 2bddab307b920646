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

mod answer;
pub mod cite;
pub mod claims;
mod judge;
pub mod prompt;
mod tools;
mod types;

use std::cell::RefCell;
use std::time::Instant;

use quarry_index::embed::Embedder;

use crate::config::ResearchConfig;
use crate::limits::meters::Refused;
use crate::limits::{Meter, Meters};
use crate::llm::request::Role;
use crate::llm::{ChatRequest, Completion, Llm};
use crate::search::{Caller, Owned, Service};
use answer::quotes;
pub use answer::verified;
use claims::Counts;
use tools::cut;
use types::model_error;
pub use types::{ClaimOut, Event, Events, QueryRun, QuoteOut, Request, ResearchError, Researched, Source, Tier, Timings};

/// What a research needs of the server.
pub struct Researcher<'a> {
    pub search: &'a Service,
    pub llm: Option<&'a Llm>,
    pub meters: &'a Meters,
    pub config: &'a ResearchConfig,
    pub gate: &'a crate::limits::Gate,
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
    _slot: crate::limits::Slot,
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
    /// Of `input_tokens`, those the model's prompt cache already held.
    cached_input_tokens: u64,
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
    pub async fn admit(&self, caller: Caller<'_>, tier: Tier) -> Result<Admitted<'a>, ResearchError> {
        let (llm, model, warnings) = self.model(tier)?;
        let slot = self.gate.enter(caller.account_id, self.config.concurrency).map_err(|running| ResearchError::TooMany { running })?;
        let meters = self.meters.account(caller.account_id)?;
        meters.spend(Meter::Research, 1, caller.plan.research).await.map_err(|e| match e {
            Refused::Exceeded(e) => ResearchError::Allowance { allowance: e.allowance, plan: caller.plan.name.clone() },
            Refused::Store(e) => ResearchError::Store(e),
        })?;
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
                cached_input_tokens: 0,
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
            if counts.uncited > 0 {
                run.warnings.push(format!(
                    "{} of {} sentences of the answer cite no source: nothing found by the research backs them.",
                    counts.uncited,
                    counts.total()
                ));
            }
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
                cached_input_tokens: run.cached_input_tokens,
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
    crate::search::domain(req.domain, &owned.record).as_str().to_owned()
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
        self.cached_input_tokens += done.output.usage.cached;
        self.output_tokens += done.output.usage.output;
        Ok(done)
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
}
