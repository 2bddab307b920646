//! Tool calls written as text. Small local models asked to call a tool often write the
//! call into the answer (a fenced JSON block `{"name", "arguments"}`, or Qwen's
//! `<tool_call>` tags) instead of the protocol's tool-call field. A manifest declares
//! the forms its models write (`tool_calls.text_forms`); when a request binds tools and
//! the whole answer is such a call to one of them, the caller gets a real tool call and
//! no text. Anything else is left as the text it is.
//!
//! [`Holder`] does it as the answer streams: text that could still become a call is
//! held back until it cannot (then released as it came) or the stream ends (then
//! parsed).

use serde::Deserialize;
use serde_json::Value;

use super::stream::assemble::{Delta, Output, ToolCall};

/// `tool_calls.text_forms` of a manifest: each a wrapper (`open` … `close`, empty for
/// a bare object) around JSON, and where in it the name and the arguments are.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TextForms {
    #[serde(default)]
    pub text_forms: Vec<TextForm>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextForm {
    #[serde(default)]
    pub open: String,
    #[serde(default)]
    pub close: String,
    /// JSON pointers into one call's object.
    pub name: String,
    pub arguments: String,
}

impl TextForms {
    /// Checks the pointers (at manifest load).
    pub fn check(&self) -> Result<(), (String, String)> {
        for (i, f) in self.text_forms.iter().enumerate() {
            for (k, p) in [("name", &f.name), ("arguments", &f.arguments)] {
                if !(p.is_empty() || p.starts_with('/')) {
                    return Err((format!("tool_calls.text_forms[{i}].{k}"), "must be a JSON pointer (/name)".into()));
                }
            }
            if f.open.is_empty() != f.close.is_empty() {
                return Err((format!("tool_calls.text_forms[{i}].close"), "open and close go together".into()));
            }
        }
        Ok(())
    }

    /// The calls `text` is, if the whole of it is a call (or a JSON array of calls) in
    /// one of the forms, each naming a tool in `tools`.
    pub fn parse(&self, text: &str, tools: &[String]) -> Option<Vec<ToolCall>> {
        let t = text.trim();
        self.text_forms.iter().find_map(|f| {
            let inner = if f.open.is_empty() { t } else { t.strip_prefix(&f.open)?.strip_suffix(&f.close)? };
            let value: Value = serde_json::from_str(inner.trim()).ok()?;
            let items = match value {
                Value::Array(a) if !a.is_empty() => a,
                v @ Value::Object(_) => vec![v],
                _ => return None,
            };
            items.iter().map(|v| f.call(v, tools)).collect()
        })
    }

    /// Whether text starting with `t` (trimmed at the start) could still be a call.
    /// After a form's opening, only JSON may follow: a code block in another language
    /// (```` ```python ````) is released as it streams, not held to the end.
    fn may_become(&self, t: &str) -> bool {
        let json_may_follow = |rest: &str| {
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with('{') || rest.starts_with('[')
        };
        self.text_forms.iter().any(|f| match t.strip_prefix(f.open.as_str()) {
            Some(rest) => json_may_follow(rest),
            None => f.open.starts_with(t),
        })
    }
}

impl TextForm {
    fn call(&self, v: &Value, tools: &[String]) -> Option<ToolCall> {
        let name = v.pointer(&self.name)?.as_str()?;
        if !tools.iter().any(|t| t == name) {
            return None;
        }
        let arguments = match v.pointer(&self.arguments) {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(a @ Value::Object(_)) => a.to_string(),
            // Some write the arguments as a JSON string.
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s).ok()? {
                a @ Value::Object(_) => a.to_string(),
                _ => return None,
            },
            Some(_) => return None,
        };
        Some(ToolCall { id: super::stream::map::generate_id(), name: name.to_owned(), arguments })
    }
}

/// One streamed answer's text, held while it may still be a call.
#[derive(Debug)]
pub struct Holder {
    forms: TextForms,
    tools: Vec<String>,
    held: String,
    /// The text is not a call: it passes through.
    passing: bool,
    /// What the answer turned out to be, once it ended as calls.
    pub calls: Vec<ToolCall>,
}

impl Holder {
    /// `None` unless the manifest declares forms and the request binds tools.
    pub fn new(forms: &TextForms, tools: Vec<String>) -> Option<Holder> {
        (!forms.text_forms.is_empty() && !tools.is_empty()).then(|| Holder {
            forms: forms.clone(),
            tools,
            held: String::new(),
            passing: false,
            calls: Vec::new(),
        })
    }

    pub fn filter(&mut self, deltas: Vec<Delta>) -> Vec<Delta> {
        let mut out = Vec::with_capacity(deltas.len());
        for d in deltas {
            match d {
                Delta::Text(t) if !self.passing => {
                    self.held.push_str(&t);
                    if !self.forms.may_become(self.held.trim_start()) {
                        self.passing = true;
                        out.push(Delta::Text(std::mem::take(&mut self.held)));
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    /// At the end of the stream: the held text as calls, or as text.
    pub fn finish(&mut self) -> Vec<Delta> {
        if self.passing || self.held.is_empty() {
            return Vec::new();
        }
        match self.forms.parse(&self.held, &self.tools) {
            Some(calls) => {
                self.held.clear();
                self.calls = calls;
                self.calls
                    .iter()
                    .enumerate()
                    .map(|(index, c)| Delta::ToolCall { index, id: Some(c.id.clone()), name: Some(c.name.clone()), arguments: c.arguments.clone() })
                    .collect()
            }
            None => vec![Delta::Text(std::mem::take(&mut self.held))],
        }
    }

    /// The whole output as the caller saw it.
    pub fn apply(&self, out: &mut Output) {
        if !self.calls.is_empty() {
            out.text.clear();
            out.tool_calls = self.calls.clone();
        }
    }
}

/// A whole answer: its text made calls when it is one.
pub fn apply_whole(forms: &TextForms, tools: &[String], out: &mut Output) {
    if forms.text_forms.is_empty() || tools.is_empty() || !out.tool_calls.is_empty() {
        return;
    }
    if let Some(calls) = forms.parse(&out.text, tools) {
        out.text.clear();
        out.tool_calls = calls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms() -> TextForms {
        let f = |open: &str, close: &str| TextForm { open: open.into(), close: close.into(), name: "/name".into(), arguments: "/arguments".into() };
        TextForms { text_forms: vec![f("```json", "```"), f("```", "```"), f("<tool_call>", "</tool_call>"), f("", "")] }
    }

    fn tools() -> Vec<String> {
        vec!["get_weather".into(), "search".into()]
    }

    #[test]
    fn fenced_bare_and_tagged_calls_are_parsed() {
        for text in [
            "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\"city\": \"Paris\"}\n}\n```",
            "  {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n",
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}\n</tool_call>",
        ] {
            let calls = forms().parse(text, &tools()).unwrap_or_else(|| panic!("{text}"));
            assert_eq!((calls[0].name.as_str(), calls[0].arguments.as_str()), ("get_weather", r#"{"city":"Paris"}"#));
        }
        let two = r#"[{"name": "search", "arguments": {"q": "a"}}, {"name": "get_weather", "arguments": {}}]"#;
        assert_eq!(forms().parse(two, &tools()).unwrap().len(), 2);
    }

    #[test]
    fn text_that_is_not_a_call_of_a_bound_tool_stays_text() {
        for text in [
            "Paris is sunny.",
            "```json\n{\"name\": \"delete_everything\", \"arguments\": {}}\n```",
            "Here it is: ```json\n{\"name\": \"search\", \"arguments\": {}}\n```",
            "{\"city\": \"Paris\"}",
            "```python\nprint(1)\n```",
        ] {
            assert!(forms().parse(text, &tools()).is_none(), "{text}");
        }
    }

    #[test]
    fn a_stream_holds_only_what_may_become_a_call() {
        let mut h = Holder::new(&forms(), tools()).unwrap();
        assert_eq!(h.filter(vec![Delta::Text("\n".into()), Delta::Text("The".into())]), vec![Delta::Text("\nThe".into())]);
        assert_eq!(h.filter(vec![Delta::Text(" sky".into())]), vec![Delta::Text(" sky".into())]);
        assert!(h.finish().is_empty());

        let mut h = Holder::new(&forms(), tools()).unwrap();
        for piece in ["``", "`json\n{\"name\": \"se", "arch\", \"arguments\": {\"q\": \"x\"}}\n", "```"] {
            assert!(h.filter(vec![Delta::Text(piece.into())]).is_empty());
        }
        let d = h.finish();
        assert!(matches!(&d[..], [Delta::ToolCall { index: 0, name: Some(n), arguments, .. }] if n == "search" && arguments == r#"{"q":"x"}"#));
        let mut out = Output { text: "```json…```".into(), ..Output::default() };
        h.apply(&mut out);
        assert!(out.text.is_empty() && out.tool_calls.len() == 1);

        let mut h = Holder::new(&forms(), tools()).unwrap();
        assert!(h.filter(vec![Delta::Text("``".into())]).is_empty());
        assert_eq!(h.filter(vec![Delta::Text("`python\n".into())]), vec![Delta::Text("```python\n".into())]);
        assert_eq!(h.filter(vec![Delta::Text("print(1)".into())]), vec![Delta::Text("print(1)".into())]);
        assert!(h.finish().is_empty());
    }
}
