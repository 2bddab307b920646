//! A tool's definition, typed: the spec's `CreateToolRequest` without `project_id`,
//! parsed strictly (an unknown field is a 400 naming it) and checked as a whole
//! ([`check`]): what each type needs, the `parameters` schema, the template tokens,
//! literal credentials, and what this server does not implement (a 400 naming it in
//! `meta.not_implemented`, at write time, so no stored tool is one that can never run).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::template;
use super::ToolError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Http,
    Client,
    Mcp,
    Builtin,
    Pipeline,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Client => "client",
            Kind::Mcp => "mcp",
            Kind::Builtin => "builtin",
            Kind::Pipeline => "pipeline",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: Kind,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<Map<String, Value>>,
    #[serde(default)]
    pub execute: Option<Execute>,
    #[serde(default)]
    pub mcp: Option<Mcp>,
    #[serde(default)]
    pub actions: Option<Vec<String>>,
    #[serde(default)]
    pub denied_actions: Option<Vec<String>>,
    #[serde(default)]
    pub context_keys: Option<Vec<String>>,
    #[serde(default)]
    pub preset_parameters: Option<Map<String, Value>>,
    #[serde(default)]
    pub pipeline: Option<Pipeline>,
    #[serde(default)]
    /// JSON Logic over `{output, input}`; an object, as the spec's `Tool` says.
    pub output_mapping: Option<Map<String, Value>>,
    #[serde(default)]
    pub guardrail_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execute {
    pub url: String,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub body_mode: Option<String>,
    #[serde(default)]
    pub auth: Option<Value>,
}

impl Execute {
    /// The method, upper-case; POST when unset.
    pub fn method(&self) -> String {
        self.method.as_deref().unwrap_or("POST").to_ascii_uppercase()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mcp {
    pub url: String,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    pub steps: Vec<Step>,
    #[serde(default)]
    pub output: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub id: String,
    #[serde(default)]
    pub tool_id: Option<String>,
    #[serde(default)]
    pub tool: Option<Box<ToolDef>>,
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub input: Option<Value>,
}

/// The builtin actions this server runs: Quarry's own, under SOAT's `service:Action`
/// naming.
pub const BUILTIN_ACTIONS: &[&str] = &[SEARCH_ACTION, WRITE_MEMORY_ACTION, AGENT_ACTION];
pub const SEARCH_ACTION: &str = "collections:SearchCollection";
pub const WRITE_MEMORY_ACTION: &str = "memories:WriteMemory";
/// Another agent of the project as a tool: runs inside a generation only (the
/// generation runner answers it, with the depth guard), never through `/call`.
pub const AGENT_ACTION: &str = "agents:CreateAgentGeneration";

const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
pub const MAX_NAME: usize = 256;

/// `value` (a JSON object, `project_id` already taken out) as a definition; serde's
/// message names the field at fault.
pub fn parse(value: Value) -> Result<ToolDef, ToolError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ToolError::Invalid(if path == "." { inner } else { format!("{path}: {inner}") })
    })
}

/// The definition's own rules (what needs the store, secrets and tools a definition
/// references, is checked by the service).
/// The most bytes of a tool's definition as JSON.
pub const MAX_DEFINITION_BYTES: usize = 256 * 1024;

pub fn check(d: &ToolDef) -> Result<(), ToolError> {
    let bytes = serde_json::to_vec(d).map_or(0, |b| b.len());
    if bytes > MAX_DEFINITION_BYTES {
        return Err(ToolError::Invalid(format!("the tool's definition is {bytes} bytes of JSON; at most {MAX_DEFINITION_BYTES}")));
    }
    crate::names::check(&d.name, MAX_NAME).map_err(|problem| ToolError::Invalid(format!("name {problem}")))?;
    if let Some(p) = &d.parameters {
        super::schema::check_schema(p)?;
    }
    for key in d.context_keys.iter().flatten() {
        template::check_context_key(key)?;
    }
    template::check_tokens(d)?;
    template::refuse_literal_credentials(d)?;
    if let Some(m) = &d.output_mapping {
        super::logic::check(&Value::Object(m.clone()), super::logic::MAPPING_ROOTS, &[]).map_err(|e| e.at("output_mapping"))?;
    }
    match d.kind {
        Kind::Http => check_http(d),
        Kind::Mcp => {
            d.mcp.as_ref().map(|m| check_url("mcp.url", &m.url)).unwrap_or_else(|| Err(ToolError::Invalid("an mcp tool needs mcp.url".into())))
        }
        Kind::Builtin => check_builtin(d),
        Kind::Pipeline => check_pipeline(d),
        Kind::Client => Ok(()),
    }
}

fn check_http(d: &ToolDef) -> Result<(), ToolError> {
    let e = d.execute.as_ref().ok_or_else(|| ToolError::Invalid("an http tool needs execute.url".into()))?;
    check_url("execute.url", &e.url)?;
    let method = e.method();
    if !METHODS.contains(&method.as_str()) {
        return Err(ToolError::Invalid(format!("execute.method must be one of {}", METHODS.join(", "))));
    }
    match e.body_mode.as_deref() {
        None | Some("json") => {}
        Some("multipart") => return Err(ToolError::NotImplemented("execute.body_mode \"multipart\" (this server sends JSON bodies only)".into())),
        Some(other) => return Err(ToolError::Invalid(format!("execute.body_mode must be \"json\" or \"multipart\", not {other:?}"))),
    }
    if let Some(auth) = &e.auth {
        let kind = auth.get("type").and_then(Value::as_str).unwrap_or("");
        return Err(match kind {
            "aws_sigv4" | "gcp_service_account" => {
                ToolError::NotImplemented(format!("execute.auth type {kind:?} (use a header with a {{{{secret:…}}}} reference)"))
            }
            _ => ToolError::Invalid("execute.auth.type must be \"aws_sigv4\" or \"gcp_service_account\"".into()),
        });
    }
    Ok(())
}

/// An absolute http(s) URL without userinfo: credentials in a URL are never sent
/// (a literal one is refused as such first; a reference there would be dropped).
fn check_url(field: &str, url: &str) -> Result<(), ToolError> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest.filter(|r| !r.is_empty() && !r.starts_with('/')) else {
        return Err(ToolError::Invalid(format!("{field} must be an absolute http:// or https:// URL")));
    };
    if rest.split(['/', '?', '#']).next().unwrap_or("").contains('@') {
        return Err(ToolError::Invalid(format!(
            "{field}: a URL's user:password is not sent; use an Authorization header with a {{{{secret:…}}}} reference"
        )));
    }
    Ok(())
}

fn check_builtin(d: &ToolDef) -> Result<(), ToolError> {
    let actions = d.actions.as_deref().unwrap_or_default();
    if actions.is_empty() {
        return Err(ToolError::Invalid(format!("a builtin tool needs actions (this server has {})", BUILTIN_ACTIONS.join(", "))));
    }
    if let Some(a) = actions.iter().find(|a| !BUILTIN_ACTIONS.contains(&a.as_str())) {
        return Err(ToolError::NotImplemented(format!("builtin action {a:?} (this server has {})", BUILTIN_ACTIONS.join(", "))));
    }
    Ok(())
}

/// The steps' own shape: ids, one tool each, no inline pipeline, inputs that read only
/// the pipeline's input and earlier steps.
fn check_pipeline(d: &ToolDef) -> Result<(), ToolError> {
    let p = d.pipeline.as_ref().ok_or_else(|| ToolError::PipelineStep("a pipeline tool needs pipeline.steps".into()))?;
    if p.steps.is_empty() {
        return Err(ToolError::PipelineStep("pipeline.steps is empty".into()));
    }
    let mut earlier: Vec<&str> = Vec::new();
    for (i, s) in p.steps.iter().enumerate() {
        let at = |m: String| ToolError::PipelineStep(format!("pipeline.steps[{i}]: {m}"));
        if s.id.is_empty() || !s.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(at("id must be letters, digits, _ or -".into()));
        }
        if earlier.contains(&s.id.as_str()) {
            return Err(at(format!("id {:?} is used twice", s.id)));
        }
        match (&s.tool_id, &s.tool) {
            (Some(_), None) => {}
            (None, Some(t)) if t.kind == Kind::Pipeline => return Err(at("an inline tool cannot be a pipeline".into())),
            (None, Some(t)) if t.kind == Kind::Client => return Err(at("a step cannot run a client tool".into())),
            (None, Some(t)) => check(t).map_err(|e| at(e.to_string()))?,
            _ => return Err(at("needs exactly one of tool_id and tool".into())),
        }
        if let Some(input) = &s.input {
            super::logic::check(input, super::logic::PIPELINE_ROOTS, &earlier).map_err(|e| at(e.to_string()))?;
        }
        earlier.push(&s.id);
    }
    if let Some(out) = &p.output {
        super::logic::check(out, super::logic::PIPELINE_ROOTS, &earlier).map_err(|e| e.at("pipeline.output"))?;
    }
    Ok(())
}
