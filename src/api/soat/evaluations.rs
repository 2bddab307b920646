//! `/api/v1/datasets` and `/api/v1/evals` (evaluations.yaml, issue 37): datasets and
//! their items (one curated from a generation), evals, and runs this server executes,
//! their results, and cancel. The services are `agents::evals`.

use hyper::StatusCode;
use serde_json::Value;

use super::generate::host;
use super::{body, no_content, scope, scope_in_query, Page};
use crate::agents::evals::datasets::{self, DatasetPatch, FromGeneration, ItemPatch, NewDataset, NewItem};
use crate::agents::evals::defs::{self, EvalPatch, NewEval};
use crate::agents::evals::record::view;
use crate::agents::evals::run::{self, StartRun};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};

fn page_of(call: &Call<'_>) -> Result<Page, ApiError> {
    Ok(Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?)
}

fn created(v: Value) -> Reply {
    response::json(StatusCode::CREATED, &v)
}

fn ok(v: Value) -> Reply {
    response::json(StatusCode::OK, &v)
}

pub async fn list_datasets(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = page_of(&call)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = datasets::list(&call.app.records, &scope)?.iter().map(view).collect();
    Ok(page.reply(&all))
}

pub async fn create_dataset(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewDataset = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let d = blocking(move || datasets::create(&app.records, &scope, new)).await?;
    Ok(created(view(&d)))
}

pub async fn get_dataset(call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(ok(view(&datasets::get(&call.app.records, &scope, &dataset_id)?)))
}

pub async fn update_dataset(mut call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let patch: DatasetPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let d = blocking(move || datasets::update(&app.records, &scope, &dataset_id, patch)).await?;
    Ok(ok(view(&d)))
}

pub async fn delete_dataset(call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || datasets::delete(&app.records, &scope, &dataset_id)).await?;
    Ok(no_content())
}

pub async fn list_items(call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let page = page_of(&call)?;
    let scope = scope(&call, None).await?;
    let all: Vec<Value> = datasets::items(&call.app.records, &scope, &dataset_id)?.iter().map(view).collect();
    Ok(page.reply(&all))
}

pub async fn create_item(mut call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let new: NewItem = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let i = blocking(move || datasets::create_item(&app.records, &scope, &dataset_id, new)).await?;
    Ok(created(view(&i)))
}

pub async fn create_item_from_generation(mut call: Call<'_>, dataset_id: String) -> Result<Reply, ApiError> {
    let from: FromGeneration = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let i = blocking(move || datasets::from_generation(&app.records, &scope, &dataset_id, from)).await?;
    Ok(created(view(&i)))
}

pub async fn update_item(mut call: Call<'_>, dataset_id: String, item_id: String) -> Result<Reply, ApiError> {
    let patch: ItemPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let i = blocking(move || datasets::update_item(&app.records, &scope, &dataset_id, &item_id, patch)).await?;
    Ok(ok(view(&i)))
}

pub async fn delete_item(call: Call<'_>, dataset_id: String, item_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || datasets::delete_item(&app.records, &scope, &dataset_id, &item_id)).await?;
    Ok(no_content())
}

pub async fn list_evals(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = page_of(&call)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<Value> = defs::list(&call.app.records, &scope)?.iter().map(view).collect();
    Ok(page.reply(&all))
}

pub async fn create_eval(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewEval = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let e = blocking(move || defs::create(&app.records, &scope, new)).await?;
    Ok(created(view(&e)))
}

pub async fn get_eval(call: Call<'_>, eval_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(ok(view(&defs::get(&call.app.records, &scope, &eval_id)?)))
}

pub async fn update_eval(mut call: Call<'_>, eval_id: String) -> Result<Reply, ApiError> {
    let patch: EvalPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let e = blocking(move || defs::update(&app.records, &scope, &eval_id, patch)).await?;
    Ok(ok(view(&e)))
}

pub async fn delete_eval(call: Call<'_>, eval_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || defs::delete(&app.records, &scope, &eval_id)).await?;
    Ok(no_content())
}

pub async fn list_runs(call: Call<'_>, eval_id: String) -> Result<Reply, ApiError> {
    let page = page_of(&call)?;
    let scope = scope(&call, None).await?;
    let all: Vec<Value> = run::list(&call.app.records, &scope, &eval_id)?.iter().map(run::view).collect();
    Ok(page.reply(&all))
}

/// `startEvalRun`: the run is Quarry's to execute; a body naming `status` or
/// `passed` (a run a client would record) is 400.
pub async fn start_run(mut call: Call<'_>, eval_id: String) -> Result<Reply, ApiError> {
    let start: StartRun = body::read_or_default(&mut call).await?;
    let scope = scope(&call, None).await?;
    let r = run::start(host(&call), &scope, &eval_id, start).await?;
    Ok(created(run::view(&r)))
}

pub async fn get_run(call: Call<'_>, eval_id: String, eval_run_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(ok(run::view(&run::get(&call.app.records, &scope, &eval_id, &eval_run_id)?)))
}

pub async fn list_results(call: Call<'_>, eval_id: String, eval_run_id: String) -> Result<Reply, ApiError> {
    let page = page_of(&call)?;
    let scope = scope(&call, None).await?;
    let all: Vec<Value> = run::results(&call.app.records, &scope, &eval_id, &eval_run_id)?.iter().map(view).collect();
    Ok(page.reply(&all))
}

pub async fn cancel_run(call: Call<'_>, eval_id: String, eval_run_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let r = blocking(move || run::cancel(&app.records, &scope, &eval_id, &eval_run_id)).await?;
    Ok(ok(run::view(&r)))
}
