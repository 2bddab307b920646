//! `/api/v1/tools` (tools.yaml): create, list, get, PATCH, delete, and `/call`.
//!
//! A call's `tool_context` comes from its `X-Soat-Context-<key>` headers (the
//! prefix the tool's own target sees too); `CallToolRequest` has no field for it.

use std::collections::BTreeMap;

use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{body, scope, scope_in_query, Page};
use crate::agents::tools::call::CONTEXT_HEADER_PREFIX;
use crate::agents::tools::{CallInput, ToolError};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// A `CreateToolRequest`: `project_id` picks the scope, the rest is the definition
/// (parsed strictly by the service).
pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let mut obj: Map<String, Value> = body::read(&mut call).await?;
    let project_id = match obj.remove("project_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(ToolError::Invalid("project_id must be a string".into()).into()),
    };
    let (scope, app) = (scope(&call, project_id.as_deref()).await?, call.app.clone());
    let tool = blocking(move || app.tools.create(&scope, Value::Object(obj))).await?;
    Ok(response::json(StatusCode::CREATED, &tool.view()))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = call.app.tools.list(&scope)?.iter().map(|t| t.view()).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, tool_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &call.app.tools.lookup(&scope, &tool_id)?.view()))
}

pub async fn update(mut call: Call<'_>, tool_id: String) -> Result<Reply, ApiError> {
    let patch: Map<String, Value> = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let tool = blocking(move || app.tools.update(&scope, &tool_id, patch)).await?;
    Ok(response::json(StatusCode::OK, &tool.view()))
}

pub async fn delete(call: Call<'_>, tool_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || app.tools.delete(&scope, &tool_id)).await?;
    Ok(super::no_content())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CallIn {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    input: Option<Map<String, Value>>,
}

/// `POST /tools/{id}/call`: the tool's output, any JSON value (200).
pub async fn call(mut call: Call<'_>, tool_id: String) -> Result<Reply, ApiError> {
    let req: CallIn = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let input = CallInput { action: req.action, input: req.input.unwrap_or_default(), context: context(&call), idempotency_key: None };
    let env = super::memories::env(&call);
    let out = call.app.tools.call(&env, &scope, &tool_id, input).await?;
    Ok(response::json(StatusCode::OK, &out))
}

/// The request's `X-Soat-Context-<key>` headers as `tool_context` (keys lower-case,
/// as headers arrive; they are matched whatever their case).
fn context(call: &Call<'_>) -> BTreeMap<String, String> {
    let prefix = CONTEXT_HEADER_PREFIX.to_ascii_lowercase();
    call.parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().strip_prefix(&prefix)?.to_owned(), value.to_str().ok()?.to_owned())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}
