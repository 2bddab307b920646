//! The research prompts (`prompts/research.v1.*.md`, compiled in), the tools the loop
//! binds, and the judge's answer read back.

use serde_json::{json, Value};

use crate::llm::request::{Block, Message, Params, Role, Tool, ToolChoice};
use crate::llm::ChatRequest;

const SYSTEM: &str = include_str!("../../../prompts/research.v1.system.md");
const USER: &str = include_str!("../../../prompts/research.v1.user.md");
const ANSWER_SYSTEM: &str = include_str!("../../../prompts/research.v2.answer.system.md");
const ANSWER_USER: &str = include_str!("../../../prompts/research.v2.answer.user.md");
const JUDGE_SYSTEM: &str = include_str!("../../../prompts/research.v1.judge.system.md");
const JUDGE_USER: &str = include_str!("../../../prompts/research.v1.judge.user.md");

pub const SEARCH: &str = "search";
pub const READ: &str = "read";

/// What every prompt of one research shares.
pub struct Context<'a> {
    pub question: &'a str,
    pub domain: &'a str,
    /// The collection's `guidance`.
    pub guidance: Option<&'a str>,
    /// Earlier turns, oldest first (the last six).
    pub history: &'a [(Role, String)],
}

impl Context<'_> {
    fn guidance(&self) -> String {
        self.guidance.filter(|g| !g.trim().is_empty()).map(|g| format!("\nGuidance for this collection: {}\n", g.trim())).unwrap_or_default()
    }

    fn history(&self) -> String {
        if self.history.is_empty() {
            return String::new();
        }
        let mut s = String::from("Earlier conversation:\n");
        for (role, text) in self.history {
            s.push_str(match role {
                Role::User => "User: ",
                Role::Assistant => "Assistant: ",
            });
            s.push_str(text.trim());
            s.push('\n');
        }
        s.push('\n');
        s
    }

    fn fill(&self, template: &str, sources: &str) -> String {
        template
            .replace("{{domain}}", self.domain)
            .replace("{{guidance}}", &self.guidance())
            .replace("{{history}}", &self.history())
            .replace("{{question}}", self.question)
            .replace("{{sources}}", sources)
            .trim_end()
            .to_owned()
    }
}

/// The tools the loop binds.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: SEARCH.into(),
            description: Some("Search the collection; lists the pages found, numbered [n].".into()),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string", "description": "What to look for: the terms the answer would use."}}, "required": ["query"]}),
        },
        Tool {
            name: READ.into(),
            description: Some("Show the whole page of one source.".into()),
            parameters: json!({"type": "object", "properties": {"source": {"type": "integer", "description": "The number [n] of the source."}}, "required": ["source"]}),
        },
    ]
}

/// The loop's first request: the system prompt, and the question with the sources the
/// question's own search found.
pub fn loop_start(c: &Context<'_>, sources: &str) -> (String, Message) {
    let system = c.fill(SYSTEM, "");
    (system, Message { role: Role::User, content: vec![Block::Text(c.fill(USER, sources))] })
}

/// One step of the loop as a request.
pub fn step(model: &str, system: &str, messages: &[Message]) -> ChatRequest {
    ChatRequest {
        model: model.to_owned(),
        system: Some(system.to_owned()),
        messages: messages.to_vec(),
        tools: tools(),
        tool_choice: Some(ToolChoice::Auto),
        params: Params { temperature: Some(0.0), max_tokens: Some(300), ..Params::default() },
        ..ChatRequest::default()
    }
}

/// The answer's request, from the sources as the answer prompt lists them.
pub fn answer(model: &str, c: &Context<'_>, sources: &str, max_tokens: u64) -> ChatRequest {
    ChatRequest {
        model: model.to_owned(),
        system: Some(c.fill(ANSWER_SYSTEM, "")),
        messages: vec![Message { role: Role::User, content: vec![Block::Text(c.fill(ANSWER_USER, sources))] }],
        params: Params { temperature: Some(0.0), max_tokens: Some(max_tokens), ..Params::default() },
        ..ChatRequest::default()
    }
}

/// The answer asked again after one of citation markers alone: the same conversation,
/// its reply, and a plain instruction.
pub fn again(req: ChatRequest, reply: &str) -> ChatRequest {
    let ask =
        "That is only citation markers. Write the answer itself: full sentences saying what the sources say, each followed by the [n] of its source.";
    answered(req, reply, ask.into())
}

/// The conversation `req` went on by its `reply` and the user's `ask`.
fn answered(mut req: ChatRequest, reply: &str, ask: String) -> ChatRequest {
    req.messages.push(Message { role: Role::Assistant, content: vec![Block::Text(reply.to_owned())] });
    req.messages.push(Message { role: Role::User, content: vec![Block::Text(ask)] });
    req
}

/// The answer asked again after one whose sentences mostly cite no source (or only
/// point to one): the same conversation, its reply, and the sentences named.
pub fn cite_again(req: ChatRequest, reply: &str, uncited: &[String], pointers: &[String]) -> ChatRequest {
    let list = |v: &[String]| v.iter().map(|s| format!("- {s}")).collect::<Vec<_>>().join("\n");
    let mut ask = String::new();
    if !uncited.is_empty() {
        ask.push_str(&format!("These sentences cite no source:\n{}\n", list(uncited)));
    }
    if !pointers.is_empty() {
        ask.push_str(&format!("These sentences point to a source without saying what it says:\n{}\n", list(pointers)));
    }
    ask.push_str(
        "Write the whole answer again. End every sentence that states a fact with the [n] of the source that says it, \
         say what the source says instead of pointing to it, and leave out any sentence no source supports.",
    );
    answered(req, reply, ask)
}

/// The judge's request: the cited sources and the numbered claims.
pub fn judge(model: &str, c: &Context<'_>, sources: &str, claims: &[(String, Vec<u32>)]) -> ChatRequest {
    let listed: Vec<String> = claims
        .iter()
        .enumerate()
        .map(|(i, (text, cites))| {
            let cites: String = cites.iter().map(|n| format!("[{n}]")).collect();
            format!("{}. {text} (cites {cites})", i + 1)
        })
        .collect();
    let user = JUDGE_USER.replace("{{sources}}", sources).replace("{{claims}}", &listed.join("\n"));
    ChatRequest {
        model: model.to_owned(),
        system: Some(c.fill(JUDGE_SYSTEM, "")),
        messages: vec![Message { role: Role::User, content: vec![Block::Text(user.trim_end().to_owned())] }],
        params: Params { temperature: Some(0.0), max_tokens: Some(120 + 90 * claims.len() as u64), ..Params::default() },
        ..ChatRequest::default()
    }
}

/// The judge's verdict on claim `claim` (from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub claim: usize,
    pub verdict: String,
    pub evidence: String,
}

/// The judge's verdicts from the first JSON object in `text` holding `claims` (in a
/// fence or amid prose); a claim without a number takes its place in the list.
pub fn verdicts(text: &str) -> Option<Vec<Verdict>> {
    let found = text.match_indices('{').find_map(|(at, _)| {
        let mut de = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match de.next() {
            Some(Ok(Value::Object(mut o))) => match o.remove("claims") {
                Some(Value::Array(items)) => Some(items),
                _ => None,
            },
            _ => None,
        }
    })?;
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    Some(
        found
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let o = v.as_object()?;
                let claim = o.get("claim").and_then(|c| c.as_u64().or_else(|| c.as_str()?.trim().parse().ok())).map_or(i + 1, |n| n as usize);
                Some(Verdict { claim, verdict: str_of(o.get("verdict").or(o.get("status"))), evidence: str_of(o.get("evidence")) })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(history: &'a [(Role, String)]) -> Context<'a> {
        Context { question: "How often may the customer audit?", domain: "legal", guidance: Some("Cite clause numbers."), history }
    }

    #[test]
    fn prompts_come_from_the_files_with_guidance_and_history() {
        let h = vec![(Role::User, "Who audits?".to_owned()), (Role::Assistant, "The customer.".to_owned())];
        let (system, user) = loop_start(&ctx(&h), "[1] MSA, page 1");
        assert!(system.contains("legal material") && system.contains("Guidance for this collection: Cite clause numbers."), "{system}");
        let Block::Text(u) = &user.content[0] else { panic!() };
        assert!(u.starts_with("Earlier conversation:\nUser: Who audits?\nAssistant: The customer.\n\nQuestion: How often"), "{u}");
        assert!(u.contains("[1] MSA, page 1"));
        let a = answer("m", &ctx(&[]), "[1] MSA", 500);
        assert!(a.system.as_deref().unwrap().contains("Cite only the numbers listed below"));
        assert_eq!(a.params.max_tokens, Some(500));
        let j = judge("m", &ctx(&[]), "[1] MSA", &[("One audit a year.".into(), vec![1, 2])]);
        let Block::Text(u) = &j.messages[0].content[0] else { panic!() };
        assert!(u.contains("1. One audit a year. (cites [1][2])"), "{u}");
    }

    #[test]
    fn verdicts_are_read_amid_prose_and_by_position() {
        let v = verdicts(
            "Here:\n```json\n{\"claims\": [{\"claim\": 2, \"verdict\": \"partial\", \"evidence\": \" x \"}, {\"verdict\": \"supported\"}]}\n```",
        )
        .unwrap();
        assert_eq!(v[0], Verdict { claim: 2, verdict: "partial".into(), evidence: "x".into() });
        assert_eq!((v[1].claim, v[1].evidence.as_str()), (2, ""));
        assert!(verdicts("no json {here}").is_none());
    }
}
