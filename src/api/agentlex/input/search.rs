//! `SearchRequest`: the query, its knobs, and the filters (with the older top-level
//! `documents` and `kinds` merged in).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{err, kind};
use crate::error::{ApiError, Code};
use quarry_index::chunk::Kind;
use crate::search::{Expand, Request};
use quarry_index::search::{Filters, Mode};
use quarry_index::segment::FieldValue;

/// An AgentLex search: the service's request, and what only AgentLex's answer says.
#[derive(Debug, Clone)]
pub struct SearchIn {
    pub request: Request,
    pub domain: Option<String>,
    /// The filters as applied, for the response.
    pub echo: Echo,
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

pub fn parse(body: &Value) -> Result<SearchIn, ApiError> {
    let Value::Object(o) = body else {
        return Err(err(Code::InvalidJson, format!("The body must be a JSON object, not {}.", kind(body))));
    };
    let query = match o.get("query") {
        Some(Value::String(q)) if q.trim().is_empty() => return Err(err(Code::InvalidQuery, "query must not be empty.")),
        Some(Value::String(q)) if q.chars().count() > MAX_QUERY_CHARS => {
            return Err(err(Code::QueryTooLong, format!("query is {} characters; at most {MAX_QUERY_CHARS}.", q.chars().count())))
        }
        Some(Value::String(q)) => q.clone(),
        Some(other) => return Err(err(Code::InvalidQuery, format!("query must be a string, not {}.", kind(other)))),
        None => return Err(err(Code::InvalidQuery, "query is required.")),
    };
    let mode = match o.get("mode").map(|m| m.as_str()) {
        None => Mode::Hybrid,
        Some(Some("hybrid")) => Mode::Hybrid,
        Some(Some("keyword")) => Mode::Keyword,
        Some(Some("semantic")) => Mode::Semantic,
        Some(_) => return Err(err(Code::InvalidQuery, "mode must be one of hybrid, keyword, semantic.")),
    };
    let expand = match o.get("expand") {
        None => Expand::Default,
        Some(Value::Bool(true)) => Expand::On,
        Some(Value::Bool(false)) => Expand::Off,
        Some(v) if v.as_str() == Some("llm") => Expand::Llm,
        Some(_) => return Err(err(Code::InvalidQuery, "expand must be true, false or \"llm\".")),
    };
    let rerank = match o.get("rerank") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(err(Code::InvalidQuery, format!("rerank must be a boolean, not {}.", kind(other)))),
    };
    let domain = match o.get("domain") {
        None => None,
        Some(Value::String(d)) if ["medical", "legal", "general"].contains(&d.as_str()) => Some(d.clone()),
        Some(_) => return Err(err(Code::InvalidDomain, "domain must be one of medical, legal, general.")),
    };
    let request = Request {
        query,
        k: int(o.get("k"), "k", 1, 50, 10)?,
        mode,
        passages: int(o.get("passages"), "passages", 1, 10, 2)?,
        rerank,
        expand,
        filters: Filters::default(),
        warnings: Vec::new(),
    };
    let mut s = SearchIn { request, domain, echo: Echo::default() };
    filters(o, &mut s)?;
    Ok(s)
}

fn int(v: Option<&Value>, field: &str, min: u64, max: u64, default: usize) -> Result<usize, ApiError> {
    match v {
        None => Ok(default),
        Some(v) if super::whole(v).is_some_and(|n| (min..=max).contains(&n)) => Ok(super::whole(v).unwrap_or(0) as usize),
        Some(_) => Err(err(Code::InvalidQuery, format!("{field} must be an integer from {min} to {max}."))),
    }
}

fn filters(o: &Map<String, Value>, s: &mut SearchIn) -> Result<(), ApiError> {
    let f = match o.get("filters") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(f)) => f.clone(),
        Some(other) => return Err(err(Code::InvalidFilter, format!("filters must be an object, not {}.", kind(other)))),
    };
    let mut docs: Vec<String> = Vec::new();
    for (field, v) in [("documents", o.get("documents")), ("filters.documents", f.get("documents"))] {
        docs.extend(strings(v, field)?);
    }
    let mut kinds = Vec::new();
    for (field, v) in [("kinds", o.get("kinds")), ("filters.kinds", f.get("kinds"))] {
        kinds.extend(strings(v, field)?);
    }
    let any_docs = o.get("documents").is_some() || f.get("documents").is_some();
    if any_docs {
        s.request.filters.documents = Some(docs.iter().cloned().collect::<HashSet<_>>());
    }
    docs.dedup();
    s.echo.documents = docs;
    for k in kinds {
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
    match f.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (key, v) in m {
                s.request.filters.metadata.push((key.clone(), accepted(v, key)?));
            }
            s.echo.metadata = Some(m.clone());
        }
        Some(other) => return Err(err(Code::InvalidFilter, format!("filters.metadata must be an object, not {}.", kind(other)))),
    }
    match f.get("date") {
        None | Some(Value::Null) => {}
        Some(Value::Object(d)) => date(d, s)?,
        Some(other) => return Err(err(Code::InvalidFilter, format!("filters.date must be an object, not {}.", kind(other)))),
    }
    match f.get("headings") {
        None | Some(Value::Null) => {}
        Some(Value::String(h)) if !h.trim().is_empty() => {
            s.request.filters.headings = Some(h.trim().to_lowercase());
            s.echo.headings = Some(h.clone());
        }
        Some(_) => return Err(err(Code::InvalidFilter, "filters.headings must be a non-empty string.")),
    }
    Ok(())
}

fn strings(v: Option<&Value>, field: &str) -> Result<Vec<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_owned).ok_or_else(|| err(Code::InvalidFilter, format!("{field} must be an array of strings."))))
            .collect(),
        Some(other) => Err(err(Code::InvalidFilter, format!("{field} must be an array of strings, not {}.", kind(other)))),
    }
}

/// A metadata filter's accepted values: one scalar or a list of them.
fn accepted(v: &Value, key: &str) -> Result<Vec<FieldValue>, ApiError> {
    let one = |x: &Value| match x {
        Value::String(s) => Ok(FieldValue::Str(s.clone())),
        Value::Number(n) => Ok(FieldValue::Num(n.as_f64().unwrap_or(f64::NAN))),
        Value::Bool(b) => Ok(FieldValue::Bool(*b)),
        Value::Null => Ok(FieldValue::Null),
        other => Err(err(
            Code::InvalidFilter,
            format!("filters.metadata.{key} must be a value or a list of values, not {}; use a dotted key to reach into objects.", kind(other)),
        )),
    };
    match v {
        Value::Array(a) if a.is_empty() => Err(err(Code::InvalidFilter, format!("filters.metadata.{key} must list at least one value."))),
        Value::Array(a) => a.iter().map(one).collect(),
        x => Ok(vec![one(x)?]),
    }
}

fn date(d: &Map<String, Value>, s: &mut SearchIn) -> Result<(), ApiError> {
    let mut range = (i32::MIN, i32::MAX);
    let mut echo = DateEcho::default();
    for (field, v) in d {
        let text = v.as_str().ok_or_else(|| err(Code::InvalidFilter, format!("filters.date.{field} must be a string.")))?;
        let r = quarry_index::date::parse_date(text).ok_or_else(|| {
            err(
                Code::InvalidFilter,
                format!("filters.date.{field}: \"{text}\" is not a date (use YYYY-MM-DD, 03/14/2024, 14 Mar 2024, March 14, 2024 or a year)."),
            )
        })?;
        match field.as_str() {
            "from" => (range.0, echo.from) = (r.from, Some(text.to_owned())),
            "to" => (range.1, echo.to) = (r.to, Some(text.to_owned())),
            _ => return Err(err(Code::InvalidFilter, format!("filters.date.{field} is not a field; use from and to."))),
        }
    }
    if range.0 > range.1 {
        return Err(err(Code::InvalidFilter, "filters.date.from is after filters.date.to."));
    }
    if echo.from.is_some() || echo.to.is_some() {
        s.request.filters.date = Some(range);
        s.echo.date = Some(echo);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_shorthands_merge_into_filters() {
        let s = parse(&json!({"query": "q", "documents": ["d1"], "kinds": ["table", "nonsense"], "filters": {"documents": ["d2"]}})).unwrap();
        let r = &s.request;
        assert_eq!((r.k, r.passages, r.mode, r.rerank), (10, 2, Mode::Hybrid, true));
        assert_eq!(r.filters.documents.as_ref().map(|d| d.len()), Some(2));
        assert_eq!(s.echo.kinds, ["table"]);
        assert!(r.warnings[0].contains("nonsense"));
    }

    #[test]
    fn integer_valued_numbers_are_integers() {
        let s = parse(&json!({"query": "q", "k": 3.0, "passages": 1e0})).unwrap();
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
            (json!({"query": "q", "rerank": "no"}), Code::InvalidQuery, "rerank must be"),
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
            let e = parse(&body).unwrap_err();
            assert_eq!(e.code, code, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
    }

    #[test]
    fn dates_take_the_spec_forms() {
        let s = parse(&json!({"query": "q", "filters": {"date": {"from": "March 14, 2024", "to": "2024"}}})).unwrap();
        let (from, to) = s.request.filters.date.unwrap();
        assert_eq!(from, quarry_index::date::days_from_civil(2024, 3, 14));
        assert_eq!(to, quarry_index::date::days_from_civil(2024, 12, 31));
    }
}
