//! `EvaluateRequest`: the questions with their relevant items and gains, `k`, the
//! variants and `expand`. Every bad field is a 400 `invalid_questions` naming it
//! (`questions[3].relevant[0].page`); a question's search fields go through the search
//! endpoint's own checks, so an evaluation accepts exactly what a search would.

use serde_json::{Map, Value};

use super::{err, kind, search};
use crate::evaluate::gold::{RelevantItem, Wanted};
use crate::evaluate::{Question, Request, Variant, MAX_QUESTIONS};
use crate::error::{ApiError, Code};

/// The fields of a question a search takes as they are.
const SEARCH_FIELDS: [&str; 5] = ["query", "kinds", "documents", "filters", "passages"];

fn bad(msg: impl Into<String>) -> ApiError {
    err(Code::InvalidQuestions, msg)
}

pub fn parse(body: &Value) -> Result<Request, ApiError> {
    let Value::Object(o) = body else {
        return Err(err(Code::InvalidJson, format!("The body must be a JSON object, not {}.", kind(body))));
    };
    let k = match o.get("k") {
        None => 10,
        Some(v) if super::whole(v).is_some_and(|n| (1..=50).contains(&n)) => super::whole(v).unwrap_or(10) as usize,
        Some(_) => return Err(bad("k must be an integer from 1 to 50.")),
    };
    let expand = match o.get("expand") {
        None => Value::Bool(true),
        Some(v @ Value::Bool(_)) => v.clone(),
        Some(v) if v.as_str() == Some("llm") => v.clone(),
        Some(_) => return Err(bad("expand must be true, false or \"llm\".")),
    };
    let mut notes = Vec::new();
    let variants = variants(o.get("variants"), &mut notes)?;
    let questions = match o.get("questions") {
        None => return Err(bad("questions is required.")),
        Some(Value::Array(a)) if a.is_empty() => return Err(bad("questions must hold at least one question.")),
        Some(Value::Array(a)) if a.len() > MAX_QUESTIONS => {
            return Err(bad(format!("questions holds {} questions; at most {MAX_QUESTIONS} per call.", a.len())))
        }
        Some(Value::Array(a)) => a.iter().enumerate().map(|(i, q)| question(i, q, k, &expand, &mut notes)).collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(bad(format!("questions must be an array, not {}.", kind(other)))),
    };
    Ok(Request { questions, k, variants, notes })
}

/// Known names in order, each once; unknown names become notes.
fn variants(v: Option<&Value>, notes: &mut Vec<String>) -> Result<Vec<Variant>, ApiError> {
    let names = match v {
        None => return Ok(Variant::ALL.to_vec()),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(bad(format!("variants must be an array of strings, not {}.", kind(other)))),
    };
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let name = name.as_str().ok_or_else(|| bad(format!("variants[{i}] must be a string, not {}.", kind(name))))?;
        match Variant::parse(name) {
            Some(v) if !out.contains(&v) => out.push(v),
            Some(_) => {}
            None => notes.push(format!("Unknown variant \"{name}\" skipped; the variants are keyword, semantic, hybrid and hybrid+rerank.")),
        }
    }
    Ok(out)
}

fn question(i: usize, q: &Value, k: usize, expand: &Value, notes: &mut Vec<String>) -> Result<Question, ApiError> {
    let Value::Object(o) = q else {
        return Err(bad(format!("questions[{i}] must be an object, not {}.", kind(q))));
    };
    let items = match o.get("relevant") {
        None => return Err(bad(format!("questions[{i}].relevant is required."))),
        Some(Value::Array(a)) => a.iter().enumerate().map(|(j, item)| relevant(i, j, item, notes)).collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(bad(format!("questions[{i}].relevant must be an array, not {}.", kind(other)))),
    };
    let gains = gains(i, o.get("gains"), items.len())?;
    Ok(Question { search: search_input(i, o, k, expand)?, wanted: Wanted { items, gains } })
}

/// The question as a search request, checked by the search endpoint's parser; its
/// messages start with the field's name, which gets the question's path in front.
fn search_input(i: usize, o: &Map<String, Value>, k: usize, expand: &Value) -> Result<crate::search::Request, ApiError> {
    let mut s = Map::new();
    for f in SEARCH_FIELDS {
        if let Some(v) = o.get(f) {
            s.insert(f.into(), v.clone());
        }
    }
    s.insert("k".into(), k.into());
    s.insert("expand".into(), expand.clone());
    s.insert("rerank".into(), false.into());
    search::parse(&Value::Object(s)).map(|s| s.request).map_err(|e| bad(format!("questions[{i}].{}", e.message)))
}

fn gains(i: usize, v: Option<&Value>, items: usize) -> Result<Vec<f64>, ApiError> {
    let given = match v {
        None | Some(Value::Null) => return Ok(vec![1.0; items]),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(bad(format!("questions[{i}].gains must be an array of numbers, not {}.", kind(other)))),
    };
    if given.len() != items {
        return Err(bad(format!("questions[{i}].gains holds {} numbers for {items} relevant items; give one per item.", given.len())));
    }
    given
        .iter()
        .enumerate()
        .map(|(j, g)| g.as_f64().filter(|g| g.is_finite() && *g > 0.0).ok_or_else(|| bad(format!("questions[{i}].gains[{j}] must be a number above 0."))))
        .collect()
}

/// One relevant item: a citation, a document (with a page), or a text (scoped by a
/// document and page). A citation wins over the other fields.
/// A field the spec does not name is ignored, with a note (the schema is open).
fn relevant(i: usize, j: usize, v: &Value, notes: &mut Vec<String>) -> Result<RelevantItem, ApiError> {
    let at = format!("questions[{i}].relevant[{j}]");
    let Value::Object(o) = v else {
        return Err(bad(format!("{at} must be an object, not {}.", kind(v))));
    };
    for f in o.keys().filter(|f| !["citation", "document", "page", "text"].contains(&f.as_str())) {
        notes.push(format!("{at}.{f} is not a field and was ignored; the fields are citation, document, page and text."));
    }
    let text_field = |f: &str| -> Result<Option<String>, ApiError> {
        match o.get(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Err(bad(format!("{at}.{f} must not be empty."))),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(format!("{at}.{f} must be a string, not {}.", kind(other)))),
        }
    };
    let (citation, document, text) = (text_field("citation")?, text_field("document")?, text_field("text")?);
    let page = match o.get("page") {
        None | Some(Value::Null) => None,
        Some(v) if super::whole(v).is_some_and(|n| n <= u64::from(u32::MAX)) => super::whole(v).map(|n| n as u32),
        Some(_) => return Err(bad(format!("{at}.page must be a page index from 0."))),
    };
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
    use serde_json::json;

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
    fn at_most_a_thousand_questions() {
        let many = |n: usize| json!({"questions": vec![q_default(); n]});
        assert_eq!(parse(&many(MAX_QUESTIONS)).unwrap().questions.len(), MAX_QUESTIONS);
        let e = parse(&many(MAX_QUESTIONS + 1)).unwrap_err();
        assert_eq!(e.code, Code::InvalidQuestions);
        assert!(e.message.contains("1001") && e.message.contains("at most 1000"), "{}", e.message);
    }
}
