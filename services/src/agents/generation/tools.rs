//! The tools a generation's model sees: the agent's bindings resolved (persisted tools
//! of its own project, inline ones parsed fresh), each under the function name the
//! model calls, who runs it, and what each step may see (`active_tool_ids`, step
//! rules) and must call (`tool_choice`).

use serde_json::{json, Map, Value};

use super::record::Runner;
use crate::agents::agent::config::{AgentConfig, ToolChoice as AgentChoice, ToolChoiceMode};
use crate::agents::tools::def::{self, Kind, ToolDef, SEARCH_ACTION, WRITE_MEMORY_ACTION};
use crate::agents::tools::{ToolError, Tools};
use crate::agents::Project;
use crate::llm::request::{Tool as LlmTool, ToolChoice};

/// The builtin action that runs another agent as a tool.
pub const AGENT_ACTION: &str = def::AGENT_ACTION;

/// What a function the model calls does.
#[derive(Debug, Clone)]
pub enum Does {
    /// Runs a tool definition (with this builtin or MCP action, if any).
    Tool { def: Box<ToolDef>, action: Option<String> },
    /// Generates with another agent of the project and answers its output.
    Agent { agent_id: Option<String> },
    /// Writes an entry into the knowledge config's write store.
    WriteMemory { store_id: String },
}

#[derive(Debug, Clone)]
pub struct Bound {
    /// The function name the model calls.
    pub name: String,
    /// The persisted tool's id (`active_tool_ids` name these).
    pub tool_id: Option<String>,
    pub description: Option<String>,
    pub parameters: Value,
    pub runner: Runner,
    pub does: Does,
}

/// A function name providers accept (`^[a-zA-Z0-9_-]{1,64}$`).
fn function_name(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    out.truncate(64);
    if out.is_empty() {
        out.push_str("tool");
    }
    out
}

fn object_schema(p: &Option<Map<String, Value>>) -> Value {
    p.clone().map(Value::Object).unwrap_or_else(|| json!({"type": "object", "properties": {}}))
}

fn action_schema(action: &str) -> Value {
    match action {
        SEARCH_ACTION => json!({
            "type": "object",
            "properties": {
                "collection_id": {"type": "string", "description": "The collection to search."},
                "query": {"type": "string", "description": "What to search for."},
                "k": {"type": "integer", "minimum": 1, "maximum": 50}
            },
            "required": ["collection_id", "query"]
        }),
        WRITE_MEMORY_ACTION => json!({
            "type": "object",
            "properties": {"memory_id": {"type": "string"}, "content": {"type": "string"}},
            "required": ["memory_id", "content"]
        }),
        AGENT_ACTION => json!({
            "type": "object",
            "properties": {
                "agent_id": {"type": "string", "description": "The agent to ask."},
                "prompt": {"type": "string", "description": "What to ask it."}
            },
            "required": ["prompt"]
        }),
        _ => json!({"type": "object"}),
    }
}

/// Resolves every binding of `config` in project `p`, plus `write_memory` when the
/// knowledge config names a write store. A binding whose tool is gone fails the
/// generation (`TOOL_NOT_FOUND`), as the write that made it would.
pub fn resolve(tools: &Tools, p: Project<'_>, config: &AgentConfig, write_store: Option<&str>) -> Result<Vec<Bound>, ToolError> {
    let mut out: Vec<Bound> = Vec::new();
    for b in config.tool_bindings.iter().flatten() {
        let (tool_id, def) = match (&b.tool_id, &b.tool) {
            (Some(id), _) => {
                let t = tools.lookup_in(p, id)?.ok_or_else(|| ToolError::NotFound(id.clone()))?;
                (Some(id.clone()), t.def)
            }
            (None, Some(inline)) => (None, def::parse(Value::Object(inline.clone()))?),
            (None, None) => continue,
        };
        let runner = if def.kind == Kind::Client { Runner::Client } else { Runner::Server };
        let actions: Vec<String> = match def.kind {
            Kind::Builtin | Kind::Mcp => def.actions.clone().unwrap_or_default(),
            _ => Vec::new(),
        };
        if actions.is_empty() {
            out.push(Bound {
                name: function_name(&def.name),
                tool_id,
                description: def.description.clone(),
                parameters: object_schema(&def.parameters),
                runner,
                does: Does::Tool { def: Box::new(def), action: None },
            });
            continue;
        }
        let single = actions.len() == 1;
        for action in actions {
            let name = if single { function_name(&def.name) } else { function_name(&format!("{}_{}", def.name, action)) };
            let parameters = match &def.parameters {
                Some(p) => Value::Object(p.clone()),
                None => action_schema(&action),
            };
            let description = def.description.clone().or_else(|| Some(format!("{} ({action})", def.name)));
            let does = if action == AGENT_ACTION {
                let agent_id = def.preset_parameters.as_ref().and_then(|p| p.get("agent_id")).and_then(Value::as_str).map(str::to_owned);
                Does::Agent { agent_id }
            } else {
                Does::Tool { def: Box::new(def.clone()), action: Some(action.clone()) }
            };
            out.push(Bound { name, tool_id: tool_id.clone(), description, parameters, runner, does });
        }
    }
    if let Some(store_id) = write_store {
        out.push(Bound {
            name: "write_memory".into(),
            tool_id: None,
            description: Some("Remember something for later conversations: writes one entry into the agent's memory.".into()),
            parameters: json!({
                "type": "object",
                "properties": {"content": {"type": "string", "description": "What to remember, as a self-contained sentence."}},
                "required": ["content"]
            }),
            runner: Runner::Server,
            does: Does::WriteMemory { store_id: store_id.to_owned() },
        });
    }
    Ok(out)
}

/// What step `step` (1-based) of the turn sees and must call.
pub struct StepTools<'a> {
    pub visible: Vec<&'a Bound>,
    pub choice: Option<ToolChoice>,
}

pub fn for_step<'a>(all: &'a [Bound], config: &AgentConfig, step: u32) -> StepTools<'a> {
    let rule = config.step_rules.iter().flatten().find(|r| r.step == i64::from(step));
    let active = match rule {
        Some(r) => r.active_tool_ids.clone().apply(config.active_tool_ids.clone()),
        None => config.active_tool_ids.clone(),
    };
    let visible: Vec<&Bound> = match active.filter(|ids| !ids.is_empty()) {
        None => all.iter().collect(),
        Some(ids) => all.iter().filter(|b| b.tool_id.as_ref().is_some_and(|id| ids.contains(id)) || ids.contains(&b.name)).collect(),
    };
    let choice = match rule {
        Some(r) => r.tool_choice.clone().apply(config.tool_choice.clone()),
        None => config.tool_choice.clone(),
    };
    let choice = match (choice, visible.is_empty()) {
        (_, true) => None,
        (None, false) => None,
        (Some(AgentChoice::Mode(ToolChoiceMode::Auto)), false) => Some(ToolChoice::Auto),
        (Some(AgentChoice::Mode(ToolChoiceMode::Required)), false) => Some(ToolChoice::Required),
        (Some(AgentChoice::Tool(t)), false) => Some(ToolChoice::Specific(function_name(&t.tool_name))),
    };
    // A forced tool is the only one the step shows: the same contract for providers that
    // honour the named choice, and one a server that reads tool_choice only as a string
    // (llama.cpp) can still keep.
    let visible = match &choice {
        Some(ToolChoice::Specific(name)) => visible.into_iter().filter(|b| &b.name == name).collect(),
        _ => visible,
    };
    StepTools { visible, choice }
}

pub fn llm_tools(visible: &[&Bound]) -> Vec<LlmTool> {
    visible.iter().map(|b| LlmTool { name: b.name.clone(), description: b.description.clone(), parameters: b.parameters.clone() }).collect()
}

/// A tool call the model wrote as text instead of the protocol's field: a JSON object
/// (bare or fenced) or `<tool_call>` tags naming one of the bound tools. The name when
/// it is one.
pub fn text_encoded_call<'a>(text: &str, all: &'a [Bound]) -> Option<&'a str> {
    let t = text.trim();
    let inner = if let Some(rest) = t.strip_prefix("<tool_call>") {
        rest.trim_end().strip_suffix("</tool_call>").unwrap_or(rest)
    } else if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        rest.trim_end().strip_suffix("```").unwrap_or(rest)
    } else {
        t
    };
    let v: Value = serde_json::from_str(inner.trim()).ok()?;
    let obj = v.as_object()?;
    let name = obj.get("name").or_else(|| obj.get("tool_name")).or_else(|| obj.get("function").and_then(|f| f.get("name")))?.as_str()?;
    let has_args = obj.contains_key("arguments") || obj.contains_key("args") || obj.contains_key("parameters") || obj.contains_key("function");
    all.iter().find(|b| b.name == name && has_args).map(|b| b.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(name: &str) -> Bound {
        Bound {
            name: name.into(),
            tool_id: None,
            description: None,
            parameters: json!({}),
            runner: Runner::Server,
            does: Does::WriteMemory { store_id: "m".into() },
        }
    }

    #[test]
    fn tool_calls_written_as_text_are_recognised_only_for_bound_tools() {
        let all = [bound("lookup")];
        assert_eq!(text_encoded_call(r#"{"name":"lookup","arguments":{"q":1}}"#, &all), Some("lookup"));
        assert_eq!(text_encoded_call("```json\n{\"name\":\"lookup\",\"arguments\":{}}\n```", &all), Some("lookup"));
        assert_eq!(text_encoded_call("<tool_call>{\"name\":\"lookup\",\"arguments\":{}}</tool_call>", &all), Some("lookup"));
        assert_eq!(text_encoded_call(r#"{"name":"other","arguments":{}}"#, &all), None);
        assert_eq!(text_encoded_call("The lookup tool says hi.", &all), None);
        assert_eq!(text_encoded_call(r#"{"name":"lookup"}"#, &all), None, "a JSON answer with a name field is not a call");
    }

    #[test]
    fn names_are_what_providers_accept() {
        assert_eq!(function_name("search docs:v2"), "search_docs_v2");
        assert_eq!(function_name(""), "tool");
        assert_eq!(function_name(&"x".repeat(80)).len(), 64);
    }
}
