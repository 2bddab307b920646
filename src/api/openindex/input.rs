//! The plugin's request bodies as typed structs (what its OpenAPI schemas say, with
//! pydantic's habits: unknown fields ignored, `null` as absent), and their checks into
//! the service's types. Every error names its field as a path, which the plugin's
//! surface answers as a 422 whose `loc` walks to it.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::error::{ApiError, Code};
use crate::search::{NewDocument, Request};
use quarry_index::ingest::PageDraft;
use quarry_index::search::{Filters, Mode};
use quarry_index::segment::FieldValue;

/// The longest query a search takes (AgentLex's limit).
pub const MAX_QUERY_CHARS: usize = 4000;
/// `top_k`'s range; 3 when absent, as the spec's default.
pub const TOP_K: (i64, i64, usize) = (1, 100, 3);
const MAX_ID_CHARS: usize = 512;
/// The metadata key a plugin document's id is kept under: the engine gives each
/// version of a document its own id, and the plugin's id is this field.
pub const DOCUMENT_ID: &str = "document_id";

/// `QueryRequest`.
#[derive(Debug, Deserialize)]
pub struct QueryRequest {
    pub queries: Vec<QueryIn>,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `Query`; `namespace` here (ours) overrides the request's for this query.
#[derive(Debug, Deserialize)]
pub struct QueryIn {
    pub query: String,
    #[serde(default)]
    pub filter: Option<FilterIn>,
    #[serde(default)]
    pub top_k: Option<i64>,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `Source`: the full plugin's enum and the seed's `web`.
#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Email,
    Web,
    File,
    Chat,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Email => "email",
            Source::Web => "web",
            Source::File => "file",
            Source::Chat => "chat",
        }
    }
}

/// `DocumentMetadataFilter`, the full plugin's fields and the seed's.
#[derive(Debug, Deserialize, Default)]
pub struct FilterIn {
    #[serde(default)]
    pub document_id: Option<String>,
    #[serde(default)]
    pub source: Option<Source>,
    #[serde(default)]
    pub source_id: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub author: Option<String>,
    #[serde(default)]
    pub start_date: Option<String>,
    #[serde(default)]
    pub end_date: Option<String>,
    #[serde(default)]
    pub collection_id: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub time_period: Option<String>,
    /// Any of these keywords.
    #[serde(default)]
    pub keywords: Option<Vec<String>>,
}

/// `UpsertRequest`.
#[derive(Debug, Deserialize)]
pub struct UpsertRequest {
    pub documents: Vec<DocumentIn>,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `Document`: its metadata kept as an object, its known keys checked by [`metadata`].
#[derive(Debug, Deserialize)]
pub struct DocumentIn {
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// `DeleteRequest`.
#[derive(Debug, Deserialize)]
pub struct DeleteRequest {
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    #[serde(default)]
    pub filter: Option<FilterIn>,
    #[serde(default)]
    pub delete_all: Option<bool>,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// What a delete asks for.
pub enum Deletion {
    All,
    /// The union of these ids and what the filter selects.
    Some {
        ids: Vec<String>,
        filters: Option<Filters>,
    },
}

fn invalid(code: Code, field: impl Into<Cow<'static, str>>, msg: impl Into<String>) -> ApiError {
    ApiError::new(code, msg).at(field)
}

/// serde names a missing field at its parent; the plugin's `loc` names the field.
pub fn locate_missing(mut e: ApiError) -> ApiError {
    if let Some(name) = e.message.strip_prefix("missing field `").or_else(|| e.message.split_once(": missing field `").map(|(_, r)| r)) {
        let name = name.trim_end_matches('`').to_owned();
        let field = match e.field.as_deref() {
            None | Some(".") | Some("") => name.clone(),
            Some(parent) => format!("{parent}.{name}"),
        };
        e.message = format!("{field}: field required");
        e.field = Some(field.into());
    }
    e
}

/// A namespace as given: absent or a non-empty name or id.
pub fn namespace<'a>(ns: Option<&'a str>, field: &str) -> Result<Option<&'a str>, ApiError> {
    match ns {
        Some(n) if n.trim().is_empty() => {
            Err(invalid(Code::InvalidName, field.to_owned(), format!("{field} must not be empty; leave it out for the default collection.")))
        }
        other => Ok(other),
    }
}

/// The service's search for query `i` of a batch: hybrid (keyword on a server without
/// an embedder), `top_k` pages of one passage each, the filter as the engine's.
pub fn search(q: &QueryIn, i: usize) -> Result<Request, ApiError> {
    let at = |f: &str| format!("queries[{i}].{f}");
    let chars = q.query.chars().count();
    if q.query.trim().is_empty() {
        return Err(invalid(Code::InvalidQuery, at("query"), format!("{}: the query must not be empty.", at("query"))));
    }
    if chars > MAX_QUERY_CHARS {
        return Err(invalid(Code::QueryTooLong, at("query"), format!("{}: {chars} characters; at most {MAX_QUERY_CHARS}.", at("query"))));
    }
    let (min, max, default) = TOP_K;
    let k = match q.top_k {
        None => default,
        Some(k) if (min..=max).contains(&k) => k as usize,
        Some(_) => return Err(invalid(Code::InvalidQuery, at("top_k"), format!("{}: top_k must be from {min} to {max}.", at("top_k")))),
    };
    let mut req = Request::new(q.query.clone(), k, Mode::Hybrid);
    req.passages = 1;
    if let Some(f) = &q.filter {
        req.filters = filters(f, &at("filter"))?;
    }
    Ok(req)
}

/// A `DocumentMetadataFilter` as the engine's filters: `start_date`/`end_date` bound
/// the documents' dates (`created_at`), every other field must equal the stored
/// metadata's (`document_id` included; `keywords`: any one of them).
pub fn filters(f: &FilterIn, at: &str) -> Result<Filters, ApiError> {
    let mut out = Filters::default();
    if let Some(s) = f.source {
        out.metadata.push(("source".into(), vec![FieldValue::Str(s.as_str().into())]));
    }
    let equal = [
        (DOCUMENT_ID, &f.document_id),
        ("source_id", &f.source_id),
        ("url", &f.url),
        ("author", &f.author),
        ("collection_id", &f.collection_id),
        ("user_id", &f.user_id),
        ("language", &f.language),
        ("time_period", &f.time_period),
    ];
    for (key, v) in equal {
        if let Some(v) = v {
            out.metadata.push((key.into(), vec![FieldValue::Str(v.clone())]));
        }
    }
    if let Some(words) = &f.keywords {
        if words.is_empty() {
            return Err(invalid(Code::InvalidFilter, format!("{at}.keywords"), format!("{at}.keywords must list at least one keyword.")));
        }
        out.metadata.push(("keywords".into(), words.iter().map(|w| FieldValue::Str(w.clone())).collect()));
    }
    let from = f.start_date.as_deref().map(|d| day(d, &format!("{at}.start_date"))).transpose()?;
    let to = f.end_date.as_deref().map(|d| day(d, &format!("{at}.end_date"))).transpose()?;
    if from.is_some() || to.is_some() {
        let range = (from.map_or(i32::MIN, |r| r.from), to.map_or(i32::MAX, |r| r.to));
        if range.0 > range.1 {
            return Err(invalid(Code::InvalidFilter, format!("{at}.start_date"), format!("{at}.start_date is after {at}.end_date.")));
        }
        out.date = Some(range);
    }
    Ok(out)
}

fn day(text: &str, field: &str) -> Result<quarry_index::date::DayRange, ApiError> {
    quarry_index::date::parse_date(text).ok_or_else(|| {
        invalid(Code::InvalidFilter, field.to_owned(), format!("{field}: \"{text}\" is not a date (use YYYY-MM-DD or an RFC 3339 timestamp)."))
    })
}

/// Whether a filter names any field: an empty one would select everything.
pub fn names_anything(f: &FilterIn) -> bool {
    let strings =
        [&f.document_id, &f.source_id, &f.url, &f.author, &f.start_date, &f.end_date, &f.collection_id, &f.user_id, &f.language, &f.time_period];
    f.source.is_some() || f.keywords.is_some() || strings.iter().any(|s| s.is_some())
}

/// What a `DeleteRequest` asks: `delete_all`, or ids and a filter (at least one).
pub fn deletion(r: DeleteRequest) -> Result<Deletion, ApiError> {
    if r.delete_all == Some(true) {
        return Ok(Deletion::All);
    }
    let filters = match &r.filter {
        Some(f) if !names_anything(f) => {
            return Err(invalid(Code::InvalidFilter, "filter", "filter names no field; to delete every document, send delete_all: true."))
        }
        Some(f) => Some(filters(f, "filter")?),
        None => None,
    };
    let ids = r.ids.unwrap_or_default();
    if ids.is_empty() && filters.is_none() {
        return Err(ApiError::new(Code::InvalidDocument, "One of ids, filter or delete_all: true is required."));
    }
    Ok(Deletion::Some { ids, filters })
}

/// Document `i` of an upsert as the service takes it, with its id: the one given, or
/// a new one when absent or empty (as the plugin's `doc.id or uuid4()`), kept in its
/// metadata as `document_id`.
pub fn document(d: DocumentIn, i: usize) -> Result<(String, NewDocument), ApiError> {
    let at = format!("documents[{i}]");
    let id = d.id.filter(|id| !id.is_empty()).unwrap_or_else(|| format!("doc_{}", crate::ids::random_base62(16)));
    crate::names::check(&id, MAX_ID_CHARS).map_err(|problem| invalid(Code::InvalidDocument, format!("{at}.id"), format!("{at}.id {problem}")))?;
    let mut metadata = metadata(d.metadata.unwrap_or_default(), &format!("{at}.metadata"))?;
    metadata.insert(DOCUMENT_ID.into(), Value::from(id.as_str()));
    Ok((id, text_document(&d.text, "text", metadata, &format!("{at}.text"))?))
}

/// Text (plain or Markdown) as a document: pages split at form feeds and
/// `--- page N ---` lines, as AgentLex's text.
pub fn text_document(text: &str, format: &'static str, metadata: Map<String, Value>, field: &str) -> Result<NewDocument, ApiError> {
    if text.trim().is_empty() {
        return Err(invalid(Code::InvalidDocument, field.to_owned(), format!("{field}: the document has no text.")));
    }
    let pages = quarry_index::chunk::split_pages(text)
        .into_iter()
        .map(|p| PageDraft { text: p.text, number: p.number, volume: None, heading: p.heading, meta: None })
        .collect();
    Ok(NewDocument { metadata, format, pages, ..NewDocument::default() })
}

/// `DocumentMetadata`: any keys, the spec's checked (`source` one of the enum, the
/// others strings or null, `created_at` a date). A `document_id` given here is
/// dropped: the document's id takes that key.
pub fn metadata(mut m: Map<String, Value>, at: &str) -> Result<Map<String, Value>, ApiError> {
    for key in ["source", "source_id", "url", "created_at", "author"] {
        match m.get(key) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(_) => return Err(invalid(Code::InvalidDocument, format!("{at}.{key}"), format!("{at}.{key} must be a string or null."))),
        }
    }
    if let Some(Value::String(s)) = m.get("source") {
        if !["email", "web", "file", "chat"].contains(&s.as_str()) {
            return Err(invalid(
                Code::InvalidDocument,
                format!("{at}.source"),
                format!("{at}.source must be one of email, web, file, chat, not \"{s}\"."),
            ));
        }
    }
    if let Some(Value::String(s)) = m.get("created_at") {
        if quarry_index::date::parse_date(s).is_none() {
            return Err(invalid(
                Code::InvalidDocument,
                format!("{at}.created_at"),
                format!("{at}.created_at: \"{s}\" is not a date (use YYYY-MM-DD or an RFC 3339 timestamp)."),
            ));
        }
    }
    m.remove("document_id");
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ApiError> {
        crate::http::body::json::<T>(v.to_string().as_bytes(), Code::InvalidQuery).map_err(locate_missing)
    }

    #[test]
    fn type_errors_and_missing_fields_name_their_path() {
        let e = body::<QueryRequest>(json!({"queries": [{"query": "a", "top_k": "x"}]})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("queries[0].top_k"));
        let e = body::<QueryRequest>(json!({"queries": [{"query": "a"}, {"top_k": 1}]})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("queries[1].query"));
        let e = body::<QueryRequest>(json!({})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("queries"));
        let e = body::<QueryRequest>(json!({"queries": [{"query": "a", "filter": {"source": "fax"}}]})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("queries[0].filter.source"));
    }

    #[test]
    fn a_query_takes_the_spec_defaults_and_its_filter() {
        let q: QueryRequest = body(json!({"queries": [{"query": "a", "filter": {"author": "Ann", "source": "file", "document_id": "d1", "start_date": "2023-01-01", "end_date": "2023-12-31T10:00:00Z"}}]})).unwrap();
        let r = search(&q.queries[0], 0).unwrap();
        assert_eq!((r.k, r.passages, r.mode), (3, 1, Mode::Hybrid));
        let f = &r.filters;
        assert!(f.documents.is_none());
        assert_eq!(f.metadata.len(), 3);
        let days = quarry_index::date::days_from_civil;
        assert_eq!(f.date, Some((days(2023, 1, 1), days(2023, 12, 31))));
        let q: QueryRequest = body(json!({"queries": [{"query": "a", "top_k": 0}]})).unwrap();
        assert_eq!(search(&q.queries[0], 0).unwrap_err().field.as_deref(), Some("queries[0].top_k"));
        let q: QueryRequest = body(json!({"queries": [{"query": "a", "filter": {"start_date": "2024", "end_date": "2023"}}]})).unwrap();
        assert_eq!(search(&q.queries[0], 0).unwrap_err().field.as_deref(), Some("queries[0].filter.start_date"));
    }

    #[test]
    fn deletes_need_something_to_delete() {
        let d = |v: Value| deletion(body::<DeleteRequest>(v).unwrap());
        assert!(d(json!({})).is_err());
        assert!(d(json!({"ids": []})).is_err());
        assert_eq!(d(json!({"filter": {}})).err().unwrap().field.as_deref(), Some("filter"));
        assert!(matches!(d(json!({"delete_all": true})), Ok(Deletion::All)));
        assert!(matches!(d(json!({"ids": ["a"], "filter": {"author": "x"}})), Ok(Deletion::Some { .. })));
    }

    #[test]
    fn metadata_keeps_every_key_and_checks_the_known_ones() {
        let m = metadata(json!({"source": "email", "created_at": "2023-03-14", "team": "x", "document_id": "y"}).as_object().unwrap().clone(), "m")
            .unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(metadata(json!({"source": "fax"}).as_object().unwrap().clone(), "m").unwrap_err().field.as_deref(), Some("m.source"));
        assert_eq!(metadata(json!({"created_at": "soon"}).as_object().unwrap().clone(), "m").unwrap_err().field.as_deref(), Some("m.created_at"));
        assert_eq!(metadata(json!({"author": 3}).as_object().unwrap().clone(), "m").unwrap_err().field.as_deref(), Some("m.author"));
    }
}
