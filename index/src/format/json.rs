//! JSON: an array of records (objects), one page each, or one object, one page; or a
//! JSON string holding either. A record is written as `key: value` lines in the order
//! given, nested keys dotted (`address.city: Lyon`), array items indexed
//! (`authors[0].name: …`, scalars joined: `tags: a, b`), nulls and empty values left
//! out. Its `title`, `name`, `heading` or `subject` string is the page's heading; the
//! page's meta is `{"record": i}`, the record's index in the array.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{FormatError, Parsed};
use crate::ingest::PageDraft;

const HEADING_KEYS: [&str; 4] = ["title", "name", "heading", "subject"];

pub(super) fn read(input: &str) -> Result<Parsed, FormatError> {
    let node = match parse(input)? {
        Node::Str(inner) => parse(&inner)?,
        node => node,
    };
    let pages = match node {
        Node::Arr(items) => {
            let mut pages = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let Node::Obj(fields) = item else { return Err(FormatError::NotARecord { record: i, found: item.kind() }) };
                pages.extend(page(&fields, Some(i)));
            }
            pages
        }
        Node::Obj(fields) => page(&fields, None).into_iter().collect(),
        other => return Err(FormatError::NotRecords { found: other.kind() }),
    };
    Ok(Parsed { pages, title: None })
}

fn parse(input: &str) -> Result<Node, FormatError> {
    serde_json::from_str(input).map_err(|e| {
        let reason = e.to_string();
        let reason = reason.split(" at line ").next().unwrap_or(&reason).to_owned();
        FormatError::Json { reason, line: e.line(), column: e.column() }
    })
}

/// A record's page; `None` when it holds nothing to show.
fn page(fields: &[(String, Node)], index: Option<usize>) -> Option<PageDraft> {
    let mut text = String::new();
    for (key, value) in fields {
        write(&mut text, key, value);
    }
    if text.trim().is_empty() {
        return None;
    }
    let heading = HEADING_KEYS.iter().find_map(|k| {
        fields.iter().find(|(key, _)| key == k).and_then(|(_, v)| match v {
            Node::Str(s) if !s.trim().is_empty() => Some(s.split_whitespace().collect::<Vec<_>>().join(" ")),
            _ => None,
        })
    });
    let meta = index.map(|i| Map::from_iter([("record".to_owned(), Value::from(i))]));
    Some(PageDraft { text, number: None, volume: None, heading, meta })
}

/// `key: value` lines for `value` under `key`.
fn write(out: &mut String, key: &str, value: &Node) {
    match value {
        Node::Null => {}
        Node::Obj(fields) => {
            for (k, v) in fields {
                write(out, &format!("{key}.{k}"), v);
            }
        }
        Node::Arr(items) if items.iter().all(Node::is_scalar) => {
            let items: Vec<&str> = items.iter().filter_map(Node::scalar).filter(|s| !s.is_empty()).collect();
            if !items.is_empty() {
                line(out, key, &items.join(", "));
            }
        }
        Node::Arr(items) => {
            for (i, v) in items.iter().enumerate() {
                write(out, &format!("{key}[{i}]"), v);
            }
        }
        scalar => {
            if let Some(s) = scalar.scalar().filter(|s| !s.trim().is_empty()) {
                line(out, key, s.trim());
            }
        }
    }
}

fn line(out: &mut String, key: &str, value: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(key);
    out.push_str(": ");
    out.push_str(value);
}

/// A JSON value with its objects' keys in the order written (serde_json's `Map` sorts
/// them unless a crate-wide feature is on, which would reorder every map of the server).
enum Node {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

impl Node {
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Num(_) => "a number",
            Node::Str(_) => "a string",
            Node::Arr(_) => "an array",
            Node::Obj(_) => "an object",
        }
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Node::Arr(_) | Node::Obj(_))
    }

    fn scalar(&self) -> Option<&str> {
        match self {
            Node::Bool(true) => Some("true"),
            Node::Bool(false) => Some("false"),
            Node::Num(n) | Node::Str(n) => Some(n),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
        Ok(Node::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Node, E> {
        Ok(Node::Num(n.to_string()))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Node, E> {
        Ok(Node::Num(n.to_string()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Node, E> {
        Ok(Node::Num(n.to_string()))
    }
    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(Node::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Node, E> {
        Ok(Node::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            fields.push((k, v));
        }
        Ok(Node::Obj(fields))
    }
}
