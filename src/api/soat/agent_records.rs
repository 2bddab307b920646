//! The minimal records agents' rules need and the spec does not define (see
//! docs/agents.md): `/api/v1/model-routes` (soat/model-routes.yaml's create, list, get, delete).

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::agents::err;
use super::{body, scope, scope_in_query, Page};
use crate::agents::agent::error::RefKind;
use crate::agents::agent::record::ModelRouteRecord;
use crate::agents::agent::related::NewModelRoute;
use crate::agents::agent::{AgentError, Agents};
use crate::agents::InProject;
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

/// A record as the API shows it: without its account.
fn out<T: Serialize>(r: &T) -> Value {
    let mut v = serde_json::to_value(r).expect("records serialize");
    if let Value::Object(m) = &mut v {
        m.remove("account_id");
    }
    v
}

async fn run<T: Send + 'static>(call: &Call<'_>, f: impl FnOnce(&Agents) -> Result<T, AgentError> + Send + 'static) -> Result<T, ApiError> {
    let records = call.app.records.clone();
    blocking(move || f(&Agents::new(records))).await.map_err(err)
}

async fn create_with<B, T: Serialize + Send + 'static>(
    mut call: Call<'_>,
    make: impl FnOnce(&Agents, &crate::agents::Scope, B) -> Result<T, AgentError> + Send + 'static,
) -> Result<Reply, ApiError>
where
    B: serde::de::DeserializeOwned + Send + 'static,
{
    let new: B = body::read(&mut call).await?;
    let scope = scope(&call, None).await?;
    let r = run(&call, move |a| make(a, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &out(&r)))
}

async fn list_of<R: InProject + Serialize>(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<R> = Agents::new(call.app.records.clone()).all_in_project(&scope).map_err(err)?;
    Ok(page.reply(&all.iter().map(out).collect::<Vec<_>>()))
}

async fn get_of<R: InProject + Serialize>(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    let r: R = Agents::new(call.app.records.clone()).found(&scope, &id).map_err(err)?;
    Ok(response::json(StatusCode::OK, &out(&r)))
}

async fn delete_of<R: InProject + Send + 'static>(call: Call<'_>, id: String, kind: Option<RefKind>) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    run(&call, move |a| a.delete_related::<R>(&scope, &id, kind)).await?;
    Ok(super::no_content())
}

pub async fn create_model_route(call: Call<'_>) -> Result<Reply, ApiError> {
    create_with(call, |a, s, b: NewModelRoute| a.create_model_route(s, b)).await
}
pub async fn list_model_routes(call: Call<'_>) -> Result<Reply, ApiError> {
    list_of::<ModelRouteRecord>(call).await
}
pub async fn get_model_route(call: Call<'_>, route_id: String) -> Result<Reply, ApiError> {
    get_of::<ModelRouteRecord>(call, route_id).await
}
pub async fn delete_model_route(call: Call<'_>, route_id: String) -> Result<Reply, ApiError> {
    delete_of::<ModelRouteRecord>(call, route_id, Some(RefKind::ModelRoute)).await
}
