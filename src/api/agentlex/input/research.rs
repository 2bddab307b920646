//! `ResearchRequest`: the question, `tier` (fast, deep), `history` (user and assistant
//! turns; the last six are used), `stream`, `domain` (medical, legal, classical,
//! general), and the search's own `documents`, `kinds` and `filters`, which bound every
//! search the model issues. Each bad field is a 400 naming it: `invalid_question`,
//! `invalid_tier`, `invalid_domain`, `invalid_filter`.

use serde::de::Deserializer;
use serde::Deserialize;

use super::field::{present, refuse, refuse_as, DomainIn, Domains, Flag, Leaf, Obj};
use super::search::{Echo, FiltersIn, Scope, SearchIn, Strings};
use crate::error::{ApiError, Code};
use crate::llm::request::Role;
use crate::research::{Request, Tier};
use crate::search::domain::Domain;
use quarry_index::search::Mode;

/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 2000;
/// The longest history turn, in characters.
pub const MAX_TURN_CHARS: usize = 8000;
/// The most turns a history may hold (the last six are used).
pub const MAX_TURNS: usize = 50;

#[derive(Deserialize)]
struct Body {
    #[serde(default, deserialize_with = "present")]
    question: Option<Question>,
    #[serde(default, deserialize_with = "present")]
    tier: Option<TierIn>,
    #[serde(default, deserialize_with = "present")]
    history: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    stream: Option<Flag>,
    #[serde(default, deserialize_with = "present")]
    domain: Option<DomainIn<ResearchDomains>>,
    documents: Option<Strings>,
    kinds: Option<Strings>,
    filters: Option<Obj<FiltersIn>>,
}

struct Question(String);

impl<'de> Deserialize<'de> for Question {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(q) if q.trim().is_empty() => Err(refuse("must not be empty.")),
            Leaf::Str(q) if q.chars().count() > MAX_QUESTION_CHARS => {
                Err(refuse(format_args!("is {} characters; at most {MAX_QUESTION_CHARS}.", q.chars().count())))
            }
            Leaf::Str(q) => Ok(Question(q)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

struct TierIn(Tier);

impl<'de> Deserialize<'de> for TierIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(t) if t == "fast" => Ok(TierIn(Tier::Fast)),
            Leaf::Str(t) if t == "deep" => Ok(TierIn(Tier::Deep)),
            _ => Err(refuse_as(Code::InvalidTier, "must be fast or deep.")),
        }
    }
}

/// A research's `domain`: every domain (the spec's ResearchRequest).
struct ResearchDomains;

impl Domains for ResearchDomains {
    const MEMBERS: &'static [Domain] = &Domain::ALL;
}

/// A research and what its answer echoes.
pub struct ResearchIn {
    pub request: Request,
    pub stream: bool,
    pub echo: Echo,
}

pub fn parse(bytes: &[u8]) -> Result<ResearchIn, ApiError> {
    let b: Body = crate::http::body::json(bytes, Code::InvalidQuestion)?;
    let question = b.question.ok_or_else(|| ApiError::new(Code::InvalidQuestion, "question is required.").at("question"))?.0;
    let history = match b.history {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(v) => history(v)?,
    };
    let mut s =
        SearchIn { request: crate::search::Request::new(question.clone(), 5, Mode::Hybrid), reranker: None, echo: Echo::default(), highlights: true };
    Scope { documents: b.documents, kinds: b.kinds, filters: b.filters.map(|f| f.0) }.apply(&mut s);
    let request = Request { question, tier: b.tier.map_or(Tier::Fast, |t| t.0), history, search: s.request, domain: b.domain.and_then(|d| d.0) };
    Ok(ResearchIn { request, stream: b.stream.is_some_and(|f| f.0), echo: s.echo })
}

/// `history`: an array of `{role: user | assistant, content: string}`.
fn history(v: serde_json::Value) -> Result<Vec<(Role, String)>, ApiError> {
    let bad = |at: String, message: String| ApiError::new(Code::InvalidQuestion, message).at(at);
    let serde_json::Value::Array(items) = v else {
        return Err(bad("history".into(), "history must be an array of {role, content} messages.".into()));
    };
    if items.len() > MAX_TURNS {
        return Err(bad("history".into(), format!("history holds {} messages; at most {MAX_TURNS} (the last six are used).", items.len())));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = |f: &str| format!("history[{i}]{f}");
            let serde_json::Value::Object(o) = item else {
                return Err(bad(at(""), format!("{} must be an object with role and content.", at(""))));
            };
            let role = match o.get("role").and_then(|r| r.as_str()) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                _ => return Err(bad(at(".role"), format!("{} must be user or assistant.", at(".role")))),
            };
            let content = match o.get("content").and_then(|c| c.as_str()) {
                Some(c) if c.chars().count() <= MAX_TURN_CHARS => c.to_owned(),
                Some(_) => return Err(bad(at(".content"), format!("{} is longer than {MAX_TURN_CHARS} characters.", at(".content")))),
                None => return Err(bad(at(".content"), format!("{} must be a string.", at(".content")))),
            };
            if let Some(k) = o.keys().find(|k| !["role", "content"].contains(&k.as_str())) {
                return Err(bad(at(&format!(".{k}")), format!("{} is not a field of a message (role, content).", at(&format!(".{k}")))));
            }
            Ok((role, content))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> ApiError {
        parse(body.as_bytes()).err().unwrap_or_else(|| panic!("{body} was accepted"))
    }

    #[test]
    fn defaults_and_fields_are_read() {
        let r = parse(br#"{"question": "How often?"}"#).unwrap();
        assert_eq!((r.request.tier, r.stream, r.request.history.len(), r.request.domain), (Tier::Fast, false, 0, None));
        let r = parse(
            br#"{"question": "Q", "tier": "deep", "stream": true, "domain": "classical", "documents": ["doc_a"], "kinds": ["clause"],
                "history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}"#,
        )
        .unwrap();
        assert_eq!((r.request.tier, r.stream, r.request.domain), (Tier::Deep, true, Some(Domain::Classical)));
        assert_eq!(r.request.history, vec![(Role::User, "a".into()), (Role::Assistant, "b".into())]);
        assert!(r.request.search.filters.documents.as_ref().unwrap().contains("doc_a"));
        assert_eq!(r.echo.kinds, vec!["clause"]);
    }

    #[test]
    fn every_bad_field_is_refused_with_its_code_and_path() {
        for (body, code, field) in [
            (r#"{}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": "  "}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": 3}"#, Code::InvalidQuestion, "question"),
            (r#"{"question": "q", "tier": "slow"}"#, Code::InvalidTier, "tier"),
            (r#"{"question": "q", "tier": null}"#, Code::InvalidTier, "tier"),
            (r#"{"question": "q", "domain": "finance"}"#, Code::InvalidDomain, "domain"),
            (r#"{"question": "q", "stream": "yes"}"#, Code::InvalidQuestion, "stream"),
            (r#"{"question": "q", "history": "hi"}"#, Code::InvalidQuestion, "history"),
            (r#"{"question": "q", "history": [{"role": "system", "content": "x"}]}"#, Code::InvalidQuestion, "history[0].role"),
            (r#"{"question": "q", "history": [{"role": "user"}]}"#, Code::InvalidQuestion, "history[0].content"),
            (r#"{"question": "q", "history": [{"role": "user", "content": "x", "name": "n"}]}"#, Code::InvalidQuestion, "history[0].name"),
            (r#"{"question": "q", "documents": "doc_a"}"#, Code::InvalidFilter, "documents"),
            (r#"{"question": "q", "filters": {"kinds": [1]}}"#, Code::InvalidFilter, "filters.kinds"),
        ] {
            let e = refused(body);
            assert_eq!(e.code, code, "{body}: {}", e.message);
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
        }
        let long = format!(r#"{{"question": "{}"}}"#, "x".repeat(MAX_QUESTION_CHARS + 1));
        assert_eq!(refused(&long).code, Code::InvalidQuestion);
    }
}
