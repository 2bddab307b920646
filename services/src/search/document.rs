//! A document as a surface parsed it, before chunking: title, author, metadata (kept
//! as JSON and flattened for filters), format and pages of text.

use serde_json::{Map, Value};

use quarry_index::chunk::Chunker;
use quarry_index::ingest::{DocDraft, PageDraft};
use quarry_index::segment::{Field, FieldValue};

use super::SearchError;

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

/// The most characters of a document's title, author, or a page's heading, number
/// or volume: what a reader scans in a result list, not a second body.
pub const MAX_LABEL_CHARS: usize = 2_000;
/// The most bytes of a document's metadata as JSON: filter fields, not a second body.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;

impl NewDocument {
    /// Checks what the engine would keep beside the text: the text within `max_text_bytes`,
    /// each label within [`MAX_LABEL_CHARS`], the metadata within [`MAX_METADATA_BYTES`].
    pub fn check(&self, max_text_bytes: usize) -> Result<(), SearchError> {
        if self.text_bytes() > max_text_bytes {
            return Err(SearchError::DocumentTooLarge { bytes: self.text_bytes(), max: max_text_bytes });
        }
        let label = |field: &'static str, v: &Option<String>| match v.as_deref().map(|s| s.chars().count()) {
            Some(len) if len > MAX_LABEL_CHARS => Err(SearchError::FieldTooLong { field, len, max: MAX_LABEL_CHARS, unit: "characters" }),
            _ => Ok(()),
        };
        label("title", &self.title)?;
        label("author", &self.author)?;
        for p in &self.pages {
            label("a page's heading", &p.heading)?;
            label("a page's number", &p.number)?;
            label("a page's volume", &p.volume)?;
        }
        let metadata = serde_json::to_vec(&self.metadata).map_or(0, |b| b.len());
        if metadata > MAX_METADATA_BYTES {
            return Err(SearchError::FieldTooLong { field: "metadata", len: metadata, max: MAX_METADATA_BYTES, unit: "bytes of JSON" });
        }
        Ok(())
    }

    /// What adding it stores, as the storage allowance counts it
    /// (`quarry_index::segment::stored_chars`): before redaction, which may change it.
    pub fn stored_chars(&self) -> u64 {
        let text = self.pages.iter().map(|p| p.text.chars().count() as u64).sum();
        let pages = self.pages.iter().flat_map(|p| [p.number.as_deref(), p.volume.as_deref(), p.heading.as_deref()]);
        let labels = [self.title.as_deref(), self.author.as_deref()].into_iter().chain(pages);
        quarry_index::segment::stored_chars(text, &Value::Object(self.metadata.clone()).to_string(), labels)
    }

    /// Bytes of page text, for the size limit.
    pub fn text_bytes(&self) -> usize {
        self.pages.iter().map(|p| p.text.len()).sum()
    }

    /// The start of its text, pages joined, for telling its language (a few kB: the
    /// reader takes what it needs).
    pub fn sample_text(&self) -> String {
        let mut out = String::new();
        for p in &self.pages {
            if out.len() >= 16 * 1024 {
                break;
            }
            out.push_str(&p.text);
            out.push('\n');
        }
        out
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
