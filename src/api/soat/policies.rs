//! `/api/v1/policies` (policies.yaml): an account's policy documents, managed by its
//! admins (an account key, an unbound key, an admin's login). The service, and what a
//! policy means where every route is checked, is `agents::policies`.

use hyper::StatusCode;
use serde_json::Value;

use super::{body, no_content, query, Page};
use crate::agents::policies::{self, PolicyBody};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let q = call.parts.uri.query();
    let page = Page::from_query(q, super::list::DEFAULT_LIMIT)?;
    let user = query::param(q, "user_id");
    let all: Vec<Value> =
        policies::list(&call.app.records, &policies::admin(call.principal())?, user.as_deref())?.iter().map(policies::view).collect();
    Ok(page.reply(&all))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let b: PolicyBody = body::read(&mut call).await?;
    let (app, account) = (call.app.clone(), policies::admin(call.principal())?);
    let made = blocking(move || policies::create(&app.records, &account, b)).await?;
    Ok(response::json(StatusCode::CREATED, &policies::view(&made)))
}

pub async fn get(call: Call<'_>, policy_id: String) -> Result<Reply, ApiError> {
    Ok(response::json(StatusCode::OK, &policies::view(&policies::get(&call.app.records, &policies::admin(call.principal())?, &policy_id)?)))
}

pub async fn update(mut call: Call<'_>, policy_id: String) -> Result<Reply, ApiError> {
    let b: PolicyBody = body::read(&mut call).await?;
    let (app, account) = (call.app.clone(), policies::admin(call.principal())?);
    let changed = blocking(move || policies::update(&app.records, &account, &policy_id, b)).await?;
    Ok(response::json(StatusCode::OK, &policies::view(&changed)))
}

pub async fn delete(call: Call<'_>, policy_id: String) -> Result<Reply, ApiError> {
    let (app, account) = (call.app.clone(), policies::admin(call.principal())?);
    blocking(move || policies::delete(&app.records, &account, &policy_id)).await?;
    Ok(no_content())
}
