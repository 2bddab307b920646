//! What a research takes, tells and answers: the request and its tier, the events a
//! stream is told, the sources, quotations and claims of the answer, and the errors.

use crate::search::domain::Domain;
use serde_json::Value;

use super::cite;
use super::claims::{Counts, Status};
use crate::error::{Code, ErrorCode};
use crate::llm::request::Role;
use crate::llm::LlmError;
use crate::search::SearchError;
use crate::store::StoreError;

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
    pub domain: Option<Domain>,
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
    pub(super) fn label(&self) -> String {
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
    /// Of `input_tokens`, those the model's prompt cache held (as the provider reports them).
    pub cached_input_tokens: u64,
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
            ResearchError::Store(e) => e.code(),
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

pub(super) fn model_error(e: LlmError) -> ResearchError {
    ResearchError::Model(Box::new(e))
}
