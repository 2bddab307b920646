//! SOAT webhooks (`wh_…`, webhooks.yaml): a project's subscription to its events, by
//! pattern, posted to a URL and signed with a per-webhook secret; and its deliveries
//! (`whd_…`), one per event and webhook, written in the transaction that raises the
//! event (`store::webhooks`, the outbox) and sent by [`deliver`]'s worker.
//!
//! The secret (`whsec_…`) is made at create, sealed at rest with the secrets module's
//! key (the webhook as its owner), answered only by create, get-secret and rotate.
//! The URL is a tenant's destination: judged by the egress policy as written on every
//! write, and again at each connect (the tools' outbound path).

pub mod deliver;
pub mod events;
pub mod sign;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::tools::Tools;
use super::{Patch, Project, Scope, SoatError};
use crate::error::{Code, ErrorCode};
use crate::llm::secret::Secret;
use crate::store::owned::Change;
use crate::store::webhooks::{DELIVERY_PREFIX, WEBHOOK_PREFIX};
use crate::store::{DeliveryRecord, Records, WebhookRecord};

pub const SECRET_PREFIX: &str = "whsec_";
pub const MAX_NAME: usize = 256;
pub const MAX_URL: usize = 2048;
pub const MAX_EVENTS: usize = 64;
pub const MAX_PATTERN: usize = 256;
pub const MAX_DESCRIPTION: usize = 4096;

crate::agents::scope::in_project!(WebhookRecord, DeliveryRecord);

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The URL is where the egress policy does not let a tenant go, as written (403
    /// `EGRESS_REFUSED`, `meta.field` `url`). Nothing was stored.
    #[error("{}", crate::net::egress::REFUSED)]
    Refused { url: String },
    #[error(transparent)]
    Soat(#[from] SoatError),
}

impl From<crate::store::StoreError> for WebhookError {
    fn from(e: crate::store::StoreError) -> WebhookError {
        WebhookError::Soat(e.into())
    }
}

impl ErrorCode for WebhookError {
    fn code(&self) -> Code {
        match self {
            WebhookError::Refused { .. } => Code::EgressRefused,
            WebhookError::Soat(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, Value>> {
        match self {
            WebhookError::Refused { url } => {
                Some(serde_json::Map::from_iter([("field".to_owned(), Value::from("url")), ("url".to_owned(), Value::from(url.as_str()))]))
            }
            WebhookError::Soat(e) => e.meta(),
        }
    }
}

/// A webhook as a client reads it; `secret` only in create's and rotate's answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookView {
    pub id: String,
    pub project_id: String,
    pub policy_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub url: String,
    pub events: Vec<String>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&WebhookRecord> for WebhookView {
    fn from(r: &WebhookRecord) -> WebhookView {
        WebhookView {
            id: r.id.clone(),
            project_id: r.project_id.clone(),
            policy_id: r.policy_id.clone(),
            name: r.name.clone(),
            description: r.description.clone(),
            url: r.url.clone(),
            events: r.events.clone(),
            active: r.active,
            secret: None,
            created_at: r.created_at.clone(),
            updated_at: r.updated_at.clone(),
        }
    }
}

/// A delivery as a client reads it (webhooks.yaml's `Delivery`, with the event's id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryView {
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub event_type: String,
    pub payload: Value,
    pub status: String,
    pub status_code: Option<u16>,
    pub attempts: u32,
    pub last_attempt_at: Option<String>,
    pub next_attempt_at: Option<String>,
    pub response_body: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&DeliveryRecord> for DeliveryView {
    fn from(d: &DeliveryRecord) -> DeliveryView {
        DeliveryView {
            id: d.id.clone(),
            webhook_id: d.webhook_id.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.clone(),
            payload: d.payload.clone(),
            status: d.status.clone(),
            status_code: d.status_code,
            attempts: d.attempts,
            last_attempt_at: d.last_attempt_at.clone(),
            next_attempt_at: d.next_attempt_at.clone(),
            response_body: d.response_body.clone(),
            created_at: d.created_at.clone(),
            updated_at: d.updated_at.clone(),
        }
    }
}

/// A create's request (CreateWebhookRequest, its project from the scope).
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub name: String,
    pub description: Option<String>,
    pub url: String,
    pub events: Vec<String>,
    pub policy_id: Option<String>,
}

/// An update's request (UpdateWebhookRequest): absent fields stay.
#[derive(Debug, Clone, Default)]
pub struct WebhookPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub active: Option<bool>,
    pub policy_id: Patch<String>,
}

pub struct Webhooks {
    records: Arc<Records>,
    tools: Arc<Tools>,
}

impl Webhooks {
    pub fn new(records: Arc<Records>, tools: Arc<Tools>) -> Webhooks {
        Webhooks { records, tools }
    }

    /// Stores a new webhook in the scope's project with a new secret, answered once
    /// here (blocking: a write).
    pub fn create(&self, scope: &Scope, new: NewWebhook) -> Result<WebhookView, WebhookError> {
        let p = scope.project();
        check_name(&new.name)?;
        check_description(new.description.as_deref())?;
        self.check_url(&new.url)?;
        check_events(&new.events)?;
        check_policy(new.policy_id.as_deref())?;
        let id = format!("{WEBHOOK_PREFIX}{}", crate::ids::random_base62(16));
        let secret = new_secret();
        let now = crate::clock::now_rfc3339();
        let r = WebhookRecord {
            sealed_secret: self.tools.secrets().seal_for(p, &id, &secret),
            id,
            account_id: p.account_id.to_owned(),
            project_id: p.project_id.to_owned(),
            name: new.name,
            description: new.description,
            url: new.url,
            events: new.events,
            active: true,
            policy_id: new.policy_id,
            created_at: now.clone(),
            updated_at: now,
        };
        self.records.insert(&r)?;
        Ok(WebhookView { secret: Some(secret.expose().to_owned()), ..WebhookView::from(&r) })
    }

    /// The scope's project's webhooks, oldest first.
    pub fn list(&self, scope: &Scope) -> Result<Vec<WebhookView>, WebhookError> {
        let mut all: Vec<WebhookRecord> = scope.list(&self.records)?;
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(all.iter().map(WebhookView::from).collect())
    }

    pub fn get(&self, scope: &Scope, id: &str) -> Result<WebhookView, WebhookError> {
        Ok(WebhookView::from(&self.seen(scope, id)?))
    }

    fn seen(&self, scope: &Scope, id: &str) -> Result<WebhookRecord, WebhookError> {
        Ok(scope.find::<WebhookRecord>(&self.records, "webhook", id)?)
    }

    /// Changes what the patch names (blocking: a write).
    pub fn update(&self, scope: &Scope, id: &str, patch: WebhookPatch) -> Result<WebhookView, WebhookError> {
        if let Some(n) = &patch.name {
            check_name(n)?;
        }
        check_description(patch.description.as_deref())?;
        if let Some(u) = &patch.url {
            self.check_url(u)?;
        }
        if let Some(e) = &patch.events {
            check_events(e)?;
        }
        if let Patch::Set(p) = &patch.policy_id {
            check_policy(Some(p))?;
        }
        let current = self.seen(scope, id)?;
        let changed = self.records.update(&scope.account_id, id, |r: &mut WebhookRecord| {
            if r.project_id != current.project_id {
                return Change::Keep(None);
            }
            let p = patch;
            if let Some(v) = p.name {
                r.name = v;
            }
            if let Some(v) = p.description {
                r.description = Some(v);
            }
            if let Some(v) = p.url {
                r.url = v;
            }
            if let Some(v) = p.events {
                r.events = v;
            }
            if let Some(v) = p.active {
                r.active = v;
            }
            match p.policy_id {
                Patch::Absent => {}
                Patch::Null => r.policy_id = None,
                Patch::Set(v) => r.policy_id = Some(v),
            }
            r.updated_at = crate::clock::now_rfc3339();
            Change::Write(Some(WebhookView::from(&*r)))
        })?;
        Ok(changed.flatten().ok_or_else(|| SoatError::not_found("webhook", id))?)
    }

    /// Removes it with its deliveries: nothing more is sent (blocking: a write).
    pub fn delete(&self, scope: &Scope, id: &str) -> Result<(), WebhookError> {
        self.seen(scope, id)?;
        if !self.records.remove_webhook(&scope.account_id, id)? {
            return Err(SoatError::not_found("webhook", id).into());
        }
        Ok(())
    }

    /// The signing secret, opened.
    pub fn secret(&self, scope: &Scope, id: &str) -> Result<Secret, WebhookError> {
        let r = self.seen(scope, id)?;
        self.open(&r)
    }

    fn open(&self, r: &WebhookRecord) -> Result<Secret, WebhookError> {
        let p = Project { account_id: &r.account_id, project_id: &r.project_id };
        self.tools.secrets().open_for(p, &r.id, &r.sealed_secret).map_err(|e| {
            tracing::error!(webhook = %r.id, "a webhook's secret does not open with this server's secrets key");
            WebhookError::Soat(SoatError::Misconfigured(e.to_string()))
        })
    }

    /// A new secret replaces the old at once (blocking: a write); answered here.
    pub fn rotate(&self, scope: &Scope, id: &str) -> Result<WebhookView, WebhookError> {
        let current = self.seen(scope, id)?;
        let p = Project { account_id: &scope.account_id, project_id: &current.project_id };
        let secret = new_secret();
        let sealed = self.tools.secrets().seal_for(p, id, &secret);
        let changed = self.records.update(&scope.account_id, id, |r: &mut WebhookRecord| {
            if r.project_id != current.project_id {
                return Change::Keep(None);
            }
            r.sealed_secret = sealed;
            r.updated_at = crate::clock::now_rfc3339();
            Change::Write(Some(WebhookView::from(&*r)))
        })?;
        let view = changed.flatten().ok_or_else(|| SoatError::not_found("webhook", id))?;
        Ok(WebhookView { secret: Some(secret.expose().to_owned()), ..view })
    }

    /// The webhook's deliveries, newest first.
    pub fn deliveries(&self, scope: &Scope, webhook_id: &str) -> Result<Vec<DeliveryView>, WebhookError> {
        let w = self.seen(scope, webhook_id)?;
        Ok(self.records.deliveries_of(&scope.account_id, &w.id)?.iter().map(DeliveryView::from).collect())
    }

    pub fn delivery(&self, scope: &Scope, id: &str) -> Result<DeliveryView, WebhookError> {
        Ok(DeliveryView::from(&scope.find::<DeliveryRecord>(&self.records, "webhook delivery", id)?))
    }

    /// A new delivery of the same event (its id and payload kept), owed now; the
    /// original stays as the record of what happened (blocking: a write).
    pub fn redeliver(&self, scope: &Scope, id: &str) -> Result<DeliveryView, WebhookError> {
        let original = scope.find::<DeliveryRecord>(&self.records, "webhook delivery", id)?;
        let now = crate::clock::now_rfc3339();
        let d = DeliveryRecord {
            id: format!("{DELIVERY_PREFIX}{}", crate::ids::random_base62(20)),
            status: "pending".into(),
            status_code: None,
            attempts: 0,
            last_attempt_at: None,
            next_attempt_at: Some(now.clone()),
            response_body: None,
            created_at: now.clone(),
            updated_at: now,
            ..original
        };
        self.records.insert_delivery(&d)?;
        Ok(DeliveryView::from(&d))
    }

    fn check_url(&self, url: &str) -> Result<(), WebhookError> {
        if url.len() > MAX_URL {
            return Err(SoatError::invalid("url", format!("must be at most {MAX_URL} bytes.")).into());
        }
        let uri: hyper::Uri = url.parse().map_err(|_| SoatError::invalid("url", format!("{url:?} is not a URL.")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none_or(str::is_empty) {
            return Err(SoatError::invalid("url", "must be an http:// or https:// URL with a host.").into());
        }
        self.tools.check_url(&uri).map_err(|_| WebhookError::Refused { url: url.to_owned() })
    }
}

fn new_secret() -> Secret {
    Secret::new(format!("{SECRET_PREFIX}{}", crate::ids::random_base62(32)))
}

fn check_name(name: &str) -> Result<(), SoatError> {
    crate::names::check(name, MAX_NAME).map_err(|problem| SoatError::invalid("name", problem.to_string()))
}

fn check_description(d: Option<&str>) -> Result<(), SoatError> {
    match d {
        Some(d) if d.len() > MAX_DESCRIPTION => Err(SoatError::invalid("description", format!("must be at most {MAX_DESCRIPTION} bytes."))),
        _ => Ok(()),
    }
}

fn check_events(events: &[String]) -> Result<(), SoatError> {
    if events.len() > MAX_EVENTS {
        return Err(SoatError::invalid("events", format!("at most {MAX_EVENTS} patterns.")));
    }
    for (i, e) in events.iter().enumerate() {
        if e.is_empty() || e.len() > MAX_PATTERN || e.chars().any(char::is_control) {
            return Err(SoatError::invalid(format!("events[{i}]"), format!("a pattern is 1 to {MAX_PATTERN} bytes, no control characters.")));
        }
    }
    Ok(())
}

/// Policies (`policy_id`) are not served by this server: a webhook takes none.
fn check_policy(p: Option<&str>) -> Result<(), SoatError> {
    match p {
        Some(id) => {
            Err(SoatError::invalid("policy_id", format!("no policy {id} in this project (this server filters webhooks by their events only).")))
        }
        None => Ok(()),
    }
}
