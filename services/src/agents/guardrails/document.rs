//! A guardrail's `document` (guardrails.yaml's `GuardrailDocument`): SOAT's action
//! class (`class`, `default_class`, `guard`, `escalate`, `expires_in`), checked on
//! write, and Quarry's `identifiers` rule, which the document's open shape admits: what
//! to do when Quarry's identifier scanner (`quarry_index::identify`, the masking of
//! `/v1/scan`) finds identifiers in a generation's input, its output or a tool call's
//! arguments: `redact` (masked before anything is sent, stored or streamed), `block`,
//! `flag` (recorded, the run goes on) or `require_approval` (a tool call, the final
//! answer, or the request's input, held for an approval item).

use serde_json::{Map, Value};

use quarry_index::identify::{IdentifierKind, Kinds};

use super::logic;

/// An action class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    A,
    B,
    C,
    D,
}

impl Class {
    pub fn parse(v: &Value) -> Option<Class> {
        Some(match v.as_str()? {
            "A" => Class::A,
            "B" => Class::B,
            "C" => Class::C,
            "D" => Class::D,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Class::A => "A",
            Class::B => "B",
            Class::C => "C",
            Class::D => "D",
        }
    }
}

/// Where an `identifiers` rule looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Input,
    Output,
    ToolCall,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Input => "input",
            Stage::Output => "output",
            Stage::ToolCall => "tool_call",
        }
    }

    fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "input" => Stage::Input,
            "output" => Stage::Output,
            "tool_call" => Stage::ToolCall,
            _ => return None,
        })
    }
}

/// What an `identifiers` rule does with what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Redact,
    Block,
    Flag,
    RequireApproval,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Redact => "redact",
            Action::Block => "block",
            Action::Flag => "flag",
            Action::RequireApproval => "require_approval",
        }
    }

    fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "redact" => Action::Redact,
            "block" => Action::Block,
            "flag" => Action::Flag,
            "require_approval" => Action::RequireApproval,
            _ => return None,
        })
    }
}

/// A document's `identifiers` rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub action: Action,
    pub on: [bool; 3],
    pub kinds: Kinds,
}

impl Rule {
    pub fn applies(&self, stage: Stage) -> bool {
        self.on[stage as usize]
    }
}

/// The document a guardrail made without one has (the seed's `{name}` spelling): class
/// `A`, the identity of composition, so naming it changes no decision.
pub fn permissive() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("class".into(), Value::from("A"));
    m
}

const KEYS: &[&str] = &["class", "default_class", "guard", "escalate", "expires_in", "identifiers"];

/// Checks a document on write; the message names the field at fault.
pub fn check(doc: &Map<String, Value>) -> Result<(), String> {
    if let Some(k) = doc.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("document.{k} is not a field of a guardrail document (it has {}).", KEYS.join(", ")));
    }
    match doc.get("class") {
        None => return Err("document.class is required: a class literal (A, B, C, D) or a JSON Logic expression returning one.".into()),
        Some(Value::String(_)) if Class::parse(&doc["class"]).is_none() => {
            return Err("document.class must be A, B, C or D, or a JSON Logic expression returning one.".into())
        }
        Some(Value::String(_)) => {}
        Some(e @ Value::Object(_)) => logic::check(e).map_err(|m| format!("document.class: {m}."))?,
        Some(_) => return Err("document.class must be a class literal (A, B, C, D) or a JSON Logic expression.".into()),
    }
    if let Some(d) = doc.get("default_class") {
        Class::parse(d).ok_or("document.default_class must be A, B, C or D.")?;
    }
    match doc.get("guard") {
        None => {}
        Some(g @ Value::Object(_)) => logic::check(g).map_err(|m| format!("document.guard: {m}."))?,
        Some(_) => return Err("document.guard must be a JSON Logic expression (an object).".into()),
    }
    if doc.get("escalate").is_some_and(|e| !e.is_boolean()) {
        return Err("document.escalate must be true or false.".into());
    }
    if doc.get("expires_in").is_some_and(|e| e.as_u64().is_none_or(|n| n < 1)) {
        return Err("document.expires_in must be a whole number of seconds, at least 1.".into());
    }
    if let Some(r) = doc.get("identifiers") {
        rule_of(r)?;
    }
    Ok(())
}

/// The document's `identifiers` rule, if it has a valid one.
pub fn rule(doc: &Map<String, Value>) -> Option<Rule> {
    rule_of(doc.get("identifiers")?).ok()
}

fn rule_of(v: &Value) -> Result<Rule, String> {
    let m = v.as_object().ok_or("document.identifiers must be an object {action, on, kinds}.")?;
    if let Some(k) = m.keys().find(|k| !["action", "on", "kinds"].contains(&k.as_str())) {
        return Err(format!("document.identifiers.{k} is not a field (it has action, on, kinds)."));
    }
    let action = m
        .get("action")
        .and_then(Value::as_str)
        .and_then(Action::parse)
        .ok_or("document.identifiers.action must be redact, block, flag or require_approval.")?;
    let mut on = [false; 3];
    match m.get("on") {
        None if action == Action::RequireApproval => on[Stage::ToolCall as usize] = true,
        None => on = [true; 3],
        Some(Value::Array(a)) if !a.is_empty() => {
            for s in a {
                let stage = s.as_str().and_then(Stage::parse).ok_or("document.identifiers.on lists input, output or tool_call.")?;
                on[stage as usize] = true;
            }
        }
        Some(_) => return Err("document.identifiers.on must be a list of input, output, tool_call.".into()),
    }
    let kinds = match m.get("kinds") {
        None => Kinds::default_mask(),
        Some(Value::Array(a)) if !a.is_empty() => {
            let mut k = Kinds::NONE;
            for name in a {
                let kind = name
                    .as_str()
                    .and_then(IdentifierKind::parse)
                    .ok_or_else(|| format!("document.identifiers.kinds: {name} is not a kind the scanner finds ({}).", kinds_list()))?;
                k = k.with(kind);
            }
            k
        }
        Some(_) => return Err("document.identifiers.kinds must be a list of identifier kinds.".into()),
    };
    Ok(Rule { action, on, kinds })
}

fn kinds_list() -> String {
    IdentifierKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}
