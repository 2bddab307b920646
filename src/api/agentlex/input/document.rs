//! `DocumentInput`: a bare string, or an object with exactly one payload. Text and
//! Markdown split into pages at form feeds and `--- page N ---` lines; `pages[]` are
//! printed pages. Other formats come with their chunkers in a later version and are
//! refused by name until then.

use std::fmt;

use serde::de::{self, value::MapAccessDeserializer, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::field::{accept, present, refuse, Accept, Leaf, Num, Obj, Shape, Text};
use crate::error::{ApiError, Code};
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
    /// Checked only: prose is the one chunker of this version.
    #[serde(default, deserialize_with = "present", rename = "chunker")]
    _chunker: Option<Chunker>,
    #[serde(default, deserialize_with = "present")]
    format: Option<Format>,
    text: Option<Payload>,
    html: Option<IgnoredAny>,
    csv: Option<IgnoredAny>,
    tsv: Option<IgnoredAny>,
    json: Option<IgnoredAny>,
    pages: Option<Payload>,
    content: Option<Payload>,
}

#[derive(Deserialize)]
#[serde(transparent)]
struct Metadata(Map<String, Value>);

impl Shape for Metadata {}

/// `chunker`: only prose in this version; the others are refused by name.
struct Chunker;

impl<'de> Deserialize<'de> for Chunker {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(name) if name == "prose" => Ok(Chunker),
            Leaf::Str(name) if CHUNKERS.contains(&name.as_str()) => {
                Err(refuse(format_args!(": the {name} chunker is not available in this version; use \"prose\" or leave chunker out.")))
            }
            _ => Err(refuse(format_args!("must be one of {}.", CHUNKERS.join(", ")))),
        }
    }
}

struct Format(&'static str);

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let given = Leaf::deserialize(d)?;
        match FORMATS.iter().find(|f| matches!(&given, Leaf::Str(s) if s == *f)) {
            Some(f) => Ok(Format(f)),
            None => Err(refuse(format_args!("must be one of {}.", FORMATS.join(", ")))),
        }
    }
}

/// A payload field as given: which one must hold what depends on the others
/// (`content` takes the kind `format` names), so its type is checked after.
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
    build(crate::http::body::json_any(bytes, Code::InvalidDocument)?)
}

/// The document of a parsed body: exactly one payload, of the kind its format says.
#[doc(hidden)]
pub fn build(body: Body) -> Result<DocumentIn, ApiError> {
    let f = match body {
        Body::Text(s) => return from_text(&s, "auto", DocumentIn::default()),
        Body::Object(f) => *f,
    };
    let doc = DocumentIn {
        title: f.title.map(|t| t.0),
        author: f.author.map(|t| t.0),
        metadata: f.metadata.map(|m| m.0 .0).unwrap_or_default(),
        ..DocumentIn::default()
    };
    let format = f.format.map_or("auto", |f| f.0);
    let other = |p: Option<IgnoredAny>| p.map(|_| Payload::Other(""));
    let all = [f.text, other(f.html), other(f.csv), other(f.tsv), other(f.json), f.pages, f.content];
    let mut given: Vec<(&str, Payload)> = PAYLOADS.iter().copied().zip(all).filter_map(|(name, p)| Some((name, p?))).collect();
    let (payload, value) = match given.len() {
        1 => given.pop().expect("one"),
        0 => return Err(invalid(format!("A document needs exactly one of {}.", PAYLOADS.join(", ")))),
        _ => {
            let names: Vec<&str> = given.iter().map(|(name, _)| *name).collect();
            return Err(invalid(format!("A document takes exactly one payload; it has {}.", names.join(", "))));
        }
    };
    let kind_of = if payload == "content" { format } else { payload };
    match (kind_of, value) {
        ("text" | "auto" | "markdown", value) => {
            if !matches!(format, "auto" | "text" | "markdown") {
                return Err(invalid(format!("format {format} does not match the {payload} payload.")));
            }
            match value {
                Payload::Str(s) => from_text(&s, format, doc),
                other => Err(invalid(format!("{payload} must be a string, not {}.", other.kind()))),
            }
        }
        ("pages", value) => {
            if !matches!(format, "auto" | "pages") {
                return Err(invalid(format!("format {format} does not match the pages payload.")));
            }
            match value {
                Payload::Pages(p) if p.is_empty() => Err(invalid(format!("{payload} must hold at least one page."))),
                Payload::Pages(p) if p.iter().all(|p| p.text.trim().is_empty()) => Err(invalid("The document has no text.".into())),
                Payload::Pages(pages) => Ok(DocumentIn { pages, format: "pages", ..doc }),
                other => Err(invalid(format!("{payload} must be an array, not {}.", other.kind()))),
            }
        }
        (other, _) => {
            Err(invalid(format!("The {other} format is not supported in this version; send the text as text (plain or Markdown) or as pages[].")))
        }
    }
}

fn invalid(msg: String) -> ApiError {
    ApiError::new(Code::InvalidDocument, msg)
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
        .map(|p| PageDraft { text: p.text, number: p.number, volume: None, heading: p.heading, meta: None })
        .collect();
    Ok(doc)
}

fn looks_like_markdown(s: &str) -> bool {
    s.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("# ") || l.starts_with("## ") || l.starts_with("```") || (l.starts_with('|') && l.ends_with('|'))
    })
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
            let e = p(&body).unwrap_err();
            assert_eq!(e.code, Code::InvalidDocument, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
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
