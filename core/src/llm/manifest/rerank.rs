//! A manifest's `rerank` section: where a provider's rerank API is and how its body
//! and answer are shaped. The three vendors agree on `model`, `query`, `documents` and
//! results of `index` + `relevance_score`; they differ in the name of the result count
//! (Voyage's `top_k`, the others' `top_n`) and of the results array (Voyage's `data`).
//!
//! ```yaml
//! rerank:
//!   path: "/rerank"          # after the base URL
//!   top_n_field: "top_n"     # the body's name for how many results to return
//!   results: "results"       # the answer's array of results
//!   body: { return_documents: false }   # constant fields added to every body
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankSpec {
    pub path: String,
    #[serde(default = "top_n")]
    pub top_n_field: String,
    #[serde(default = "results")]
    pub results: String,
    #[serde(default = "index")]
    pub index_field: String,
    #[serde(default = "score")]
    pub score_field: String,
    #[serde(default)]
    pub body: Map<String, Value>,
}

fn top_n() -> String {
    "top_n".into()
}
fn results() -> String {
    "results".into()
}
fn index() -> String {
    "index".into()
}
fn score() -> String {
    "relevance_score".into()
}

impl RerankSpec {
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        if !self.path.starts_with('/') {
            return Err(("rerank.path".into(), "must start with /".into()));
        }
        for (field, v) in
            [("top_n_field", &self.top_n_field), ("results", &self.results), ("index_field", &self.index_field), ("score_field", &self.score_field)]
        {
            if v.is_empty() {
                return Err((format!("rerank.{field}"), "must not be empty".into()));
            }
        }
        Ok(())
    }

    /// The request body for `documents`, best `top_n` wanted.
    pub fn body(&self, model: &str, query: &str, documents: &[&str], top_n: usize) -> Value {
        let mut b = self.body.clone();
        b.insert("model".into(), model.into());
        b.insert("query".into(), query.into());
        b.insert("documents".into(), documents.iter().map(|d| Value::from(*d)).collect());
        b.insert(self.top_n_field.clone(), top_n.into());
        Value::Object(b)
    }

    /// `(index, score)` per result of an answer, or what is wrong with it. An index
    /// outside `0..n` is refused: it names no document sent.
    pub fn results(&self, answer: &[u8], n: usize) -> Result<Vec<(usize, f64)>, String> {
        let v: Value = serde_json::from_slice(answer).map_err(|e| format!("the answer is not JSON: {e}"))?;
        let items = v.get(&self.results).and_then(Value::as_array).ok_or_else(|| format!("the answer has no `{}` array", self.results))?;
        items
            .iter()
            .map(|item| {
                let index = item.get(&self.index_field).and_then(Value::as_u64).filter(|&i| (i as usize) < n);
                let score = item.get(&self.score_field).and_then(Value::as_f64);
                match (index, score) {
                    (Some(i), Some(s)) => Ok((i as usize, s)),
                    _ => Err(format!("a result lacks a valid `{}` or `{}`: {item}", self.index_field, self.score_field)),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> RerankSpec {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn the_body_names_the_count_as_the_vendor_does() {
        let s = spec("path: /rerank\ntop_n_field: top_k\nbody: {truncation: true}");
        let b = s.body("m", "q", &["a", "b"], 2);
        assert_eq!(b, serde_json::json!({"model": "m", "query": "q", "documents": ["a", "b"], "top_k": 2, "truncation": true}));
    }

    #[test]
    fn results_are_read_and_bad_ones_refused() {
        let s = spec("path: /rerank\nresults: data");
        let ok = br#"{"data": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}"#;
        assert_eq!(s.results(ok, 2).unwrap(), vec![(1, 0.9), (0, 0.1)]);
        assert!(s.results(ok, 1).unwrap_err().contains("valid"));
        assert!(s.results(br#"{"results": []}"#, 2).unwrap_err().contains("`data`"));
        assert!(s.results(b"nope", 2).is_err());
    }
}
