//! An agent's configuration as the spec types it (`CreateAgentRequest`,
//! `UpdateAgentRequest`, their sub-schemas), parsed strictly at the edge: every body
//! refuses unknown fields, and an update tells a field left out from a field sent as
//! `null` ([`Patch`]). [`AgentConfig`] is what an agent holds; [`Update::apply`]
//! turns an update into the next config, which [`super::validate`] then checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agents::patch::Patch;

/// The `max_steps` an agent runs with when it sets none.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// Every mutable field of an agent. The versioned part is [`AgentConfig::snapshot`];
/// `prompt_caching` and `trace_content_mode` are settings the spec leaves out of
/// `AgentVersion.config` (see docs/agents.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub ai_provider_id: Option<String>,
    pub model_route_id: Option<String>,
    pub name: Option<String>,
    pub instructions: Option<String>,
    pub model: Option<String>,
    pub tool_bindings: Option<Vec<ToolBinding>>,
    pub max_steps: Option<i64>,
    pub tool_choice: Option<ToolChoice>,
    pub stop_conditions: Option<Vec<StopCondition>>,
    pub active_tool_ids: Option<Vec<String>>,
    pub step_rules: Option<Vec<StepRule>>,
    pub boundary_policy: Option<BoundaryPolicy>,
    pub temperature: Option<f64>,
    pub knowledge_config: Option<KnowledgeConfig>,
    pub output_schema: Option<Map<String, Value>>,
    pub max_context_messages: Option<i64>,
    pub max_output_tokens: Option<i64>,
    pub reasoning: Option<Reasoning>,
    pub single_session_per_actor: bool,
    pub on_approval_expiry: Option<ApprovalExpiry>,
    pub guardrail_ids: Option<Vec<String>>,
    // Not versioned.
    pub prompt_caching: Option<PromptCaching>,
    pub trace_content_mode: Option<TraceContentMode>,
}

/// The fields `AgentVersion.config` archives, in the spec's order.
pub const VERSIONED_FIELDS: [&str; 21] = [
    "instructions",
    "model",
    "tool_bindings",
    "max_steps",
    "tool_choice",
    "stop_conditions",
    "active_tool_ids",
    "step_rules",
    "boundary_policy",
    "temperature",
    "knowledge_config",
    "output_schema",
    "max_context_messages",
    "max_output_tokens",
    "reasoning",
    "single_session_per_actor",
    "on_approval_expiry",
    "guardrail_ids",
    "ai_provider_id",
    "model_route_id",
    "name",
];

impl AgentConfig {
    /// The archived form: every versioned field, `null` where unset.
    pub fn snapshot(&self) -> Map<String, Value> {
        let Value::Object(mut all) = serde_json::to_value(self).expect("configs serialize") else { unreachable!("a struct is an object") };
        all.retain(|k, _| VERSIONED_FIELDS.contains(&k.as_str()));
        all
    }

    /// A config read back from an archive: its versioned fields, fields it lacks unset,
    /// fields this release no longer knows dropped; the unversioned settings are
    /// `keep`'s. `Err` when a field no longer parses (the restore is then a 400).
    pub fn from_snapshot(archived: &Map<String, Value>, keep: &AgentConfig) -> Result<AgentConfig, serde_json::Error> {
        let known: Map<String, Value> =
            archived.iter().filter(|(k, _)| VERSIONED_FIELDS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut config: AgentConfig = serde_json::from_value(Value::Object(known))?;
        config.prompt_caching = keep.prompt_caching.clone();
        config.trace_content_mode = keep.trace_content_mode;
        Ok(config)
    }

    /// Whether the versioned part differs (a write that changes only settings, or
    /// nothing, archives no version).
    pub fn same_version_as(&self, other: &AgentConfig) -> bool {
        self.snapshot() == other.snapshot()
    }

    /// SOAT v0.28 reads a forcing `tool_choice` with no `has_tool_call` stop condition
    /// as forcing the first model call only (tutorial `client-tools.md`: it "forces the
    /// first model call to invoke the function; after you submit the output, the run
    /// continues with `auto`"); the seed forces every step and so refuses it
    /// (`FORCED_TOOL_CHOICE_CANNOT_STOP`). Both are read, and v0.28's is written in the
    /// seed's spelling, explicitly: `tool_choice: "auto"` and a step rule forcing step 1
    /// (docs/agents.md). A forcing choice with a `has_tool_call` condition keeps the
    /// seed's meaning (every step, until that tool is called), and so does one beside a
    /// step rule that already sets step 1's choice (which validation then refuses).
    pub fn force_first_step_only(&mut self) {
        let Some(choice) = self.tool_choice.clone().filter(ToolChoice::forces_a_tool) else { return };
        if self.stop_conditions.iter().flatten().any(|s| s.r#type == StopKind::HasToolCall) {
            return;
        }
        let rules = self.step_rules.clone().unwrap_or_default();
        if rules.iter().any(|r| r.step == 1 && !r.tool_choice.is_absent()) {
            return;
        }
        let mut rules: Vec<StepRule> = rules;
        match rules.iter_mut().find(|r| r.step == 1) {
            Some(r) => r.tool_choice = Patch::Set(choice),
            None => rules.insert(0, StepRule { step: 1, tool_choice: Patch::Set(choice), active_tool_ids: Patch::Absent }),
        }
        self.step_rules = Some(rules);
        self.tool_choice = Some(ToolChoice::Mode(ToolChoiceMode::Auto));
    }

    /// The tools the bindings name by id, in order.
    pub fn bound_tool_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_bindings.iter().flatten().filter_map(|b| b.tool_id.as_deref())
    }
}

/// One tool binding: exactly one of `tool_id` (a persisted tool) or `tool` (an inline
/// `CreateToolRequest`, the tools module's shape, kept as written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolBinding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Map<String, Value>>,
}

/// `"auto"`, `"required"` or `{"type": "tool", "tool_name": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(ToolChoiceMode),
    Tool(ForcedTool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    Auto,
    Required,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedTool {
    pub r#type: ToolKind,
    pub tool_name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Tool,
}

impl ToolChoice {
    /// `"required"` and the object form forbid a final assistant message.
    pub fn forces_a_tool(&self) -> bool {
        !matches!(self, ToolChoice::Mode(ToolChoiceMode::Auto))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopCondition {
    pub r#type: StopKind,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub max_generations: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    HasToolCall,
    MaxChainGenerations,
}

/// A step rule's `tool_choice` is stored verbatim and may be `null`; an absent one
/// leaves the agent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRule {
    pub step: i64,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub tool_choice: Patch<ToolChoice>,
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    pub active_tool_ids: Patch<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundaryPolicy {
    pub statement: Vec<PolicyStatement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyStatement {
    pub effect: Effect,
    pub action: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    Allow,
    Deny,
}

/// `knowledge_config` (strict). `tags` is a TagBag: a flat object of strings. Read in
/// the seed's spelling and in SOAT v0.28's (`memory_ids` ≡ `memory_store_ids`,
/// `write_memory_id` ≡ `write_memory_store_id`; both at once must agree), answered
/// in the seed's; `memory_tags` and `extraction` are v0.28's own fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "KnowledgeWire")]
pub struct KnowledgeConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_store_ids: Option<Vec<String>>,
    /// v0.28: globs over the project's memory stores' tags, each match a source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrf_k: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recency_half_life_days: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_memory_store_id: Option<String>,
    /// v0.28: facts extracted from each settled turn into the write store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<Extraction>,
}

/// v0.28's `extraction`: `true`/`false`, or the object form (enabled unless it says
/// `enabled: false`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Extraction {
    On(bool),
    Custom(ExtractionSettings),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractionSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_provider_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl Extraction {
    pub fn enabled(&self) -> bool {
        match self {
            Extraction::On(on) => *on,
            Extraction::Custom(s) => s.enabled.unwrap_or(true),
        }
    }
}

/// What a body may send as `knowledge_config`: both spellings of the renamed fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnowledgeWire {
    #[serde(default)]
    memory_store_ids: Option<Vec<String>>,
    #[serde(default)]
    memory_ids: Option<Vec<String>>,
    #[serde(default)]
    memory_tags: Option<Vec<String>>,
    #[serde(default)]
    document_ids: Option<Vec<String>>,
    #[serde(default)]
    document_paths: Option<Vec<String>>,
    #[serde(default)]
    tags: Option<BTreeMap<String, String>>,
    #[serde(default)]
    min_score: Option<f64>,
    #[serde(default)]
    rrf_k: Option<i64>,
    #[serde(default)]
    recency_half_life_days: Option<f64>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    write_memory_store_id: Option<String>,
    #[serde(default)]
    write_memory_id: Option<String>,
    #[serde(default)]
    extraction: Option<Extraction>,
}

/// One field sent in two spellings: either, or both when they are equal.
pub fn either<T: PartialEq>(seed: Option<T>, soat: Option<T>, names: (&str, &str)) -> Result<Option<T>, String> {
    match (seed, soat) {
        (Some(a), Some(b)) if a != b => Err(format!("`{}` and `{}` name the same field and differ; send one", names.0, names.1)),
        (a, b) => Ok(a.or(b)),
    }
}

impl TryFrom<KnowledgeWire> for KnowledgeConfig {
    type Error = String;

    fn try_from(w: KnowledgeWire) -> Result<Self, String> {
        Ok(KnowledgeConfig {
            memory_store_ids: either(w.memory_store_ids, w.memory_ids, ("memory_store_ids", "memory_ids"))?,
            memory_tags: w.memory_tags,
            document_ids: w.document_ids,
            document_paths: w.document_paths,
            tags: w.tags,
            min_score: w.min_score,
            rrf_k: w.rrf_k,
            recency_half_life_days: w.recency_half_life_days,
            limit: w.limit,
            write_memory_store_id: either(w.write_memory_store_id, w.write_memory_id, ("write_memory_store_id", "write_memory_id"))?,
            extraction: w.extraction,
        })
    }
}

impl KnowledgeConfig {
    /// The `/v1` documents it names: by id, and by `path` prefix.
    pub fn documents(&self) -> (&[String], &[String]) {
        (self.document_ids.as_deref().unwrap_or_default(), self.document_paths.as_deref().unwrap_or_default())
    }

    /// Whether it names a `/v1` document by id (which only an account key may name):
    /// an id `project_document` says is the project's own SOAT document is not one, and
    /// paths reach the project's documents with any key (`/v1` collections' only with a
    /// key that reads them, at read time).
    pub fn names_documents(&self, project_document: impl Fn(&str) -> bool) -> bool {
        self.documents().0.iter().any(|id| !project_document(id))
    }

    /// Whether turns of an agent with this config extract facts into its write store.
    pub fn extracts(&self) -> bool {
        self.write_memory_store_id.is_some() && self.extraction.as_ref().is_some_and(Extraction::enabled)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptCaching {
    #[serde(default)]
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    pub effort: Effort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    None,
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceContentMode {
    Full,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalExpiry {
    Terminate,
    React,
}

/// `CreateAgentRequest` (strict, no field required).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Create {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub version_label: Option<String>,
    #[serde(default)]
    pub ai_provider_id: Option<String>,
    #[serde(default)]
    pub model_route_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub tool_bindings: Option<Vec<ToolBinding>>,
    #[serde(default)]
    pub max_steps: Option<i64>,
    #[serde(default)]
    pub tool_choice: Patch<ToolChoice>,
    #[serde(default)]
    pub stop_conditions: Option<Vec<StopCondition>>,
    #[serde(default)]
    pub active_tool_ids: Option<Vec<String>>,
    #[serde(default)]
    pub guardrail_ids: Option<Vec<String>>,
    #[serde(default)]
    pub step_rules: Option<Vec<StepRule>>,
    #[serde(default)]
    pub boundary_policy: Option<BoundaryPolicy>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub knowledge_config: Option<KnowledgeConfig>,
    #[serde(default)]
    pub output_schema: Option<Map<String, Value>>,
    #[serde(default)]
    pub prompt_caching: Option<PromptCaching>,
    #[serde(default)]
    pub max_context_messages: Option<i64>,
    #[serde(default)]
    pub max_output_tokens: Option<i64>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub single_session_per_actor: Option<bool>,
    #[serde(default)]
    pub trace_content_mode: Option<TraceContentMode>,
    #[serde(default)]
    pub on_approval_expiry: Option<ApprovalExpiry>,
}

impl Create {
    /// The new agent's config. A `tool_choice: null` is kept as sent so validation
    /// can refuse it (`tool_choice` is not nullable).
    pub fn config(&self) -> (AgentConfig, bool) {
        let c = self.clone();
        let null_tool_choice = matches!(c.tool_choice, Patch::Null);
        let config = AgentConfig {
            ai_provider_id: c.ai_provider_id,
            model_route_id: c.model_route_id,
            name: c.name,
            instructions: c.instructions,
            model: c.model,
            tool_bindings: c.tool_bindings,
            max_steps: c.max_steps,
            tool_choice: c.tool_choice.value(),
            stop_conditions: c.stop_conditions,
            active_tool_ids: c.active_tool_ids,
            step_rules: c.step_rules,
            boundary_policy: c.boundary_policy,
            temperature: c.temperature,
            knowledge_config: c.knowledge_config,
            output_schema: c.output_schema,
            max_context_messages: c.max_context_messages,
            max_output_tokens: c.max_output_tokens,
            reasoning: c.reasoning,
            single_session_per_actor: c.single_session_per_actor.unwrap_or(false),
            on_approval_expiry: c.on_approval_expiry,
            guardrail_ids: c.guardrail_ids,
            prompt_caching: c.prompt_caching,
            trace_content_mode: c.trace_content_mode,
        };
        let mut config = config;
        config.force_first_step_only();
        (config, null_tool_choice)
    }
}

/// `UpdateAgentRequest` (strict): each field absent when left out, null when sent as
/// `null` (which clears it or restores its default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Update {
    #[serde(default)]
    pub version_label: Patch<String>,
    #[serde(default)]
    pub expected_version: Patch<i64>,
    #[serde(default)]
    pub ai_provider_id: Patch<String>,
    #[serde(default)]
    pub model_route_id: Patch<String>,
    #[serde(default)]
    pub name: Patch<String>,
    #[serde(default)]
    pub instructions: Patch<String>,
    #[serde(default)]
    pub model: Patch<String>,
    #[serde(default)]
    pub tool_bindings: Patch<Vec<ToolBinding>>,
    #[serde(default)]
    pub max_steps: Patch<i64>,
    #[serde(default)]
    pub tool_choice: Patch<ToolChoice>,
    #[serde(default)]
    pub stop_conditions: Patch<Vec<StopCondition>>,
    #[serde(default)]
    pub active_tool_ids: Patch<Vec<String>>,
    #[serde(default)]
    pub guardrail_ids: Patch<Vec<String>>,
    #[serde(default)]
    pub step_rules: Patch<Vec<StepRule>>,
    #[serde(default)]
    pub boundary_policy: Patch<BoundaryPolicy>,
    #[serde(default)]
    pub temperature: Patch<f64>,
    #[serde(default)]
    pub knowledge_config: Patch<KnowledgeConfig>,
    #[serde(default)]
    pub output_schema: Patch<Map<String, Value>>,
    #[serde(default)]
    pub prompt_caching: Patch<PromptCaching>,
    #[serde(default)]
    pub max_context_messages: Patch<i64>,
    #[serde(default)]
    pub max_output_tokens: Patch<i64>,
    #[serde(default)]
    pub reasoning: Patch<Reasoning>,
    #[serde(default)]
    pub single_session_per_actor: Patch<bool>,
    #[serde(default)]
    pub trace_content_mode: Patch<TraceContentMode>,
    #[serde(default)]
    pub on_approval_expiry: Patch<ApprovalExpiry>,
}

impl Update {
    /// `current` with this update applied; `true` beside it when `tool_choice` was
    /// sent as `null`, which validation refuses.
    pub fn apply(&self, current: &AgentConfig) -> (AgentConfig, bool) {
        let u = self.clone();
        let mut c = current.clone();
        let null_tool_choice = matches!(u.tool_choice, Patch::Null);
        u.ai_provider_id.apply_to(&mut c.ai_provider_id);
        u.model_route_id.apply_to(&mut c.model_route_id);
        u.name.apply_to(&mut c.name);
        u.instructions.apply_to(&mut c.instructions);
        u.model.apply_to(&mut c.model);
        u.tool_bindings.apply_to(&mut c.tool_bindings);
        u.max_steps.apply_to(&mut c.max_steps);
        if let Patch::Set(choice) = u.tool_choice {
            c.tool_choice = Some(choice);
        }
        u.stop_conditions.apply_to(&mut c.stop_conditions);
        u.active_tool_ids.apply_to(&mut c.active_tool_ids);
        u.guardrail_ids.apply_to(&mut c.guardrail_ids);
        u.step_rules.apply_to(&mut c.step_rules);
        u.boundary_policy.apply_to(&mut c.boundary_policy);
        u.temperature.apply_to(&mut c.temperature);
        u.knowledge_config.apply_to(&mut c.knowledge_config);
        u.output_schema.apply_to(&mut c.output_schema);
        u.prompt_caching.apply_to(&mut c.prompt_caching);
        u.max_context_messages.apply_to(&mut c.max_context_messages);
        u.max_output_tokens.apply_to(&mut c.max_output_tokens);
        u.reasoning.apply_to(&mut c.reasoning);
        if !u.single_session_per_actor.is_absent() {
            c.single_session_per_actor = u.single_session_per_actor.value().unwrap_or(false);
        }
        u.trace_content_mode.apply_to(&mut c.trace_content_mode);
        u.on_approval_expiry.apply_to(&mut c.on_approval_expiry);
        c.force_first_step_only();
        (c, null_tool_choice)
    }
}

/// `RestoreAgentVersionRequest` (strict).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restore {
    #[serde(default)]
    pub label: Option<String>,
}

/// `SetAgentReleaseRequest` (strict).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRelease {
    pub stable_version: i64,
    pub canary_version: i64,
    pub canary_percent: i64,
    #[serde(default)]
    pub promotion_gate: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_update_tells_null_from_absent() {
        let current = AgentConfig { name: Some("a".into()), max_steps: Some(5), ..AgentConfig::default() };
        let u: Update = serde_json::from_value(json!({"name": null})).unwrap();
        let (next, _) = u.apply(&current);
        assert_eq!((next.name, next.max_steps), (None, Some(5)));
        let u: Update = serde_json::from_value(json!({"max_steps": 7})).unwrap();
        assert_eq!(u.apply(&current).0.max_steps, Some(7));
    }

    #[test]
    fn bodies_refuse_unknown_fields_at_every_level() {
        assert!(serde_json::from_value::<Create>(json!({"nme": "x"})).unwrap_err().to_string().contains("unknown field `nme`"));
        assert!(serde_json::from_value::<Update>(json!({"project_id": "proj_x"})).is_err(), "project_id is create-only");
        assert!(serde_json::from_value::<Create>(json!({"stop_conditions": [{"type": "has_tool_call", "x": 1}]})).is_err());
        assert!(serde_json::from_value::<Create>(json!({"knowledge_config": {"extraction": 1}})).is_err());
        assert!(serde_json::from_value::<Create>(json!({"knowledge_config": {"memory_idz": []}})).is_err());
        assert!(serde_json::from_value::<Create>(json!({"reasoning": {"effort": "max"}})).is_err());
        assert!(serde_json::from_value::<Create>(json!({"knowledge_config": {"tags": {"a": 1}}})).is_err(), "a TagBag holds strings");
        assert!(serde_json::from_value::<Restore>(json!({"label": "x", "version": 1})).is_err());
    }

    #[test]
    fn knowledge_config_reads_both_spellings_and_answers_the_seeds() {
        let read = |v: Value| serde_json::from_value::<KnowledgeConfig>(v);
        let soat = read(json!({"memory_ids": ["mem_a"], "write_memory_id": "mem_a", "extraction": true, "memory_tags": ["x*"]})).unwrap();
        let seed = read(json!({"memory_store_ids": ["mem_a"], "write_memory_store_id": "mem_a", "extraction": true, "memory_tags": ["x*"]})).unwrap();
        assert_eq!(soat, seed);
        assert!(soat.extracts());
        let out = serde_json::to_value(&soat).unwrap();
        assert_eq!(out["memory_store_ids"], json!(["mem_a"]));
        assert_eq!(out["write_memory_store_id"], json!("mem_a"));
        assert!(out.get("memory_ids").is_none() && out.get("write_memory_id").is_none());
        assert!(read(json!({"memory_ids": ["mem_a"], "memory_store_ids": ["mem_a"]})).is_ok(), "both, equal");
        let err = read(json!({"memory_ids": ["mem_a"], "memory_store_ids": ["mem_b"]})).unwrap_err().to_string();
        assert!(err.contains("memory_ids"), "{err}");
        assert!(read(json!({"write_memory_id": "mem_a", "write_memory_store_id": "mem_b"})).is_err());
        assert!(!read(json!({"extraction": {"enabled": false}, "write_memory_id": "m"})).unwrap().extracts());
        assert!(read(json!({"extraction": {"enabled": true, "x": 1}})).is_err());
    }

    #[test]
    fn tool_choice_takes_the_three_forms() {
        let parse = |v: Value| serde_json::from_value::<ToolChoice>(v);
        assert!(!parse(json!("auto")).unwrap().forces_a_tool());
        assert!(parse(json!("required")).unwrap().forces_a_tool());
        assert!(parse(json!({"type": "tool", "tool_name": "search"})).unwrap().forces_a_tool());
        assert!(parse(json!("none")).is_err());
        assert!(parse(json!({"type": "tool"})).is_err());
    }

    #[test]
    fn a_snapshot_holds_the_versioned_fields_and_reads_back() {
        let config = AgentConfig {
            name: Some("n".into()),
            trace_content_mode: Some(TraceContentMode::None),
            prompt_caching: Some(PromptCaching { enabled: true }),
            ..AgentConfig::default()
        };
        let snap = config.snapshot();
        assert_eq!(snap.len(), VERSIONED_FIELDS.len());
        assert!(!snap.contains_key("trace_content_mode") && !snap.contains_key("prompt_caching"));
        let mut old = snap.clone();
        old.insert("a_field_of_an_older_release".into(), json!(1));
        old.remove("reasoning");
        assert_eq!(AgentConfig::from_snapshot(&old, &config).unwrap(), config);
    }
}
