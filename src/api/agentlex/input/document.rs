//! `DocumentInput`: a bare string (text or Markdown), or an object with exactly one
//! payload: `text`, `html`, `csv`, `tsv`, `json`, `pages` or `content` with the
//! `format` it is in (`auto` detects it). The payload becomes pages through the
//! engine's [`Format`]; whatever it refuses is 400 `invalid_document`, its message
//! naming the payload field and the line, column, row or record.

use std::fmt;

use serde::de::{self, value::MapAccessDeserializer, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::field::{accept, present, refuse, Accept, Leaf, Num, Obj, Shape, Text};
use crate::error::{ApiError, Code};
use quarry_index::chunk::Chunker;
use quarry_index::format::{check_pages, Format, FormatError, Parsed};
use quarry_index::ingest::PageDraft;

pub use crate::search::NewDocument as DocumentIn;

const PAYLOADS: &[&str] = &["text", "html", "csv", "tsv", "json", "pages", "content"];
const FORMATS: &[&str] = &["auto", "text", "markdown", "html", "csv", "tsv", "json", "pages"];
const CHUNKERS: &[&str] = &["classical", "medical", "legal", "prose"];

/// The body as sent. Public for the parse bench, which feeds it other parsers.
#[doc(hidden)]
pub enum Body {
    Text(String),
    Object(Box<Fields>),
}

impl<'de> Accept<'de> for Body {
    const WANT: &'static str = "a JSON string or an object";

    fn str<E: de::Error>(s: &str) -> Result<Self, E> {
        Ok(Body::Text(s.to_owned()))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        Fields::deserialize(MapAccessDeserializer::new(map)).map(|f| Body::Object(Box::new(f)))
    }
    fn wrong<E: de::Error>(kind: &str) -> E {
        refuse(format_args!("A document is a JSON string or an object, not {kind}."))
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

#[doc(hidden)]
#[derive(Deserialize)]
pub struct Fields {
    title: Option<Text>,
    author: Option<Text>,
    metadata: Option<Obj<Metadata>>,
    #[serde(default, deserialize_with = "present")]
    chunker: Option<ChunkerIn>,
    #[serde(default, deserialize_with = "present")]
    format: Option<FormatIn>,
    text: Option<Payload>,
    html: Option<Payload>,
    csv: Option<Payload>,
    tsv: Option<Payload>,
    /// Any JSON: a string holding JSON, an array of records or an object, kept as
    /// written for the JSON format (which keeps the keys' order).
    json: Option<Box<RawValue>>,
    pages: Option<Payload>,
    /// Of the kind `format` names, which may come after it: kept as written.
    content: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(transparent)]
struct Metadata(Map<String, Value>);

impl Shape for Metadata {}

/// `chunker`: one of the four.
struct ChunkerIn(Chunker);

impl<'de> Deserialize<'de> for ChunkerIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(name) => Chunker::parse(&name).map(ChunkerIn).ok_or_else(|| refuse(format_args!("must be one of {}.", CHUNKERS.join(", ")))),
            _ => Err(refuse(format_args!("must be one of {}.", CHUNKERS.join(", ")))),
        }
    }
}

/// `format`: a format, or `None` for `auto`.
struct FormatIn(Option<Format>);

impl<'de> Deserialize<'de> for FormatIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let refused = || refuse(format_args!("must be one of {}.", FORMATS.join(", ")));
        match Leaf::deserialize(d)? {
            Leaf::Str(name) if name == "auto" => Ok(FormatIn(None)),
            Leaf::Str(name) => Format::parse(&name).map(|f| FormatIn(Some(f))).ok_or_else(refused),
            _ => Err(refused()),
        }
    }
}

/// A payload field as given: a string or `pages[]`, its type checked against what
/// the field takes.
enum Payload {
    Str(String),
    Pages(Vec<PageDraft>),
    Other(&'static str),
}

impl Payload {
    fn kind(&self) -> &'static str {
        match self {
            Payload::Str(_) => "a string",
            Payload::Pages(_) => "an array",
            Payload::Other(kind) => kind,
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PayloadVisitor)
    }
}

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a document payload")
    }
    fn visit_str<E>(self, s: &str) -> Result<Payload, E> {
        Ok(Payload::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Payload, E> {
        Ok(Payload::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Payload, A::Error> {
        let mut pages = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(PageIn(p)) = seq.next_element()? {
            pages.push(p);
        }
        Ok(Payload::Pages(pages))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Payload, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Payload::Other("an object"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Payload, E> {
        Ok(Payload::Other("a boolean"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Payload, E> {
        Ok(Payload::Other("a number"))
    }
}

/// One of `pages[]`: a string, or an object with its text and printed labels.
struct PageIn(PageDraft);

#[derive(Deserialize)]
struct PageFields {
    #[serde(default, deserialize_with = "present")]
    text: Option<PageText>,
    number: Option<Label>,
    volume: Option<Label>,
    heading: Option<Text>,
}

impl<'de> Accept<'de> for PageIn {
    const WANT: &'static str = "a string or an object with text";

    fn str<E: de::Error>(s: &str) -> Result<Self, E> {
        Ok(PageIn(PageDraft { text: s.to_owned(), ..PageDraft::default() }))
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let p = PageFields::deserialize(MapAccessDeserializer::new(map))?;
        let Some(PageText(text)) = p.text else { return Err(refuse(".text is required.")) };
        Ok(PageIn(PageDraft { text, number: p.number.map(|l| l.0), volume: p.volume.map(|l| l.0), heading: p.heading.map(|h| h.0), meta: None }))
    }
}

impl<'de> Deserialize<'de> for PageIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

struct PageText(String);

impl<'de> Deserialize<'de> for PageText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => Ok(PageText(s)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// A printed page number or volume: a string or an integer, kept as text.
struct Label(String);

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => Ok(Label(s)),
            Leaf::Num(Num::Unsigned(n)) => Ok(Label(n.to_string())),
            Leaf::Num(Num::Negative(n)) => Ok(Label(n.to_string())),
            other => Err(refuse(format_args!("must be a string, an integer or null, not {}.", other.kind()))),
        }
    }
}

pub fn parse(bytes: &[u8]) -> Result<DocumentIn, ApiError> {
    if let Err(e) = std::str::from_utf8(bytes) {
        let at = e.valid_up_to();
        return Err(invalid(format!("The body holds a byte that is not UTF-8 at byte {at}: binary data is not a document.")));
    }
    build(crate::http::body::json_any(bytes, Code::InvalidDocument)?)
}

/// Bodies past this size are parsed off the shard (HTML and CSV parsing take CPU).
const PARSE_INLINE_BYTES: usize = 64 * 1024;

/// [`parse`], on the blocking pool for a large body so the shard keeps serving.
pub async fn parse_off_shard(bytes: bytes::Bytes) -> Result<DocumentIn, ApiError> {
    if bytes.len() <= PARSE_INLINE_BYTES {
        return parse(&bytes);
    }
    crate::runtime::blocking(move || parse(&bytes)).await
}

/// The document of a parsed body: exactly one payload, read in its format.
#[doc(hidden)]
pub fn build(body: Body) -> Result<DocumentIn, ApiError> {
    let f = match body {
        Body::Text(s) => return document(DocumentIn::default(), "text", Format::detect_text(&s), &s),
        Body::Object(f) => *f,
    };
    let doc = DocumentIn {
        title: f.title.map(|t| t.0),
        author: f.author.map(|t| t.0),
        metadata: f.metadata.map(|m| m.0 .0).unwrap_or_default(),
        chunker: f.chunker.map(|c| c.0),
        ..DocumentIn::default()
    };
    let format = f.format.and_then(|f| f.0);
    let given = [f.text.is_some(), f.html.is_some(), f.csv.is_some(), f.tsv.is_some(), f.json.is_some(), f.pages.is_some(), f.content.is_some()];
    let names: Vec<&str> = PAYLOADS.iter().zip(given).filter(|(_, g)| *g).map(|(n, _)| *n).collect();
    match names.len() {
        1 => {}
        0 => return Err(invalid(format!("A document needs exactly one of {}.", PAYLOADS.join(", ")))),
        _ => return Err(invalid(format!("A document takes exactly one payload; it has {}.", names.join(", "))).at(names[1])),
    }
    let field = names[0];
    let fits = |allowed: &[Format]| match format {
        Some(f) if !allowed.contains(&f) => Err(invalid(format!("format {} does not match the {field} payload.", f.as_str())).at("format")),
        _ => Ok(()),
    };
    if let Some(p) = f.text {
        fits(&[Format::Text, Format::Markdown])?;
        let s = string(field, p)?;
        return document(doc, field, format.unwrap_or_else(|| Format::detect_text(&s)), &s);
    }
    for (p, named) in [(f.html, Format::Html), (f.csv, Format::Csv), (f.tsv, Format::Tsv)] {
        if let Some(p) = p {
            fits(&[named])?;
            return document(doc, field, named, &string(field, p)?);
        }
    }
    if let Some(raw) = f.json {
        fits(&[Format::Json])?;
        return document(doc, field, Format::Json, raw.get());
    }
    if let Some(p) = f.pages {
        fits(&[Format::Pages])?;
        return match p {
            Payload::Pages(pages) => pages_document(doc, field, pages),
            other => Err(invalid(format!("pages must be an array, not {}.", other.kind())).at(field)),
        };
    }
    let raw = f.content.expect("one payload is given");
    content(doc, format, &raw)
}

/// `content`: read as `format` says, or as it looks (`auto`): a string by its text,
/// an array of page-like items as pages, any other array or an object as JSON.
fn content(doc: DocumentIn, format: Option<Format>, raw: &RawValue) -> Result<DocumentIn, ApiError> {
    let first = raw.get().trim_start().as_bytes().first().copied();
    let format = match format {
        Some(f) => f,
        None if first == Some(b'"') => Format::detect(&content_string(raw, "auto")?),
        None if first == Some(b'[') && looks_like_pages(raw) => Format::Pages,
        None => Format::Json,
    };
    match format {
        Format::Json => document(doc, "content", Format::Json, raw.get()),
        Format::Pages => {
            let pages = crate::http::body::json_any::<PagesIn>(raw.get().as_bytes(), Code::InvalidDocument).map_err(|e| {
                let sep = if e.message.starts_with('[') { "" } else { ": " };
                invalid(format!("content{sep}{}", e.message)).at("content")
            })?;
            pages_document(doc, "content", pages.0)
        }
        f => document(doc, "content", f, &content_string(raw, f.as_str())?),
    }
}

fn content_string(raw: &RawValue, format: &str) -> Result<String, ApiError> {
    serde_json::from_str::<String>(raw.get()).map_err(|_| invalid(format!("content must be a string for format {format}.")).at("content"))
}

/// An array whose items are all strings or objects with a string `text` and only the
/// keys of a page.
fn looks_like_pages(raw: &RawValue) -> bool {
    let Ok(items) = serde_json::from_str::<Vec<Value>>(raw.get()) else { return false };
    let page = |v: &Value| match v {
        Value::String(_) => true,
        Value::Object(o) => {
            o.get("text").is_some_and(Value::is_string) && o.keys().all(|k| ["text", "number", "volume", "heading"].contains(&k.as_str()))
        }
        _ => false,
    };
    !items.is_empty() && items.iter().all(page)
}

struct PagesIn(Vec<PageDraft>);

impl<'de> Deserialize<'de> for PagesIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Payload::deserialize(d)? {
            Payload::Pages(p) => Ok(PagesIn(p)),
            other => Err(refuse(format_args!("content must be an array of pages for format pages, not {}.", other.kind()))),
        }
    }
}

fn string(field: &str, p: Payload) -> Result<String, ApiError> {
    match p {
        Payload::Str(s) => Ok(s),
        other => Err(invalid(format!("{field} must be a string, not {}.", other.kind())).at(field.to_owned())),
    }
}

/// `doc` with the pages `input` makes in `format`.
fn document(doc: DocumentIn, field: &str, format: Format, input: &str) -> Result<DocumentIn, ApiError> {
    let Parsed { pages, title } = format.read(input).map_err(|e| format_error(field, format, &e))?;
    Ok(DocumentIn { title: doc.title.clone().or(title), pages, format: format.as_str(), ..doc })
}

fn pages_document(doc: DocumentIn, field: &str, pages: Vec<PageDraft>) -> Result<DocumentIn, ApiError> {
    check_pages(&pages).map_err(|e| format_error(field, Format::Pages, &e))?;
    Ok(DocumentIn { pages, format: Format::Pages.as_str(), ..doc })
}

/// "csv: row 3 (line 4) has 3 fields; the header has 2." — the field, then what and where.
fn format_error(field: &str, format: Format, e: &FormatError) -> ApiError {
    let message = match e {
        FormatError::NoText { .. } => "The document has no text.".to_owned(),
        FormatError::InPage { .. } => format!("{field}{e}"),
        _ if field == "content" => format!("content ({}): {e}", format.as_str()),
        _ => format!("{field}: {e}"),
    };
    invalid(message).at(field.to_owned())
}

fn invalid(msg: String) -> ApiError {
    ApiError::new(Code::InvalidDocument, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(body: &Value) -> Result<DocumentIn, ApiError> {
        parse(body.to_string().as_bytes())
    }

    #[test]
    fn a_bare_string_and_page_markers_make_pages() {
        let d = p(&json!("One.\n--- page 7 ---\nTwo.\u{c}Three.")).unwrap();
        let texts: Vec<&str> = d.pages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["One.", "Two.", "Three."]);
        assert_eq!(d.pages[1].number.as_deref(), Some("7"));
        assert_eq!(d.format, "text");
        assert_eq!(p(&json!({"text": "# Title\n\nBody"})).unwrap().format, "markdown");
    }

    #[test]
    fn pages_take_numbers_volumes_and_headings() {
        let d = p(&json!({"pages": ["a", {"text": "b", "number": 12, "volume": "II", "heading": "Intro"}]})).unwrap();
        assert_eq!(
            d.pages[1],
            PageDraft { text: "b".into(), number: Some("12".into()), volume: Some("II".into()), heading: Some("Intro".into()), meta: None }
        );
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
            (json!({"html": "<script>x</script>"}), "no text"),
            (json!({"csv": "a,b\n1,\"2\n"}), "csv: the quoted field that starts at line 2, column 3 has no closing quote"),
            (json!({"content": "a,b\n1,2,3", "format": "csv"}), "content (csv): row 1 (line 2) has 3 fields"),
            (json!({"json": "[{\"a\": 1}, 2]"}), "json: [1] is a number, not an object"),
            (json!({"json": "[{\"a\": 1},"}), "json: does not parse as JSON"),
            (json!({"json": [{"a": 1}, "x"]}), "json: [1] is a string"),
            (json!({"text": "a\u{0}b"}), "text: holds the control character U+0000 at line 1, column 2"),
            (json!({"pages": ["ok", {"text": "\u{1}"}]}), "pages[1].text: holds the control character U+0001"),
            (json!({"html": "<p>x</p>", "format": "csv"}), "format csv does not match the html payload"),
            (json!({"csv": 5}), "csv must be a string, not a number"),
            (json!({"content": [1], "format": "text"}), "content must be a string for format text"),
            (json!({"text": "a", "format": "yaml"}), "format must be one of"),
            (json!({"text": "a", "title": 3}), "title must be a string or null"),
            (json!({"json": [{"a": 1}], "content": {"b": 2}, "title": 3}), "title must be a string or null"),
            (json!({"json": [{"a": 1}], "content": {"b": 2}}), "exactly one payload; it has json, content"),
            (json!({"text": "a", "metadata": []}), "metadata must be an object"),
            (json!({"text": "a", "chunker": "poetry"}), "chunker must be one of classical, medical, legal, prose"),
            (json!({"pages": []}), "at least one page"),
            (json!({"pages": [{"number": 1}]}), "pages[0].text is required"),
            (json!({"pages": [{"text": "a", "number": 1.5}]}), "pages[0].number"),
        ];
        for (body, needle) in cases {
            let e = p(&body).unwrap_err();
            assert_eq!(e.code, Code::InvalidDocument, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
    }

    #[test]
    fn every_payload_reads_in_its_format() {
        let cases = [
            (json!({"text": "plain"}), "text"),
            (json!({"html": "<h1>T</h1><p>x</p>"}), "html"),
            (json!({"csv": "a,b\n1,2"}), "csv"),
            (json!({"tsv": "a\tb\n1\t2"}), "tsv"),
            (json!({"json": [{"a": 1}]}), "json"),
            (json!({"json": "{\"a\": 1}"}), "json"),
            (json!({"json": {"a": 1}}), "json"),
            (json!({"content": "<p>x</p>"}), "html"),
            (json!({"content": "a,b\n1,2\n3,4"}), "csv"),
            (json!({"content": [{"a": 1}]}), "json"),
            (json!({"content": ["one", {"text": "two", "number": 2}]}), "pages"),
            (json!({"content": ["one"], "format": "pages"}), "pages"),
            (json!({"content": "# T\n\nx", "format": "auto"}), "markdown"),
            (json!({"content": "x", "format": "markdown"}), "markdown"),
        ];
        for (body, format) in cases {
            let d = p(&body).unwrap_or_else(|e| panic!("{body}: {}", e.message));
            assert_eq!(d.format, format, "{body}");
        }
        let d = p(&json!({"html": "<title>From HTML</title><p>x</p>", "chunker": "legal"})).unwrap();
        assert_eq!((d.title.as_deref(), d.chunker), (Some("From HTML"), Some(Chunker::Legal)));
        let d = parse(br#"{"json": [{"b": 1, "a": 2}]}"#).unwrap();
        assert_eq!(d.pages[0].text, "b: 1\na: 2");
        let e = parse(b"\"a\xff\"").unwrap_err();
        assert!(e.message.contains("not UTF-8 at byte 2"), "{}", e.message);
    }

    #[test]
    fn metadata_flattens_to_dotted_keys_and_feeds_dates() {
        let d = p(&json!({"text": "a", "metadata": {"client": {"name": "Acme"}, "tags": ["x", "y"], "date": "2024-03-14"}})).unwrap();
        let f = d.fields();
        use quarry_index::segment::{Field, FieldValue};
        assert!(f.contains(&Field { key: "client.name".into(), value: FieldValue::Str("Acme".into()) }));
        assert_eq!(f.iter().filter(|f| f.key == "tags").count(), 2);
        assert_eq!(d.dates(), vec![quarry_index::date::days_from_civil(2024, 3, 14)]);
    }
}
