//! Verified extraction (`POST /v1/collections/{id}/extract`): a search, then a reader
//! model copies out of each page found the sentences that answer the question, and
//! code ([`quarry_index::verify`]) locates every one in its page. One that is not on
//! the page is counted (`rejected`) and never returned; one that is comes back as the
//! page's own text at its character offsets, so `page.text[start..end] == text` always.
//!
//! The rules that hold whoever calls: one extract of the plan's allowance per page
//! read, spent before the first model call and given back whole if any call fails (no
//! half-metered request); the search itself spends no search. Under `mask_identifiers`
//! the reader sees the masked page ([`masking`]) and offsets are moved back to the
//! stored text; under `redact_storage` the stored text is already masked.

pub mod masking;
pub mod prompt;

use std::cell::RefCell;

use futures_util::stream::{self, StreamExt, TryStreamExt};
use quarry_index::embed::Embedder;
use quarry_index::verify::{self, Match};

use crate::config::ExtractConfig;
use crate::error::{Code, ErrorCode};
use crate::limits::meters::Refused;
use crate::limits::{Meter, Meters};
use crate::llm::{Llm, LlmError};
use crate::search::{query, Caller, Owned, SearchError, Service};
use crate::store::StoreError;

/// An extraction as the service takes it.
#[derive(Debug, Clone)]
pub struct Request {
    pub question: String,
    /// The search that finds the pages (`query` is the question, `k` the pages read).
    pub search: crate::search::Request,
    /// Also return the pages the reader judged not relevant.
    pub all: bool,
}

pub struct Extracted {
    pub pages: Vec<PageOut>,
    /// Pages with at least one verified excerpt.
    pub kept: usize,
    /// Excerpts offered that were not on their page, over every page read.
    pub rejected: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub model: String,
    pub masked: bool,
}

pub struct PageOut {
    pub citation: String,
    pub relevant: bool,
    pub note: String,
    pub excerpts: Vec<ExcerptOut>,
    pub rejected: usize,
    pub doc_id: String,
    pub title: Option<String>,
    pub author: Option<String>,
    pub n: u32,
    pub number: Option<String>,
    pub volume: Option<String>,
    pub heading: Option<String>,
}

/// A verified excerpt: the page's text at characters `start..end` of the stored page.
pub struct ExcerptOut {
    pub text: String,
    pub matched: Match,
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error("This server has no language model for extraction; configure [extract] model or install the local model.")]
    NotConfigured,
    #[error("The local model is still starting; retry shortly.")]
    Busy,
    #[error("This needs {needed} extracts and {left} of this month's {allowance} extracts of the {plan} plan are left.")]
    Allowance { needed: u64, left: u64, allowance: u64, plan: String },
    #[error("The reader model failed: {0}")]
    Model(Box<LlmError>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for ExtractError {
    fn code(&self) -> Code {
        match self {
            ExtractError::Search(e) => e.code(),
            ExtractError::NotConfigured => Code::LlmNotConfigured,
            ExtractError::Busy => Code::LlmBusy,
            ExtractError::Allowance { .. } => Code::AllowanceExceeded,
            ExtractError::Model(e) => match **e {
                LlmError::Unreachable { .. } | LlmError::TransportDown => Code::LlmUnreachable,
                LlmError::NotConfigured | LlmError::UnknownModel(_) => Code::LlmNotConfigured,
                _ => Code::LlmError,
            },
            ExtractError::Store(e) => e.code(),
        }
    }

    fn message(&self) -> String {
        match self {
            ExtractError::Search(e) => e.message(),
            e => e.to_string(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            ExtractError::Allowance { .. } => Some(crate::clock::seconds_to_next_month()),
            ExtractError::Busy => Some(5),
            _ => None,
        }
    }
}

/// What an extraction needs of the server.
pub struct Extractor<'a> {
    pub search: &'a Service,
    pub llm: Option<&'a Llm>,
    pub meters: &'a Meters,
    pub config: &'a ExtractConfig,
    /// Whether the local model answers yet (`None`: there is none).
    pub local_ready: Option<bool>,
}

/// One page found, owned (the snapshot's views do not cross the model calls).
struct Found {
    out: PageOut,
    text: String,
}

impl Extractor<'_> {
    /// The reader: `[extract] model`, else the local model; 503 without either, and
    /// 503 `llm_busy` while the local model is starting.
    pub fn model(&self) -> Result<(&Llm, String), ExtractError> {
        let llm = self.llm.ok_or(ExtractError::NotConfigured)?;
        let model = match &self.config.model {
            Some(m) => m.clone(),
            None => {
                let local = llm.models().into_iter().find(|m| m.provider == crate::llm::local::PROVIDER).ok_or(ExtractError::NotConfigured)?;
                if self.local_ready == Some(false) {
                    return Err(ExtractError::Busy);
                }
                local.id
            }
        };
        Ok((llm, model))
    }

    pub async fn run(&self, embedders: &RefCell<Vec<Embedder>>, caller: Caller<'_>, owned: &Owned, req: &Request) -> Result<Extracted, ExtractError> {
        let (llm, model) = self.model()?;
        let settled = query::mode_for(self.search, &owned.record, &req.search)?;
        let found = self.found(embedders, owned, &req.search, settled)?;
        let n = found.len() as u64;
        let meters = self.meters.account(caller.account_id)?;
        meters.spend(Meter::Extract, n, caller.plan.extract).await.map_err(|e| match e {
            Refused::Exceeded(e) => ExtractError::Allowance {
                needed: n,
                left: e.allowance.saturating_sub(meters.counts().extract),
                allowance: e.allowance,
                plan: caller.plan.name.clone(),
            },
            Refused::Store(e) => ExtractError::Store(e),
        })?;
        let settings = &owned.record.settings;
        let masked = settings.mask_identifiers || settings.redact_storage;
        let mask = settings.mask_identifiers && !settings.redact_storage;
        let reads = stream::iter(found.into_iter().map(|f| self.read(llm, &model, caller.account_id, &req.question, f, mask)))
            .buffered(self.config.concurrency)
            .try_collect::<Vec<_>>()
            .await;
        let reads = match reads {
            Ok(r) => r,
            Err(e) => {
                meters.refund(Meter::Extract, n);
                return Err(e);
            }
        };
        let mut out = Extracted { pages: Vec::new(), kept: 0, rejected: 0, input_tokens: 0, output_tokens: 0, model, masked };
        for (page, usage) in reads {
            out.input_tokens += usage.input;
            out.output_tokens += usage.output;
            out.rejected += page.rejected;
            out.kept += usize::from(!page.excerpts.is_empty());
            if page.relevant || req.all {
                out.pages.push(page);
            }
        }
        Ok(out)
    }

    /// The search's pages, in rank order.
    fn found(
        &self,
        embedders: &RefCell<Vec<Embedder>>,
        owned: &Owned,
        search: &crate::search::Request,
        settled: query::Settled,
    ) -> Result<Vec<Found>, ExtractError> {
        let s = query::run(self.search, embedders, &owned.coll, search, settled)?;
        Ok(s.results
            .hits
            .iter()
            .map(|h| {
                let v = s.snapshot.hit_view(h);
                let (d, p) = (v.doc, v.page);
                let own = |s: Option<&str>| s.map(str::to_owned);
                Found {
                    text: p.text.to_owned(),
                    out: PageOut {
                        citation: p.citation_id(),
                        relevant: false,
                        note: String::new(),
                        excerpts: Vec::new(),
                        rejected: 0,
                        doc_id: d.id.to_owned(),
                        title: own(d.title),
                        author: own(d.author),
                        n: p.n,
                        number: own(p.number),
                        volume: own(p.volume),
                        heading: own(p.heading),
                    },
                }
            })
            .collect())
    }

    /// One page read by the model and its excerpts verified.
    async fn read(
        &self,
        llm: &Llm,
        model: &str,
        account: &str,
        question: &str,
        f: Found,
        mask: bool,
    ) -> Result<(PageOut, crate::llm::Usage), ExtractError> {
        let Found { mut out, text } = f;
        let masked = mask.then(|| masking::mask(&text));
        let seen = masked.as_ref().map_or(text.as_str(), |m| m.text.as_str());
        let source =
            format!("{}, page {}", out.title.as_deref().unwrap_or(&out.doc_id), out.number.clone().unwrap_or_else(|| (out.n + 1).to_string()));
        let c = self.config;
        let chat = prompt::request(model, question, &source, seen, c.page_chars, c.max_tokens);
        let done = llm.complete(account, chat).await.map_err(|e| ExtractError::Model(Box::new(e)))?;
        let reading = prompt::parse(&done.output.text);
        out.relevant = reading.relevant;
        out.note = reading.note;
        if reading.relevant {
            verify_into(&mut out, &text, seen, masked.as_ref(), &reading.excerpts);
        }
        Ok((out, done.output.usage))
    }
}

/// Locates each excerpt in what the reader saw; the found ones, moved to the stored
/// text and without repeats, become the page's excerpts, the others its `rejected`.
fn verify_into(out: &mut PageOut, stored: &str, seen: &str, masked: Option<&masking::Masked>, excerpts: &[String]) {
    let page = verify::Page::new(seen);
    let stored_page = masked.map(|_| verify::Page::new(stored));
    let stored_page = stored_page.as_ref().unwrap_or(&page);
    for e in excerpts {
        let Some(at) = page.locate(e) else {
            out.rejected += 1;
            continue;
        };
        let (start, end) = masked.map_or((at.start, at.end), |m| m.to_stored(at.start, at.end));
        if out.excerpts.iter().any(|x| x.start == start && x.end == end) {
            continue;
        }
        let span = verify::Located { start, end, ..at };
        out.excerpts.push(ExcerptOut { text: stored_page.slice(&span).to_owned(), matched: at.matched, start, end });
    }
}
