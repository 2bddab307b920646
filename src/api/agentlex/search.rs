//! `POST /v1/collections/{id}/search`.

use std::collections::BTreeMap;
use std::time::Instant;

use hyper::StatusCode;
use serde::Serialize;

use super::super::Call;
use super::input::search::{self as input, Echo};
use super::{caller, searcher};
use crate::error::ApiError;
use crate::http::json_out as j;
use crate::http::response::{self, Reply};
use crate::search::{query, Expand};
use quarry_index::collection::Snapshot;
use quarry_index::search::{Hit, Mode};
use quarry_index::text::Highlighter;

#[derive(Serialize)]
struct Response<'a> {
    query: &'a str,
    mode: &'static str,
    domain: &'a str,
    expand: ExpandOut,
    intent: &'static str,
    phrases: &'a [String],
    expansions: Vec<ExpansionOut<'a>>,
    filters: &'a Echo,
    warnings: &'a [String],
    results: Vec<ResultOut<'a>>,
    reranker: Option<RerankerOut<'a>>,
    timings: BTreeMap<&'static str, f64>,
    considered: usize,
}

#[derive(Serialize)]
struct RerankerOut<'a> {
    name: &'a str,
    model: &'a str,
}

#[derive(Serialize)]
struct ResultOut<'a> {
    rank: usize,
    citation: String,
    score: f64,
    document: DocRef<'a>,
    page: PageRef<'a>,
    heading: Option<&'a str>,
    passages: Vec<PassageOut<'a>>,
    retrievers: Vec<&'static str>,
    duplicates: u32,
    #[serde(rename = "alsoIn")]
    also_in: u32,
}

/// The spec's DocumentRef, as every answer that cites a page writes it.
#[derive(Serialize)]
pub(super) struct DocRef<'a> {
    pub id: &'a str,
    pub title: Option<&'a str>,
    pub author: Option<&'a str>,
}

/// The spec's PageRef.
#[derive(Serialize)]
pub(super) struct PageRef<'a> {
    pub n: u32,
    pub number: Option<&'a str>,
    pub volume: Option<&'a str>,
    pub heading: Option<&'a str>,
}

#[derive(Serialize)]
struct PassageOut<'a> {
    id: u64,
    pos: u32,
    text: &'a str,
    kinds: Vec<&'static str>,
    heading: Option<&'a str>,
    offsets: Offsets,
    matched: &'a [String],
    /// Quarry's: the words of the passage that hold its matched terms, for a client to
    /// mark (the terms are stemmed, so it could not find them again itself); left out
    /// when the request says `"highlights": false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    highlights: Option<Vec<HighlightOut<'a>>>,
    meta: Option<()>,
}

/// A word that holds a matched term: character offsets into the page text, as the
/// passage's own `offsets` are, and the term.
#[derive(Serialize)]
struct HighlightOut<'a> {
    start: u32,
    end: u32,
    term: &'a str,
}

/// The passage's words that analyse to its matched terms, at page offsets; `marker`
/// holds the query's terms (its expansions' too), every matched term among them.
fn highlights<'a>(marker: &Highlighter, text: &str, start: u32, matched: &'a [String]) -> Vec<HighlightOut<'a>> {
    marker.spans(text, matched).into_iter().map(|s| HighlightOut { start: start + s.start, end: start + s.end, term: &matched[s.term] }).collect()
}

#[derive(Serialize)]
pub(super) struct Offsets {
    pub start: u32,
    pub end: u32,
}

fn mode_str(m: Mode) -> &'static str {
    match m {
        Mode::Keyword => "keyword",
        Mode::Semantic => "semantic",
        Mode::Hybrid => "hybrid",
    }
}

pub async fn search(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let started = Instant::now();
    let owned = super::owned_after(&call, &id).await?;
    let mut req = input::parse(&call.bytes().await?)?;
    let answered = searcher(&call).search(caller(&call), &owned, &mut req.request, req.reranker.as_deref()).await?;
    let out = render(&req, &answered.searched, answered.domain.as_str(), started);
    Ok(response::json_bytes(StatusCode::OK, write(&out).into()))
}

/// `expand` as the answer echoes it: true, false or "llm".
#[derive(Serialize, Clone, Copy)]
#[serde(untagged)]
enum ExpandOut {
    Flag(bool),
    Named(&'static str),
}

impl ExpandOut {
    fn of(e: Expand) -> ExpandOut {
        match e {
            Expand::Llm => ExpandOut::Named("llm"),
            e => ExpandOut::Flag(e == Expand::On),
        }
    }
}

#[derive(Serialize)]
struct ExpansionOut<'a> {
    text: &'a str,
    kind: &'static str,
    weight: f64,
}

/// The response body of a search as the handler sends it, serialized. Public for the
/// serialisation bench (`bench/benches/serialize.rs`), which times it on real results.
#[doc(hidden)]
pub fn body(req: &input::SearchIn, s: &query::Searched, domain: &str, started: Instant) -> Vec<u8> {
    write(&render(req, s, domain, started))
}

/// The same body through serde_json, which [`write`] must equal byte for byte: for
/// the bench's comparison.
#[doc(hidden)]
pub fn body_serde(req: &input::SearchIn, s: &query::Searched, domain: &str, started: Instant) -> Vec<u8> {
    serde_json::to_vec(&render(req, s, domain, started)).expect("responses serialize")
}

/// `r` as JSON, written by hand with [`json_out`]: what serde_json writes for it (the
/// derived `Serialize` above is the definition; a test holds the two equal). Nearly all
/// of an answer is passage text to escape: on SciFact answers (~20 kB) building and
/// writing one takes 0.40–0.46× the time of building it and serde_json writing it
/// (`cargo bench -p quarry-bench --bench serialize`, three runs: 8.2–8.4 µs against
/// 18.2–20.3 µs).
fn write(r: &Response) -> Vec<u8> {
    let text: usize = r.results.iter().map(|x| 600 + x.passages.iter().map(|p| p.text.len() + 200).sum::<usize>()).sum();
    let mut out = Vec::with_capacity(1024 + text);
    let mut o = j::Object::new(&mut out);
    j::str(o.field("query"), r.query);
    j::str(o.field("mode"), r.mode);
    j::str(o.field("domain"), r.domain);
    j::value(o.field("expand"), &r.expand);
    j::str(o.field("intent"), r.intent);
    j::strs(o.field("phrases"), r.phrases);
    j::array(o.field("expansions"), &r.expansions, write_expansion);
    j::value(o.field("filters"), r.filters);
    j::strs(o.field("warnings"), r.warnings);
    j::array(o.field("results"), &r.results, write_result);
    j::value(o.field("reranker"), &r.reranker);
    j::value(o.field("timings"), &r.timings);
    j::value(o.field("considered"), &r.considered);
    drop(o);
    out
}

fn write_expansion(out: &mut Vec<u8>, e: &ExpansionOut) {
    let mut o = j::Object::new(out);
    j::str(o.field("text"), e.text);
    j::str(o.field("kind"), e.kind);
    j::value(o.field("weight"), &e.weight);
}

fn write_result(out: &mut Vec<u8>, x: &ResultOut) {
    let mut o = j::Object::new(out);
    j::value(o.field("rank"), &x.rank);
    j::str(o.field("citation"), &x.citation);
    j::value(o.field("score"), &x.score);
    {
        let mut d = j::Object::new(o.field("document"));
        j::str(d.field("id"), x.document.id);
        j::opt_str(d.field("title"), x.document.title);
        j::opt_str(d.field("author"), x.document.author);
    }
    {
        let mut p = j::Object::new(o.field("page"));
        j::value(p.field("n"), &x.page.n);
        j::opt_str(p.field("number"), x.page.number);
        j::opt_str(p.field("volume"), x.page.volume);
        j::opt_str(p.field("heading"), x.page.heading);
    }
    j::opt_str(o.field("heading"), x.heading);
    j::array(o.field("passages"), &x.passages, write_passage);
    j::strs(o.field("retrievers"), &x.retrievers);
    j::value(o.field("duplicates"), &x.duplicates);
    j::value(o.field("alsoIn"), &x.also_in);
}

fn write_passage(out: &mut Vec<u8>, p: &PassageOut) {
    let mut o = j::Object::new(out);
    j::value(o.field("id"), &p.id);
    j::value(o.field("pos"), &p.pos);
    j::str(o.field("text"), p.text);
    j::strs(o.field("kinds"), &p.kinds);
    j::opt_str(o.field("heading"), p.heading);
    {
        let mut at = j::Object::new(o.field("offsets"));
        j::value(at.field("start"), &p.offsets.start);
        j::value(at.field("end"), &p.offsets.end);
    }
    j::strs(o.field("matched"), p.matched);
    if let Some(highlights) = &p.highlights {
        j::array(o.field("highlights"), highlights, |out, h| {
            let mut at = j::Object::new(out);
            j::value(at.field("start"), &h.start);
            j::value(at.field("end"), &h.end);
            j::str(at.field("term"), h.term);
        });
    }
    j::value(o.field("meta"), &p.meta);
}

/// `totalMs` runs from `started` to when the results are built.
fn render<'a>(req: &'a input::SearchIn, s: &'a query::Searched, domain: &'a str, started: Instant) -> Response<'a> {
    let snap = &s.snapshot;
    // The query's term finders, built once for every passage's highlights (when asked).
    let marker = req.highlights.then(|| {
        let terms: Vec<String> = s.results.terms.iter().chain(&s.results.expansion_terms).cloned().collect();
        Highlighter::new(&terms)
    });
    let results = s.results.hits.iter().enumerate().map(|(i, h)| result(snap, marker.as_ref(), i + 1, h)).collect();
    let t = &s.results.timings;
    let mut timings = BTreeMap::from([("keywordMs", t.keyword_ms), ("semanticMs", t.semantic_ms), ("phraseMs", t.phrase_ms)]);
    if let Some(e) = s.embed_ms {
        timings.insert("embedMs", e);
    }
    if let Some(r) = s.rerank_ms {
        timings.insert("rerankMs", r);
    }
    if s.expanded.ran.asked() {
        // The model's wait, the rewrites, and their keyword lists.
        timings.insert("expandMs", s.expanded.ms + t.expansion_ms);
    }
    timings.insert("totalMs", started.elapsed().as_secs_f64() * 1000.0);
    Response {
        query: &req.request.query,
        mode: mode_str(req.request.mode),
        domain,
        expand: ExpandOut::of(s.expanded.ran),
        intent: s.intent.as_str(),
        phrases: &s.phrases,
        expansions: s.results.expansions.iter().map(|e| ExpansionOut { text: &e.text, kind: e.kind.as_str(), weight: e.weight }).collect(),
        filters: &req.echo,
        warnings: &s.warnings,
        results,
        reranker: s.reranker.as_ref().map(|r| RerankerOut { name: &r.name, model: &r.model }),
        timings,
        considered: s.results.considered,
    }
}

fn result<'a>(snap: &'a Snapshot, marker: Option<&Highlighter>, rank: usize, h: &'a Hit) -> ResultOut<'a> {
    let v = snap.hit_view(h);
    let passages: Vec<PassageOut<'a>> = v
        .passages
        .iter()
        .map(|(c, ps)| PassageOut {
            id: (v.page.citation as u64) << 16 | c.pos as u64,
            pos: c.pos,
            text: c.text,
            kinds: c.kinds.names(),
            heading: c.heading,
            offsets: Offsets { start: c.start, end: c.end },
            matched: &ps.matched,
            highlights: marker.map(|m| highlights(m, c.text, c.start, &ps.matched)),
            meta: None,
        })
        .collect();
    let mut retrievers = Vec::with_capacity(2);
    if h.keyword {
        retrievers.push("keyword");
    }
    if h.semantic {
        retrievers.push("semantic");
    }
    ResultOut {
        rank,
        citation: v.page.citation_id(),
        score: h.score,
        document: DocRef { id: v.doc.id, title: v.doc.title, author: v.doc.author },
        page: PageRef { n: v.page.n, number: v.page.number, volume: v.page.volume, heading: v.page.heading },
        heading: v.page.heading.or_else(|| passages.first().and_then(|ps| ps.heading)),
        passages,
        retrievers,
        duplicates: h.duplicates,
        also_in: h.also_in,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use input::DateEcho;

    /// The hand-written answer is serde_json's, byte for byte: every field set and unset,
    /// strings that need every kind of escape, scores that ryu prints in each of its forms.
    #[test]
    fn the_written_answer_is_serde_jsons() {
        let tricky = ["plain", "", "quote \" and back\\slash", "tab\tnew\nline\r\u{8}\u{c}\u{1}\u{1f}\u{7f}", "Naïve – β-catenin 𝔸"];
        let phrases: Vec<String> = tricky.iter().map(|s| s.to_string()).collect();
        let metadata = serde_json::json!({"dept": {"name": ["a\"b", 3]}});
        let echo = Echo {
            documents: vec!["doc_1".into(), "d\"2".into()],
            kinds: vec!["table".into()],
            metadata: metadata.as_object().cloned(),
            date: Some(DateEcho { from: Some("2020-01-01".into()), to: None }),
            headings: Some("Intro\n".into()),
        };
        let matched: Vec<Vec<String>> = (0..4).map(|i| tricky.iter().take(i).map(|s| s.to_string()).collect()).collect();
        let passage = |i: usize| PassageOut {
            id: (i as u64) << 40 | 7,
            pos: i as u32,
            text: tricky[i % tricky.len()],
            kinds: if i.is_multiple_of(2) { vec![] } else { vec!["table", "list"] },
            heading: i.is_multiple_of(3).then_some(tricky[(i + 2) % tricky.len()]),
            offsets: Offsets { start: i as u32 * 10, end: u32::MAX },
            matched: &matched[i % 4],
            highlights: (i != 1).then(|| {
                (0..i % 3).map(|h| HighlightOut { start: h as u32, end: u32::MAX - h as u32, term: tricky[(i + h) % tricky.len()] }).collect()
            }),
            meta: None,
        };
        let result = |i: usize| ResultOut {
            rank: i + 1,
            citation: format!("AL-{:08X}", i * 0x1234567),
            score: [0.016_393_442_622_950_82, 1.0, 0.0, 1e-7, 123456789.125, 1.0 / 3.0][i % 6],
            document: DocRef { id: "doc_x", title: i.is_multiple_of(2).then_some(tricky[i % tricky.len()]), author: (i == 1).then_some("A\\B") },
            page: PageRef { n: i as u32, number: (i == 2).then_some("iv"), volume: None, heading: (i == 3).then_some("H\"") },
            heading: (i % 2 == 1).then_some("Héading"),
            passages: (0..i % 4).map(passage).collect(),
            retrievers: vec!["keyword", "semantic"][..i % 3].to_vec(),
            duplicates: i as u32,
            also_in: (i * 7) as u32,
        };
        for n in [0, 1, 6, 12] {
            for warnings in [vec![], phrases.clone()] {
                let r = Response {
                    query: tricky[n % tricky.len()],
                    mode: "hybrid",
                    domain: "medical",
                    expand: [ExpandOut::Flag(false), ExpandOut::Flag(true), ExpandOut::Named("llm")][n % 3],
                    intent: "lookup",
                    phrases: &phrases[..n % 3],
                    expansions: (0..n % 4)
                        .map(|i| ExpansionOut {
                            text: tricky[i],
                            kind: ["abbreviation", "section", "variant", "llm"][i],
                            weight: [1.0, 0.8, 0.5, 1e-7][i],
                        })
                        .collect(),
                    filters: &echo,
                    warnings: &warnings,
                    results: (0..n).map(result).collect(),
                    reranker: (n % 2 == 0).then_some(RerankerOut { name: tricky[n % tricky.len()], model: tricky[(n + 2) % tricky.len()] }),
                    timings: BTreeMap::from([("keywordMs", 0.0123), ("totalMs", 12.5), ("embedMs", 3.0)]),
                    considered: n * 10,
                };
                let ours = String::from_utf8(write(&r)).unwrap();
                assert_eq!(ours, serde_json::to_string(&r).unwrap());
            }
        }
    }
}
