//! `/api/v1/webhooks` and `/api/v1/webhook-deliveries` (webhooks.yaml): create, list,
//! get, PUT, delete; the signing secret read and rotated; a webhook's deliveries
//! listed (`?webhook_id=`), one read, one redelivered. The service is
//! `agents::webhooks`; what is sent and when, `agents::webhooks::deliver`.

use hyper::StatusCode;
use serde::{Deserialize, Serialize};

use super::{body, no_content, query, scope, scope_in_query, Page};
use crate::agents::webhooks::{NewWebhook, WebhookPatch};
use crate::agents::{Patch, SoatError};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateIn {
    #[serde(default)]
    project_id: Option<String>,
    name: String,
    #[serde(default)]
    description: Option<String>,
    url: String,
    events: Vec<String>,
    #[serde(default)]
    policy_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    active: Option<bool>,
    #[serde(default)]
    policy_id: Patch<String>,
}

#[derive(Serialize)]
struct SecretOut {
    secret: String,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: CreateIn = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let new = NewWebhook { name: new.name, description: new.description, url: new.url, events: new.events, policy_id: new.policy_id };
    let view = blocking(move || app.webhooks.create(&scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &view))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    Ok(page.reply(&call.app.webhooks.list(&scope)?))
}

pub async fn get(call: Call<'_>, webhook_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &call.app.webhooks.get(&scope, &webhook_id)?))
}

pub async fn update(mut call: Call<'_>, webhook_id: String) -> Result<Reply, ApiError> {
    let p: UpdateIn = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let patch = WebhookPatch { name: p.name, description: p.description, url: p.url, events: p.events, active: p.active, policy_id: p.policy_id };
    let view = blocking(move || app.webhooks.update(&scope, &webhook_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &view))
}

/// 204: the webhook and its deliveries are gone; nothing more is sent.
pub async fn delete(call: Call<'_>, webhook_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || app.webhooks.delete(&scope, &webhook_id)).await?;
    Ok(no_content())
}

pub async fn secret(call: Call<'_>, webhook_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let secret = call.app.webhooks.secret(&scope, &webhook_id)?;
    Ok(response::json(StatusCode::OK, &SecretOut { secret: secret.expose().to_owned() }))
}

pub async fn rotate_secret(call: Call<'_>, webhook_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let view = blocking(move || app.webhooks.rotate(&scope, &webhook_id)).await?;
    Ok(response::json(StatusCode::OK, &view))
}

/// `?webhook_id=` (required), newest first.
pub async fn list_deliveries(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let Some(webhook_id) = query::param(q, "webhook_id").filter(|w| !w.is_empty()) else {
        return Err(SoatError::invalid("webhook_id", "is required: the webhook whose deliveries to list.").into());
    };
    let scope = scope(&call, None).await?;
    Ok(page.reply(&call.app.webhooks.deliveries(&scope, &webhook_id)?))
}

pub async fn get_delivery(call: Call<'_>, delivery_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &call.app.webhooks.delivery(&scope, &delivery_id)?))
}

/// 202: a new delivery of the same event, sent in the background; poll it.
pub async fn redeliver(call: Call<'_>, delivery_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let view = blocking(move || app.webhooks.redeliver(&scope, &delivery_id)).await?;
    Ok(response::json(StatusCode::ACCEPTED, &view))
}
