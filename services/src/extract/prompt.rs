//! The reader's prompt (`prompts/extract.v1.*.md`, compiled in) and its answer read
//! back: JSON `{relevant, note, excerpts}`, found in a code fence or amid prose. An
//! answer with no such object reads as "not relevant" with a note saying so: a reader
//! that rambles costs that page, never the request.

use serde::Deserialize;
use serde_json::Value;

use crate::llm::request::{Block, Message, Params, Role};
use crate::llm::ChatRequest;

const SYSTEM: &str = include_str!("../../../prompts/extract.v1.system.md");
const USER: &str = include_str!("../../../prompts/extract.v1.user.md");

/// The most excerpts taken from one answer (the prompt asks for at most 5).
pub const MAX_EXCERPTS: usize = 12;

/// The chat request that has `model` read `page` (cut to `page_chars` characters) for
/// `question`; `source` names the page for the reader ("MSA, page 3").
pub fn request(model: &str, question: &str, source: &str, page: &str, page_chars: usize, max_tokens: u64) -> ChatRequest {
    let shown = match page.char_indices().nth(page_chars) {
        Some((cut, _)) => &page[..cut],
        None => page,
    };
    let user = USER.replace("{{question}}", question).replace("{{source}}", source).replace("{{page}}", shown);
    ChatRequest {
        model: model.to_owned(),
        system: Some(SYSTEM.trim_end().to_owned()),
        messages: vec![Message { role: Role::User, content: vec![Block::Text(user)] }],
        params: Params { temperature: Some(0.0), max_tokens: Some(max_tokens), ..Params::default() },
        ..ChatRequest::default()
    }
}

/// What the reader said about one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub relevant: bool,
    pub note: String,
    pub excerpts: Vec<String>,
}

pub const UNREADABLE: &str = "The reader's answer could not be read as JSON, so the page was not used.";

#[derive(Deserialize)]
struct Answer {
    relevant: Option<Value>,
    #[serde(default)]
    note: Option<Value>,
    #[serde(default)]
    excerpts: Option<Value>,
}

/// The reader's answer, from the first JSON object in `text` that has `relevant` or
/// `excerpts`; [`UNREADABLE`] and not relevant when there is none.
pub fn parse(text: &str) -> Reading {
    let found = text.match_indices('{').find_map(|(at, _)| {
        let mut de = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Answer>();
        match de.next() {
            Some(Ok(a)) if a.relevant.is_some() || a.excerpts.is_some() => Some(a),
            _ => None,
        }
    });
    let Some(a) = found else {
        return Reading { relevant: false, note: UNREADABLE.into(), excerpts: Vec::new() };
    };
    let excerpts: Vec<String> = match a.excerpts {
        Some(Value::Array(items)) => items.into_iter().filter_map(excerpt_text).take(MAX_EXCERPTS).collect(),
        Some(Value::String(s)) => vec![s],
        _ => Vec::new(),
    };
    let relevant = match a.relevant {
        Some(Value::Bool(b)) => b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => !excerpts.is_empty(),
    };
    let note = match a.note {
        Some(Value::String(s)) => s.trim().to_owned(),
        _ => String::new(),
    };
    Reading { relevant, note, excerpts }
}

/// An excerpt given as a string, or as an object with `text` (some models wrap them).
fn excerpt_text(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Object(mut o) => match o.remove("text") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_answer_is_read() {
        let r = parse(r#"{"relevant": true, "note": "Says how often.", "excerpts": ["One audit per year."]}"#);
        assert_eq!(r, Reading { relevant: true, note: "Says how often.".into(), excerpts: vec!["One audit per year.".into()] });
    }

    #[test]
    fn an_answer_in_a_fence_amid_prose_is_read() {
        let text = "Sure! Here is what I found {in braces}:\n```json\n{\"relevant\": \"yes\", \"excerpts\": [{\"text\": \"A.\"}, \"B.\", 3]}\n```\nHope it helps.";
        let r = parse(text);
        assert!(r.relevant);
        assert_eq!(r.excerpts, vec!["A.", "B."]);
        assert_eq!(r.note, "");
    }

    #[test]
    fn an_unreadable_answer_is_not_relevant_with_a_note() {
        for text in ["", "I cannot tell.", "{\"relevant\": tru", "{\"other\": 1}"] {
            let r = parse(text);
            assert!(!r.relevant && r.excerpts.is_empty(), "{text}");
            assert_eq!(r.note, UNREADABLE);
        }
    }

    #[test]
    fn the_prompt_comes_from_the_files_and_holds_the_page_cut_to_size() {
        let req = request("local/m", "How often?", "MSA, page 1", "ünïcode page text", 7, 100);
        assert!(req.system.as_deref().unwrap().contains("exactly as they are printed"));
        let Block::Text(user) = &req.messages[0].content[0] else { panic!() };
        assert!(user.contains("Question: How often?") && user.contains("MSA, page 1"), "{user}");
        assert!(user.contains("ünïcode\n") && !user.contains("page text"), "{user}");
        assert_eq!(req.params.max_tokens, Some(100));
    }
}
