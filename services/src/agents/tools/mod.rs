//! SOAT tools (`tool_…`): definitions an agent binds ([`def`], checked on write), and
//! calling one ([`call`]): `http` through the shard's outbound client with its
//! `{param}`, `{{secret:…}}` and `{{context:…}}` templating, `builtin` as Quarry's own
//! actions, `pipeline` as ordered steps, `mcp` as one MCP `tools/call` over the
//! Streamable HTTP transport, `client` refused (the caller runs it).
//!
//! The agent loop (issue 8/9) uses [`Tools::lookup`] for a binding's `tool_id`,
//! [`Tools::check_inline`] for an inline binding, [`template::masked`] to read one back,
//! and [`Tools::run`] to execute either.

pub mod builtin;
pub mod call;
pub mod def;
pub mod logic;
pub mod mcp;
pub mod outbound;
pub mod remote;
pub mod schema;
pub mod template;

use std::sync::Arc;

use serde_json::{Map, Value};

use super::secrets::{SecretError, Secrets};
use super::{Project, Scope};
use crate::error::{Code, ErrorCode};
use crate::net::egress::{Policy, Trust};
use crate::store::owned::Change;
use crate::store::{Records, StoreError, ToolRecord};
pub use call::{CallInput, Env};
pub use def::{Kind, ToolDef};

pub const ID_PREFIX: &str = "tool_";

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("tool {0} not found")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Template(String),
    #[error("{0}")]
    ContextKey(String),
    #[error("the tool's headers read {{{{context:{0}}}}}, which this call's tool_context does not hold")]
    MissingContext(String),
    #[error("{0}")]
    LiteralCredential(String),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("{0} tools cannot be invoked server-side; the calling client runs them")]
    NotSupported(&'static str),
    #[error("not implemented by this server: {0}")]
    NotImplemented(String),
    #[error("guardrail_ids: no guardrail {0} in this project")]
    Guardrail(String),
    #[error("{0}")]
    PipelineStep(String),
    #[error("pipeline step {step:?} failed: {source}")]
    StepFailed { step: String, source: Box<ToolError> },
    #[error("pipelines nest deeper than {0}")]
    Depth(usize),
    #[error("{message}")]
    Http { message: String, status: Option<u16>, body: String, url: String, method: String },
    /// The tool's target is where the egress policy does not let a tenant go: on write
    /// when its URL says so as written, else at connect, after resolution. Nothing was
    /// sent; `url` is the definition's, as the tenant wrote it.
    #[error("{}", crate::net::egress::REFUSED)]
    Refused { url: String, method: String },
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for ToolError {
    fn code(&self) -> Code {
        match self {
            ToolError::NotFound(_) => Code::SoatNotFound,
            ToolError::Invalid(_) => Code::SoatValidation,
            ToolError::Template(_) => Code::InvalidTemplateToken,
            ToolError::ContextKey(_) => Code::InvalidToolContextKey,
            ToolError::MissingContext(_) => Code::MissingToolContextKey,
            ToolError::LiteralCredential(_) => Code::LiteralCredential,
            ToolError::Secret(e) => e.code(),
            ToolError::NotSupported(_) => Code::ToolCallNotSupported,
            ToolError::NotImplemented(_) => Code::SoatValidation,
            ToolError::Guardrail(_) => Code::GuardrailNotFound,
            ToolError::PipelineStep(_) => Code::PipelineInvalidStep,
            ToolError::StepFailed { .. } => Code::PipelineStepFailed,
            ToolError::Depth(_) => Code::PipelineDepthExceeded,
            ToolError::Http { .. } => Code::ToolHttpError,
            ToolError::Refused { .. } => Code::EgressRefused,
            ToolError::Search(crate::search::SearchError::CollectionNotFound(_)) => Code::SoatValidation,
            ToolError::Search(e) => e.code(),
            ToolError::Store(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<Map<String, Value>> {
        match self {
            ToolError::Http { status, body, url, method, .. } => Some(Map::from_iter([
                ("tool_status_code".to_owned(), Value::from(*status)),
                ("tool_response_body".to_owned(), Value::from(body.as_str())),
                ("tool_url".to_owned(), Value::from(url.as_str())),
                ("tool_method".to_owned(), Value::from(method.as_str())),
            ])),
            ToolError::Refused { url, method } => {
                Some(Map::from_iter([("tool_url".to_owned(), Value::from(url.as_str())), ("tool_method".to_owned(), Value::from(method.as_str()))]))
            }
            ToolError::NotImplemented(what) => Some(Map::from_iter([("not_implemented".to_owned(), Value::from(what.as_str()))])),
            ToolError::StepFailed { step, source } => {
                let mut m = source.meta().unwrap_or_default();
                m.insert("step_id".into(), Value::from(step.as_str()));
                m.insert("step_code".into(), Value::from(source.code().soat()));
                Some(m)
            }
            _ => None,
        }
    }
}

/// A stored tool: its record and its definition, parsed.
#[derive(Debug, Clone)]
pub struct Tool {
    pub record: ToolRecord,
    pub def: ToolDef,
}

impl Tool {
    /// The spec's `Tool` as a client reads it, literal credentials masked.
    pub fn view(&self) -> Value {
        let mut v = serde_json::to_value(&self.def).expect("definitions serialize");
        let o = v.as_object_mut().expect("a definition is an object");
        o.insert("id".into(), Value::from(self.record.id.as_str()));
        o.insert("project_id".into(), Value::from(self.record.project_id.as_str()));
        o.insert("created_at".into(), Value::from(self.record.created_at.as_str()));
        o.insert("updated_at".into(), Value::from(self.record.updated_at.as_str()));
        template::masked(&v)
    }
}

pub struct Tools {
    records: Arc<Records>,
    secrets: Arc<Secrets>,
    /// The `https://` client, started on the first call that needs it.
    remote: remote::Remote,
    /// A tool's target is a tenant's destination: judged by the egress policy.
    trust: Trust,
}

impl Tools {
    /// `roots`: the TLS roots `https://` targets are checked against (`llm.tls_roots`);
    /// `egress`: where tenants' requests may go.
    pub fn new(records: Arc<Records>, secrets: Arc<Secrets>, roots: crate::llm::config::TlsRoots, egress: Arc<Policy>) -> Tools {
        let trust = Trust::Tenant(egress);
        Tools { records, secrets, remote: remote::Remote::new(roots, trust.clone()), trust }
    }

    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// webhooks: whether the egress policy lets a tenant's request go to `uri` as
    /// written (judged again at connect, after resolution).
    pub fn check_url(&self, uri: &hyper::Uri) -> Result<(), crate::net::egress::Refused> {
        self.trust.check_url(uri)
    }

    /// webhooks: sends `req` through the tools' outbound path (the shard's pool for
    /// `http://`, the outbound runtime for `https://`), judged by the egress policy at
    /// connect. Must run on a shard.
    pub async fn send(&self, req: outbound::Outbound, t: outbound::Timeouts) -> Result<outbound::Answer, outbound::OutboundError> {
        outbound::send(req, t, &self.remote, &self.trust).await
    }

    /// Checks a definition against the project: what [`def::check`] checks, then its
    /// secret references and its pipeline's tools. For an agent's inline binding too.
    pub fn check_inline(&self, p: Project<'_>, body: Value) -> Result<ToolDef, ToolError> {
        let d = def::parse(body)?;
        self.check(p, &d)?;
        Ok(d)
    }

    fn check(&self, p: Project<'_>, d: &ToolDef) -> Result<(), ToolError> {
        def::check(d)?;
        self.check_destinations(d)?;
        for id in template::secret_refs(d) {
            if !self.secrets.exists(p, &id)? {
                return Err(SecretError::Unknown(id).into());
            }
        }
        for g in d.guardrail_ids.iter().flatten() {
            if !super::refs::guardrail_in_project(&self.records, p.account_id, p.project_id, g)? {
                return Err(ToolError::Guardrail(g.clone()));
            }
        }
        for (i, s) in d.pipeline.iter().flat_map(|p| p.steps.iter()).enumerate() {
            let Some(id) = &s.tool_id else { continue };
            match self.record(p, id)? {
                None => return Err(ToolError::PipelineStep(format!("pipeline.steps[{i}]: tool {id} does not exist in this project"))),
                Some(t) if t.def.kind == Kind::Client => return Err(ToolError::PipelineStep(format!("pipeline.steps[{i}]: {id} is a client tool"))),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Refuses a definition whose target the egress policy refuses as written (an
    /// address in any spelling, `localhost`), its pipeline's inline tools' too. A
    /// host behind a `{{secret:…}}` or a `{param}` is judged when it is called.
    fn check_destinations(&self, d: &ToolDef) -> Result<(), ToolError> {
        let targets =
            d.execute.as_ref().map(|e| (e.url.as_str(), e.method())).into_iter().chain(d.mcp.as_ref().map(|m| (m.url.as_str(), "POST".to_owned())));
        for (url, method) in targets {
            if let Some(uri) = written_origin(url) {
                self.trust.check_url(&uri).map_err(|_| ToolError::Refused { url: url.to_owned(), method })?;
            }
        }
        d.pipeline.iter().flat_map(|p| p.steps.iter()).filter_map(|s| s.tool.as_deref()).try_for_each(|t| self.check_destinations(t))
    }

    /// Stores a new tool in the scope's project from a `CreateToolRequest` body
    /// without `project_id` (blocking: a write).
    pub fn create(&self, scope: &Scope, body: Value) -> Result<Tool, ToolError> {
        let p = scope.project();
        let def = self.check_inline(p, body)?;
        let now = crate::clock::now_rfc3339();
        let record = ToolRecord {
            id: format!("{ID_PREFIX}{}", crate::ids::random_base62(16)),
            account_id: p.account_id.to_owned(),
            project_id: p.project_id.to_owned(),
            def: serde_json::to_value(&def).expect("definitions serialize"),
            created_at: now.clone(),
            updated_at: now,
        };
        self.records.insert(&record)?;
        Ok(Tool { record, def })
    }

    /// The scope's project's tools, oldest first.
    pub fn list(&self, scope: &Scope) -> Result<Vec<Tool>, ToolError> {
        let mut all: Vec<ToolRecord> = scope.list(&self.records)?;
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        all.into_iter().map(parsed).collect()
    }

    /// A tool the scope sees, or `NotFound` (also another account's, or a project a
    /// project key does not see).
    pub fn lookup(&self, scope: &Scope, id: &str) -> Result<Tool, ToolError> {
        scope.get::<ToolRecord>(&self.records, id)?.map(parsed).transpose()?.ok_or_else(|| ToolError::NotFound(id.to_owned()))
    }

    /// The tool when it is in exactly this project (an agent's binding, a pipeline
    /// step: `400 TOOL_NOT_FOUND` for the caller to raise otherwise).
    pub fn lookup_in(&self, p: Project<'_>, id: &str) -> Result<Option<Tool>, ToolError> {
        self.record(p, id)
    }

    fn record(&self, p: Project<'_>, id: &str) -> Result<Option<Tool>, ToolError> {
        let r: Option<ToolRecord> = self.records.get(p.account_id, id)?;
        r.filter(|r| r.project_id == p.project_id).map(parsed).transpose()
    }

    /// Applies an `UpdateToolRequest`: each field sent replaces the stored one, `null`
    /// clears it, and the result is checked whole (blocking: a write).
    pub fn update(&self, scope: &Scope, id: &str, patch: Map<String, Value>) -> Result<Tool, ToolError> {
        for key in ["name", "type"] {
            if patch.get(key).is_some_and(Value::is_null) {
                return Err(ToolError::Invalid(format!("{key} cannot be null")));
            }
        }
        let current = self.lookup(scope, id)?;
        let p = Project { account_id: &scope.account_id, project_id: &current.record.project_id };
        let mut merged = current.record.def.as_object().cloned().unwrap_or_default();
        for (k, v) in patch {
            if v.is_null() {
                merged.remove(&k);
            } else {
                merged.insert(k, v);
            }
        }
        let def = self.check_inline(p, Value::Object(merged))?;
        let stored = serde_json::to_value(&def).expect("definitions serialize");
        let written = self.records.update(p.account_id, id, |r: &mut ToolRecord| {
            if r.project_id != p.project_id {
                return Change::Keep(None);
            }
            r.def = stored.clone();
            r.updated_at = crate::clock::now_rfc3339();
            Change::Write(Some(r.clone()))
        })?;
        let record = written.flatten().ok_or_else(|| ToolError::NotFound(id.to_owned()))?;
        Ok(Tool { record, def })
    }

    /// Removes the tool (blocking: a write).
    pub fn delete(&self, scope: &Scope, id: &str) -> Result<(), ToolError> {
        self.lookup(scope, id)?;
        if !self.records.remove::<ToolRecord>(&scope.account_id, id)? {
            return Err(ToolError::NotFound(id.to_owned()));
        }
        Ok(())
    }

    /// `POST /tools/{id}/call`: a tool the scope sees, run with `input` in its own
    /// project (where its secret references resolve).
    pub async fn call(&self, env: &Env<'_>, scope: &Scope, id: &str, input: CallInput) -> Result<Value, ToolError> {
        let tool = self.lookup(scope, id)?;
        let p = Project { account_id: &scope.account_id, project_id: &tool.record.project_id };
        self.run(env, p, &tool.def, input, 0).await
    }
}

crate::agents::scope::in_project!(ToolRecord);

/// `scheme://authority/` of a tool's URL when its authority holds no template (a
/// `{param}` path or a `{{secret:…}}` query do not matter: only the host is judged).
fn written_origin(url: &str) -> Option<hyper::Uri> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('{') {
        return None;
    }
    format!("{scheme}://{authority}/").parse().ok()
}

fn parsed(record: ToolRecord) -> Result<Tool, ToolError> {
    let def: ToolDef = serde_json::from_value(record.def.clone())
        .map_err(|e| ToolError::Store(StoreError::Corrupt { what: format!("tool {}", record.id), reason: e.to_string() }))?;
    Ok(Tool { record, def })
}

#[cfg(test)]
mod tests;
