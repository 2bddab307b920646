//! `POST /query`: each query of the batch a hybrid search of its namespace (one search
//! of the month's allowance each), answered as `QueryResponse`: per query, the best
//! passage of each page found as a `DocumentChunkWithScore`.

use std::io::Write;

use hyper::StatusCode;

use super::input::{self, QueryRequest};
use crate::api::agentlex::{after, caller};
use crate::error::{ApiError, Code};
use crate::http::call::Call;
use crate::http::json_out as j;
use crate::http::response::{self, Reply};
use crate::search::Searched;
use quarry_index::collection::HitView;

/// The most queries one `POST /query` may hold: each is a whole hybrid search, and a
/// batch is searched in turn on the shard (yielding between queries), so a batch is
/// bounded in time as a request should be. Each query also costs a rate token.
pub const MAX_QUERIES: usize = 100;

pub async fn query(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let body: QueryRequest = call.json(Code::InvalidQuery).await.map_err(input::locate_missing)?;
    if body.queries.len() > MAX_QUERIES {
        let n = body.queries.len();
        return Err(ApiError::new(Code::InvalidQuery, format!("queries holds {n} queries; at most {MAX_QUERIES} per request: split the batch."))
            .at("queries"));
    }
    let shared = input::namespace(body.namespace.as_deref(), "namespace")?;
    // Every query checked before anything is spent: a refused batch changes nothing.
    let queries = body
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let req = input::search(q, i)?;
            let ns = match q.namespace.as_deref() {
                Some(ns) => input::namespace(Some(ns), &format!("queries[{i}].namespace"))?,
                None => shared,
            };
            Ok::<_, ApiError>((ns, req))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Read-your-writes on a cluster: `Quarry-After` as an `/upsert` or `/delete` gave
    // it; a token naming no collection of the caller's is ignored, as on AgentLex.
    if let Some((coll, seq)) = after(&call)? {
        if let Ok(owned) = call.app.search.owned(&call.principal().account_id, coll).await {
            call.app.search.caught_up(&owned, seq).await?;
        }
    }
    // The route took one token; the rest of the batch takes one a query.
    call.charge(queries.len().saturating_sub(1) as u64, "queries", Code::InvalidQuery)?;
    let searched = call
        .app
        .search
        .search_namespaces(call.embedders, caller(&call), super::DEFAULT_NAMESPACE, queries.into_iter().map(Ok::<_, ApiError>))
        .await?;
    let per_query: Vec<Option<&Searched>> = searched.iter().map(Option::as_ref).collect();
    let texts: Vec<&str> = body.queries.iter().map(|q| q.query.as_str()).collect();
    Ok(response::json_bytes(StatusCode::OK, write(&texts, &per_query).into()))
}

/// `{"results":[{"query","results":[{"id","text","metadata","score"}]}]}`, written by hand
/// with [`json_out`](crate::http::json_out): passage texts are borrowed from the
/// snapshot and escaped straight into the answer, the stored metadata copied as the
/// JSON text it is stored as.
pub fn write(queries: &[&str], answers: &[Option<&Searched>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + answers.iter().flatten().map(|s| s.results.hits.len() * 1024).sum::<usize>());
    let mut o = j::Object::new(&mut out);
    let results = o.field("results");
    results.push(b'[');
    for (i, (q, s)) in queries.iter().zip(answers).enumerate() {
        if i > 0 {
            results.push(b',');
        }
        let mut r = j::Object::new(results);
        j::str(r.field("query"), q);
        let chunks = r.field("results");
        chunks.push(b'[');
        if let Some(s) = s {
            for (n, h) in s.results.hits.iter().enumerate() {
                if n > 0 {
                    chunks.push(b',');
                }
                chunk(chunks, &s.snapshot.hit_view(h));
            }
        }
        chunks.push(b']');
    }
    results.push(b']');
    drop(o);
    out
}

/// One `DocumentChunkWithScore`: the page's best passage, its id the page's citation
/// and the passage's position (`AL-0123ABCD-2`, stable across restarts).
fn chunk(out: &mut Vec<u8>, v: &HitView<'_>) {
    let best = v.passages.first().map(|(c, _)| c);
    let mut o = j::Object::new(out);
    let id = o.field("id");
    let _ = write!(id, "\"AL-{:08X}-{}\"", v.page.citation, best.map_or(0, |c| c.pos));
    j::str(o.field("text"), best.map_or(v.page.text, |c| c.text));
    metadata(o.field("metadata"), v.doc.id, v.doc.metadata_json);
    j::value(o.field("score"), &v.hit.score);
}

/// The stored metadata, which for a plugin document holds its `document_id` and is
/// copied as the JSON text it is stored as; a document added on AgentLex has none
/// (or one that is not a string) and gets its own id as `document_id`.
fn metadata(out: &mut Vec<u8>, doc_id: &str, stored: &str) {
    if stored.contains("\"document_id\"") {
        let mut m = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(stored).unwrap_or_default();
        if m.get("document_id").is_some_and(serde_json::Value::is_string) {
            return out.extend_from_slice(stored.as_bytes());
        }
        m.insert("document_id".into(), doc_id.into());
        return j::value(out, &m);
    }
    if !(stored.starts_with('{') && stored.ends_with('}')) {
        return j::value(out, &serde_json::json!({ "document_id": doc_id }));
    }
    out.extend_from_slice(b"{\"document_id\":");
    j::str(out, doc_id);
    let rest = &stored[1..];
    if rest != "}" {
        out.push(b',');
    }
    out.extend_from_slice(rest.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn meta(doc: &str, stored: &str) -> Value {
        let mut out = Vec::new();
        metadata(&mut out, doc, stored);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn metadata_carries_the_plugins_document_id_or_the_engines() {
        assert_eq!(meta("d\"1", "{}"), json!({"document_id": "d\"1"}));
        assert_eq!(meta("d1", r#"{"author":"Ann","n":{"a":[1]}}"#), json!({"document_id": "d1", "author": "Ann", "n": {"a": [1]}}));
        let plugin = json!({"document_id": "mine", "x": 1}).to_string();
        assert_eq!(meta("doc_engine", &plugin), json!({"document_id": "mine", "x": 1}));
        let nested = json!({"ref": {"document_id": "n"}}).to_string();
        assert_eq!(meta("d1", &nested), json!({"document_id": "d1", "ref": {"document_id": "n"}}));
    }

    #[test]
    fn queries_without_a_collection_answer_empty_results() {
        let out = write(&["a \"b\"", "c"], &[None, None]);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, json!({"results": [{"query": "a \"b\"", "results": []}, {"query": "c", "results": []}]}));
    }
}
