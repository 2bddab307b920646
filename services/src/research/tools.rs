//! The research loop: the question's own search first, then the model's calls of the
//! tools `search` and `read`, every search bounded by the request's filters, the pages
//! found kept as the numbered sources.

use std::time::Instant;

use quarry_index::search::Mode;
use serde_json::Value;

use super::{ms, prompt, Event, QueryRun, ResearchError, Run, Source};
use crate::llm::request::{Block, Message, Role};
use crate::search::query;

/// The most tool calls of one step that are run (the rest are told so).
const CALLS_PER_STEP: usize = 4;
/// The characters of a passage a search result shows the model, and how many passages
/// of a page it shows (the rest it can `read`): a small model's context is short.
const PASSAGE_CHARS: usize = 280;
const PASSAGES_SHOWN: usize = 1;

impl Run<'_, '_> {
    /// The question's search, then the loop; the model's closing note, if it gave one.
    pub(super) async fn research(&mut self, ctx: &prompt::Context<'_>) -> Result<Option<String>, ResearchError> {
        let first = self.search(&self.req.question.clone())?;
        // A question of several parts: each part searched too, so the sources hold every
        // part's page even when the model never searches (its results are sources for
        // the answer; the model sees the whole question's).
        for part in parts(&self.req.question) {
            self.search(&part)?;
        }
        let (system, user) = prompt::loop_start(ctx, &first);
        let mut messages = vec![user];
        let budget = self.req.tier.steps();
        for step in 1..=budget {
            self.emit(Event::Status { stage: "deepening", step: Some(step) });
            self.timings.steps = step;
            let done = self.call(prompt::step(&self.model, &system, &messages)).await?;
            let out = done.output;
            if out.tool_calls.is_empty() {
                return Ok(note(&out.text, &self.req.question));
            }
            let mut asked: Vec<Block> = Vec::new();
            if !out.text.trim().is_empty() {
                asked.push(Block::Text(out.text.clone()));
            }
            let mut results = Vec::new();
            for (i, call) in out.tool_calls.iter().enumerate() {
                let input: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                asked.push(Block::ToolUse { id: call.id.clone(), name: call.name.clone(), input: input.clone() });
                let (content, is_error) = if i >= CALLS_PER_STEP {
                    (format!("Not run: at most {CALLS_PER_STEP} tool calls a step."), true)
                } else {
                    self.tool(&call.name, &input)?
                };
                results.push(Block::ToolResult { tool_use_id: call.id.clone(), content, is_error });
            }
            messages.push(Message { role: Role::Assistant, content: asked });
            messages.push(Message { role: Role::User, content: results });
        }
        self.warnings
            .push(format!("The research used its {budget} steps before the model stopped searching; the answer is written from what it found."));
        Ok(None)
    }

    /// One tool call: its result for the model, and whether it is an error.
    pub(super) fn tool(&mut self, name: &str, input: &Value) -> Result<(String, bool), ResearchError> {
        match name {
            prompt::SEARCH => match input.get("query").and_then(Value::as_str).map(str::trim).filter(|q| !q.is_empty()) {
                Some(q) => Ok((self.search(&q.chars().take(500).collect::<String>())?, false)),
                None => Ok(("search needs a non-empty \"query\" string.".into(), true)),
            },
            prompt::READ => {
                let n = input.get("source").and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().trim_matches(['[', ']']).parse().ok()));
                match n.filter(|&n| n >= 1 && n as usize <= self.sources.len()) {
                    Some(n) => {
                        let s = &mut self.sources[n as usize - 1];
                        s.read = true;
                        let text = cut(&s.text, self.r.config.page_chars);
                        Ok((format!("[{n}] {}\n{text}", s.label()), false))
                    }
                    None => Ok((format!("read needs \"source\": a number from 1 to {}.", self.sources.len()), true)),
                }
            }
            other => Ok((format!("There is no tool \"{other}\"; the tools are search and read."), true)),
        }
    }

    /// Runs a search bounded by the request's filters; the pages it found, for the model.
    pub(super) fn search(&mut self, q: &str) -> Result<String, ResearchError> {
        let t = Instant::now();
        let mut req = self.req.search.clone();
        req.query = q.to_owned();
        req.k = self.r.config.k;
        req.expansion.domain = self.req.domain;
        let settled = query::mode_for(self.r.search, &self.owned.record, &req)?;
        let s = query::run(self.r.search, self.embedders, &self.owned.coll, &req, settled)?;
        let mut listed = Vec::new();
        for h in &s.results.hits {
            let v = s.snapshot.hit_view(h);
            let at = self.sources.iter().position(|x| x.doc_id == v.doc.id && x.page_n == v.page.n);
            let i = match at {
                Some(i) => i,
                None => {
                    let own = |s: Option<&str>| s.map(str::to_owned);
                    self.sources.push(Source {
                        n: self.sources.len() as u32 + 1,
                        citation: v.page.citation_id(),
                        doc_id: v.doc.id.to_owned(),
                        title: own(v.doc.title),
                        author: own(v.doc.author),
                        page_n: v.page.n,
                        number: own(v.page.number),
                        volume: own(v.page.volume),
                        heading: own(v.page.heading),
                        kinds: Vec::new(),
                        meta: v.page.meta_json.and_then(|m| serde_json::from_str(m).ok()),
                        cited: false,
                        passages: Vec::new(),
                        text: v.page.text.to_owned(),
                        read: false,
                    });
                    self.sources.len() - 1
                }
            };
            let src = &mut self.sources[i];
            for (c, _) in &v.passages {
                for k in c.kinds.names() {
                    if !src.kinds.contains(&k) {
                        src.kinds.push(k);
                    }
                }
                if !src.passages.iter().any(|p| p.0 == c.pos) {
                    src.passages.push((c.pos, c.text.to_owned()));
                }
            }
            let shown: Vec<String> = v.passages.iter().take(PASSAGES_SHOWN).map(|(c, _)| cut(c.text, PASSAGE_CHARS)).collect();
            listed.push(format!("[{}] {}\n{}", i + 1, src.label(), shown.join("\n…\n")));
        }
        let run = QueryRun { query: q.to_owned(), mode: mode_str(s.mode), results: s.results.hits.len() };
        self.timings.search_ms += ms(t);
        self.emit(Event::Query(&run));
        self.queries.push(run);
        self.emit(Event::Sources(&self.sources));
        Ok(if listed.is_empty() { format!("No page matches \"{q}\".") } else { listed.join("\n\n") })
    }
}

/// Words that open a question's part.
const PART_OPENERS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether", "is", "are", "was", "were", "does", "do", "did", "can",
    "could", "must", "should", "may", "will", "would", "has", "have",
];

/// The parts of a question of several (`when are the fees due, and what interest do late
/// payments bear?`): split at `?`, at `;`, and at `,` or `and` before a word that opens a
/// question. A lead-in before the first part (`Under the Agreement,`) is kept on every
/// part. Empty for a question of one part; at most four.
pub(super) fn parts(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sentence in question.split(['?', ';', '؟']).map(str::trim).filter(|s| !s.is_empty()) {
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let mut lead = String::new();
        let mut current: Vec<&str> = Vec::new();
        let split_here = |current: &mut Vec<&str>, out: &mut Vec<String>, lead: &str| {
            let text = current.join(" ").trim_end_matches(" and").trim_end_matches([',', ' ']).to_owned();
            if text.split_whitespace().count() >= 3 {
                out.push(if lead.is_empty() || text.starts_with(lead) { text } else { format!("{lead} {text}") });
            }
            current.clear();
        };
        for (i, w) in words.iter().enumerate() {
            let opener = PART_OPENERS.contains(&w.to_lowercase().trim_matches(|c: char| !c.is_alphanumeric()));
            let after_break = i > 0 && (words[i - 1].ends_with(',') || words[i - 1].eq_ignore_ascii_case("and"));
            if opener && after_break && !current.is_empty() {
                let before = current.join(" ");
                // The words before the first part's opener, ending in a comma, are a lead-in.
                if out.is_empty() && lead.is_empty() && !current.iter().any(|w| PART_OPENERS.contains(&w.to_lowercase().as_str())) {
                    lead = before.trim_end_matches(',').to_owned() + ",";
                    current.clear();
                    current.push(w);
                    continue;
                }
                split_here(&mut current, &mut out, &lead);
            }
            current.push(w);
        }
        split_here(&mut current, &mut out, &lead);
    }
    if out.len() < 2 {
        return Vec::new();
    }
    out.truncate(4);
    out
}

/// The model's closing note: its first line that says something (three words or more,
/// not a lead-in ending in `:`, not the question again).
pub(super) fn note(text: &str, question: &str) -> Option<String> {
    let q = question.trim().to_lowercase();
    text.lines()
        .map(|l| l.trim().trim_start_matches(['-', '*', '#', ' ']))
        .find(|l| {
            l.split_whitespace().count() >= 3 && !l.ends_with(':') && l.to_lowercase() != q && !l.to_lowercase().starts_with("what the sources cover")
        })
        .map(|l| l.chars().take(300).collect())
}

/// `s` cut to `n` characters, with `…` when cut.
pub(super) fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

fn mode_str(m: Mode) -> &'static str {
    match m {
        Mode::Keyword => "keyword",
        Mode::Semantic => "semantic",
        Mode::Hybrid => "hybrid",
    }
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn a_question_of_several_parts_is_split_and_keeps_its_lead_in() {
        assert_eq!(
            parts("Under the Software Services Agreement, when are the Fees due, and what interest do late payments bear?"),
            vec![
                "Under the Software Services Agreement, when are the Fees due",
                "Under the Software Services Agreement, what interest do late payments bear"
            ]
        );
        assert_eq!(
            parts("How long is the initial term of the Agreement, how does it renew, and how much notice of non-renewal must a Party give?"),
            vec!["How long is the initial term of the Agreement", "how does it renew", "how much notice of non-renewal must a Party give"]
        );
        assert_eq!(parts("What is the dose? Which patients are excluded?"), vec!["What is the dose", "Which patients are excluded"]);
        // One part: nothing to split ("and" inside a noun phrase is no break).
        assert!(parts("What do cats and dogs eat?").is_empty());
        assert!(parts("How often may the customer audit the provider's records?").is_empty());
        assert!(parts("ما هو الحكم؟").is_empty());
    }
}
