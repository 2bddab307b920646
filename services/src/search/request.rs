//! A search as the service takes it, whichever surface asked: the AgentLex body, the
//! retrieval plugin's query, an evaluation's variant.

use quarry_index::search::{Filters, Mode};

/// Query expansion, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expand {
    /// Not asked: the surface's default applies, and nothing is said about it.
    #[default]
    Default,
    Off,
    On,
    Llm,
}

impl Expand {
    /// Whether the caller asked for expansion in so many words.
    pub fn asked(self) -> bool {
        matches!(self, Expand::On | Expand::Llm)
    }
}

#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    pub k: usize,
    pub mode: Mode,
    /// Best passages per page.
    pub passages: usize,
    pub filters: Filters,
    pub expand: Expand,
    /// The request's domain and the model's paraphrases, for the expansion.
    pub expansion: super::expand::Input,
    pub rerank: bool,
    /// What parsing the request already has to say (an unknown kind ignored, …).
    pub warnings: Vec<String>,
}

impl Request {
    /// A plain search for `query`: `k` pages in `mode`, two passages each, no filters.
    pub fn new(query: impl Into<String>, k: usize, mode: Mode) -> Request {
        Request {
            query: query.into(),
            k,
            mode,
            passages: 2,
            filters: Filters::default(),
            expand: Expand::Default,
            expansion: Default::default(),
            rerank: false,
            warnings: Vec::new(),
        }
    }
}
