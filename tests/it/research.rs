//! `POST /v1/collections/{id}/research` against a scripted model: the stream, the citations, every failure.
//!
//! `POST /v1/collections/{id}/research` against a scripted OpenAI-compatible model on
//! loopback that plays the tool loop, the answer and the judge: a normal fast and deep
//! run, a fabricated quotation, a marker with no source, an uncited and a contradicted
//! sentence, quotations in Arabic with harakat, CJK and emoji, a model that never stops
//! calling tools, a failure mid-stream, a client that goes away, and every error. In
//! every answer each `[n]` resolves to a source and each verified quotation and
//! evidence span is its page's text at its offsets.

use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::collections::{add, post};
use super::scripted_llm::{from, text, tools, Reply, Scripted};
use super::server::TestServer;

const MSA: &str =
    "2. Audit\n\n2.1 Provider shall permit one audit per year on reasonable notice.\n2.2 Provider shall keep records of each audit for three years.";
const SUPPORT: &str = "The customer support line is open on weekdays; the provider answers within one day.";
const ARABIC: &str = "قَالَ مَالِكٌ: العِلْمُ نُورٌ يَضَعُهُ اللهُ فِي القُلُوبِ. وَقَالَ غَيْرُهُ قَوْلًا آخَرَ.";
const CJK: &str = "東京は日本の首都です。会議は毎年三月に開かれます 🎉 参加は無料です。";
const QUESTION: &str = "How often may the customer audit the provider?";

/// The loop's, the answer's and the judge's system prompts say these.
const LOOP: &str = "You are a research assistant";
const ANSWER: &str = "You answer a question from numbered sources";
const JUDGE: &str = "You check claims against the sources";

use super::plans::LAB;

fn server(up: &Scripted, extra: &str) -> TestServer {
    let config = up.provider_config().replace("models = [\"reader\"]", "models = [\"reader\", \"strong\"]");
    TestServer::with_config(&format!("{config}{LAB}[research]\nfast = \"fake/reader\"\n{extra}"))
}

struct Corpus {
    key: String,
    col: String,
    /// Document id by title.
    docs: Vec<(String, String)>,
}

impl Corpus {
    fn doc(&self, title: &str) -> &str {
        &self.docs.iter().find(|d| d.0 == title).unwrap().1
    }
}

fn corpus(s: &TestServer, email: &str, docs: &[(&str, &str)]) -> Corpus {
    let (_, key) = s.signup(email);
    let r = post(s, "/v1/collections", &key, &json!({ "name": "contracts" }));
    assert_eq!(r.status, 201, "{}", r.text());
    let col = r.json()["id"].as_str().unwrap().to_owned();
    let docs = docs
        .iter()
        .map(|(t, body)| (t.to_string(), add(s, &key, &col, &json!({ "title": t, "text": body }))["id"].as_str().unwrap().to_owned()))
        .collect();
    Corpus { key, col, docs }
}

fn research(s: &TestServer, c: &Corpus, body: &Value) -> super::client::Response {
    post(s, &format!("/v1/collections/{}/research", c.col), &c.key, body)
}

fn page_text(s: &TestServer, c: &Corpus, doc: &str, n: u64) -> String {
    let r = s.get(&format!("/v1/collections/{}/documents/{doc}/pages/{n}", c.col), Some(&c.key));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["page"]["text"].as_str().unwrap().to_owned()
}

fn chars(text: &str, start: u64, end: u64) -> String {
    text.chars().skip(start as usize).take((end - start) as usize).collect()
}

fn researches_spent(s: &TestServer, key: &str) -> u64 {
    s.get("/v1/account", Some(key)).json()["usage"]["research"].as_u64().unwrap_or(0)
}

/// What every result must hold: the spec's shape; every `[n]` of the answer a source;
/// numbering dense in order of first use; each verified quotation and each evidence span
/// its page's own text at its offsets.
fn check_integrity(s: &TestServer, c: &Corpus, r: &Value) {
    super::spec::check("ResearchResult", r);
    let answer = r["answer"].as_str().unwrap();
    let sources = r["sources"].as_array().unwrap();
    let mut first_use = Vec::new();
    let re_markers = markers(answer);
    for n in &re_markers {
        assert!(*n >= 1 && *n as usize <= sources.len(), "[{n}] resolves to nothing: {r}");
        if !first_use.contains(n) {
            first_use.push(*n);
        }
    }
    let dense: Vec<u64> = (1..=first_use.len() as u64).collect();
    assert_eq!(first_use, dense, "numbering is dense in order of first use: {answer}");
    for (i, src) in sources.iter().enumerate() {
        assert_eq!(src["n"].as_u64(), Some(i as u64 + 1));
        assert_eq!(src["cited"].as_bool(), Some(first_use.contains(&(i as u64 + 1))), "{src}");
    }
    let text_of = |n: u64| {
        let src = &sources[n as usize - 1];
        page_text(s, c, src["document"]["id"].as_str().unwrap(), src["page"]["n"].as_u64().unwrap())
    };
    let v = &r["verification"];
    for q in v["quotes"].as_array().unwrap() {
        if matches!(q["status"].as_str(), Some("exact" | "normalized_exact")) {
            let page = text_of(q["source"].as_u64().unwrap());
            let at = &q["offset"];
            let found = chars(&page, at["start"].as_u64().unwrap(), at["end"].as_u64().unwrap());
            assert!(!found.is_empty(), "{q}");
            if q["status"] == "exact" {
                assert_eq!(found, q["quote"].as_str().unwrap(), "{q}");
            }
        }
    }
    for cl in v["claims"].as_array().unwrap() {
        for n in cl["sources"].as_array().unwrap() {
            assert!(n.as_u64().unwrap() as usize <= sources.len(), "{cl}");
        }
        if let Some(e) = cl["evidence"].as_str() {
            let at = &cl["evidenceOffset"];
            let src = at["source"].as_u64().unwrap();
            assert!(cl["sources"].as_array().unwrap().contains(&json!(src)), "evidence from a cited source: {cl}");
            assert_eq!(chars(&text_of(src), at["start"].as_u64().unwrap(), at["end"].as_u64().unwrap()), e, "{cl}");
        }
        let a: String = chars(answer, cl["start"].as_u64().unwrap(), cl["end"].as_u64().unwrap());
        assert!(
            !a.is_empty() && a.contains(cl["text"].as_str().unwrap().trim_end_matches('.').split_whitespace().next().unwrap()),
            "{cl} in {answer}"
        );
    }
    let counts = &v["counts"];
    let total: u64 = ["supported", "partial", "unsupported", "uncited", "unchecked"].iter().map(|k| counts[k].as_u64().unwrap()).sum();
    assert_eq!(counts["total"].as_u64(), Some(total));
    assert_eq!(total as usize, v["claims"].as_array().unwrap().len());
}

pub fn markers(answer: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let b = answer.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            let j = b[i + 1..].iter().position(|&c| !c.is_ascii_digit()).map(|p| i + 1 + p);
            if let Some(j) = j.filter(|&j| j > i + 1 && b[j] == b']') {
                out.push(answer[i + 1..j].parse().unwrap());
                i = j;
            }
        }
        i += 1;
    }
    out
}

/// The source a result numbers `n`, by title.
fn title(r: &Value, n: u64) -> &str {
    r["sources"][n as usize - 1]["document"]["title"].as_str().unwrap()
}

/// The number a prompt lists the page titled `t` under (`[n] Title, page …`): what
/// the scripted model must cite it as.
fn numbered(prompt: &str, t: &str) -> u64 {
    let at = prompt.find(&format!("] {t}, page")).unwrap_or_else(|| panic!("{t} not listed in {prompt}"));
    let open = prompt[..at].rfind('[').unwrap();
    prompt[open + 1..at].parse().unwrap()
}

fn judged(verdicts: &[(&str, &str)]) -> Reply {
    let claims: Vec<Value> = verdicts.iter().enumerate().map(|(i, (v, e))| json!({ "claim": i + 1, "verdict": v, "evidence": e })).collect();
    text(&json!({ "claims": claims }).to_string())
}

#[test]
fn a_fast_research_answers_with_resolved_citations_verified_quotes_and_judged_claims() {
    let up = Scripted::start();
    up.on(LOOP, Reply::Seq(vec![tools(&[("search", json!({ "query": "audit records years" }))]), text("Found the audit clause; nothing on fees.")]));
    up.on(
        ANSWER,
        from(|p| {
            let msa = numbered(p, "MSA");
            text(&format!("The provider must permit \u{201c}one audit per year on reasonable notice\u{201d} [{msa}]. Records of each audit are kept for three years [{msa}]."))
        }),
    );
    up.on(
        JUDGE,
        judged(&[
            ("supported", "2.1 Provider shall permit one audit per year on reasonable notice."),
            ("supported", "Provider shall keep records of each audit for three years."),
        ]),
    );
    let s = server(&up, "");
    let c = corpus(&s, "fast@example.com", &[("MSA", MSA), ("Support", SUPPORT)]);
    let before = researches_spent(&s, &c.key);
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    assert_eq!(
        j["answer"],
        "The provider must permit \u{201c}one audit per year on reasonable notice\u{201d} [1]. Records of each audit are kept for three years [1]."
    );
    assert_eq!(title(&j, 1), "MSA");
    assert_eq!((j["tier"].as_str(), j["model"].as_str(), j["domain"].as_str()), (Some("fast"), Some("fake/reader"), Some("general")));
    assert_eq!(j["note"], "Found the audit clause; nothing on fees.");
    let q: Vec<&str> = j["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap()).collect();
    assert_eq!(q, [QUESTION, "audit records years"], "the question's own search, then the model's");
    assert_eq!(j["timings"]["steps"], 2);
    let v = &j["verification"];
    assert_eq!((v["verified"].as_u64(), v["total"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_eq!(v["quotes"][0]["status"], "exact");
    assert_eq!(v["counts"]["supported"], 2, "{v}");
    assert_eq!(v["summary"], "2 of 2 claims supported by their sources.");
    assert_eq!(v["claims"][0]["evidence"], "2.1 Provider shall permit one audit per year on reasonable notice.");
    assert_eq!(v["claims"][0]["sources"], json!([1]));
    // Usage sums every call: two loop steps, the answer, the judge (this model reports no
    // cached prompt tokens).
    assert_eq!(j["usage"], json!({ "input_tokens": 400, "cached_input_tokens": 0, "output_tokens": 80 }));
    assert_eq!(researches_spent(&s, &c.key), before + 1, "one research of the allowance");
    // The loop bound the tools, as OpenAI's wire format says.
    let step = up.bodies().into_iter().find(|b| b.to_string().contains(LOOP)).unwrap();
    let names: Vec<&str> = step["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "read"]);
}

#[test]
fn a_deep_research_reads_pages_over_more_steps_on_the_deep_model() {
    let up = Scripted::start();
    up.on(
        LOOP,
        Reply::Seq(vec![
            tools(&[("search", json!({ "query": "audit" }))]),
            tools(&[("read", json!({ "source": 1 })), ("search", json!({ "query": "support hours" }))]),
            tools(&[("search", json!({ "query": "records" }))]),
            text("Covered audits and support."),
        ]),
    );
    up.on(ANSWER, text("Audits are yearly [1]. Support answers within one day [2]."));
    up.on(JUDGE, judged(&[("supported", ""), ("partial", "")]));
    let s = server(&up, "deep = \"fake/strong\"\n");
    let c = corpus(&s, "deep@example.com", &[("MSA", MSA), ("Support", SUPPORT)]);
    let r = research(&s, &c, &json!({ "question": "What do the audit and support terms say?", "tier": "deep" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    assert_eq!((j["tier"].as_str(), j["model"].as_str(), j["timings"]["steps"].as_u64()), (Some("deep"), Some("fake/strong"), Some(4)));
    assert_eq!(j["queries"].as_array().unwrap().len(), 4);
    assert!(up.bodies().iter().all(|b| b["model"] == "strong"), "the deep tier's model for every call");
    // read: the page came back whole in the next step's prompt.
    let third = up.bodies().into_iter().filter(|b| b.to_string().contains(LOOP)).nth(2).unwrap();
    assert!(third["messages"].to_string().contains("tool"), "{third}");
    // Without a deep model, deep uses the fast one and says so.
    let s = server(&up, "");
    let c = corpus(&s, "deep2@example.com", &[("MSA", MSA)]);
    let j = research(&s, &c, &json!({ "question": QUESTION, "tier": "deep" })).json();
    assert_eq!(j["model"], "fake/reader");
    assert!(j["warnings"].to_string().contains("No deep model is configured"), "{j}");
}

#[test]
fn a_fabricated_quote_a_marker_with_no_source_an_uncited_and_a_contradicted_sentence() {
    let up = Scripted::start();
    up.on(LOOP, text("Enough."));
    up.on(
        ANSWER,
        from(|p| {
            let msa = numbered(p, "MSA");
            text(&format!(
                "The provider permits \u{201c}two audits per year on short notice\u{201d} [{msa}]. Fees are due monthly [7]. Many customers find audits stressful in practice. Records of each audit are kept for ten years [{msa}]."
            ))
        }),
    );
    up.on(JUDGE, judged(&[("supported", ""), ("unsupported", "Provider shall keep records of each audit for three years.")]));
    let s = server(&up, "");
    let c = corpus(
        &s,
        "fab@example.com",
        &[("MSA", MSA), ("Support", SUPPORT), ("Audit guide", "An audit checks the records."), ("Notice", "Notice of an audit is given in writing.")],
    );
    let r = research(&s, &c, &json!({ "question": "How many audits are allowed, and what are the fees and the record terms?" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    let answer = j["answer"].as_str().unwrap();
    assert!(answer.len() > 10 && !answer.contains("[7]") && answer.contains("Fees are due monthly."), "the marker is removed: {answer}");
    assert!(j["sources"].as_array().unwrap().len() <= 4);
    let v = &j["verification"];
    assert_eq!(v["removed"], json!([{ "marker": "[7]", "missing": [7] }]));
    assert!(j["warnings"].to_string().contains("[7]"), "{j}");
    assert_eq!((v["verified"].as_u64(), v["total"].as_u64()), (Some(0), Some(1)));
    assert_eq!(v["quotes"][0]["status"], "unverified");
    assert!(v["quotes"][0].get("offset").is_none());
    let claims = v["claims"].as_array().unwrap();
    let status: Vec<&str> = claims.iter().map(|c| c["status"].as_str().unwrap()).collect();
    // The fabricated quotation makes its sentence unsupported whatever the judge said;
    // the marker-less sentences are uncited; the contradicted one unsupported, with the
    // sentence that contradicts it as evidence.
    assert_eq!(status, ["unsupported", "uncited", "uncited", "unsupported"], "{v}");
    assert_eq!(claims[3]["evidence"], "Provider shall keep records of each audit for three years.");
    assert_eq!(v["counts"]["uncited"], 2);
}

#[test]
fn quotations_in_arabic_with_harakat_cjk_and_emoji_are_found_at_their_offsets() {
    let up = Scripted::start();
    // The analyser keeps a CJK run between punctuation as one word: the model's
    // search names the sentence it wants.
    up.on(LOOP, Reply::Seq(vec![tools(&[("search", json!({ "query": "会議は毎年三月に開かれます" }))]), text("Done.")]));
    // Arabic quoted without its harakat (normalised), CJK and emoji as printed.
    up.on(
        ANSWER,
        from(|p| {
            let (ar, jp) = (numbered(p, "Muwatta"), numbered(p, "Tokyo"));
            text(&format!("قال مالك «العلم نور يضعه الله في القلوب» [{ar}]. 会議は「会議は毎年三月に開かれます 🎉 参加は無料です」[{jp}]。"))
        }),
    );
    up.on(JUDGE, judged(&[("supported", "العِلْمُ نُورٌ يَضَعُهُ اللهُ فِي القُلُوبِ"), ("supported", "会議は毎年三月に開かれます 🎉 参加は無料です。")]));
    let s = server(&up, "");
    let c = corpus(&s, "scripts@example.com", &[("Muwatta", ARABIC), ("Tokyo", CJK)]);
    let r = research(&s, &c, &json!({ "question": "ما العلم؟ العلم نور" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    let v = &j["verification"];
    assert_eq!((v["verified"].as_u64(), v["total"].as_u64()), (Some(2), Some(2)), "{v}");
    let q = v["quotes"].as_array().unwrap();
    assert_eq!(q[0]["status"], "normalized_exact");
    let muwatta = page_text(&s, &c, c.doc("Muwatta"), 0);
    let at = &q[0]["offset"];
    assert_eq!(chars(&muwatta, at["start"].as_u64().unwrap(), at["end"].as_u64().unwrap()), "العِلْمُ نُورٌ يَضَعُهُ اللهُ فِي القُلُوبِ");
    assert_eq!(q[1]["status"], "exact");
    let tokyo = page_text(&s, &c, c.doc("Tokyo"), 0);
    let at = &q[1]["offset"];
    assert_eq!(chars(&tokyo, at["start"].as_u64().unwrap(), at["end"].as_u64().unwrap()), "会議は毎年三月に開かれます 🎉 参加は無料です");
    assert_eq!(at["start"], 11, "offsets count characters, an emoji one");
    assert_eq!(v["counts"]["supported"], 2, "{v}");
}

#[test]
fn a_model_that_never_stops_calling_tools_is_ended_by_the_step_budget() {
    let up = Scripted::start();
    up.on(LOOP, tools(&[("search", json!({ "query": "audit again" })), ("read", json!({ "source": 99 })), ("nope", json!({}))]));
    up.on(ANSWER, text("Audits are yearly [1]."));
    up.on(JUDGE, judged(&[("supported", "")]));
    let s = server(&up, "");
    let c = corpus(&s, "loop@example.com", &[("MSA", MSA)]);
    let j = research(&s, &c, &json!({ "question": QUESTION })).json();
    check_integrity(&s, &c, &j);
    assert_eq!(j["timings"]["steps"], 3, "fast: 3 steps");
    assert_eq!(j["queries"].as_array().unwrap().len(), 4);
    assert!(j["note"].is_null());
    assert!(j["warnings"].to_string().contains("used its 3 steps"), "{j}");
    // The bad calls were answered as errors the model can read.
    let last = up.bodies().into_iter().rfind(|b| b.to_string().contains(LOOP)).unwrap().to_string();
    assert!(last.contains("read needs") && last.contains("There is no tool"), "{last}");
}

/// A streamed research on a raw connection: the response head, then the events as they
/// come (the body is chunked).
struct Stream {
    reader: BufReader<std::net::TcpStream>,
    pub status: u16,
    pub content_type: String,
}

impl Stream {
    fn open(s: &TestServer, c: &Corpus, body: &Value) -> Stream {
        let mut conn = s.conn();
        let auth = format!("Bearer {}", c.key);
        conn.write_request("POST", &format!("/v1/collections/{}/research", c.col), &[("authorization", &auth)], Some(body.to_string().as_bytes()));
        conn.stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut reader = BufReader::new(conn.stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut content_type = String::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-type:") {
                content_type = v.trim().to_owned();
            }
        }
        Stream { reader, status, content_type }
    }

    /// The next chunk of the body, or `None` at its end.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        let mut size = String::new();
        self.reader.read_line(&mut size).ok()?;
        let n = usize::from_str_radix(size.trim(), 16).ok()?;
        let mut data = vec![0; n + 2];
        self.reader.read_exact(&mut data).ok()?;
        data.truncate(n);
        (n > 0).then_some(data)
    }

    /// Every event to the end of the body.
    fn events(&mut self) -> Vec<Value> {
        let mut buf = Vec::new();
        while let Some(c) = self.chunk() {
            buf.extend(c);
        }
        lines(&buf)
    }
}

fn lines(buf: &[u8]) -> Vec<Value> {
    buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("each line is one JSON event")).collect()
}

#[test]
fn stream_true_yields_the_events_in_the_specs_order() {
    let up = Scripted::start();
    up.on(LOOP, Reply::Seq(vec![tools(&[("search", json!({ "query": "records" }))]), text("Done.")]));
    up.on(
        ANSWER,
        from(|p| {
            let msa = numbered(p, "MSA");
            text(&format!("The provider must permit one audit per year [{msa}]. Records of each audit are kept for three years [{msa}]."))
        }),
    );
    up.on(JUDGE, judged(&[("supported", ""), ("supported", "")]));
    let s = server(&up, "");
    let c = corpus(&s, "stream@example.com", &[("MSA", MSA), ("Support", SUPPORT)]);
    let mut st = Stream::open(&s, &c, &json!({ "question": QUESTION, "stream": true }));
    assert_eq!((st.status, st.content_type.as_str()), (200, "application/x-ndjson"));
    let events = st.events();
    for e in &events {
        super::spec::check("Event", e);
    }
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "status" => format!("status:{}", e["stage"].as_str().unwrap()),
            t => t.to_owned(),
        })
        .collect();
    let mut expect: Vec<String> =
        ["status:searching", "query", "sources", "status:deepening", "query", "sources", "status:deepening", "status:answering"]
            .map(String::from)
            .to_vec();
    let deltas = kinds.iter().filter(|k| *k == "delta").count();
    assert!(deltas >= 2, "the answer streams in pieces: {kinds:?}");
    expect.extend(std::iter::repeat_n("delta".to_owned(), deltas));
    expect.extend(["answer", "status:verifying", "claims", "done"].map(String::from));
    assert_eq!(kinds, expect);
    assert_eq!(events[3]["step"], 1);
    assert_eq!(events[6]["step"], 2);
    let streamed: String = events.iter().filter(|e| e["type"] == "delta").map(|e| e["text"].as_str().unwrap()).collect();
    let done = &events.last().unwrap()["result"];
    // Deltas carry the model's own numbering, the one the sources events list; the
    // answer event and the result carry the final one (dense, in order of first use).
    let raw = super::research::markers(&streamed)[0];
    assert_eq!(streamed.replace(&format!("[{raw}]"), "[1]"), done["answer"].as_str().unwrap());
    let listed = events.iter().rfind(|e| e["type"] == "sources").unwrap();
    assert_eq!(listed["sources"][raw as usize - 1]["document"]["title"], "MSA", "a delta's [n] is the sources event's n");
    let answer = events.iter().find(|e| e["type"] == "answer").unwrap();
    assert_eq!(answer["text"], done["answer"]);
    check_integrity(&s, &c, done);
    assert_eq!(events.iter().find(|e| e["type"] == "claims").unwrap()["summary"], "2 of 2 claims supported by their sources.");
}

/// Seen on the research benchmark: a source page with a narrow no-break space (three
/// bytes) before an abbreviation. Evidence for a claim the judge gave no span for is the
/// cited sentence sharing most words, and splitting the page into sentences sliced inside
/// that space. The panic, in a streamed body polled after its handler returned, ended the
/// shard; its listener kept taking connections, and searches sent there waited forever.
#[test]
fn a_page_with_wide_spaces_is_judged_and_the_server_answers_on() {
    const CODE: &str =
        "CHAPTER 3\u{2014} CODE OF LAWS\n\u{a7}\u{202f}201. Publication. The Code is published under 1\u{202f}U.S.C. section 201 for each court.";
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, text("The Code is published under 1\u{202f}U.S.C. section 201 for each court [1]."));
    up.on(JUDGE, judged(&[("supported", "")]));
    let s = server(&up, "");
    let c = corpus(&s, "wide@example.com", &[("Code", CODE)]);
    let mut st = Stream::open(&s, &c, &json!({ "question": "Under which section is the Code published?", "stream": true }));
    assert_eq!(st.status, 200);
    let events = st.events();
    let done = events.iter().find(|e| e["type"] == "done").unwrap_or_else(|| panic!("no done event: {events:?}"));
    let claim = &done["result"]["verification"]["claims"][0];
    assert_eq!(claim["status"], "supported", "{claim}");
    assert!(claim["evidence"].as_str().unwrap().contains("U.S.C. section 201"), "{claim}");
    // Every shard still answers: new connections spread over them.
    for _ in 0..8 {
        let r = post(&s, &format!("/v1/collections/{}/search", c.col), &c.key, &json!({ "query": "Code published", "k": 1 }));
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

#[test]
fn an_upstream_failure_mid_stream_is_a_final_error_event_and_nothing_is_spent() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, Reply::CutAfter("The provider must".into()));
    let s = server(&up, "");
    let c = corpus(&s, "cut@example.com", &[("MSA", MSA)]);
    let before = researches_spent(&s, &c.key);
    let started = Instant::now();
    let mut st = Stream::open(&s, &c, &json!({ "question": QUESTION, "stream": true }));
    assert_eq!(st.status, 200);
    let events = st.events();
    assert!(started.elapsed() < Duration::from_secs(20), "no hang");
    let last = events.last().unwrap();
    super::spec::check("Event", last);
    assert_eq!(last["type"], "error", "{events:?}");
    assert_eq!(last["code"], "llm_error");
    assert!(events.iter().any(|e| e["type"] == "delta"), "the answer had begun: {events:?}");
    assert!(!events.iter().any(|e| e["type"] == "done"));
    assert_eq!(researches_spent(&s, &c.key), before, "a failed research gives its research back");
    // Not streamed, the same failure is a 502 in AgentLex's shape.
    let up2 = Scripted::start();
    up2.on(LOOP, Reply::Fail(500));
    let s = server(&up2, "");
    let c = corpus(&s, "cut2@example.com", &[("MSA", MSA)]);
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (502, "llm_error"), "{}", r.text());
    assert_eq!(researches_spent(&s, &c.key), 0);
}

#[test]
fn a_client_that_goes_away_cancels_the_model_call_and_frees_its_place() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, Reply::HangAfter("The provider".into()));
    let s = server(&up, "concurrency = 1\n");
    let c = corpus(&s, "gone@example.com", &[("MSA", MSA)]);
    let mut st = Stream::open(&s, &c, &json!({ "question": QUESTION, "stream": true }));
    let mut seen = Vec::new();
    while !lines(&seen).iter().any(|e| e["type"] == "delta") {
        seen.extend(st.chunk().expect("events until the answer begins"));
    }
    // While it runs, the account's one place is taken.
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (429, "too_many_concurrent"), "{}", r.text());
    assert!(r.header("retry-after").is_some());
    assert_eq!(researches_spent(&s, &c.key), 1, "spent while it runs");
    drop(st);
    let started = Instant::now();
    while up.cancelled() == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "the upstream call was never cancelled");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(researches_spent(&s, &c.key), 0, "a research its client abandoned is given back");
    // The place is free again: the next research runs (and its model call is scripted).
    up.on(ANSWER, text("Audits are yearly [1]."));
    let started = Instant::now();
    loop {
        let r = research(&s, &c, &json!({ "question": QUESTION }));
        if r.status == 200 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{}", r.text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn errors_are_refused_before_anything_is_spent() {
    // No model at all: 503, in either form.
    let s = TestServer::with_config(&format!("[llm.local]\nenabled = false\n{LAB}"));
    let c = corpus(&s, "none@example.com", &[("MSA", MSA)]);
    let features = s.get("/v1/health", None).json()["features"].clone();
    assert!(!features.as_array().unwrap().iter().any(|f| f == "research" || f == "extract"), "{features}");
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (503, "llm_not_configured"), "{}", r.text());
    let mut st = Stream::open(&s, &c, &json!({ "question": QUESTION, "stream": true }));
    assert_eq!(st.status, 200, "streamed, a failure is an event");
    let events = st.events();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0]["type"].as_str(), events[0]["code"].as_str()), (Some("error"), Some("llm_not_configured")));
    assert_eq!(researches_spent(&s, &c.key), 0);

    let up = Scripted::start();
    let s = server(&up, "");
    let c = corpus(&s, "errors@example.com", &[("MSA", MSA)]);
    for (body, code) in [
        (json!({}), "invalid_question"),
        (json!({ "question": "" }), "invalid_question"),
        (json!({ "question": "q", "tier": "medium" }), "invalid_tier"),
        (json!({ "question": "q", "domain": "finance" }), "invalid_domain"),
        (json!({ "question": "q", "filters": { "kinds": "clause" } }), "invalid_filter"),
        (json!({ "question": "q", "history": [{ "role": "system", "content": "x" }] }), "invalid_question"),
    ] {
        let r = research(&s, &c, &body);
        assert_eq!((r.status, r.code()), (400, code.to_owned()), "{body}: {}", r.text());
    }
    // Another account's collection is not found.
    let (_, other) = s.signup("other@example.com");
    let r = post(&s, &format!("/v1/collections/{}/research", c.col), &other, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (404, "collection_not_found"), "{}", r.text());
    assert!(up.bodies().is_empty(), "no model was called");
    assert_eq!(researches_spent(&s, &c.key), 0);

    // Five rate tokens a research; the allowance spent is 429 with retry-after. The
    // bucket refills slowly (0.1 token a second) so a loaded machine between the two
    // answers does not refill what the second one spent.
    let tight = "[auth]\ndefault_plan = \"tight\"\n[plans.tight]\nname = \"Tight\"\nprice = 0\nstored_chars = 100000\nsearch = 100\nextract = 10\nresearch = 1\nrate_per_minute = 6\nburst = 100\n";
    up.on(LOOP, text("Done."));
    up.on(ANSWER, text("Records of each audit are kept for three years [1]."));
    let config = up.provider_config();
    let s = TestServer::with_config(&format!("{config}{tight}[research]\nfast = \"fake/reader\"\njudge = \"none\"\n"));
    let c = corpus(&s, "tight@example.com", &[("MSA", MSA)]);
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    let claim = &j["verification"]["claims"][0];
    assert_eq!(claim["status"], "unchecked", "no judge: unchecked");
    assert_eq!(claim["evidence"], "2.2 Provider shall keep records of each audit for three years.", "evidence code found on the cited page");
    let after_one: u64 = r.header("x-ratelimit-remaining").unwrap().parse().unwrap();
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (429, "allowance_exceeded"), "{}", r.text());
    assert!(r.header("retry-after").is_some());
    let after_two: u64 = r.header("x-ratelimit-remaining").unwrap().parse().unwrap();
    assert!(after_one - after_two >= 4, "five tokens a research: {after_one} then {after_two}");
    assert_eq!(researches_spent(&s, &c.key), 1);
}

#[test]
fn the_last_six_turns_the_collections_guidance_and_domain_reach_the_model() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, text("Audits are yearly [1]."));
    up.on(JUDGE, judged(&[("supported", "2.1 Provider shall permit one audit per year on reasonable notice.")]));
    let s = server(&up, "");
    let (_, key) = s.signup("turns@example.com");
    let settings = json!({ "domain": "legal", "guidance": "Quote clause numbers." });
    let r = post(&s, "/v1/collections", &key, &json!({ "name": "contracts", "settings": settings }));
    assert_eq!(r.status, 201, "{}", r.text());
    let col = r.json()["id"].as_str().unwrap().to_owned();
    add(&s, &key, &col, &json!({ "title": "MSA", "text": MSA }));
    let c = Corpus { key, col, docs: Vec::new() };
    let history: Vec<Value> =
        (1..=8).map(|i| json!({ "role": if i % 2 == 1 { "user" } else { "assistant" }, "content": format!("turn number {i}") })).collect();
    let r = research(&s, &c, &json!({ "question": QUESTION, "history": history }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["domain"], "legal", "the collection's domain");
    let first = up.bodies().into_iter().find(|b| b.to_string().contains(LOOP)).unwrap().to_string();
    assert!(first.contains("Quote clause numbers.") && first.contains("legal material"), "{first}");
    for i in 1..=8 {
        assert_eq!(first.contains(&format!("turn number {i}")), i > 2, "turn {i}: only the last six are used");
    }
    let answer = up.bodies().into_iter().find(|b| b.to_string().contains(ANSWER)).unwrap().to_string();
    assert!(answer.contains("turn number 8") && answer.contains("Quote clause numbers."));
    // The request's domain wins over the collection's.
    let r = research(&s, &c, &json!({ "question": QUESTION, "domain": "medical" }));
    assert_eq!(r.json()["domain"], "medical");
}

#[test]
fn an_answer_of_markers_alone_is_asked_again_and_twice_is_a_502() {
    let up = Scripted::start();
    up.on(LOOP, text("What the sources cover and what is missing:\nThe audit clause; nothing on fees."));
    up.on(ANSWER, Reply::Seq(vec![text("[1]"), text("Audits are yearly [1].")]));
    up.on(JUDGE, judged(&[("supported", "2.1 Provider shall permit one audit per year on reasonable notice.")]));
    let s = server(&up, "");
    let c = corpus(&s, "markers@example.com", &[("MSA", MSA)]);
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    assert_eq!(j["answer"], "Audits are yearly [1].");
    assert_eq!(j["note"], "The audit clause; nothing on fees.", "the note is the line that says something");
    let again = up.bodies().into_iter().filter(|b| b.to_string().contains(ANSWER)).nth(1).unwrap().to_string();
    assert!(again.contains("only citation markers"), "{again}");
    // Markers alone twice: the research fails, and is given back.
    up.on(ANSWER, text("[1] [1]"));
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (502, "llm_error"), "{}", r.text());
    assert_eq!(researches_spent(&s, &c.key), 1);
}

/// Issue 41: an answer whose sentences mostly cite no source is asked again once, the
/// uncited sentences named; the better-cited second answer is kept, and what stays
/// uncited is said in `warnings` as well as in the claims.
#[test]
fn an_answer_mostly_uncited_is_asked_again_with_its_uncited_sentences_named() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(
        ANSWER,
        Reply::Seq(vec![
            text("The provider permits one audit per year. Audits need reasonable notice. Records are kept for three years [1]."),
            text("The provider permits one audit per year on reasonable notice [1]. Records of each audit are kept for three years [1]. Fees are not covered here."),
        ]),
    );
    up.on(
        JUDGE,
        judged(&[
            ("supported", "2.1 Provider shall permit one audit per year on reasonable notice."),
            ("supported", "2.2 Provider shall keep records of each audit for three years."),
        ]),
    );
    let s = server(&up, "");
    let c = corpus(&s, "uncited@example.com", &[("MSA", MSA)]);
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    assert!(j["answer"].as_str().unwrap().starts_with("The provider permits one audit per year on reasonable notice [1]."), "{j}");
    let asks: Vec<String> = up.bodies().into_iter().map(|b| b.to_string()).filter(|b| b.contains(ANSWER)).collect();
    assert_eq!(asks.len(), 2, "asked once more, no more");
    assert!(asks[1].contains("These sentences cite no source") && asks[1].contains("Audits need reasonable notice."), "{}", asks[1]);
    let warnings: Vec<&str> = j["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.contains("asked again to cite its sources (2 of 3 sentences cited none)")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.starts_with("1 of 3 sentences of the answer cite no source")), "{warnings:?}");
    assert_eq!(j["verification"]["counts"]["uncited"], 1, "{}", j["verification"]);

    // A well-cited first answer is not asked again.
    up.on(ANSWER, text("Audits are yearly [1]."));
    let before = up.bodies().len();
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "{}", r.text());
    let asked = up.bodies()[before..].iter().filter(|b| b.to_string().contains(ANSWER)).count();
    assert_eq!(asked, 1);
    assert!(r.json()["warnings"].as_array().unwrap().is_empty(), "{}", r.json()["warnings"]);
}

/// Issue 41: a research that is not streamed stops when its client goes away, as a
/// streamed one does: the model call is cancelled, the research given back, and the
/// account's place freed.
#[test]
fn a_client_that_goes_away_from_a_whole_answer_cancels_it_too() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, Reply::Hang);
    let s = server(&up, "concurrency = 1\n");
    let c = corpus(&s, "gone-whole@example.com", &[("MSA", MSA)]);
    let mut conn = s.conn();
    let auth = format!("Bearer {}", c.key);
    conn.write_request(
        "POST",
        &format!("/v1/collections/{}/research", c.col),
        &[("authorization", &auth)],
        Some(json!({ "question": QUESTION }).to_string().as_bytes()),
    );
    // Once the answer's call is under way, the client leaves.
    let started = Instant::now();
    while !up.bodies().iter().any(|b| b.to_string().contains(ANSWER)) {
        assert!(started.elapsed() < Duration::from_secs(20), "the answer was never asked for");
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!((r.status, r.code().as_str()), (429, "too_many_concurrent"), "its place is taken while it runs: {}", r.text());
    drop(conn);
    let started = Instant::now();
    while up.cancelled() == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "the upstream call was never cancelled");
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = Instant::now();
    while researches_spent(&s, &c.key) != 0 {
        assert!(started.elapsed() < Duration::from_secs(5), "a research its client abandoned is given back");
        std::thread::sleep(Duration::from_millis(50));
    }
    up.on(ANSWER, text("Audits are yearly [1]."));
    let r = research(&s, &c, &json!({ "question": QUESTION }));
    assert_eq!(r.status, 200, "the place is free again: {}", r.text());
}

/// Issue 41: a question of several parts has each part searched before the model is
/// asked, so a model that never calls a tool still answers from every part's page.
#[test]
fn each_part_of_a_question_is_searched_even_when_the_model_calls_no_tool() {
    let up = Scripted::start();
    up.on(LOOP, text("Done."));
    up.on(ANSWER, text("Audits are yearly [1]. Support answers within one day [2]."));
    up.on(
        JUDGE,
        judged(&[
            ("supported", "2.1 Provider shall permit one audit per year on reasonable notice."),
            ("supported", "the provider answers within one day"),
        ]),
    );
    let s = server(&up, "");
    let c = corpus(&s, "parts@example.com", &[("MSA", MSA), ("Support", SUPPORT)]);
    let question = "Under the agreement, how often may the customer audit the provider, and when does the support line answer?";
    let r = research(&s, &c, &json!({ "question": question }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    check_integrity(&s, &c, &j);
    let queries: Vec<&str> = j["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap()).collect();
    assert_eq!(
        queries,
        vec![
            question,
            "Under the agreement, how often may the customer audit the provider",
            "Under the agreement, when does the support line answer"
        ],
        "the question, then each part, before any step of the model"
    );
    let titles: Vec<&str> = j["sources"].as_array().unwrap().iter().map(|s| s["document"]["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"MSA") && titles.contains(&"Support"), "{titles:?}");
}
