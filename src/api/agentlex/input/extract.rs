//! `ExtractRequest`: the question, `k` (1-20, default 8), `all`, and the search's own
//! fields (`mode`, `domain`, `documents`, `kinds`, `filters`) as the search endpoint's
//! types, so an extraction finds its pages with exactly what a search accepts. A bad
//! field is 400 `invalid_question`, a bad filter `invalid_filter`, naming the field.

use serde::Deserialize;

use super::field::{present, DomainIn, Flag, Int, Obj};
use super::search::{FiltersIn, ModeIn, Query, Scope, SearchDomains, SearchIn, Strings};
use crate::error::{ApiError, Code};
use crate::extract::Request;
use quarry_index::search::Mode;

#[derive(Deserialize)]
struct Body {
    #[serde(default, deserialize_with = "present")]
    question: Option<Query>,
    #[serde(default, deserialize_with = "present")]
    k: Option<Int<1, 20>>,
    #[serde(default, deserialize_with = "present")]
    mode: Option<ModeIn>,
    #[serde(default, deserialize_with = "present")]
    domain: Option<DomainIn<SearchDomains>>,
    #[serde(default, deserialize_with = "present")]
    all: Option<Flag>,
    documents: Option<Strings>,
    kinds: Option<Strings>,
    filters: Option<Obj<FiltersIn>>,
}

/// An extraction and the domain it asked for.
pub struct ExtractIn {
    pub request: Request,
    /// Parsed and checked as a search's, and not used yet (the extraction's searches
    /// expand by the collection's domain).
    pub domain: Option<crate::search::domain::Domain>,
}

pub fn parse(bytes: &[u8]) -> Result<ExtractIn, ApiError> {
    let b: Body = crate::http::body::json(bytes, Code::InvalidQuestion)?;
    let question = b.question.ok_or_else(|| ApiError::new(Code::InvalidQuestion, "question is required.").at("question"))?.0;
    let mode = b.mode.map_or(Mode::Hybrid, |m| m.0);
    let mut s = SearchIn {
        request: crate::search::Request::new(question.clone(), Int::or(b.k, 8), mode),
        reranker: None,
        echo: Default::default(),
        highlights: true,
    };
    Scope { documents: b.documents, kinds: b.kinds, filters: b.filters.map(|f| f.0) }.apply(&mut s);
    Ok(ExtractIn { request: Request { question, search: s.request, all: b.all.is_some_and(|f| f.0) }, domain: b.domain.and_then(|d| d.0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> ApiError {
        parse(body.as_bytes()).err().unwrap_or_else(|| panic!("{body} was accepted"))
    }

    #[test]
    fn defaults_and_fields_are_read() {
        let e = parse(br#"{"question": "How often?"}"#).unwrap();
        assert_eq!((e.request.search.k, e.request.all, e.request.search.mode), (8, false, Mode::Hybrid));
        let e = parse(br#"{"question": "Q", "k": 20, "all": true, "mode": "keyword", "documents": ["doc_a"], "domain": "legal"}"#).unwrap();
        assert_eq!((e.request.search.k, e.request.all, e.request.search.mode), (20, true, Mode::Keyword));
        assert!(e.request.search.filters.documents.as_ref().unwrap().contains("doc_a"));
        assert_eq!(e.domain.map(crate::search::domain::Domain::as_str), Some("legal"));
    }

    #[test]
    fn every_bad_field_is_refused_with_its_code_and_path() {
        for (body, code, field) in [
            (r#"{}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": ""}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": 3}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": null}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": "q", "k": 21}"#, Code::InvalidQuestion, "k"),
            (r#"{"question": "q", "k": 0}"#, Code::InvalidQuestion, "k"),
            (r#"{"question": "q", "all": "yes"}"#, Code::InvalidQuestion, "all"),
            (r#"{"question": "q", "mode": "fuzzy"}"#, Code::InvalidQuestion, "mode"),
            (r#"{"question": "q", "documents": "doc_a"}"#, Code::InvalidFilter, "documents"),
            (r#"{"question": "q", "filters": {"kinds": [1]}}"#, Code::InvalidFilter, "filters.kinds"),
        ] {
            let e = refused(body);
            assert_eq!(e.code, code, "{body}: {}", e.message);
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
        }
    }
}
