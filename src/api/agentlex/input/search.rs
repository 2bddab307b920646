//! `SearchRequest`: the query, its knobs, and the filters (with the older top-level
//! `documents` and `kinds` merged in), as typed fields whose checks say what each must be.

use std::collections::HashSet;

use serde::de::{Deserializer, MapAccess, SeqAccess};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::field::{accept, present, refuse, refuse_as, Accept, DomainIn, Domains, Flag, Int, Leaf, Obj, Shape};
use crate::error::{ApiError, Code};
use crate::search::domain::Domain;
use crate::search::expand::Input;
use crate::search::{Expand, Request};
use quarry_index::chunk::Kind;
use quarry_index::search::{Filters, Mode};
use quarry_index::segment::FieldValue;

/// An AgentLex search: the service's request, and what only AgentLex's answer says.
#[derive(Debug, Clone)]
pub struct SearchIn {
    pub request: Request,
    /// `rerank` given as a reranker's name: that one runs (checked against the
    /// configured ones by the handler).
    pub reranker: Option<String>,
    /// The filters as applied, for the response.
    pub echo: Echo,
    /// Quarry's `highlights`: whether passages carry their highlights (default true;
    /// false leaves them out, and their cost).
    pub highlights: bool,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Echo {
    pub documents: Vec<String>,
    pub kinds: Vec<String>,
    pub metadata: Option<Map<String, Value>>,
    pub date: Option<DateEcho>,
    pub headings: Option<String>,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DateEcho {
    pub from: Option<String>,
    pub to: Option<String>,
}

pub const MAX_QUERY_CHARS: usize = 4000;

/// The body as sent. Public for the parse bench, which feeds it other parsers.
#[doc(hidden)]
#[derive(Deserialize)]
pub struct Body {
    #[serde(default, deserialize_with = "present")]
    query: Option<Query>,
    #[serde(default, deserialize_with = "present")]
    mode: Option<ModeIn>,
    #[serde(default, deserialize_with = "present")]
    expand: Option<ExpandIn>,
    #[serde(default, deserialize_with = "present")]
    rerank: Option<Rerank>,
    #[serde(default, deserialize_with = "present")]
    domain: Option<DomainIn<SearchDomains>>,
    #[serde(default, deserialize_with = "present")]
    k: Option<Int<1, 50>>,
    #[serde(default, deserialize_with = "present")]
    passages: Option<Passages>,
    #[serde(default, deserialize_with = "present")]
    highlights: Option<Flag>,
    documents: Option<Strings>,
    kinds: Option<Strings>,
    filters: Option<Obj<FiltersIn>>,
}

pub fn parse(bytes: &[u8]) -> Result<SearchIn, ApiError> {
    build(crate::http::body::json(bytes, Code::InvalidQuery)?)
}

/// The checked search of a parsed body.
#[doc(hidden)]
pub fn build(b: Body) -> Result<SearchIn, ApiError> {
    let query = b.query.ok_or_else(|| ApiError::new(Code::InvalidQuery, "query is required.").at("query"))?;
    let request = Request {
        query: query.0,
        k: Int::or(b.k, 10),
        mode: b.mode.map_or(Mode::Hybrid, |m| m.0),
        passages: Int::or(b.passages, 2),
        rerank: b.rerank.as_ref().is_none_or(|r| !matches!(r, Rerank::Off)),
        // The spec's default is true.
        expand: b.expand.map_or(Expand::On, |e| e.0),
        expansion: Input { domain: b.domain.and_then(|d| d.0), ..Input::default() },
        filters: Filters::default(),
        warnings: Vec::new(),
    };
    let reranker = match b.rerank {
        Some(Rerank::Named(name)) => Some(name),
        _ => None,
    };
    let highlights = b.highlights.is_none_or(|Flag(on)| on);
    let mut s = SearchIn { request, reranker, echo: Echo::default(), highlights };
    Scope { documents: b.documents, kinds: b.kinds, filters: b.filters.map(|f| f.0) }.apply(&mut s);
    Ok(s)
}

/// The search fields an evaluation's question shares with a search.
#[derive(Default)]
pub struct Scope {
    pub documents: Option<Strings>,
    pub kinds: Option<Strings>,
    pub filters: Option<FiltersIn>,
}

impl Scope {
    /// Merges the top-level `documents` and `kinds` with the filters' into `s`.
    pub fn apply(self, s: &mut SearchIn) {
        let f = self.filters.unwrap_or_default();
        let any_docs = self.documents.is_some() || f.documents.is_some();
        let mut docs: Vec<String> = self.documents.into_iter().chain(f.documents).flat_map(|d| d.0).collect();
        if any_docs {
            s.request.filters.documents = Some(docs.iter().cloned().collect::<HashSet<_>>());
        }
        docs.dedup();
        s.echo.documents = docs;
        for k in self.kinds.into_iter().chain(f.kinds).flat_map(|k| k.0) {
            match Kind::parse(&k) {
                Some(kind) => {
                    s.request.filters.kinds |= 1 << kind as u32;
                    if !s.echo.kinds.contains(&k) {
                        s.echo.kinds.push(k);
                    }
                }
                None => s.request.warnings.push(format!("Unknown kind \"{k}\" ignored.")),
            }
        }
        if let Some(m) = f.metadata {
            s.request.filters.metadata = m.accepted;
            s.echo.metadata = Some(m.echo);
        }
        if let Some(DateIn { range, echo }) = f.date.filter(|d| d.echo.from.is_some() || d.echo.to.is_some()) {
            s.request.filters.date = Some(range);
            s.echo.date = Some(echo);
        }
        if let Some(Headings(h)) = f.headings {
            s.request.filters.headings = Some(h.trim().to_lowercase());
            s.echo.headings = Some(h);
        }
    }
}

/// `query`: a non-empty string of at most [`MAX_QUERY_CHARS`] characters.
#[derive(Debug, Clone)]
pub struct Query(pub String);

impl<'de> Deserialize<'de> for Query {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(q) if q.trim().is_empty() => Err(refuse("must not be empty.")),
            Leaf::Str(q) if q.chars().count() > MAX_QUERY_CHARS => {
                Err(refuse_as(Code::QueryTooLong, format_args!("is {} characters; at most {MAX_QUERY_CHARS}.", q.chars().count())))
            }
            Leaf::Str(q) => Ok(Query(q)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// `passages`: best passages per page.
pub type Passages = Int<1, 10>;

pub struct ModeIn(pub Mode);

impl<'de> Deserialize<'de> for ModeIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(m) if m == "hybrid" => Ok(ModeIn(Mode::Hybrid)),
            Leaf::Str(m) if m == "keyword" => Ok(ModeIn(Mode::Keyword)),
            Leaf::Str(m) if m == "semantic" => Ok(ModeIn(Mode::Semantic)),
            _ => Err(refuse("must be one of hybrid, keyword, semantic.")),
        }
    }
}

/// `expand`: true, false or "llm".
#[derive(Debug, Clone, Copy)]
pub struct ExpandIn(pub Expand);

impl<'de> Deserialize<'de> for ExpandIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Bool(true) => Ok(ExpandIn(Expand::On)),
            Leaf::Bool(false) => Ok(ExpandIn(Expand::Off)),
            Leaf::Str(s) if s == "llm" => Ok(ExpandIn(Expand::Llm)),
            _ => Err(refuse("must be true, false or \"llm\".")),
        }
    }
}

/// `rerank`: true (the default reranker), false (none), or a configured reranker's name.
enum Rerank {
    On,
    Off,
    Named(String),
}

impl<'de> Deserialize<'de> for Rerank {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Bool(true) => Ok(Rerank::On),
            Leaf::Bool(false) => Ok(Rerank::Off),
            Leaf::Str(s) if !s.is_empty() => Ok(Rerank::Named(s)),
            other => Err(refuse(format_args!("must be a boolean or a reranker's name, not {}.", other.kind()))),
        }
    }
}

/// A search's `domain` (and an extraction's): the spec's SearchRequest has no classical.
pub struct SearchDomains;

impl Domains for SearchDomains {
    const MEMBERS: &'static [Domain] = &[Domain::Medical, Domain::Legal, Domain::General];
}

/// `documents`, `kinds`: an array of strings (null is absent).
#[derive(Debug, Clone)]
pub struct Strings(pub Vec<String>);

impl<'de> Accept<'de> for Strings {
    const WANT: &'static str = "an array of strings";
    const CODE: Option<Code> = Some(Code::InvalidFilter);

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element::<Leaf>()? {
            match item {
                Leaf::Str(s) => out.push(s),
                _ => return Err(refuse_as(Code::InvalidFilter, "must be an array of strings.")),
            }
        }
        Ok(Strings(out))
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

/// `filters`: every key optional, null the same as absent.
#[derive(Default, Deserialize)]
pub struct FiltersIn {
    documents: Option<Strings>,
    kinds: Option<Strings>,
    metadata: Option<MetadataIn>,
    date: Option<DateIn>,
    headings: Option<Headings>,
}

impl Shape for FiltersIn {
    const CODE: Option<Code> = Some(Code::InvalidFilter);
}

/// `filters.metadata`: per (dotted) key, one scalar or a list of them.
struct MetadataIn {
    accepted: Vec<(String, Vec<FieldValue>)>,
    echo: Map<String, Value>,
}

impl<'de> Accept<'de> for MetadataIn {
    const WANT: &'static str = "an object";
    const CODE: Option<Code> = Some(Code::InvalidFilter);

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut m = MetadataIn { accepted: Vec::new(), echo: Map::new() };
        while let Some(key) = map.next_key::<String>()? {
            let v: Value = map.next_value()?;
            let values = accepted(&v).map_err(|e| refuse_as(Code::InvalidFilter, format_args!(".{key} {e}")))?;
            m.accepted.push((key.clone(), values));
            m.echo.insert(key, v);
        }
        Ok(m)
    }
}

impl<'de> Deserialize<'de> for MetadataIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

/// A metadata filter's accepted values: one scalar or a list of them; the refusal
/// follows the key.
fn accepted(v: &Value) -> Result<Vec<FieldValue>, String> {
    let one = |x: &Value| match x {
        Value::String(s) => Ok(FieldValue::Str(s.clone())),
        Value::Number(n) => Ok(FieldValue::Num(n.as_f64().unwrap_or(f64::NAN))),
        Value::Bool(b) => Ok(FieldValue::Bool(*b)),
        Value::Null => Ok(FieldValue::Null),
        other => Err(format!(
            "must be a value or a list of values, not {}; use a dotted key to reach into objects.",
            if other.is_array() { "an array" } else { "an object" }
        )),
    };
    match v {
        Value::Array(a) if a.is_empty() => Err("must list at least one value.".into()),
        Value::Array(a) => a.iter().map(one).collect(),
        x => Ok(vec![one(x)?]),
    }
}

/// `filters.date`: `from` and `to`, each in one of the forms filters accept.
struct DateIn {
    range: (i32, i32),
    echo: DateEcho,
}

impl<'de> Accept<'de> for DateIn {
    const WANT: &'static str = "an object";
    const CODE: Option<Code> = Some(Code::InvalidFilter);

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut d = DateIn { range: (i32::MIN, i32::MAX), echo: DateEcho::default() };
        while let Some(key) = map.next_key::<String>()? {
            let DateText(text, r) = map.next_value()?;
            match key.as_str() {
                "from" => (d.range.0, d.echo.from) = (r.from, Some(text)),
                "to" => (d.range.1, d.echo.to) = (r.to, Some(text)),
                _ => return Err(refuse_as(Code::InvalidFilter, format_args!(".{key} is not a field; use from and to."))),
            }
        }
        if d.range.0 > d.range.1 {
            return Err(refuse_as(Code::InvalidFilter, ".from is after filters.date.to."));
        }
        Ok(d)
    }
}

impl<'de> Deserialize<'de> for DateIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

struct DateText(String, quarry_index::date::DayRange);

impl<'de> Deserialize<'de> for DateText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Leaf::Str(text) = Leaf::deserialize(d)? else {
            return Err(refuse_as(Code::InvalidFilter, "must be a string."));
        };
        match quarry_index::date::parse_date(&text) {
            Some(r) => Ok(DateText(text, r)),
            None => Err(refuse_as(
                Code::InvalidFilter,
                format_args!(": \"{text}\" is not a date (use YYYY-MM-DD, 03/14/2024, 14 Mar 2024, March 14, 2024 or a year)."),
            )),
        }
    }
}

/// `filters.headings`: text a heading must contain.
struct Headings(String);

impl<'de> Deserialize<'de> for Headings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(h) if !h.trim().is_empty() => Ok(Headings(h)),
            _ => Err(refuse_as(Code::InvalidFilter, "must be a non-empty string.")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(body: &Value) -> Result<SearchIn, ApiError> {
        parse(body.to_string().as_bytes())
    }

    #[test]
    fn defaults_and_shorthands_merge_into_filters() {
        let s = p(&json!({"query": "q", "documents": ["d1"], "kinds": ["table", "nonsense"], "filters": {"documents": ["d2"]}})).unwrap();
        let r = &s.request;
        assert_eq!((r.k, r.passages, r.mode, r.rerank), (10, 2, Mode::Hybrid, true));
        assert_eq!(r.filters.documents.as_ref().map(|d| d.len()), Some(2));
        assert_eq!(s.echo.kinds, ["table"]);
        assert!(r.warnings[0].contains("nonsense"));
    }

    #[test]
    fn rerank_is_a_switch_or_a_name() {
        let on = |v: Value| p(&json!({"query": "q", "rerank": v})).map(|s| (s.request.rerank, s.reranker)).unwrap();
        assert_eq!(on(json!(true)), (true, None));
        assert_eq!(on(json!(false)), (false, None));
        assert_eq!(on(json!("jina")), (true, Some("jina".to_owned())));
    }

    #[test]
    fn integer_valued_numbers_are_integers() {
        let s = p(&json!({"query": "q", "k": 3.0, "passages": 1e0})).unwrap();
        assert_eq!((s.request.k, s.request.passages), (3, 1));
    }

    #[test]
    fn every_bad_field_gets_its_code_and_name() {
        let cases = [
            (json!({}), Code::InvalidQuery, "query is required"),
            (json!({"query": " "}), Code::InvalidQuery, "query must not be empty"),
            (json!({"query": "x".repeat(4001)}), Code::QueryTooLong, "4001"),
            (json!({"query": 1}), Code::InvalidQuery, "query must be a string"),
            (json!({"query": "q", "k": 0}), Code::InvalidQuery, "k must be"),
            (json!({"query": "q", "k": 51}), Code::InvalidQuery, "k must be"),
            (json!({"query": "q", "k": 2.5}), Code::InvalidQuery, "k must be"),
            (json!({"query": "q", "passages": 11}), Code::InvalidQuery, "passages must be"),
            (json!({"query": "q", "mode": "fuzzy"}), Code::InvalidQuery, "mode must be"),
            (json!({"query": "q", "expand": "yes"}), Code::InvalidQuery, "expand must be"),
            (json!({"query": "q", "rerank": 1}), Code::InvalidQuery, "rerank must be a boolean or a reranker's name"),
            (json!({"query": "q", "rerank": ""}), Code::InvalidQuery, "rerank must be"),
            (json!({"query": "q", "domain": "poetry"}), Code::InvalidDomain, "domain must be"),
            (json!({"query": "q", "documents": "d1"}), Code::InvalidFilter, "documents must be an array"),
            (json!({"query": "q", "filters": []}), Code::InvalidFilter, "filters must be an object"),
            (json!({"query": "q", "filters": {"kinds": [1]}}), Code::InvalidFilter, "filters.kinds"),
            (json!({"query": "q", "filters": {"metadata": {"a": {"b": 1}}}}), Code::InvalidFilter, "filters.metadata.a"),
            (json!({"query": "q", "filters": {"date": {"from": "someday"}}}), Code::InvalidFilter, "filters.date.from"),
            (json!({"query": "q", "filters": {"date": {"from": "2024", "to": "2023"}}}), Code::InvalidFilter, "after"),
            (json!({"query": "q", "filters": {"headings": 3}}), Code::InvalidFilter, "filters.headings"),
        ];
        for (body, code, needle) in cases {
            let e = p(&body).unwrap_err();
            assert_eq!(e.code, code, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
    }

    #[test]
    fn messages_read_path_then_rule_and_name_the_field() {
        let e = p(&json!({"query": "q", "k": 51})).unwrap_err();
        assert_eq!((e.message.as_str(), e.field.as_deref()), ("k must be an integer from 1 to 50.", Some("k")));
        let e = p(&json!({"query": "q", "filters": {"date": {"from": "2024", "to": "2023"}}})).unwrap_err();
        assert_eq!(e.message, "filters.date.from is after filters.date.to.");
        let e = p(&json!({"query": "q", "filters": {"date": {"to": "soon"}}})).unwrap_err();
        assert!(e.message.starts_with("filters.date.to: \"soon\" is not a date"), "{}", e.message);
        let e = p(&json!({"query": "q", "filters": {"metadata": {"a": []}}})).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidFilter, "filters.metadata.a must list at least one value."));
        assert_eq!(p(&json!([])).unwrap_err().message, "The body must be a JSON object, not an array.");
    }

    /// `documents: null` restricted the search to no document at all (the key was
    /// present); null is absent, as for every other optional filter.
    #[test]
    fn null_documents_do_not_restrict() {
        let s = p(&json!({"query": "q", "documents": null, "filters": {"documents": null}})).unwrap();
        assert!(s.request.filters.documents.is_none());
        let s = p(&json!({"query": "q", "documents": []})).unwrap();
        assert_eq!(s.request.filters.documents.map(|d| d.len()), Some(0), "an empty list still restricts");
    }

    #[test]
    fn dates_take_the_spec_forms() {
        let s = p(&json!({"query": "q", "filters": {"date": {"from": "March 14, 2024", "to": "2024"}}})).unwrap();
        let (from, to) = s.request.filters.date.unwrap();
        assert_eq!(from, quarry_index::date::days_from_civil(2024, 3, 14));
        assert_eq!(to, quarry_index::date::days_from_civil(2024, 12, 31));
    }
}
