//! `DocumentInput`: a bare string, or an object with exactly one payload. Text and
//! Markdown split into pages at form feeds and `--- page N ---` lines; `pages[]` are
//! printed pages. Other formats come with their chunkers in a later version and are
//! refused by name until then.

use serde_json::Value;

use super::{err, kind, opt_string};
use crate::error::{ApiError, Code};
use quarry_index::ingest::PageDraft;

pub use crate::search::NewDocument as DocumentIn;

const PAYLOADS: &[&str] = &["text", "html", "csv", "tsv", "json", "pages", "content"];
const FORMATS: &[&str] = &["auto", "text", "markdown", "html", "csv", "tsv", "json", "pages"];
const CHUNKERS: &[&str] = &["classical", "medical", "legal", "prose"];

pub fn parse(body: &Value) -> Result<DocumentIn, ApiError> {
    let obj = match body {
        Value::String(s) => return from_text(s, "auto", DocumentIn::default()),
        Value::Object(o) => o,
        other => return Err(invalid(format!("A document is a JSON string or an object, not {}.", kind(other)))),
    };
    let mut doc = DocumentIn {
        title: opt_string(obj.get("title"), "title", Code::InvalidDocument)?,
        author: opt_string(obj.get("author"), "author", Code::InvalidDocument)?,
        ..DocumentIn::default()
    };
    match obj.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => doc.metadata = m.clone(),
        Some(other) => return Err(invalid(format!("metadata must be an object, not {}.", kind(other)))),
    }
    if let Some(c) = obj.get("chunker") {
        match c.as_str() {
            Some("prose") => {}
            Some(name) if CHUNKERS.contains(&name) => {
                return Err(invalid(format!("chunker: the {name} chunker is not available in this version; use \"prose\" or leave chunker out.")))
            }
            _ => return Err(invalid(format!("chunker must be one of {}.", CHUNKERS.join(", ")))),
        }
    }
    let format = match obj.get("format") {
        None => "auto",
        Some(f) => match f.as_str().and_then(|f| FORMATS.iter().find(|x| **x == f)) {
            Some(f) => f,
            None => return Err(invalid(format!("format must be one of {}.", FORMATS.join(", ")))),
        },
    };
    let given: Vec<&str> = PAYLOADS.iter().copied().filter(|p| obj.get(*p).is_some_and(|v| !v.is_null())).collect();
    let payload = match given.as_slice() {
        [one] => *one,
        [] => return Err(invalid(format!("A document needs exactly one of {}.", PAYLOADS.join(", ")))),
        many => return Err(invalid(format!("A document takes exactly one payload; it has {}.", many.join(", ")))),
    };
    let value = &obj[payload];
    let kind_of = if payload == "content" { format } else { payload };
    match kind_of {
        "text" | "auto" | "markdown" => {
            if !matches!(format, "auto" | "text" | "markdown") {
                return Err(invalid(format!("format {format} does not match the {payload} payload.")));
            }
            let Value::String(s) = value else { return Err(invalid(format!("{payload} must be a string, not {}.", kind(value)))) };
            from_text(s, format, doc)
        }
        "pages" => {
            if !matches!(format, "auto" | "pages") {
                return Err(invalid(format!("format {format} does not match the pages payload.")));
            }
            doc.pages = pages(value, payload)?;
            doc.format = "pages";
            Ok(doc)
        }
        other => Err(invalid(format!(
            "The {other} format is not supported in this version; send the text as text (plain or Markdown) or as pages[]."
        ))),
    }
}

fn invalid(msg: String) -> ApiError {
    err(Code::InvalidDocument, msg)
}

fn from_text(s: &str, format: &str, mut doc: DocumentIn) -> Result<DocumentIn, ApiError> {
    if s.trim().is_empty() {
        return Err(invalid("The document has no text.".into()));
    }
    doc.format = match format {
        "text" => "text",
        "markdown" => "markdown",
        _ if looks_like_markdown(s) => "markdown",
        _ => "text",
    };
    doc.pages = quarry_index::chunk::split_pages(s)
        .into_iter()
        .map(|p| PageDraft { text: p.text, number: p.number, volume: None, heading: p.heading })
        .collect();
    Ok(doc)
}

fn looks_like_markdown(s: &str) -> bool {
    s.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("# ") || l.starts_with("## ") || l.starts_with("```") || (l.starts_with('|') && l.ends_with('|'))
    })
}

fn pages(v: &Value, field: &str) -> Result<Vec<PageDraft>, ApiError> {
    let Value::Array(items) = v else { return Err(invalid(format!("{field} must be an array, not {}.", kind(v)))) };
    if items.is_empty() {
        return Err(invalid(format!("{field} must hold at least one page.")));
    }
    let out: Vec<PageDraft> = items.iter().enumerate().map(|(i, p)| page(p, &format!("{field}[{i}]"))).collect::<Result<_, _>>()?;
    if out.iter().all(|p| p.text.trim().is_empty()) {
        return Err(invalid("The document has no text.".into()));
    }
    Ok(out)
}

fn page(v: &Value, at: &str) -> Result<PageDraft, ApiError> {
    let o = match v {
        Value::String(s) => return Ok(PageDraft { text: s.clone(), ..PageDraft::default() }),
        Value::Object(o) => o,
        other => return Err(invalid(format!("{at} must be a string or an object with text, not {}.", kind(other)))),
    };
    let text = match o.get("text") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(invalid(format!("{at}.text must be a string, not {}.", kind(other)))),
        None => return Err(invalid(format!("{at}.text is required."))),
    };
    Ok(PageDraft {
        text,
        number: label(o.get("number"), &format!("{at}.number"))?,
        volume: label(o.get("volume"), &format!("{at}.volume"))?,
        heading: opt_string(o.get("heading"), &format!("{at}.heading"), Code::InvalidDocument)?,
    })
}

/// A printed page number or volume: a string or an integer, kept as text.
fn label(v: Option<&Value>, at: &str) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Some(n.to_string())),
        Some(other) => Err(invalid(format!("{at} must be a string, an integer or null, not {}.", kind(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bare_string_and_page_markers_make_pages() {
        let d = parse(&json!("One.\n--- page 7 ---\nTwo.\u{c}Three.")).unwrap();
        let texts: Vec<&str> = d.pages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["One.", "Two.", "Three."]);
        assert_eq!(d.pages[1].number.as_deref(), Some("7"));
        assert_eq!(d.format, "text");
        assert_eq!(parse(&json!({"text": "# Title\n\nBody"})).unwrap().format, "markdown");
    }

    #[test]
    fn pages_take_numbers_volumes_and_headings() {
        let d = parse(&json!({"pages": ["a", {"text": "b", "number": 12, "volume": "II", "heading": "Intro"}]})).unwrap();
        assert_eq!(d.pages[1], PageDraft { text: "b".into(), number: Some("12".into()), volume: Some("II".into()), heading: Some("Intro".into()) });
        assert_eq!(d.format, "pages");
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases = [
            (json!(5), "JSON string or an object"),
            (json!({}), "exactly one of"),
            (json!({"text": "a", "pages": ["b"]}), "text, pages"),
            (json!({"text": 5}), "text must be a string"),
            (json!({"text": "  "}), "no text"),
            (json!({"html": "<p>x</p>"}), "html format is not supported"),
            (json!({"content": "a,b", "format": "csv"}), "csv format is not supported"),
            (json!({"text": "a", "format": "yaml"}), "format must be one of"),
            (json!({"text": "a", "title": 3}), "title must be a string or null"),
            (json!({"text": "a", "metadata": []}), "metadata must be an object"),
            (json!({"text": "a", "chunker": "legal"}), "legal chunker is not available"),
            (json!({"pages": []}), "at least one page"),
            (json!({"pages": [{"number": 1}]}), "pages[0].text is required"),
            (json!({"pages": [{"text": "a", "number": 1.5}]}), "pages[0].number"),
        ];
        for (body, needle) in cases {
            let e = parse(&body).unwrap_err();
            assert_eq!(e.code, Code::InvalidDocument, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
    }

    #[test]
    fn metadata_flattens_to_dotted_keys_and_feeds_dates() {
        let d = parse(&json!({"text": "a", "metadata": {"client": {"name": "Acme"}, "tags": ["x", "y"], "date": "2024-03-14"}})).unwrap();
        let f = d.fields();
        use quarry_index::segment::{Field, FieldValue};
        assert!(f.contains(&Field { key: "client.name".into(), value: FieldValue::Str("Acme".into()) }));
        assert_eq!(f.iter().filter(|f| f.key == "tags").count(), 2);
        assert_eq!(d.dates(), vec![quarry_index::date::days_from_civil(2024, 3, 14)]);
    }
}
