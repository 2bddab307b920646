//! Turns a provider's standard events into what a caller consumes: text, reasoning
//! and tool calls as [`Delta`]s with 0-based tool indices in order of appearance, and
//! at the end the whole [`Output`] (tool-call arguments accumulated across chunks,
//! usage merged from every report, the termination reason).
//!
//! Tool calls are released one of two ways ([`ToolRelease`]): as they stream
//! (OpenAI-style and Gemini), or whole when their block closes (Anthropic, whose
//! explicit block ends let a call that never closed — a stream the provider restarted
//! mid-call — be dropped instead of handed on half-written). Gemini's streamed
//! `partialArgs` are assembled by path and released when the call is done.

use std::collections::HashMap;

use serde_json::Value;

use super::event::{ArgsDelta, StreamEvent};
use crate::llm::error::ProviderError;
use crate::llm::usage::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRelease {
    AsTheyStream,
    WhenClosed,
}

/// What a caller receives as the generation goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Reasoning(String),
    /// The first delta of a call carries its id and name; later ones add arguments.
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text.
    pub arguments: String,
}

/// The whole of a generation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// The provider's own reason, if it gave one.
    pub raw_reason: Option<String>,
}

#[derive(Debug)]
struct Call {
    key: Option<u64>,
    id: String,
    name: String,
    args: Args,
    out: Option<usize>,
}

#[derive(Debug)]
enum Args {
    Text(String),
    Tree(Value),
}

impl Args {
    fn render(&self) -> String {
        match self {
            Args::Text(t) if t.trim().is_empty() => "{}".into(),
            Args::Text(t) => t.clone(),
            Args::Tree(v) => v.to_string(),
        }
    }
}

#[derive(Debug)]
pub struct Assembler {
    release: ToolRelease,
    out: Output,
    calls: Vec<Call>,
    by_key: HashMap<u64, usize>,
    emitted: usize,
    stream_end_reason: Option<String>,
    pub error: Option<ProviderError>,
}

impl Assembler {
    pub fn new(release: ToolRelease) -> Assembler {
        Assembler { release, out: Output::default(), calls: Vec::new(), by_key: HashMap::new(), emitted: 0, stream_end_reason: None, error: None }
    }

    pub fn apply(&mut self, e: StreamEvent) -> Vec<Delta> {
        match e {
            StreamEvent::ContentDelta(t) if !t.is_empty() => {
                self.out.text.push_str(&t);
                vec![Delta::Text(t)]
            }
            StreamEvent::ThinkingDelta(t) if !t.is_empty() => {
                self.out.reasoning.push_str(&t);
                vec![Delta::Reasoning(t)]
            }
            StreamEvent::ContentDelta(_) | StreamEvent::ThinkingDelta(_) => Vec::new(),
            StreamEvent::ToolCallStarted { index, id, name } => self.start(index, id, name),
            StreamEvent::PartialToolCall { index, args } => self.arguments(index, args),
            StreamEvent::ToolCallEnded { index } => self.end(index),
            StreamEvent::Metadata { usage, stop_reason } => {
                if let Some(u) = usage {
                    self.out.usage.merge(u);
                }
                if stop_reason.is_some() {
                    self.out.raw_reason = stop_reason;
                }
                Vec::new()
            }
            StreamEvent::FinalCandidate { finish_reason } => {
                self.out.raw_reason = Some(finish_reason);
                Vec::new()
            }
            StreamEvent::StreamEnd { finish_reason } => {
                self.stream_end_reason = self.stream_end_reason.take().or(finish_reason);
                Vec::new()
            }
            StreamEvent::StreamError(e) => {
                self.error.get_or_insert(e);
                Vec::new()
            }
        }
    }

    fn start(&mut self, key: Option<u64>, id: Option<String>, name: String) -> Vec<Delta> {
        let mut out = Vec::new();
        if key.is_none() {
            // Key-less calls (Gemini) follow one another: a new one closes the last.
            out.extend(self.close_last_partial());
        }
        let open = key.and_then(|k| self.by_key.get(&k)).map(|&at| &self.calls[at]);
        if open.is_some_and(|c| id.is_none() || id.as_deref() == Some(c.id.as_str())) {
            // The same call again (some servers repeat id and name on every chunk).
            return out;
        }
        let id = id.filter(|i| !i.is_empty()).unwrap_or_else(super::map::generate_id);
        self.calls.push(Call { key, id, name, args: Args::Text(String::new()), out: None });
        let at = self.calls.len() - 1;
        if let Some(k) = key {
            self.by_key.insert(k, at);
        }
        if self.release == ToolRelease::AsTheyStream {
            out.push(self.emit_head(at, String::new()));
        }
        out
    }

    fn find(&self, key: Option<u64>) -> Option<usize> {
        match key {
            Some(k) => self.by_key.get(&k).copied(),
            None => self.calls.len().checked_sub(1),
        }
    }

    fn arguments(&mut self, key: Option<u64>, delta: ArgsDelta) -> Vec<Delta> {
        let Some(at) = self.find(key) else { return Vec::new() };
        let call = &mut self.calls[at];
        let fragment = match (delta, &mut call.args) {
            (ArgsDelta::Text(t), Args::Text(acc)) => {
                acc.push_str(&t);
                t
            }
            (ArgsDelta::Whole(v), args) => {
                let text = v.to_string();
                *args = Args::Text(text.clone());
                text
            }
            (ArgsDelta::Partial(parts), args) => {
                if let Args::Text(_) = args {
                    *args = Args::Tree(Value::Object(Default::default()));
                }
                if let Args::Tree(tree) = args {
                    parts.iter().for_each(|p| assign(tree, p));
                }
                return Vec::new();
            }
            (ArgsDelta::Text(_), Args::Tree(_)) => return Vec::new(),
        };
        match (self.release, fragment.is_empty()) {
            (ToolRelease::AsTheyStream, false) => vec![self.emit_args(at, fragment)],
            _ => Vec::new(),
        }
    }

    fn end(&mut self, key: Option<u64>) -> Vec<Delta> {
        let Some(at) = self.find(key) else { return Vec::new() };
        if let Some(k) = key {
            self.by_key.remove(&k);
        }
        self.release_whole(at)
    }

    /// A call whose arguments were held (WhenClosed, or assembled by path) goes out whole.
    fn release_whole(&mut self, at: usize) -> Vec<Delta> {
        let call = &self.calls[at];
        match (call.out, &call.args) {
            (None, args) => {
                let args = args.render();
                vec![self.emit_head(at, args)]
            }
            (Some(_), Args::Tree(v)) => {
                let text = v.to_string();
                vec![self.emit_args(at, text)]
            }
            (Some(_), Args::Text(_)) => Vec::new(),
        }
    }

    fn close_last_partial(&mut self) -> Vec<Delta> {
        match self.calls.last() {
            Some(c) if matches!(c.args, Args::Tree(_)) && c.key.is_none() => {
                let at = self.calls.len() - 1;
                let d = self.release_whole(at);
                self.calls[at].args = Args::Text(self.calls[at].args.render());
                d
            }
            _ => Vec::new(),
        }
    }

    fn emit_head(&mut self, at: usize, arguments: String) -> Delta {
        let index = self.emitted;
        self.emitted += 1;
        let call = &mut self.calls[at];
        call.out = Some(index);
        Delta::ToolCall { index, id: Some(call.id.clone()), name: Some(call.name.clone()), arguments }
    }

    fn emit_args(&self, at: usize, arguments: String) -> Delta {
        let index = self.calls[at].out.unwrap_or(0);
        Delta::ToolCall { index, id: None, name: None, arguments }
    }

    /// The end of the stream: releases what is still held (Gemini's assembled calls);
    /// a WhenClosed call that never closed is dropped.
    pub fn finish(&mut self) -> Vec<Delta> {
        let mut out = self.close_last_partial();
        if self.release == ToolRelease::AsTheyStream {
            let pending: Vec<usize> = (0..self.calls.len()).filter(|&i| self.calls[i].out.is_none()).collect();
            for at in pending {
                out.extend(self.release_whole(at));
            }
        }
        out
    }

    /// Takes in a whole generation as if it had streamed: the deltas it would have
    /// yielded, and [`Assembler::output`] is `out` after.
    pub fn replay(&mut self, out: &Output) -> Vec<Delta> {
        let mut deltas = self.apply(StreamEvent::ThinkingDelta(out.reasoning.clone()));
        deltas.extend(self.apply(StreamEvent::ContentDelta(out.text.clone())));
        for (i, call) in out.tool_calls.iter().enumerate() {
            let index = Some(i as u64);
            deltas.extend(self.apply(StreamEvent::ToolCallStarted { index, id: Some(call.id.clone()), name: call.name.clone() }));
            deltas.extend(self.apply(StreamEvent::PartialToolCall { index, args: ArgsDelta::Text(call.arguments.clone()) }));
            deltas.extend(self.apply(StreamEvent::ToolCallEnded { index }));
        }
        deltas.extend(self.finish());
        self.out.usage = out.usage;
        self.out.raw_reason = out.raw_reason.clone();
        deltas
    }

    /// The whole generation (after [`Assembler::finish`]).
    pub fn output(&self) -> Output {
        let mut calls: Vec<&Call> = self.calls.iter().filter(|c| c.out.is_some()).collect();
        calls.sort_by_key(|c| c.out);
        Output {
            tool_calls: calls.iter().map(|c| ToolCall { id: c.id.clone(), name: c.name.clone(), arguments: c.args.render() }).collect(),
            raw_reason: self.out.raw_reason.clone().or_else(|| self.stream_end_reason.clone()),
            ..self.out.clone()
        }
    }
}

/// One of Gemini's `partialArgs`: `{jsonPath, stringValue | numberValue | boolValue |
/// nullValue}`; a string continues what the path already holds.
fn assign(tree: &mut Value, part: &Value) {
    let Some(path) = part.get("jsonPath").and_then(Value::as_str) else { return };
    let mut slot = tree;
    for seg in steps(path) {
        slot = match seg {
            Step::Key(k) => {
                if !slot.is_object() {
                    *slot = Value::Object(Default::default());
                }
                slot.as_object_mut().expect("an object").entry(k).or_insert(Value::Null)
            }
            Step::Index(i) => {
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let a = slot.as_array_mut().expect("an array");
                if a.len() <= i {
                    a.resize(i + 1, Value::Null);
                }
                &mut a[i]
            }
        };
    }
    if let Some(s) = part.get("stringValue").and_then(Value::as_str) {
        match slot {
            Value::String(existing) => existing.push_str(s),
            other => *other = Value::String(s.to_owned()),
        }
    } else if let Some(v) = part.get("numberValue").or_else(|| part.get("boolValue")) {
        *slot = v.clone();
    } else if part.get("nullValue").is_some() {
        *slot = Value::Null;
    }
}

enum Step {
    Key(String),
    Index(usize),
}

fn steps(path: &str) -> Vec<Step> {
    let body = path.strip_prefix('$').unwrap_or(path);
    let mut out = Vec::new();
    for part in body.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        if let Some(b) = rest.find('[') {
            if b > 0 {
                out.push(Step::Key(rest[..b].to_owned()));
            }
            rest = &rest[b..];
            while let Some(close) = rest.find(']') {
                if let Ok(i) = rest[1..close].parse() {
                    out.push(Step::Index(i));
                }
                rest = &rest[close + 1..];
            }
        } else {
            out.push(Step::Key(rest.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partial_args_build_nested_values() {
        let mut tree = json!({});
        for p in [
            json!({"jsonPath": "$.recipe.steps[1]", "stringValue": "Cook"}),
            json!({"jsonPath": "$.recipe.steps[1]", "stringValue": "."}),
            json!({"jsonPath": "$.recipe.steps[0]", "stringValue": "Heat"}),
            json!({"jsonPath": "$.ops[0].price", "numberValue": 0.5}),
        ] {
            assign(&mut tree, &p);
        }
        assert_eq!(tree, json!({"recipe": {"steps": ["Heat", "Cook."]}, "ops": [{"price": 0.5}]}));
    }

    #[test]
    fn indices_are_zero_based_in_order_of_appearance() {
        let mut a = Assembler::new(ToolRelease::AsTheyStream);
        let mut d = a.apply(StreamEvent::ToolCallStarted { index: Some(1), id: Some("t".into()), name: "read".into() });
        d.extend(a.apply(StreamEvent::PartialToolCall { index: Some(1), args: ArgsDelta::Text("{\"a\":1}".into()) }));
        assert_eq!(d[0], Delta::ToolCall { index: 0, id: Some("t".into()), name: Some("read".into()), arguments: String::new() });
        assert_eq!(d[1], Delta::ToolCall { index: 0, id: None, name: None, arguments: "{\"a\":1}".into() });
        assert_eq!(a.output().tool_calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn a_call_that_never_closes_is_dropped_when_released_on_close() {
        let mut a = Assembler::new(ToolRelease::WhenClosed);
        a.apply(StreamEvent::ToolCallStarted { index: Some(1), id: Some("first".into()), name: "t".into() });
        a.apply(StreamEvent::PartialToolCall { index: Some(1), args: ArgsDelta::Text("{\"v\":\"Sp".into()) });
        a.apply(StreamEvent::ToolCallStarted { index: Some(1), id: Some("second".into()), name: "t".into() });
        a.apply(StreamEvent::PartialToolCall { index: Some(1), args: ArgsDelta::Text("{\"v\":1}".into()) });
        let d = a.apply(StreamEvent::ToolCallEnded { index: Some(1) });
        assert_eq!(d, vec![Delta::ToolCall { index: 0, id: Some("second".into()), name: Some("t".into()), arguments: "{\"v\":1}".into() }]);
        a.finish();
        assert_eq!(a.output().tool_calls.len(), 1);
    }
}
