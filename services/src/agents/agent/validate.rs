//! Every rule an agent's config must keep, as pure functions: [`shape`] checks the
//! config alone (and the project's `trace_content_mode`, its floor); [`references`]
//! lists the records it names, which the service looks up and [`missing`] turns into
//! the spec's errors. Create, update, restore and release all pass through here, so a
//! config that once validated but no longer does (a tool deleted since) is refused the
//! same way.

use std::collections::HashSet;

use super::config::{AgentConfig, StopKind, ToolChoice, TraceContentMode};
use super::error::{AgentError, RefKind};
use super::inline_tool;

/// Checks everything a config says about itself. `null_tool_choice`: the request sent
/// `tool_choice: null` (not nullable). `project_mode`: the project's
/// `trace_content_mode`, `None` when it stores content.
/// The most characters of an agent's instructions (about 25,000 tokens of system prompt).
pub const MAX_INSTRUCTIONS_CHARS: usize = 100_000;
/// The most bytes of an agent's whole configuration as JSON: every version keeps a copy.
pub const MAX_CONFIG_BYTES: usize = 256 * 1024;

pub fn shape(config: &AgentConfig, null_tool_choice: bool, project_mode: Option<TraceContentMode>) -> Result<(), AgentError> {
    if let Some(n) = config.instructions.as_deref().map(|i| i.chars().count()).filter(|n| *n > MAX_INSTRUCTIONS_CHARS) {
        return Err(AgentError::invalid("instructions", format!("instructions hold {n} characters; at most {MAX_INSTRUCTIONS_CHARS}.")));
    }
    let bytes = serde_json::to_vec(config).map_or(0, |b| b.len());
    if bytes > MAX_CONFIG_BYTES {
        return Err(AgentError::invalid("config", format!("the agent's configuration is {bytes} bytes of JSON; at most {MAX_CONFIG_BYTES}.")));
    }
    provider_or_route(config)?;
    // A display name is optional and may be blank; what it holds follows the names rule.
    if let Some(name) = config.name.as_deref().filter(|n| !n.trim().is_empty()) {
        crate::names::check(name, 200).map_err(|problem| AgentError::invalid("name", format!("name {problem}")))?;
    }
    if null_tool_choice {
        return Err(AgentError::invalid(
            "tool_choice",
            "tool_choice cannot be null: send \"auto\", \"required\" or {\"type\": \"tool\", \"tool_name\": …}.",
        ));
    }
    stop_conditions(config)?;
    forced_tool_choice(config)?;
    bindings(config)?;
    active_tools(config)?;
    step_rules(config)?;
    numbers(config)?;
    knowledge(config)?;
    output_schema(config)?;
    if project_mode == Some(TraceContentMode::None) && config.trace_content_mode == Some(TraceContentMode::Full) {
        return Err(AgentError::invalid(
            "trace_content_mode",
            "trace_content_mode cannot be \"full\": the project's mode is \"none\", a floor an agent may only tighten.",
        ));
    }
    Ok(())
}

fn provider_or_route(c: &AgentConfig) -> Result<(), AgentError> {
    match (&c.ai_provider_id, &c.model_route_id) {
        (Some(_), Some(_)) => Err(AgentError::invalid(
            "model_route_id",
            "Set exactly one of ai_provider_id and model_route_id, not both; to switch, send the new one with the other set to null.",
        )),
        (None, None) => Err(AgentError::invalid("ai_provider_id", "Set exactly one of ai_provider_id and model_route_id.")),
        (None, Some(_)) if c.model.is_some() => {
            Err(AgentError::invalid("model", "model cannot be combined with model_route_id: each of the route's targets names its own model."))
        }
        _ => Ok(()),
    }
}

fn stop_conditions(c: &AgentConfig) -> Result<(), AgentError> {
    for (i, s) in c.stop_conditions.iter().flatten().enumerate() {
        let at = format!("stop_conditions[{i}]");
        match s.r#type {
            StopKind::HasToolCall if s.tool_name.as_deref().is_none_or(|n| n.trim().is_empty()) => {
                return Err(AgentError::invalid(
                    format!("{at}.tool_name"),
                    format!("{at}: a has_tool_call condition needs tool_name, the tool whose call ends the turn."),
                ));
            }
            StopKind::MaxChainGenerations if s.max_generations.is_none_or(|n| n < 1) => {
                return Err(AgentError::invalid(
                    format!("{at}.max_generations"),
                    format!("{at}: a max_chain_generations condition needs max_generations, a positive integer."),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn forced_tool_choice(c: &AgentConfig) -> Result<(), AgentError> {
    let Some(choice) = c.tool_choice.as_ref().filter(|t| t.forces_a_tool()) else { return Ok(()) };
    let can_stop = c.stop_conditions.iter().flatten().any(|s| s.r#type == StopKind::HasToolCall);
    if can_stop {
        return Ok(());
    }
    let choice = serde_json::to_string(choice).expect("a tool choice serializes");
    Err(AgentError::ForcedToolChoiceCannotStop { choice })
}

fn bindings(c: &AgentConfig) -> Result<(), AgentError> {
    let mut seen = HashSet::new();
    for (i, b) in c.tool_bindings.iter().flatten().enumerate() {
        let at = format!("tool_bindings[{i}]");
        match (&b.tool_id, &b.tool) {
            (Some(id), None) => {
                if id.trim().is_empty() {
                    return Err(AgentError::invalid(format!("{at}.tool_id"), format!("{at}.tool_id cannot be empty.")));
                }
                if !seen.insert(id.as_str()) {
                    return Err(AgentError::invalid(format!("{at}.tool_id"), format!("{at}: tool {id} is bound twice.")));
                }
            }
            (None, Some(tool)) => inline_tool::check(&format!("{at}.tool"), tool)?,
            _ => return Err(AgentError::invalid(at.clone(), format!("{at} must set exactly one of tool_id and tool."))),
        }
    }
    Ok(())
}

/// `active_tool_ids`, the agent's and each step rule's, name persisted tools the
/// bindings hold.
fn active_tools(c: &AgentConfig) -> Result<(), AgentError> {
    let bound: HashSet<&str> = c.bound_tool_ids().collect();
    let rules = c
        .step_rules
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, r)| r.active_tool_ids.clone().value().map(|ids| (format!("step_rules[{i}].active_tool_ids"), ids)));
    let lists = c.active_tool_ids.clone().map(|ids| ("active_tool_ids".to_owned(), ids)).into_iter().chain(rules);
    for (field, ids) in lists {
        if let Some(id) = ids.iter().find(|id| !bound.contains(id.as_str())) {
            return Err(AgentError::invalid(field.clone(), format!("{field}: {id} is not a tool_id of tool_bindings.")));
        }
    }
    Ok(())
}

fn step_rules(c: &AgentConfig) -> Result<(), AgentError> {
    let mut steps = HashSet::new();
    for (i, r) in c.step_rules.iter().flatten().enumerate() {
        let at = format!("step_rules[{i}].step");
        if r.step < 1 {
            return Err(AgentError::invalid(at.clone(), format!("{at} must be a step number from 1 (the first step of the turn).")));
        }
        if !steps.insert(r.step) {
            return Err(AgentError::invalid(at.clone(), format!("{at}: step {} has two rules.", r.step)));
        }
    }
    Ok(())
}

fn at_least(field: &str, value: Option<i64>, min: i64) -> Result<(), AgentError> {
    match value {
        Some(v) if v < min => Err(AgentError::invalid(field, format!("{field} must be an integer of at least {min}, not {v}."))),
        _ => Ok(()),
    }
}

fn numbers(c: &AgentConfig) -> Result<(), AgentError> {
    at_least("max_steps", c.max_steps, 1)?;
    at_least("max_context_messages", c.max_context_messages, 1)?;
    at_least("max_output_tokens", c.max_output_tokens, 1)?;
    match c.temperature {
        Some(t) if !(0.0..=2.0).contains(&t) => Err(AgentError::invalid("temperature", format!("temperature must be from 0 to 2, not {t}."))),
        _ => Ok(()),
    }
}

fn knowledge(c: &AgentConfig) -> Result<(), AgentError> {
    let Some(k) = &c.knowledge_config else { return Ok(()) };
    if let Some(s) = k.min_score.filter(|s| !(0.0..=1.0).contains(s)) {
        return Err(AgentError::invalid(
            "knowledge_config.min_score",
            format!("knowledge_config.min_score is a cosine similarity from 0 to 1, not {s}."),
        ));
    }
    at_least("knowledge_config.rrf_k", k.rrf_k, 0)?;
    at_least("knowledge_config.limit", k.limit, 1)?;
    if let Some(d) = k.recency_half_life_days.filter(|d| *d < 0.0) {
        return Err(AgentError::invalid(
            "knowledge_config.recency_half_life_days",
            format!("knowledge_config.recency_half_life_days cannot be negative ({d}); 0 turns decay off."),
        ));
    }
    match k.tags.iter().flatten().find(|(key, _)| key.starts_with("system.")) {
        Some((key, _)) => Err(AgentError::ReservedTagKey { field: "knowledge_config.tags".into(), key: key.clone() }),
        None => Ok(()),
    }
}

const SCHEMA_TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

/// `output_schema` is a JSON Schema object: its `type`, when given, names JSON types.
fn output_schema(c: &AgentConfig) -> Result<(), AgentError> {
    let Some(schema) = &c.output_schema else { return Ok(()) };
    let ok = match schema.get("type") {
        None => true,
        Some(serde_json::Value::String(t)) => SCHEMA_TYPES.contains(&t.as_str()),
        Some(serde_json::Value::Array(ts)) => ts.iter().all(|t| t.as_str().is_some_and(|t| SCHEMA_TYPES.contains(&t))),
        Some(_) => false,
    };
    match ok {
        true => Ok(()),
        false => Err(AgentError::invalid(
            "output_schema.type",
            "output_schema.type must name JSON Schema types (object, array, string, number, integer, boolean, null).",
        )),
    }
}

/// Context keys become header names `<prefix><key>` verbatim: each is an HTTP token
/// (letters, digits, ``!#$%&'*+-.^_`|~``), and no two are equal ignoring case. Used by
/// an inline tool's `context_keys` and a generation's `tool_context`.
pub fn check_context_keys<'a>(field: &str, keys: impl Iterator<Item = &'a str>) -> Result<(), AgentError> {
    let mut seen = HashSet::new();
    for key in keys {
        let bad = |reason: &str| AgentError::ToolContextKey { field: field.to_owned(), key: key.to_owned(), reason: reason.to_owned() };
        if key.is_empty() {
            return Err(bad("it is empty"));
        }
        if let Some(c) = key.chars().find(|c| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c))) {
            return Err(bad(&format!("{c:?} cannot be part of an HTTP header name")));
        }
        if !seen.insert(key.to_ascii_lowercase()) {
            return Err(bad("another key names the same header (header names ignore case)"));
        }
    }
    Ok(())
}

/// One record a config names, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub kind: RefKind,
    pub id: String,
    pub field: String,
}

/// Every record the config names by id (provider, route, bound tools, guardrails).
pub fn references(c: &AgentConfig) -> Vec<Reference> {
    let r = |kind, id: &str, field: String| Reference { kind, id: id.to_owned(), field };
    let mut out = Vec::new();
    out.extend(c.ai_provider_id.as_deref().map(|id| r(RefKind::AiProvider, id, "ai_provider_id".into())));
    out.extend(c.model_route_id.as_deref().map(|id| r(RefKind::ModelRoute, id, "model_route_id".into())));
    for (i, b) in c.tool_bindings.iter().flatten().enumerate() {
        out.extend(b.tool_id.as_deref().map(|id| r(RefKind::Tool, id, format!("tool_bindings[{i}].tool_id"))));
    }
    for (i, id) in c.guardrail_ids.iter().flatten().enumerate() {
        out.push(r(RefKind::Guardrail, id, format!("guardrail_ids[{i}]")));
    }
    let knowledge = c.knowledge_config.as_ref();
    for (i, id) in knowledge.and_then(|k| k.memory_store_ids.as_ref()).into_iter().flatten().enumerate() {
        out.push(r(RefKind::MemoryStore, id, format!("knowledge_config.memory_store_ids[{i}]")));
    }
    out.extend(
        knowledge
            .and_then(|k| k.write_memory_store_id.as_deref())
            .map(|id| r(RefKind::MemoryStore, id, "knowledge_config.write_memory_store_id".into())),
    );
    out
}

/// The first reference `exists` does not find, as its error. `archived`: the config
/// came from a version (restore, release).
pub fn missing(refs: &[Reference], archived: bool, mut exists: impl FnMut(&Reference) -> Result<bool, AgentError>) -> Result<(), AgentError> {
    for r in refs {
        if !exists(r)? {
            return Err(AgentError::Missing { kind: r.kind, id: r.id.clone(), field: r.field.clone(), archived });
        }
    }
    Ok(())
}

/// A version whose inline tools hold a literal credential cannot be restored or released.
pub fn no_literal_credentials(c: &AgentConfig) -> Result<(), AgentError> {
    for (i, b) in c.tool_bindings.iter().flatten().enumerate() {
        if b.tool.as_ref().is_some_and(inline_tool::has_literal_credential) {
            return Err(AgentError::LiteralCredential { field: format!("tool_bindings[{i}].tool") });
        }
    }
    Ok(())
}

/// The tool choice as the Agent read shows it (`"auto"` when unset: not nullable).
pub fn tool_choice_or_default(c: &AgentConfig) -> ToolChoice {
    c.tool_choice.clone().unwrap_or(ToolChoice::Mode(super::config::ToolChoiceMode::Auto))
}

#[cfg(test)]
mod tests;
