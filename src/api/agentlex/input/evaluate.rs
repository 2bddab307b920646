//! `EvaluateRequest`: the questions with their relevant items and gains, `k`, the
//! variants and `expand`. Every bad field is a 400 `invalid_questions` naming it
//! (`questions[3].relevant[0].page`); a question's search fields are the search
//! endpoint's own types, so an evaluation accepts exactly what a search would.

use std::collections::BTreeMap;

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;

use super::field::{present, refuse, Int, Item, Leaf, List, Obj, Shape};
use super::search::{self, ExpandIn, FiltersIn, Passages, Query, Scope, SearchIn, Strings};
use crate::error::{ApiError, Code};
use crate::evaluate::gold::{RelevantItem, Wanted};
use crate::evaluate::{Question, Request, Variant, MAX_QUESTIONS};
use crate::search::Expand;
use quarry_index::search::Mode;

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidQuestions, msg)
}

#[derive(Deserialize)]
struct Body {
    #[serde(default, deserialize_with = "present")]
    k: Option<Int<1, 50>>,
    #[serde(default, deserialize_with = "present")]
    expand: Option<ExpandIn>,
    #[serde(default, deserialize_with = "present")]
    variants: Option<List<VariantName>>,
    #[serde(default, deserialize_with = "present")]
    questions: Option<List<Obj<QuestionIn>>>,
}

#[derive(Deserialize)]
struct QuestionIn {
    #[serde(default, deserialize_with = "present")]
    query: Option<Query>,
    kinds: Option<Strings>,
    documents: Option<Strings>,
    filters: Option<Obj<FiltersIn>>,
    #[serde(default, deserialize_with = "present")]
    passages: Option<Passages>,
    #[serde(default, deserialize_with = "present")]
    relevant: Option<List<Obj<RelevantIn>>>,
    gains: Option<List<Gain>>,
}

impl Shape for QuestionIn {}

/// A relevant item as given; a field the spec does not name is ignored, with a note
/// (the schema is open).
#[derive(Deserialize)]
struct RelevantIn {
    citation: Option<ItemText>,
    document: Option<ItemText>,
    text: Option<ItemText>,
    page: Option<PageIndex>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

impl Shape for RelevantIn {}

struct VariantName(String);

impl Item for VariantName {
    const LIST: &'static str = "an array of strings";
}

impl<'de> Deserialize<'de> for VariantName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => Ok(VariantName(s)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// A gain: a number above 0.
struct Gain(f64);

impl Item for Gain {
    const LIST: &'static str = "an array of numbers";
}

impl<'de> Deserialize<'de> for Gain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)?.as_f64() {
            Some(g) if g.is_finite() && g > 0.0 => Ok(Gain(g)),
            _ => Err(refuse("must be a number above 0.")),
        }
    }
}

/// `citation`, `document`, `text`: a non-empty string (null is absent).
struct ItemText(String);

impl<'de> Deserialize<'de> for ItemText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) if s.trim().is_empty() => Err(refuse("must not be empty.")),
            Leaf::Str(s) => Ok(ItemText(s)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// `page`: a page index within the document (0-based).
struct PageIndex(u32);

impl<'de> Deserialize<'de> for PageIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)?.whole() {
            Some(n) if n <= u64::from(u32::MAX) => Ok(PageIndex(n as u32)),
            _ => Err(refuse("must be a page index from 0.")),
        }
    }
}

pub fn parse(bytes: &[u8]) -> Result<Request, ApiError> {
    let body: Body = crate::http::body::json(bytes, Code::InvalidQuestions).map_err(|e| match e.code {
        // The search fields' own codes (invalid_filter, query_too_long) are
        // invalid_questions here: every bad field of an evaluation is.
        Code::InvalidJson => e,
        _ => ApiError { code: Code::InvalidQuestions, ..e },
    })?;
    let k = Int::or(body.k, 10);
    let expand = body.expand.map_or(Expand::On, |e| e.0);
    let mut notes = Vec::new();
    let variants = variants(body.variants, &mut notes);
    let questions = match body.questions {
        None => return Err(bad("questions is required.")),
        Some(List(q)) if q.is_empty() => return Err(bad("questions must hold at least one question.")),
        Some(List(q)) if q.len() > MAX_QUESTIONS => {
            return Err(bad(format!("questions holds {} questions; at most {MAX_QUESTIONS} per call.", q.len())))
        }
        Some(List(q)) => q.into_iter().enumerate().map(|(i, Obj(q))| question(i, q, k, expand, &mut notes)).collect::<Result<Vec<_>, _>>()?,
    };
    Ok(Request { questions, k, variants, notes })
}

/// Known names in order, each once; unknown names become notes.
fn variants(names: Option<List<VariantName>>, notes: &mut Vec<String>) -> Vec<Variant> {
    let Some(List(names)) = names else { return Variant::ALL.to_vec() };
    let mut out = Vec::new();
    for VariantName(name) in names {
        match Variant::parse(&name) {
            Some(v) if !out.contains(&v) => out.push(v),
            Some(_) => {}
            None => notes.push(format!("Unknown variant \"{name}\" skipped; the variants are keyword, semantic, hybrid and hybrid+rerank.")),
        }
    }
    out
}

fn question(i: usize, q: QuestionIn, k: usize, expand: Expand, notes: &mut Vec<String>) -> Result<Question, ApiError> {
    let Some(List(given)) = q.relevant else { return Err(bad(format!("questions[{i}].relevant is required."))) };
    let items = given.into_iter().enumerate().map(|(j, Obj(item))| relevant(i, j, item, notes)).collect::<Result<Vec<_>, _>>()?;
    let gains = match q.gains {
        None => vec![1.0; items.len()],
        Some(List(g)) if g.len() != items.len() => {
            return Err(bad(format!("questions[{i}].gains holds {} numbers for {} relevant items; give one per item.", g.len(), items.len())))
        }
        Some(List(g)) => g.into_iter().map(|g| g.0).collect(),
    };
    let Some(query) = q.query else { return Err(bad(format!("questions[{i}].query is required."))) };
    let request = crate::search::Request {
        query: query.0,
        k,
        mode: Mode::Hybrid,
        passages: Int::or(q.passages, 2),
        filters: Default::default(),
        expand,
        expansion: Default::default(),
        rerank: false,
        warnings: Vec::new(),
    };
    let mut s = SearchIn { request, reranker: None, echo: search::Echo::default(), highlights: true };
    Scope { documents: q.documents, kinds: q.kinds, filters: q.filters.map(|f| f.0) }.apply(&mut s);
    Ok(Question { search: s.request, wanted: Wanted { items, gains } })
}

/// One relevant item: a citation, a document (with a page), or a text (scoped by a
/// document and page). A citation wins over the other fields.
fn relevant(i: usize, j: usize, item: RelevantIn, notes: &mut Vec<String>) -> Result<RelevantItem, ApiError> {
    let at = format!("questions[{i}].relevant[{j}]");
    for f in item.other.keys() {
        notes.push(format!("{at}.{f} is not a field and was ignored; the fields are citation, document, page and text."));
    }
    let (citation, document, text) = (item.citation.map(|c| c.0), item.document.map(|d| d.0), item.text.map(|t| t.0));
    let page = item.page.map(|p| p.0);
    if page.is_some() && document.is_none() && citation.is_none() {
        return Err(bad(format!("{at}.page needs document: a page index is within one document.")));
    }
    Ok(match (citation, document, text) {
        (Some(c), ..) => RelevantItem::Citation(c),
        (None, document, Some(text)) => RelevantItem::Text { text, document, page },
        (None, Some(document), None) => RelevantItem::Page { document, page },
        (None, None, None) => return Err(bad(format!("{at} needs a citation, a document (and page) or a text."))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parse(body: &Value) -> Result<Request, ApiError> {
        super::parse(body.to_string().as_bytes())
    }

    fn q(extra: Value) -> Value {
        let mut o = json!({"query": "audit", "relevant": [{"text": "one audit"}]});
        o.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        o
    }

    #[test]
    fn defaults_and_every_kind_of_item() {
        let r = parse(&json!({"questions": [{
            "query": "audit", "id": "ignored",
            "relevant": [{"citation": "AL-0000ABCD", "text": "x"}, {"document": "Water law", "page": 2}, {"document": "d1"}, {"text": "one audit", "document": "d1"}],
            "gains": [1, 2.5, 1, 3], "kinds": ["table"], "passages": 3
        }]}))
        .unwrap();
        assert_eq!((r.k, r.variants, r.notes.len()), (10, Variant::ALL.to_vec(), 0));
        let q = &r.questions[0];
        assert_eq!(
            q.wanted.items,
            [
                RelevantItem::Citation("AL-0000ABCD".into()),
                RelevantItem::Page { document: "Water law".into(), page: Some(2) },
                RelevantItem::Page { document: "d1".into(), page: None },
                RelevantItem::Text { text: "one audit".into(), document: Some("d1".into()), page: None },
            ]
        );
        assert_eq!(q.wanted.gains, [1.0, 2.5, 1.0, 3.0]);
        assert_eq!((q.search.k, q.search.passages, q.search.filters.kinds != 0), (10, 3, true));
        let r = parse(&json!({"questions": [q_default()], "k": 5, "variants": ["hybrid", "bogus", "keyword", "hybrid"], "expand": false})).unwrap();
        assert_eq!((r.k, r.questions[0].search.k, r.questions[0].search.expand), (5, 5, crate::search::Expand::Off));
        assert_eq!(r.variants, [Variant::Hybrid, Variant::Keyword]);
        assert!(r.notes[0].contains("\"bogus\""), "{:?}", r.notes);
        assert_eq!(r.questions[0].wanted.gains, [1.0]);
    }

    fn q_default() -> Value {
        q(json!({}))
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases = [
            (json!({}), "questions is required"),
            (json!({"questions": []}), "at least one"),
            (json!({"questions": {}}), "questions must be an array"),
            (json!({"questions": [q_default()], "k": 0}), "k must be"),
            (json!({"questions": [q_default()], "k": 51}), "k must be"),
            (json!({"questions": [q_default()], "variants": "keyword"}), "variants must be an array"),
            (json!({"questions": [q_default()], "variants": [1]}), "variants[0] must be a string"),
            (json!({"questions": [q_default()], "expand": "yes"}), "expand must be"),
            (json!({"questions": [q_default(), 3]}), "questions[1] must be an object"),
            (json!({"questions": [q_default(), {"query": "q"}]}), "questions[1].relevant is required"),
            (json!({"questions": [q_default(), {"relevant": []}]}), "questions[1].query is required"),
            (json!({"questions": [q(json!({"query": " "}))]}), "questions[0].query must not be empty"),
            (json!({"questions": [q(json!({"query": "x".repeat(4001)}))]}), "questions[0].query is 4001 characters"),
            (json!({"questions": [q(json!({"relevant": {}}))]}), "questions[0].relevant must be an array"),
            (json!({"questions": [q(json!({"relevant": [1]}))]}), "questions[0].relevant[0] must be an object"),
            (json!({"questions": [q(json!({"relevant": [{}]}))]}), "questions[0].relevant[0] needs a citation"),
            (json!({"questions": [q(json!({"relevant": [{"page": 1}]}))]}), "questions[0].relevant[0].page needs document"),
            (json!({"questions": [q(json!({"relevant": [{"document": "d", "page": -1}]}))]}), "questions[0].relevant[0].page must be"),
            (json!({"questions": [q(json!({"relevant": [{"document": "d", "page": 1.5}]}))]}), "questions[0].relevant[0].page must be"),
            (json!({"questions": [q(json!({"relevant": [{"citation": 7}]}))]}), "questions[0].relevant[0].citation must be a string"),
            (json!({"questions": [q(json!({"relevant": [{"text": "  "}]}))]}), "questions[0].relevant[0].text must not be empty"),
            (json!({"questions": [q(json!({"gains": [1, 2]}))]}), "questions[0].gains holds 2 numbers for 1"),
            (json!({"questions": [q(json!({"gains": [0]}))]}), "questions[0].gains[0] must be a number above 0"),
            (json!({"questions": [q(json!({"gains": ["high"]}))]}), "questions[0].gains[0] must be"),
            (json!({"questions": [q(json!({"gains": 2}))]}), "questions[0].gains must be an array"),
            (json!({"questions": [q(json!({"passages": 11}))]}), "questions[0].passages must be"),
            (json!({"questions": [q(json!({"documents": "d1"}))]}), "questions[0].documents must be an array"),
            (json!({"questions": [q(json!({"filters": {"date": {"from": "soon"}}}))]}), "questions[0].filters.date.from"),
        ];
        for (body, needle) in cases {
            let e = parse(&body).unwrap_err();
            assert_eq!(e.code, Code::InvalidQuestions, "{body}");
            assert!(e.message.contains(needle), "{body}: {}", e.message);
        }
        assert_eq!(parse(&json!([])).unwrap_err().code, Code::InvalidJson);
    }

    #[test]
    fn unknown_item_fields_are_noted_and_whole_floats_are_integers() {
        let r = parse(&json!({"k": 5.0, "questions": [q(json!({"relevant": [{"pgae": 1, "document": "d", "page": 2.0}]}))]})).unwrap();
        assert_eq!(r.k, 5);
        assert!(r.notes.iter().any(|n| n.contains("questions[0].relevant[0].pgae is not a field and was ignored")), "{:?}", r.notes);
        assert_eq!(r.questions[0].wanted.items, [RelevantItem::Page { document: "d".into(), page: Some(2) }]);
    }

    #[test]
    fn search_fields_keep_their_rule_under_the_question_path() {
        let e = parse(&json!({"questions": [q(json!({"relevant": [{"document": "d", "page": 1.5}]}))]})).unwrap_err();
        assert_eq!(e.message, "questions[0].relevant[0].page must be a page index from 0.");
        let e = parse(&json!({"questions": [q(json!({"query": "x".repeat(4001)}))]})).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidQuestions, "questions[0].query is 4001 characters; at most 4000."));
        let e = parse(&json!({"questions": [q(json!({"filters": {"headings": ""}}))]})).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (Code::InvalidQuestions, Some("questions[0].filters.headings")));
    }

    #[test]
    fn at_most_a_thousand_questions() {
        let many = |n: usize| json!({"questions": vec![q_default(); n]});
        assert_eq!(parse(&many(MAX_QUESTIONS)).unwrap().questions.len(), MAX_QUESTIONS);
        let e = parse(&many(MAX_QUESTIONS + 1)).unwrap_err();
        assert_eq!(e.code, Code::InvalidQuestions);
        assert!(e.message.contains("1001") && e.message.contains("at most 1000"), "{}", e.message);
    }
}
