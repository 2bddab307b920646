//! The JSON paths manifests use to point into provider payloads: `$.a.b[0]`,
//! `choices[0].delta.content`, wildcards `[*]` (fan-out) and the small filters
//! `[?(@.k)]`, `[?(!@.k)]`, `[?(@.k == 'v')]`. Every match carries the indices its
//! wildcards took, so fields drawn from one frame can be lined up element by element.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
    Wild,
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    key: String,
    negate: bool,
    equals: Option<Value>,
}

impl Filter {
    fn keeps(&self, v: &Value) -> bool {
        let field = v.get(&self.key).filter(|f| !f.is_null());
        let hit = match (&self.equals, field) {
            (Some(want), Some(got)) => want == got,
            (None, Some(got)) => got != &Value::Bool(false),
            (_, None) => false,
        };
        hit != self.negate
    }
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    segs: Vec<Seg>,
    text: String,
}

/// One match: the value and the indices its wildcards and filters took.
pub type Hit<'a> = (Vec<usize>, &'a Value);

impl Path {
    pub fn parse(text: &str) -> Result<Path, String> {
        let body = text.trim();
        let body = body.strip_prefix('$').unwrap_or(body);
        let body = body.strip_prefix('.').unwrap_or(body);
        let mut segs = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            rest = rest.strip_prefix('.').unwrap_or(rest);
            if let Some(inner) = rest.strip_prefix('[') {
                let end = closing(inner).ok_or_else(|| format!("unclosed `[` in path `{text}`"))?;
                segs.push(bracket(&inner[..end]).map_err(|e| format!("{e} in path `{text}`"))?);
                rest = &inner[end + 1..];
            } else {
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                if end == 0 {
                    return Err(format!("empty segment in path `{text}`"));
                }
                segs.push(Seg::Key(rest[..end].to_owned()));
                rest = &rest[end..];
            }
        }
        Ok(Path { segs, text: text.to_owned() })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many segments fan out (wildcards and filters).
    pub fn fan_out(&self) -> usize {
        self.segs.iter().filter(|s| matches!(s, Seg::Wild | Seg::Filter(_))).count()
    }

    /// The first match, if any.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root, &mut |_| true)
    }

    /// The first match (in document order) that `keep` accepts: the walk allocates
    /// nothing and stops there. What `all(root).find(..)` gives, for the hot path
    /// (every rule of an event map runs on every streamed frame).
    pub fn find<'a>(&self, root: &'a Value, keep: &mut dyn FnMut(&Value) -> bool) -> Option<&'a Value> {
        find(&self.segs, root, keep)
    }

    /// Every match, in document order.
    pub fn all<'a>(&self, root: &'a Value) -> Vec<Hit<'a>> {
        let mut out = Vec::new();
        walk(&self.segs, root, &mut Vec::new(), &mut out);
        out
    }
}

fn find<'a>(segs: &[Seg], v: &'a Value, keep: &mut dyn FnMut(&Value) -> bool) -> Option<&'a Value> {
    let Some((seg, rest)) = segs.split_first() else {
        return keep(v).then_some(v);
    };
    match seg {
        Seg::Key(k) => find(rest, v.get(k)?, keep),
        Seg::Index(i) => find(rest, v.get(*i)?, keep),
        Seg::Wild | Seg::Filter(_) => v.as_array()?.iter().find_map(|item| match seg {
            Seg::Filter(f) if !f.keeps(item) => None,
            _ => find(rest, item, keep),
        }),
    }
}

fn walk<'a>(segs: &[Seg], v: &'a Value, at: &mut Vec<usize>, out: &mut Vec<Hit<'a>>) {
    let Some((seg, rest)) = segs.split_first() else {
        out.push((at.clone(), v));
        return;
    };
    match seg {
        Seg::Key(k) => {
            if let Some(next) = v.get(k) {
                walk(rest, next, at, out);
            }
        }
        Seg::Index(i) => {
            if let Some(next) = v.get(*i) {
                walk(rest, next, at, out);
            }
        }
        Seg::Wild | Seg::Filter(_) => {
            let Some(items) = v.as_array() else { return };
            for (i, item) in items.iter().enumerate() {
                if let Seg::Filter(f) = seg {
                    if !f.keeps(item) {
                        continue;
                    }
                }
                at.push(i);
                walk(rest, item, at, out);
                at.pop();
            }
        }
    }
}

/// What a set of paths can reach in a document: the keys they name, the elements of
/// the arrays they index or fan out over, and the values where they end (kept whole).
/// [`parse`](Shape::parse) builds only that much of a document: a streamed frame's
/// event map reads a few fields of each frame, and the rest (ids, models, content
/// filter results, logprobs) is skipped unallocated. Every path added finds in the
/// shaped document exactly what it finds in the whole one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    whole: bool,
    /// A path ends here that asks only whether the value is there and not null.
    present: bool,
    keys: Vec<(String, Shape)>,
    items: Option<Box<Shape>>,
}

impl Shape {
    /// The whole document, as `serde_json::from_str` parses it.
    pub fn whole() -> Shape {
        Shape { whole: true, ..Shape::default() }
    }

    /// Adds a path whose values are read.
    pub fn add(&mut self, path: &Path) {
        self.add_segs(&path.segs, false);
    }

    /// Adds a path of which only whether it finds a value that is not null is asked
    /// (`exists($.p)`): where nothing else reaches, such a value is parsed to a
    /// stand-in (`true`) and its contents are skipped.
    pub fn add_presence(&mut self, path: &Path) {
        self.add_segs(&path.segs, true);
    }

    fn add_segs(&mut self, segs: &[Seg], presence: bool) {
        if self.whole {
            return;
        }
        let Some((seg, rest)) = segs.split_first() else {
            if presence {
                self.present = true;
            } else {
                *self = Shape::whole();
            }
            return;
        };
        match seg {
            Seg::Key(k) => self.key(k).add_segs(rest, presence),
            Seg::Index(_) | Seg::Wild => self.items().add_segs(rest, presence),
            Seg::Filter(f) => {
                let items = self.items();
                // The filter reads its key on every element.
                items.key(&f.key).add_segs(&[], false);
                items.add_segs(rest, presence);
            }
        }
    }

    fn key(&mut self, k: &str) -> &mut Shape {
        let at = match self.keys.iter().position(|(name, _)| name == k) {
            Some(at) => at,
            None => {
                self.keys.push((k.to_owned(), Shape::default()));
                self.keys.len() - 1
            }
        };
        &mut self.keys[at].1
    }

    fn items(&mut self) -> &mut Shape {
        self.items.get_or_insert_with(Box::default)
    }

    /// `json` parsed as far as the shape reaches: an object keeps only the shape's keys,
    /// an array its elements only when the shape reaches into them (else it is empty),
    /// a value where a path ends is parsed whole, or to `true` (null stays null) when
    /// only its presence is asked. Invalid JSON is an error wherever it is, skipped
    /// parts included.
    pub fn parse(&self, json: &str) -> serde_json::Result<Value> {
        let mut de = serde_json::Deserializer::from_str(json);
        let v = self.deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    }
}

impl<'de> DeserializeSeed<'de> for &Shape {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.whole {
            return Value::deserialize(d);
        }
        if self.present && self.keys.is_empty() && self.items.is_none() {
            // Null, or a stand-in for any other value, whose contents are skipped.
            return Ok(Option::<IgnoredAny>::deserialize(d)?.map_or(Value::Null, |_| Value::Bool(true)));
        }
        d.deserialize_any(Shaped(self))
    }
}

/// Builds a [`Value`] as serde_json's own visitor does, keeping only what the shape reaches.
struct Shaped<'s>(&'s Shape);

impl<'de> Visitor<'de> for Shaped<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        match &self.0.items {
            Some(items) => {
                while let Some(v) = seq.next_element_seed(&**items)? {
                    out.push(v);
                }
            }
            None => while seq.next_element::<IgnoredAny>()?.is_some() {},
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(KeyIn(self.0))? {
            match key {
                Some((name, shape)) => {
                    let v = map.next_value_seed(shape)?;
                    out.insert(name.clone(), v);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// An object key, looked up among the shape's keys without being copied.
struct KeyIn<'s>(&'s Shape);

impl<'de, 's> DeserializeSeed<'de> for KeyIn<'s> {
    type Value = Option<&'s (String, Shape)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 's> Visitor<'de> for KeyIn<'s> {
    type Value = Option<&'s (String, Shape)>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, k: &str) -> Result<Self::Value, E> {
        Ok(self.0.keys.iter().find(|(name, _)| name == k))
    }
}

/// The index of the `]` that closes a bracket, skipping quoted text.
fn closing(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str) -> Result<Seg, String> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Seg::Wild);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Seg::Index(i));
    }
    if let Some(quoted) = unquote(inner) {
        return Ok(Seg::Key(quoted));
    }
    let f = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')).ok_or_else(|| format!("bad bracket `[{inner}]`"))?;
    let (negate, f) = match f.trim().strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, f.trim()),
    };
    let f = f.strip_prefix("@.").ok_or_else(|| format!("filter `{f}` must start with @."))?;
    let (key, equals) = match f.split_once("==") {
        Some((k, v)) => (k.trim(), Some(literal(v.trim()).ok_or_else(|| format!("bad literal `{v}`"))?)),
        None => (f.trim(), None),
    };
    Ok(Seg::Filter(Filter { key: key.to_owned(), negate, equals }))
}

fn unquote(s: &str) -> Option<String> {
    let q = s.chars().next()?;
    (matches!(q, '\'' | '"') && s.len() >= 2 && s.ends_with(q)).then(|| s[1..s.len() - 1].to_owned())
}

/// A literal in a path filter or a match expression: a quoted string, a number,
/// `true`, `false` or `null`.
pub fn literal(s: &str) -> Option<Value> {
    if let Some(text) = unquote(s) {
        return Some(Value::String(text));
    }
    match s {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        _ => serde_json::from_str::<serde_json::Number>(s).ok().map(Value::Number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn find_is_the_first_of_all_that_passes() {
        let v = json!({"choices": [{"index": 0, "delta": {"content": null}}, {"index": 1, "delta": {"content": "b"}}, {"delta": {"content": "c"}}]});
        for text in [
            "$.choices[*].delta.content",
            "$.choices[0].delta.content",
            "$.choices[?(@.index)].delta.content",
            "$.choices[*].index",
            "$.nope[*].x",
            "$.choices",
        ] {
            let p = Path::parse(text).unwrap();
            for keep in [&(|x: &Value| !x.is_null()) as &dyn Fn(&Value) -> bool, &|_: &Value| true, &|x: &Value| *x == json!("c")] {
                let slow = p.all(&v).into_iter().map(|h| h.1).find(|x| keep(x));
                assert_eq!(p.find(&v, &mut |x| keep(x)), slow, "{text}");
            }
        }
    }

    #[test]
    fn keys_indices_and_wildcards() {
        let v = json!({"choices": [{"delta": {"tool_calls": [{"index": 0}, {"index": 3}]}}]});
        let p = Path::parse("$.choices[*].delta.tool_calls[*].index").unwrap();
        let hits: Vec<_> = p.all(&v).into_iter().map(|(at, v)| (at, v.clone())).collect();
        assert_eq!(hits, vec![(vec![0, 0], json!(0)), (vec![0, 1], json!(3))]);
        assert_eq!(Path::parse("choices[0].delta.tool_calls[1].index").unwrap().first(&v), Some(&json!(3)));
        assert_eq!(p.fan_out(), 2);
    }

    #[test]
    fn filters_keep_or_drop_elements() {
        let v = json!({"parts": [{"text": "a", "thought": true}, {"text": "b"}, {"type": "x", "text": "c"}]});
        let texts = |p: &str| -> Vec<Value> { Path::parse(p).unwrap().all(&v).into_iter().map(|h| h.1.clone()).collect() };
        assert_eq!(texts("$.parts[?(@.thought)].text"), vec![json!("a")]);
        assert_eq!(texts("$.parts[?(!@.thought)].text"), vec![json!("b"), json!("c")]);
        assert_eq!(texts("$.parts[?(@.type == 'x')].text"), vec![json!("c")]);
    }

    #[test]
    fn bad_paths_are_refused() {
        assert!(Path::parse("$.a[").is_err());
        assert!(Path::parse("$.a..b").is_err());
        assert!(Path::parse("$.a[?(x)]").is_err());
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;
    use serde_json::json;

    fn shape(paths: &[&str]) -> Shape {
        let mut s = Shape::default();
        for p in paths {
            s.add(&Path::parse(p).unwrap());
        }
        s
    }

    #[test]
    fn a_shape_keeps_what_its_paths_reach_and_nothing_else() {
        let s = shape(&["$.choices[*].delta.content", "$.choices[?(@.index == 0)].finish_reason", "$.usage"]);
        let text = r#"{"id":"x","choices":[{"index":0,"delta":{"content":"a","role":"assistant"},"finish_reason":null,"logprobs":{"content":[1,2]}},
            {"index":1,"delta":"odd","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"details":{"cached":[1]}},"model":"m","list":[1,{"a":2}]}"#;
        assert_eq!(
            s.parse(text).unwrap(),
            json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null},
                               {"index": 1, "delta": "odd", "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "details": {"cached": [1]}}})
        );
        // An array the paths do not reach into is kept empty; a key is matched after
        // its escapes are read.
        let s = shape(&["$.a.b"]);
        assert_eq!(s.parse(r#"{"a":[1,2],"\u0061x":1}"#).unwrap(), json!({"a": []}));
        assert_eq!(s.parse(r#"{"\u0061":{"b":[1],"c":2}}"#).unwrap(), json!({"a": {"b": [1]}}));
        assert_eq!(Shape::whole().parse(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn where_only_presence_is_asked_a_value_is_a_stand_in() {
        let mut s = Shape::default();
        for p in ["$.a", "$.b", "$.c", "$.d", "$.e", "$.f[*].x"] {
            s.add_presence(&Path::parse(p).unwrap());
        }
        s.add(&Path::parse("$.c.keep").unwrap());
        let v = s
            .parse(
                r#"{"a":null,"b":{"deep":[1,{"x":2}]},"c":{"keep":[1],"drop":2},"d":[null],"e":"text","f":[{"x":null,"y":1},{"x":{"z":1}}],"g":1}"#,
            )
            .unwrap();
        assert_eq!(v, json!({"a": null, "b": true, "c": {"keep": [1]}, "d": true, "e": true, "f": [{"x": null}, {"x": true}]}));
        for (text, present) in [("$.a", false), ("$.b", true), ("$.c", true), ("$.e", true), ("$.f[*].x", true), ("$.g", false), ("$.f[0].x", false)]
        {
            assert_eq!(Path::parse(text).unwrap().find(&v, &mut |x| !x.is_null()).is_some(), present, "{text}");
        }
    }

    #[test]
    fn invalid_json_is_refused_in_the_parts_skipped_too() {
        let s = shape(&["$.a"]);
        for bad in [r#"{"a":1,"b":[1,}"#, r#"{"a":1,"b":tru}"#, r#"{"a":1} x"#, r#"{"a":1"#, r#"{"b":"\x"}"#] {
            assert!(s.parse(bad).is_err(), "{bad}");
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
    }
}
