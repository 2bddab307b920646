//! `/api/v1/secrets` (secrets.yaml): create, list, get, PATCH, delete. The value is
//! write-only: it is read into a [`Secret`] straight from the body and never answered
//! (`has_value` says whether one is stored).

use hyper::StatusCode;
use serde::{Deserialize, Deserializer};

use super::{body, scope, scope_in_query, Page};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::llm::secret::Secret;

/// The secrets list's default page (secrets.yaml).
const DEFAULT_LIMIT: u64 = 25;

/// A value as it arrives: straight into a [`Secret`], whose `Debug` prints `***`.
struct Value(Secret);

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        String::deserialize(d).map(|s| Value(Secret::new(s)))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateIn {
    #[serde(default)]
    project_id: Option<String>,
    name: String,
    value: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    value: Option<Value>,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: CreateIn = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let view = blocking(move || app.secrets.create(&scope, &new.name, Some(&new.value.0))).await?;
    Ok(response::json(StatusCode::CREATED, &view))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    Ok(page.reply(&call.app.secrets.list(&scope)?))
}

pub async fn get(call: Call<'_>, secret_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &call.app.secrets.get(&scope, &secret_id)?))
}

pub async fn update(mut call: Call<'_>, secret_id: String) -> Result<Reply, ApiError> {
    let patch: UpdateIn = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let view = blocking(move || app.secrets.update(&scope, &secret_id, patch.name.as_deref(), patch.value.as_ref().map(|v| &v.0))).await?;
    Ok(response::json(StatusCode::OK, &view))
}

/// 200 with the secret as it was (secrets.yaml answers the delete with 200).
pub async fn delete(call: Call<'_>, secret_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let view = blocking(move || app.secrets.delete(&scope, &secret_id)).await?;
    Ok(response::json(StatusCode::OK, &view))
}
