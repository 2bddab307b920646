//! Query expansion for one search: what the request asked (`expand`), the engine's
//! deterministic rewrites for the request's domain (else the collection's) and its
//! glossary, and, for `expand: "llm"`, a model's paraphrases fetched before the search
//! within `expand.timeout`. A model that is slow, failing or absent never fails the
//! search: it runs with the deterministic expansions, and a warning says why.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::domain::Domain;
use quarry_index::expand::{self as engine, Expansion, Glossary, Kind};
use quarry_index::search::Mode;
use serde_json::Value;

use super::request::{Expand, Request};
use crate::config::ExpandConfig;
use crate::llm::request::{Block, ChatRequest, Message, Params, Role};
use crate::llm::Llm;
use crate::store::CollectionRecord;

/// What the caller adds to a request for its expansion: the request's own domain, and
/// the model's paraphrases when they were asked for (fetched before the search, which
/// is synchronous).
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub domain: Option<Domain>,
    pub paraphrases: Paraphrased,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Paraphrased {
    /// Not asked, or asked where no model is reached (evaluate, the plugin).
    #[default]
    NotFetched,
    Got {
        texts: Vec<String>,
        ms: f64,
    },
    /// Why there are none (a warning's sentence).
    Failed {
        why: String,
        ms: f64,
    },
}

/// The expansion a search ran.
#[derive(Debug, Clone, Default)]
pub struct Expanded {
    /// Off, On or Llm: what ran (On when the model's paraphrases were asked for but none came).
    pub ran: Expand,
    pub list: Vec<Expansion>,
    /// Time spent finding them, the model's wait included.
    pub ms: f64,
}

/// The expansions of `req` (whose query, parsed, is `text`) on `record`'s collection.
/// Off when not asked (`Expand::Default` is off here: AgentLex and evaluate ask on by
/// default, the retrieval plugin does not) and in semantic mode.
pub fn resolve(record: &CollectionRecord, req: &Request, text: &str, mode: Mode, warnings: &mut Vec<String>) -> Expanded {
    if !req.expand.asked() {
        return Expanded { ran: Expand::Off, ..Expanded::default() };
    }
    // A semantic search embeds the query as typed (expansions are keyword lists, and
    // embedding each would cost what the search costs): the answer's `expand` says false.
    if mode == Mode::Semantic {
        return Expanded { ran: Expand::Off, ..Expanded::default() };
    }
    let started = Instant::now();
    let domain = super::domain(req.expansion.domain, record);
    let glossary = compiled_glossary(record);
    let mut list = engine::expand(text, domain.lexicons(), glossary.as_deref());
    let mut ran = Expand::On;
    let mut waited = 0.0;
    if req.expand == Expand::Llm {
        match &req.expansion.paraphrases {
            Paraphrased::Got { texts, ms } => {
                list.extend(texts.iter().map(|t| Expansion { text: t.clone(), kind: Kind::Llm, weight: engine::LLM_WEIGHT }));
                list = engine::distinct(text, list, engine::MAX_EXPANSIONS + texts.len());
                ran = Expand::Llm;
                waited = *ms;
            }
            Paraphrased::Failed { why, ms } => {
                warnings.push(format!("{why}; the search used the deterministic expansions only."));
                waited = *ms;
            }
            Paraphrased::NotFetched => {
                warnings.push("Model expansion is not available here; the search used the deterministic expansions only.".into())
            }
        }
    }
    // The model's wait happened before the search; the rest is measured here.
    Expanded { ran, list, ms: waited + started.elapsed().as_secs_f64() * 1000.0 }
}

thread_local! {
    /// Per shard, the compiled glossaries of the collections it searched, by collection
    /// id, with the stored form each was compiled from (compiling 300 terms costs more
    /// than a keyword search; comparing them costs microseconds).
    static GLOSSARIES: RefCell<HashMap<String, (Stored, Rc<Glossary>)>> = RefCell::default();
}

type Stored = std::collections::BTreeMap<String, Value>;

/// Glossaries a shard keeps compiled; past this many, it starts again.
const CACHED_GLOSSARIES: usize = 64;

/// The collection's glossary compiled, from this shard's cache while unchanged.
fn compiled_glossary(record: &CollectionRecord) -> Option<Rc<Glossary>> {
    let stored = record.settings.glossary.as_ref()?;
    GLOSSARIES.with_borrow_mut(|cache| {
        if let Some((was, compiled)) = cache.get(&record.id) {
            if was == stored {
                return Some(compiled.clone());
            }
        }
        if cache.len() >= CACHED_GLOSSARIES {
            cache.clear();
        }
        let compiled = Rc::new(glossary(stored));
        cache.insert(record.id.clone(), (stored.clone(), compiled.clone()));
        Some(compiled)
    })
}

/// A stored glossary (`{term: long form or [long forms]}`, checked when it was set).
pub fn glossary(g: &std::collections::BTreeMap<String, Value>) -> Glossary {
    Glossary::new(g.iter().map(|(term, v)| {
        let longs = match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        (term.as_str(), longs)
    }))
}

/// Asks the configured model for paraphrases of `query`, waiting at most the configured
/// time. Never an error: what went wrong is the `Failed` sentence.
pub async fn paraphrase(llm: Option<&Llm>, config: &ExpandConfig, account: &str, query: &str) -> Paraphrased {
    let started = Instant::now();
    let ms = || started.elapsed().as_secs_f64() * 1000.0;
    let (Some(llm), Some(model)) = (llm, config.model.as_deref()) else {
        return Paraphrased::Failed { why: "No model is configured for query expansion".into(), ms: 0.0 };
    };
    let ask = async { llm.complete(account, prompt(model, query, config.paraphrases)).await.map_err(|e| e.to_string()) };
    let timeout = async {
        glommio::timer::sleep(config.timeout).await;
        Err(format!("The expansion model did not answer within {}", humantime::format_duration(round(config.timeout))))
    };
    match futures_lite::future::or(ask, timeout).await {
        Ok(done) => {
            let texts = lines(&done.output.text, query, config.paraphrases);
            if texts.is_empty() {
                return Paraphrased::Failed { why: "The expansion model gave no paraphrase".into(), ms: ms() };
            }
            Paraphrased::Got { texts, ms: ms() }
        }
        Err(e) if e.starts_with("The expansion model") => Paraphrased::Failed { why: e, ms: ms() },
        Err(e) => {
            tracing::warn!(error = %e, "query expansion: the model call failed");
            Paraphrased::Failed { why: "The expansion model's call failed".into(), ms: ms() }
        }
    }
}

fn round(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

fn prompt(model: &str, query: &str, n: usize) -> ChatRequest {
    ChatRequest {
        model: model.to_owned(),
        system: Some(format!(
            "You rewrite search queries for a document search engine. Write {n} alternative phrasings of the user's query that \
             mean the same, using other words a document might use (synonyms, spelled-out abbreviations). One per line, no \
             numbering, no quotes, no commentary."
        )),
        messages: vec![Message { role: Role::User, content: vec![Block::Text(query.to_owned())] }],
        params: Params { temperature: Some(0.2), max_tokens: Some(160), ..Params::default() },
        ..ChatRequest::default()
    }
}

/// The model's lines as paraphrases: list markers, numbering and quotes taken off, the
/// query itself, blanks and overlong lines left out; at most `n`.
fn lines(answer: &str, query: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in answer.lines() {
        let l = line.trim().trim_start_matches(|c: char| c.is_ascii_digit() || "-*•.) ".contains(c));
        let l = l.trim().trim_matches(|c| c == '"' || c == '\'' || c == '“' || c == '”').trim();
        let too_long = l.chars().count() > 4 * query.chars().count().max(50);
        if l.is_empty() || too_long || l.eq_ignore_ascii_case(query.trim()) || out.iter().any(|o| o == l) {
            continue;
        }
        out.push(l.to_owned());
        if out.len() == n {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_lines_become_paraphrases() {
        let answer = "1. heart attack treatment\n- \"myocardial infarction therapy\"\n\nHeart attack care\nheart attack care\nmore than enough";
        assert_eq!(lines(answer, "Heart attack care", 2), ["heart attack treatment", "myocardial infarction therapy"]);
        assert_eq!(lines(answer, "Heart attack care", 5).len(), 3, "the query itself and repeats are left out");
        assert!(lines("", "q", 3).is_empty());
    }

    fn record(domain: &str) -> CollectionRecord {
        let settings = crate::store::CollectionSettings { domain: domain.into(), ..Default::default() };
        CollectionRecord {
            id: "col_x".into(),
            account_id: "acc".into(),
            name: "x".into(),
            embedder: "none".into(),
            created_at: String::new(),
            settings,
            language: None,
        }
    }

    /// What ran, by what was asked, the mode and the model's answer.
    #[test]
    fn the_expansion_that_ran_is_what_was_asked_where_it_applies() {
        let mut req = Request::new("SOB", 10, Mode::Keyword);
        let mut warnings = Vec::new();
        let run = |req: &Request, mode, warnings: &mut Vec<String>| resolve(&record("medical"), req, "SOB", mode, warnings);
        assert_eq!(run(&req, Mode::Keyword, &mut warnings).ran, Expand::Off, "the plugin's default");
        req.expand = Expand::On;
        let on = run(&req, Mode::Hybrid, &mut warnings);
        assert_eq!((on.ran, on.list[0].text.as_str()), (Expand::On, "shortness of breath"));
        assert_eq!(run(&req, Mode::Semantic, &mut warnings).ran, Expand::Off);
        req.expansion.domain = Some(Domain::General);
        assert!(run(&req, Mode::Keyword, &mut warnings).list.is_empty(), "the request's domain wins");
        assert!(warnings.is_empty());
        req.expand = Expand::Llm;
        req.expansion.domain = None;
        req.expansion.paraphrases = Paraphrased::Got { texts: vec!["breathless".into(), "shortness of breath".into()], ms: 12.0 };
        let llm = run(&req, Mode::Keyword, &mut warnings);
        assert_eq!(llm.ran, Expand::Llm);
        assert_eq!(
            llm.list.iter().map(|e| (e.text.as_str(), e.kind)).collect::<Vec<_>>(),
            [("shortness of breath", Kind::Abbreviation), ("breathless", Kind::Llm)]
        );
        assert!(llm.ms >= 12.0);
        req.expansion.paraphrases = Paraphrased::Failed { why: "The expansion model did not answer within 1s".into(), ms: 1000.0 };
        assert_eq!(run(&req, Mode::Keyword, &mut warnings).ran, Expand::On);
        assert_eq!(warnings, ["The expansion model did not answer within 1s; the search used the deterministic expansions only."]);
    }

    /// A changed glossary is compiled again, not served from the shard's cache.
    #[test]
    fn an_edited_glossary_takes_effect_on_the_next_search() {
        let mut rec = record("general");
        let mut req = Request::new("SSA", 10, Mode::Keyword);
        req.expand = Expand::On;
        let texts =
            |rec: &CollectionRecord| resolve(rec, &req, "SSA", Mode::Keyword, &mut Vec::new()).list.into_iter().map(|e| e.text).collect::<Vec<_>>();
        assert!(texts(&rec).is_empty());
        rec.settings.glossary = Some(serde_json::from_value(serde_json::json!({"SSA": "Software Services Agreement"})).unwrap());
        assert_eq!(texts(&rec), ["Software Services Agreement"]);
        assert_eq!(texts(&rec), ["Software Services Agreement"], "from the cache");
        rec.settings.glossary = Some(serde_json::from_value(serde_json::json!({"SSA": "Social Security Administration"})).unwrap());
        assert_eq!(texts(&rec), ["Social Security Administration"]);
    }

    #[test]
    fn a_stored_glossary_compiles_both_shapes() {
        let stored: std::collections::BTreeMap<String, Value> =
            serde_json::from_value(serde_json::json!({"SSA": "Software Services Agreement", "PoC": ["proof of concept", "pilot"]})).unwrap();
        let g = glossary(&stored);
        let e = engine::expand("the PoC for the SSA", Domain::General.lexicons(), Some(&g));
        let texts: Vec<&str> = e.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["the proof of concept for the SSA", "the pilot for the SSA", "the PoC for the Software Services Agreement"]);
    }
}
