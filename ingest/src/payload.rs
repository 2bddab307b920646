//! What one document becomes on the wire: a `DocumentInput` object with one payload field,
//! chosen by the file's extension, and `metadata.source_id` holding the stable id a later
//! run looks for.

use std::path::Path;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The metadata key that holds a document's stable id (a file's relative path, a
/// record's `_id`); a re-run skips every id the collection already holds under it.
pub const SOURCE_ID: &str = "source_id";

/// The `DocumentInput` payload field a document is sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Text,
    Html,
    Csv,
    Tsv,
    Json,
}

/// The extensions `quarry ingest` sends, for messages.
pub const EXTENSIONS: &str = ".txt .md .markdown .html .htm .csv .tsv .json";

impl Field {
    /// By the file's extension, case-insensitively; `None` for any other file.
    pub fn for_path(path: &Path) -> Option<Field> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "txt" | "md" | "markdown" => Some(Field::Text),
            "html" | "htm" => Some(Field::Html),
            "csv" => Some(Field::Csv),
            "tsv" => Some(Field::Tsv),
            "json" => Some(Field::Json),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Field::Text => "text",
            Field::Html => "html",
            Field::Csv => "csv",
            Field::Tsv => "tsv",
            Field::Json => "json",
        }
    }
}

/// One add's body. A `.json` file goes as a JSON string in `json` (the spec allows it), so the
/// server parses it and names the line and column of a mistake.
pub struct Body<'a> {
    pub title: Option<&'a str>,
    pub field: Field,
    pub content: &'a str,
    /// Sent as given, with [`SOURCE_ID`] set by [`Body::to_vec`].
    pub metadata: &'a Map<String, Value>,
    pub source_id: &'a str,
}

impl Body<'_> {
    pub fn to_vec(&self) -> Vec<u8> {
        // A map of strings and JSON values: serializing it cannot fail.
        serde_json::to_vec(self).expect("a document body serializes")
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(title) = self.title {
            map.serialize_entry("title", title)?;
        }
        map.serialize_entry(self.field.name(), self.content)?;
        map.serialize_entry("metadata", &Metadata(self.metadata, self.source_id))?;
        map.end()
    }
}

/// The given metadata with `source_id` in place of any the input held.
struct Metadata<'a>(&'a Map<String, Value>, &'a str);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (key, value) in self.0.iter().filter(|(k, _)| *k != SOURCE_ID) {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(SOURCE_ID, self.1)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_choose_the_payload_field() {
        let field = |p: &str| Field::for_path(Path::new(p)).map(Field::name);
        assert_eq!(field("a/notes.txt"), Some("text"));
        assert_eq!(field("README.MD"), Some("text"));
        assert_eq!(field("page.htm"), Some("html"));
        assert_eq!(field("page.HTML"), Some("html"));
        assert_eq!(field("crew.csv"), Some("csv"));
        assert_eq!(field("crew.tsv"), Some("tsv"));
        assert_eq!(field("records.json"), Some("json"));
        assert_eq!(field("scan.pdf"), None);
        assert_eq!(field("Makefile"), None);
    }

    #[test]
    fn a_body_has_one_payload_field_and_the_source_id_in_metadata() {
        let mut given = Map::new();
        given.insert("topic".into(), Value::from("water"));
        given.insert(SOURCE_ID.into(), Value::from("stale"));
        let body = Body { title: Some("T"), field: Field::Html, content: "<p>x</p>", metadata: &given, source_id: "docs/a.html" };
        let json: Value = serde_json::from_slice(&body.to_vec()).unwrap();
        assert_eq!(json, serde_json::json!({"title": "T", "html": "<p>x</p>", "metadata": {"topic": "water", "source_id": "docs/a.html"}}));
        let bare = Body { title: None, field: Field::Json, content: "[{\"a\":1}]", metadata: &Map::new(), source_id: "r.json" };
        assert_eq!(String::from_utf8(bare.to_vec()).unwrap(), r#"{"json":"[{\"a\":1}]","metadata":{"source_id":"r.json"}}"#);
    }
}
