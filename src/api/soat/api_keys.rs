//! `/api/v1/api-keys` (api-keys.yaml): create (the `sk_…` secret shown once), list,
//! get, PUT, delete (the key refused on every shard before the answer).

use hyper::StatusCode;
use serde::Serialize;

use super::{body, scope, Page};
use crate::agents::api_keys::{self, KeyUpdate, NewKey};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::store::ProjectKeyRecord;

/// ApiKeyRecord as the spec writes it (`user_id`: the owning account, Quarry has no users).
#[derive(Serialize)]
pub struct KeyOut {
    id: String,
    name: String,
    key_prefix: String,
    user_id: String,
    project_id: Option<String>,
    policy_ids: Vec<String>,
    created_at: String,
    updated_at: String,
}

impl From<ProjectKeyRecord> for KeyOut {
    fn from(k: ProjectKeyRecord) -> KeyOut {
        KeyOut {
            id: k.id,
            name: k.name,
            key_prefix: k.prefix,
            user_id: k.account_id,
            project_id: k.project_id,
            policy_ids: k.policy_ids,
            created_at: k.created_at,
            updated_at: k.updated_at,
        }
    }
}

#[derive(Serialize)]
struct Created {
    #[serde(flatten)]
    record: KeyOut,
    key: String,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewKey = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let plan = app.plan(&call.principal().plan).clone();
    let k = blocking(move || api_keys::create(&app.records, &plan, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &Created { record: KeyOut::from(k.record), key: k.secret }))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    // `?project_id=` is checked as every list checks it (403 for a project the key cannot
    // act in) and narrows the list to keys bound to that project.
    let named = super::query::param(call.parts.uri.query(), "project_id");
    let scope = super::scope_in_query(&call).await?;
    let all: Vec<KeyOut> = api_keys::list(&call.app.records, &scope)?
        .into_iter()
        .filter(|k| named.is_none() || k.project_id.as_deref() == Some(scope.project_id.as_str()))
        .map(KeyOut::from)
        .collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, api_key_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &KeyOut::from(api_keys::get(&call.app.records, &scope, &api_key_id)?)))
}

pub async fn update(mut call: Call<'_>, api_key_id: String) -> Result<Reply, ApiError> {
    let u: KeyUpdate = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let k = blocking(move || {
        let done = api_keys::update(&app.records, &scope, &api_key_id, u);
        // A key moved to another project acts there alone from now on, on every shard.
        app.bump_key_epoch();
        done
    })
    .await?;
    Ok(response::json(StatusCode::OK, &KeyOut::from(k)))
}

pub async fn delete(call: Call<'_>, api_key_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || {
        let done = api_keys::delete(&app.records, &scope, &api_key_id);
        app.bump_key_epoch();
        done
    })
    .await?;
    Ok(super::no_content())
}
