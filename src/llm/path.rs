//! The JSON paths manifests use to point into provider payloads: `$.a.b[0]`,
//! `choices[0].delta.content`, wildcards `[*]` (fan-out) and the small filters
//! `[?(@.k)]`, `[?(!@.k)]`, `[?(@.k == 'v')]`. Every match carries the indices its
//! wildcards took, so fields drawn from one frame can be lined up element by element.

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
        for text in ["$.choices[*].delta.content", "$.choices[0].delta.content", "$.choices[?(@.index)].delta.content", "$.choices[*].index", "$.nope[*].x", "$.choices"] {
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
