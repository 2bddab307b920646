//! A document as a surface parsed it, before chunking: title, author, metadata (kept
//! as JSON and flattened for filters), format and pages of text.

use serde_json::{Map, Value};

use quarry_index::chunk::Chunker;
use quarry_index::ingest::{DocDraft, PageDraft};
use quarry_index::segment::{Field, FieldValue};

/// A document as parsed from the request, before chunking.
#[derive(Debug, Clone, Default)]
pub struct NewDocument {
    pub title: Option<String>,
    pub author: Option<String>,
    pub metadata: Map<String, Value>,
    pub format: &'static str,
    /// The chunker the request names; else the collection's domain or detection decides.
    pub chunker: Option<Chunker>,
    pub pages: Vec<PageDraft>,
}

impl NewDocument {
    /// Bytes of page text, for the size limit.
    pub fn text_bytes(&self) -> usize {
        self.pages.iter().map(|p| p.text.len()).sum()
    }

    /// The metadata flattened for filters: dotted keys, arrays repeating the key.
    pub fn fields(&self) -> Vec<Field> {
        let mut out = Vec::new();
        for (k, v) in &self.metadata {
            flatten(k, v, &mut out);
        }
        out
    }

    /// What the engine adds: this document under `id`, embedded (or not: "none") by
    /// `embedder`, stamped `created_at`, chunked by its own chunker, else the one the
    /// collection's `domain` names (`auto` detects).
    pub fn into_draft(self, id: String, embedder: String, created_at: String, domain: &str) -> DocDraft {
        DocDraft {
            chunker: self.chunker.or_else(|| domain_chunker(domain)),
            privacy: Default::default(),
            id,
            metadata_json: Value::Object(self.metadata.clone()).to_string(),
            fields: self.fields(),
            dates: self.dates(),
            format: self.format.to_owned(),
            embedder,
            created_at,
            title: self.title,
            author: self.author,
            pages: self.pages,
        }
    }

    /// The days named by the metadata's date fields (`created_at` is the retrieval
    /// plugin's, which its `start_date` and `end_date` filter on).
    pub fn dates(&self) -> Vec<i32> {
        ["date", "encounter_date", "effective_date", "filed", "created_at"]
            .iter()
            .filter_map(|k| self.metadata.get(*k)?.as_str())
            .filter_map(|s| quarry_index::date::parse_date(s).map(|r| r.from))
            .collect()
    }
}

/// The chunker a collection's `domain` setting names; `auto` (or anything else) detects.
pub fn domain_chunker(domain: &str) -> Option<Chunker> {
    crate::search::domain::Domain::parse(domain).map(|d| d.chunker()).or_else(|| Chunker::parse(domain))
}

fn flatten(key: &str, v: &Value, out: &mut Vec<Field>) {
    let push = |out: &mut Vec<Field>, value| out.push(Field { key: key.to_owned(), value });
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&format!("{key}.{k}"), v, out)),
        Value::Array(a) => a.iter().for_each(|v| flatten(key, v, out)),
        Value::String(s) => push(out, FieldValue::Str(s.clone())),
        Value::Number(n) => push(out, FieldValue::Num(n.as_f64().unwrap_or(f64::NAN))),
        Value::Bool(b) => push(out, FieldValue::Bool(*b)),
        Value::Null => push(out, FieldValue::Null),
    }
}
