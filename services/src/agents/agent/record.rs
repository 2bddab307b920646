//! The records agents keep: the agent (its live config, version counter and release),
//! its archived versions, and the minimal records the spec names but does not define
//! (guardrails, evals and their runs, model routes; see docs/agents.md). Each belongs to one
//! project of one account.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::AgentConfig;
use crate::agents::scope::in_project;
use crate::store::agents::{AgentRow, VersionRow};
use crate::store::owned::owned_record;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub config: AgentConfig,
    pub version: u64,
    pub active_release: Option<Release>,
    pub created_at: String,
    pub updated_at: String,
}

/// A staged rollout between two archived versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    pub stable_version: u64,
    pub canary_version: u64,
    pub canary_percent: u8,
    pub promotion_gate: Option<String>,
}

/// Who made a version: `user` or `api_key`, and its id (`user_…`, `key_…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    pub principal_type: String,
    pub principal_id: String,
}

/// One archived config. `config` is open: an archive keeps the fields of its own
/// release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionRecord {
    pub id: String,
    pub agent_id: String,
    pub version: u64,
    pub config: Map<String, Value>,
    pub label: Option<String>,
    pub eval_run_id: Option<String>,
    pub created_by_principal_type: Option<String>,
    pub created_by_principal_id: Option<String>,
    pub created_at: String,
}

impl AgentRow for AgentRecord {
    fn id(&self) -> &str {
        &self.id
    }
    fn account_id(&self) -> &str {
        &self.account_id
    }
    fn project_id(&self) -> &str {
        &self.project_id
    }
}

impl VersionRow for VersionRecord {
    fn agent_id(&self) -> &str {
        &self.agent_id
    }
    fn version(&self) -> u64 {
        self.version
    }
}

/// A guardrail (issue 37: guardrails.yaml's `Guardrail`; `agents::guardrails` writes
/// and evaluates it). A record of the seed's `{name}` alone reads with version 1 and
/// the permissive document `{"class": "A"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardrailRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "first_version")]
    pub version: u64,
    #[serde(default = "crate::agents::guardrails::document::permissive")]
    pub document: Map<String, Value>,
    #[serde(default)]
    pub context_tool_id: Option<String>,
    #[serde(default)]
    pub context_mode: Option<String>,
    pub created_at: String,
    #[serde(default)]
    pub updated_at: Option<String>,
}

fn first_version() -> u64 {
    1
}

/// An eval of one agent; its runs clear a release's promotion gate. The dataset,
/// scorers and threshold are evaluations' (`agents::evals`); an eval of before has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    pub agent_id: String,
    #[serde(default)]
    pub dataset_id: Option<String>,
    #[serde(default)]
    pub scorers: Vec<crate::agents::evals::scorers::Scorer>,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    pub created_at: String,
    #[serde(default)]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    Completed,
    Failed,
    Canceled,
}

impl RunStatus {
    /// Whether the run has ended (nothing more is written to it).
    pub fn terminal(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Canceled)
    }
}

/// One run of an eval, pinned to the agent version it ran against. Every field past
/// `created_at` is written by Quarry's runner (`agents::evals::run`) alone; a run
/// recorded before evaluations ran (a client's post) has `executed: false`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRunRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub eval_id: String,
    pub agent_version: u64,
    pub status: RunStatus,
    pub passed: Option<bool>,
    pub created_at: String,
    /// Set only by the runner: this server ran the items and scored them.
    #[serde(default)]
    pub executed: bool,
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub baseline_run_id: Option<String>,
    #[serde(default)]
    pub aggregate_scores: Option<Value>,
    #[serde(default)]
    pub item_count: u64,
    #[serde(default)]
    pub completed_count: u64,
    #[serde(default)]
    pub errored_count: u64,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    /// The items to run, frozen at start, in order.
    #[serde(default)]
    pub item_ids: Vec<String>,
    /// The eval's scorers and threshold, frozen at start.
    #[serde(default)]
    pub scorers: Vec<crate::agents::evals::scorers::Scorer>,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// Who started it (`started_by_principal_id`): its generations act with that reach.
    #[serde(default)]
    pub started_by: Option<String>,
    /// The boot executing it; another boot finding it unsettled takes it over.
    #[serde(default)]
    pub lease: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

impl EvalRunRecord {
    /// Whether this run clears a gate on `version`: one this server executed, on
    /// exactly that version, completed and passed by its eval's threshold.
    pub fn clears(&self, eval_id: &str, version: u64) -> bool {
        self.executed && self.eval_id == eval_id && self.agent_version == version && self.status == RunStatus::Completed && self.passed == Some(true)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteTarget {
    pub ai_provider_id: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    #[serde(default)]
    pub max_retries: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryOn {
    ProviderError,
    Timeout,
    RateLimited,
}

/// A model route (`route_…`): ordered provider + model targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRouteRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    pub targets: Vec<RouteTarget>,
    pub retry_on: Vec<RetryOn>,
    pub failure_threshold: u64,
    pub cooldown_seconds: u64,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(GuardrailRecord, "soat_guardrails", "soat_guardrails_by_account");
owned_record!(EvalRecord, "soat_evals", "soat_evals_by_account");
owned_record!(EvalRunRecord, "soat_eval_runs", "soat_eval_runs_by_account");
owned_record!(ModelRouteRecord, "soat_model_routes", "soat_model_routes_by_account");
in_project!(GuardrailRecord, EvalRecord, EvalRunRecord, ModelRouteRecord);
