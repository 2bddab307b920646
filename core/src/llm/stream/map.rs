//! The manifest's `event_map`, run on each decoded frame: every rule whose `match`
//! holds emits its event, with its `fields` drawn from the frame by path (or a
//! literal, or `_generate_uuid`). A rule whose fields fan out (`[*]`) emits one event
//! per element of its primary field (the field with the most wildcards), and every
//! other field is taken from the same element, so two tool calls in one chunk stay
//! two events with their own ids and indices.

use std::borrow::Cow;

use serde_json::Value;

use super::super::expr::Expr;
use super::super::path::{Path, Shape};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    PartialContentDelta,
    ThinkingDelta,
    PartialToolCall,
    ToolCallStarted,
    ToolCallEnded,
    StreamError,
    Metadata,
    FinalCandidate,
    StreamEnd,
}

impl EventKind {
    pub fn parse(s: &str) -> Option<EventKind> {
        Some(match s {
            "PartialContentDelta" => EventKind::PartialContentDelta,
            "ThinkingDelta" => EventKind::ThinkingDelta,
            "PartialToolCall" => EventKind::PartialToolCall,
            "ToolCallStarted" => EventKind::ToolCallStarted,
            "ToolCallEnded" => EventKind::ToolCallEnded,
            "StreamError" => EventKind::StreamError,
            "Metadata" => EventKind::Metadata,
            "FinalCandidate" => EventKind::FinalCandidate,
            "StreamEnd" => EventKind::StreamEnd,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::PartialContentDelta => "PartialContentDelta",
            EventKind::ThinkingDelta => "ThinkingDelta",
            EventKind::PartialToolCall => "PartialToolCall",
            EventKind::ToolCallStarted => "ToolCallStarted",
            EventKind::ToolCallEnded => "ToolCallEnded",
            EventKind::StreamError => "StreamError",
            EventKind::Metadata => "Metadata",
            EventKind::FinalCandidate => "FinalCandidate",
            EventKind::StreamEnd => "StreamEnd",
        }
    }

    /// The field that carries the event, preferred as the fan-out key.
    fn primary(self) -> &'static [&'static str] {
        match self {
            EventKind::PartialContentDelta => &["content"],
            EventKind::ThinkingDelta => &["thinking"],
            EventKind::PartialToolCall => &["arguments", "partial_args", "partial_json", "tool_calls"],
            EventKind::ToolCallStarted => &["tool_name"],
            EventKind::ToolCallEnded => &["index"],
            EventKind::StreamError => &["error"],
            EventKind::Metadata => &["usage"],
            EventKind::FinalCandidate | EventKind::StreamEnd => &["finish_reason"],
        }
    }
}

#[derive(Debug, Clone)]
pub enum FieldSource {
    Path(Path),
    Literal(String),
    GenerateId,
}

impl FieldSource {
    pub fn parse(s: &str) -> Result<FieldSource, String> {
        match s {
            "_generate_uuid" => Ok(FieldSource::GenerateId),
            s if s.starts_with('$') => Path::parse(s).map(FieldSource::Path),
            s => Ok(FieldSource::Literal(s.to_owned())),
        }
    }

    fn fan_out(&self) -> usize {
        match self {
            FieldSource::Path(p) => p.fan_out(),
            _ => 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub matches: Expr,
    pub kind: EventKind,
    /// The manifest's `fields`, then its `extract` (a name may be in both).
    pub fields: Vec<(String, FieldSource)>,
}

/// One event as the map emits it, before it is typed: its fields named by the rule
/// (`'r`) and, unless literal or generated, borrowed from the frame (`'f`). Events are
/// typed as soon as they are emitted, so nothing of the frame is copied but what the
/// typed event keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEvent<'r, 'f> {
    pub kind: EventKind,
    pub fields: Vec<(&'r str, Cow<'f, Value>)>,
}

impl<'r, 'f> RawEvent<'r, 'f> {
    /// The field named `name`; the last one when a rule names it twice (in `fields`
    /// and `extract`), as when the fields were collected into a map.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v.as_ref())
    }
}

/// A manifest's streaming rules.
#[derive(Debug, Clone, Default)]
pub struct EventMap {
    pub selector: Option<Expr>,
    pub rules: Vec<Rule>,
    pub stop: Option<Expr>,
}

impl EventMap {
    /// The events one frame yields, in rule order.
    pub fn apply<'r, 'f>(&'r self, frame: &'f Value) -> Vec<RawEvent<'r, 'f>> {
        if self.selector.as_ref().is_some_and(|s| !s.eval(frame)) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for rule in self.rules.iter().filter(|r| r.matches.eval(frame)) {
            rule.emit(frame, &mut out);
        }
        out
    }

    /// What of a frame the selector, the rules and the stop condition read: a frame
    /// parsed to this shape maps to the same events as the whole frame.
    pub fn shape(&self) -> Shape {
        let mut shape = Shape::default();
        for e in self.selector.iter().chain(&self.stop).chain(self.rules.iter().map(|r| &r.matches)) {
            e.shape_into(&mut shape);
        }
        for (_, f) in self.rules.iter().flat_map(|r| &r.fields) {
            if let FieldSource::Path(p) = f {
                shape.add(p);
            }
        }
        shape
    }

    /// Whether the frame ends the stream (`stop_condition`).
    pub fn stops(&self, frame: &Value) -> bool {
        self.stop.as_ref().is_some_and(|s| s.eval(frame))
    }
}

impl Rule {
    fn emit<'r, 'f>(&'r self, frame: &'f Value, out: &mut Vec<RawEvent<'r, 'f>>) {
        let primary = self.primary();
        let Some((_, FieldSource::Path(p))) = primary.map(|i| &self.fields[i]).filter(|(_, f)| f.fan_out() > 0) else {
            let fields = self.fields.iter().filter_map(|(name, f)| Some((name.as_str(), value(f, frame, &[])?))).collect();
            out.push(RawEvent { kind: self.kind, fields });
            return;
        };
        for (at, v) in p.all(frame).into_iter().filter(|(_, v)| !v.is_null()) {
            let mut fields = Vec::with_capacity(self.fields.len());
            for (name, f) in &self.fields {
                let got = if std::ptr::eq(f, &self.fields[primary.unwrap_or(0)].1) { Some(Cow::Borrowed(v)) } else { value(f, frame, &at) };
                if let Some(got) = got {
                    fields.push((name.as_str(), got));
                }
            }
            out.push(RawEvent { kind: self.kind, fields });
        }
    }

    fn primary(&self) -> Option<usize> {
        let most = self.fields.iter().map(|(_, f)| f.fan_out()).max()?;
        let named = self.kind.primary().iter().find_map(|want| self.fields.iter().position(|(name, f)| name == want && f.fan_out() == most));
        named.or_else(|| self.fields.iter().position(|(_, f)| f.fan_out() == most))
    }
}

/// A field's value at the fan-out element `at` (the first non-null match whose
/// wildcard indices agree with `at`).
fn value<'f>(f: &FieldSource, frame: &'f Value, at: &[usize]) -> Option<Cow<'f, Value>> {
    match f {
        FieldSource::Literal(s) => Some(Cow::Owned(Value::String(s.clone()))),
        FieldSource::GenerateId => Some(Cow::Owned(Value::String(generate_id()))),
        FieldSource::Path(p) if at.is_empty() => p.find(frame, &mut |v| !v.is_null()).map(Cow::Borrowed),
        FieldSource::Path(p) => {
            p.all(frame).into_iter().find(|(idx, v)| !v.is_null() && idx.iter().zip(at).all(|(a, b)| a == b)).map(|(_, v)| Cow::Borrowed(v))
        }
    }
}

/// `call_` and 24 random hex digits.
pub fn generate_id() -> String {
    crate::llm::ids::hex_id("call_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(m: &str, kind: EventKind, fields: &[(&str, &str)]) -> Rule {
        Rule { matches: Expr::parse(m).unwrap(), kind, fields: fields.iter().map(|(n, p)| (n.to_string(), FieldSource::parse(p).unwrap())).collect() }
    }

    #[test]
    fn fan_out_keeps_elements_together() {
        let map = EventMap {
            rules: vec![rule(
                "exists($.choices[*].delta.tool_calls[*].function.name)",
                EventKind::ToolCallStarted,
                &[
                    ("tool_call_id", "$.choices[*].delta.tool_calls[*].id"),
                    ("tool_name", "$.choices[*].delta.tool_calls[*].function.name"),
                    ("index", "$.choices[*].delta.tool_calls[*].index"),
                ],
            )],
            ..EventMap::default()
        };
        let frame = json!({"choices": [{"delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "{}"}},
            {"index": 1, "id": "b", "function": {"name": "two"}}
        ]}}]});
        let events = map.apply(&frame);
        assert_eq!(events.len(), 1);
        let fields: serde_json::Map<String, Value> = events[0].fields.iter().map(|(n, v)| (n.to_string(), v.clone().into_owned())).collect();
        assert_eq!(fields, json!({"tool_call_id": "b", "tool_name": "two", "index": 1}).as_object().unwrap().clone());
    }
}
