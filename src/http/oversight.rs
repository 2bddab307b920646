//! Policies and the audit log at the one place every request passes (issue 37,
//! policies): before an authenticated `/api/v1` row's handler runs, the caller's
//! attached policies are asked about the row's action on its resource
//! (`agents::policies`; a denial is 403 `FORBIDDEN` naming the policy, and the handler
//! never runs); after it answers, a write (any method but GET and HEAD) on `/api/v1`,
//! or a change of `/v1`'s keys, is appended to the audit log (`agents::audit`) with its
//! status, before the answer goes. No handler checks or records anything itself.
//!
//! A create whose project is named only in its body (`project_id`) is checked against
//! that project: the dispatch reads and parses the body once, before the check, and
//! hands both to the handler ([`Gate::reads_body`], [`Gate::body_names`]).
//!
//! quotas (issue 37): before both, every authenticated `/api/v1` request takes a unit
//! of its project's `requests` quotas ([`take_request`]); past an enforced one it is
//! 429 `QUOTA_EXCEEDED`, and neither policy nor handler runs.
//!
//! Exempt: the rows without a key (no caller to check) — of which bootstrap and login
//! are recorded all the same, on the user they name ([`record_public`]) — and
//! `GET /users/me` (who the caller is, no resource).

use http_body_util::{BodyExt, Either, Full};
use hyper::Method;
use serde_json::{json, Value};

use super::response::Reply;
use super::router::{Params, Route};
use super::surface::Surface;
use crate::agents::audit;
use crate::agents::policies::{self, Context, Denied, RequestFacts, Target};
use crate::agents::quotas;
use crate::app::App;
use crate::auth::{Principal, ProjectKey};
use crate::error::ApiError;
use crate::store::AuditEntry;

/// `/v1`'s rows that change keys, audited though not SOAT's.
const V1_AUDITED: [&str; 2] = ["create_key", "revoke_key"];
const EXEMPT: [&str; 1] = ["soat_get_current_user"];

/// What one request is checked and recorded as.
pub struct Gate {
    action: String,
    target: Target,
    checked: bool,
    audited: bool,
}

fn writes(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD)
}

/// The gate of a request, `None` when neither a policy nor the audit log concerns it.
pub fn gate(app: &App, route: &Route, params: &Params, parts: &hyper::http::request::Parts, p: &Principal) -> Option<Gate> {
    let soat = route.surface == Surface::Soat && !EXEMPT.contains(&route.name);
    let restricted = p.project_key.is_some() || p.user.as_ref().is_some_and(|u| u.role != "admin");
    let checked = soat && restricted;
    let audited = writes(&parts.method) && (soat || V1_AUDITED.contains(&route.name));
    if !checked && !audited {
        return None;
    }
    let project = project(app, p, parts, params.first().is_none());
    Some(Gate { action: policies::action_of(route.name, route.path), target: Target::of(route.path, params.first(), project), checked, audited })
}

/// The project a request acts in, when known before its body is read: a bound key's,
/// the query's `project_id`, else, for a list or read of no record that has no body,
/// the account's default project.
fn project(app: &App, p: &Principal, parts: &hyper::http::request::Parts, no_record: bool) -> Option<String> {
    if let Some(ProjectKey { project_id: Some(own), .. }) = &p.project_key {
        return Some(own.clone());
    }
    let named = parts.uri.query().into_iter().flat_map(|q| q.split('&')).find_map(|kv| kv.strip_prefix("project_id="));
    if let Some(named) = named.filter(|n| !n.is_empty()) {
        return Some(named.to_owned());
    }
    if !no_record || writes(&parts.method) {
        return None;
    }
    p.default_project.get().cloned().or_else(|| app.records.default_project_id(&p.account_id).ok().flatten())
}

/// quotas (issue 37): counts the request in the `requests` quotas of the project it
/// acts in (a bound key's, the query's `project_id`, else the account's default
/// project), refusing it past an enforced one. A project with no such quota costs one
/// read here; one with some, a store write on the blocking pool.
pub async fn take_request(app: &std::sync::Arc<App>, route: &Route, parts: &hyper::http::request::Parts, p: &Principal) -> Result<(), ApiError> {
    if route.surface != Surface::Soat {
        return Ok(());
    }
    let own = p.project_key.as_ref().and_then(|k| k.project_id.clone());
    let named = || {
        parts
            .uri
            .query()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|kv| kv.strip_prefix("project_id="))
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
    };
    let project =
        own.or_else(named).or_else(|| p.default_project.get().cloned()).or_else(|| app.records.default_project_id(&p.account_id).ok().flatten());
    let Some(project) = project else { return Ok(()) };
    if !quotas::has_request_quotas(&app.records, &p.account_id, &project)? {
        return Ok(());
    }
    let (app, account, key) = (app.clone(), p.account_id.clone(), p.project_key.as_ref().map(|k| k.id.clone()));
    crate::runtime::blocking(move || quotas::take_request(&app.records, &account, &project, key)).await
}

impl Gate {
    /// Whether the check needs the body: a policy applies, the request writes a new
    /// record (no record in its path), and nothing else named its project.
    pub fn reads_body(&self, method: &Method) -> bool {
        self.checked && writes(method) && self.target.id.is_none() && self.target.project.is_none()
    }

    /// Takes the project a body names (`project_id`, a string) as the request's; the
    /// parsed body, for the handler to use instead of parsing it again.
    pub fn body_names(&mut self, bytes: &[u8]) -> Option<Value> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        if let Some(p) = v.get("project_id").and_then(Value::as_str).filter(|p| !p.is_empty()) {
            self.target.project = Some(p.to_owned());
        }
        Some(v)
    }

    /// The denial, if the caller's policies refuse this request.
    pub fn check(&self, app: &App, p: &Principal, request: &Request) -> Result<(), Denied> {
        if !self.checked {
            return Ok(());
        }
        let facts = RequestFacts { method: &request.method, ip: request.ip.as_deref(), user_agent: request.user_agent.as_deref() };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let ctx = Context::of(p, &self.action, &self.target, &facts, now);
        match policies::authorize(&app.records, p, &self.action, &self.target, &ctx) {
            Ok(None) => Ok(()),
            Ok(Some(denied)) => Err(denied),
            Err(e) => {
                // Fail closed: a policy that cannot be read allows nothing.
                tracing::error!(error = %e, "policies unreadable");
                Err(Denied { policy_ids: vec![], explicit: false, action: self.action.clone(), srn: self.target.srn() })
            }
        }
    }

    /// Appends the request's audit entry (when it is audited), durable before the
    /// answer goes; a create's id and project are read from its answer.
    pub async fn record(self, app: &std::sync::Arc<App>, p: &Principal, request: Request, denied: Option<&Denied>, reply: Reply) -> Reply {
        if !self.audited {
            return reply;
        }
        let (reply, made) = if self.target.id.is_none() && reply.status().is_success() { peek(reply).await } else { (reply, None) };
        let made_str = |k: &str| made.as_ref().and_then(|v| v.get(k)).and_then(Value::as_str).map(str::to_owned);
        let (principal_type, principal_id) = audit::principal_of(p);
        let status = reply.status();
        let outcome = match (denied, status.is_success()) {
            (Some(_), _) => "denied",
            (None, true) => "success",
            (None, false) => "failed",
        };
        let mut detail = json!({"outcome": outcome, "method": request.method, "route": request.route});
        if let Some(d) = denied {
            detail["policy_ids"] = json!(d.policy_ids);
        }
        let project_id = self.target.project.clone().or_else(|| made_str("project_id"));
        let target = Target { project: project_id.clone(), ..self.target.clone() };
        let entry = AuditEntry {
            id: String::new(),
            account_id: p.account_id.clone(),
            project_id,
            principal_type: Some(principal_type.to_owned()),
            principal_id: Some(principal_id),
            action: self.action,
            resource_srn: Some(target.srn()),
            resource_public_id: self.target.id.clone().or_else(|| made_str("id")),
            status: status.as_u16(),
            request_id: request.request_id,
            ip: request.ip,
            user_agent: request.user_agent,
            detail: Some(detail),
            created_at: crate::clock::now_rfc3339(),
        };
        let app = app.clone();
        crate::runtime::blocking(move || audit::record(&app.records, entry)).await;
        reply
    }
}

/// The rows without a key that are audited all the same: who logged in (or tried, on
/// a user that exists) and the first user's bootstrap. The body is read once by the
/// dispatch for its `username` and handed to the handler; never recorded.
const PUBLIC_AUDITED: [&str; 2] = ["soat_bootstrap_user", "soat_login_user"];

/// Whether `route`, a row without a key, is audited ([`record_public`]).
pub fn audits_public(route: &Route) -> bool {
    PUBLIC_AUDITED.contains(&route.name)
}

/// The body parsed once, and the `username` it names.
pub fn username_in(bytes: &[u8]) -> (Option<Value>, Option<String>) {
    let v: Option<Value> = serde_json::from_slice(bytes).ok();
    let name = v.as_ref().and_then(|v| v.get("username")).and_then(Value::as_str).map(str::to_owned);
    (v, name)
}

/// Appends the audit entry of a login or bootstrap, on the account of the user it
/// names (a name no user has: nothing to attribute it to, not recorded), durable
/// before the answer goes.
pub async fn record_public(app: &std::sync::Arc<App>, route: &Route, request: Request, username: Option<String>, reply: Reply) -> Reply {
    let Some(username) = username else { return reply };
    let status = reply.status();
    let action = policies::action_of(route.name, route.path);
    let app = app.clone();
    crate::runtime::blocking(move || {
        let user = match app.records.user_by_username(&username) {
            Ok(Some(u)) => u,
            Ok(None) => return,
            Err(e) => return tracing::error!(error = %e, "audit: the user could not be read"),
        };
        let target = Target { project: None, kind: "user".into(), id: Some(user.id.clone()) };
        let outcome = if status.is_success() { "success" } else { "failed" };
        let entry = AuditEntry {
            id: String::new(),
            account_id: user.account_id.clone(),
            project_id: None,
            principal_type: Some("user".into()),
            principal_id: Some(user.id.clone()),
            action,
            resource_srn: Some(target.srn()),
            resource_public_id: Some(user.id),
            status: status.as_u16(),
            request_id: request.request_id,
            ip: request.ip,
            user_agent: request.user_agent,
            detail: Some(json!({"outcome": outcome, "method": request.method, "route": request.route})),
            created_at: crate::clock::now_rfc3339(),
        };
        audit::record(&app.records, entry);
    })
    .await;
    reply
}

/// What the audit entry says of the request itself (never its body).
pub struct Request {
    pub method: String,
    pub route: &'static str,
    pub request_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// A whole JSON answer's value (a create's record), the answer kept as it was.
async fn peek(reply: Reply) -> (Reply, Option<Value>) {
    let (parts, body) = reply.into_parts();
    match body {
        Either::Left(full) => {
            let bytes = full.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            let v = serde_json::from_slice(&bytes).ok();
            (Reply::from_parts(parts, Either::Left(Full::new(bytes))), v)
        }
        streamed => (Reply::from_parts(parts, streamed), None),
    }
}
