//! `/v1/collections` and `/v1/collections/{id}`.

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::{blocking, Call};
use super::input::{self, settings};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::search;
use crate::store::{CollectionRecord, CollectionSettings};

#[derive(Serialize)]
pub struct CollectionOut {
    id: String,
    account_id: String,
    name: String,
    embedder: String,
    created_at: String,
    settings: CollectionSettings,
    documents: u64,
    pages: u64,
    chunks: u64,
    domain: Option<&'static str>,
}

fn out(record: CollectionRecord, coll: &quarry_index::collection::Collection) -> CollectionOut {
    let counts = coll.snapshot().counts();
    CollectionOut {
        id: record.id,
        account_id: record.account_id,
        name: record.name,
        embedder: record.embedder,
        created_at: record.created_at,
        settings: record.settings,
        documents: counts.documents,
        pages: counts.pages,
        chunks: counts.chunks,
        domain: (counts.documents > 0).then_some(quarry_index::ingest::CHUNKER),
    }
}

#[derive(Serialize)]
struct List {
    collections: Vec<CollectionOut>,
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let account = &call.principal().account_id;
    let mut collections = Vec::new();
    for record in call.app.records.collections_of(account)? {
        if let Some(c) = call.app.engine.get(&record.id) {
            collections.push(out(record, &c));
        }
    }
    Ok(response::json(StatusCode::OK, &List { collections }))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let body: Value = call.json_value().await?;
    let obj = body.as_object().ok_or_else(|| input::err(crate::error::Code::InvalidJson, "The body must be a JSON object."))?;
    let name = settings::name(obj.get("name"), true)?.expect("required");
    let settings = settings::merge(&CollectionSettings::default(), obj.get("settings"))?;
    let record = CollectionRecord {
        id: format!("col_{}", crate::auth::keys::random_base62(16)),
        account_id: call.principal().account_id.clone(),
        name,
        embedder: search::server_embedder(call.app).to_owned(),
        created_at: crate::clock::now_rfc3339(),
        settings,
    };
    let app = call.app.clone();
    let r = record.clone();
    // The engine directory first, then the record: a crash in between leaves a
    // directory no record names, which the next start removes.
    let coll = blocking(move || -> Result<_, ApiError> {
        let coll = app.engine.create(&r.id).map_err(|e| {
            tracing::error!(error = %e, "creating a collection failed");
            ApiError::internal()
        })?;
        app.records.create_collection(&r)?;
        Ok(coll)
    })
    .await?;
    Ok(response::json(StatusCode::CREATED, &out(record, &coll)))
}

pub async fn get(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let (record, coll) = search::owned(call.app, &call.principal().account_id, &id)?;
    Ok(response::json(StatusCode::OK, &out(record, &coll)))
}

pub async fn update(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let (mut record, coll) = search::owned(call.app, &call.principal().account_id, &id)?;
    let body: Value = call.json_value().await?;
    let obj = body.as_object().ok_or_else(|| input::err(crate::error::Code::InvalidJson, "The body must be a JSON object."))?;
    if let Some(name) = settings::name(obj.get("name"), false)? {
        record.name = name;
    }
    record.settings = settings::merge(&record.settings, obj.get("settings"))?;
    let app = call.app.clone();
    let r = record.clone();
    blocking(move || app.records.update_collection(&r)).await?;
    Ok(response::json(StatusCode::OK, &out(record, &coll)))
}

#[derive(Serialize)]
pub struct Deleted {
    pub deleted: String,
}

pub async fn delete(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let account = call.principal().account_id.clone();
    let (record, coll) = search::owned(call.app, &account, &id)?;
    let chars = coll.snapshot().counts().chars;
    let app = call.app.clone();
    // The record first: once it is gone the collection is gone for every caller, and a
    // crash before the files are removed leaves a directory the next start removes.
    blocking(move || -> Result<(), ApiError> {
        app.records.delete_collection(&record)?;
        app.engine.remove(&record.id).map_err(|e| {
            tracing::error!(error = %e, "removing a collection's files failed; the next start removes them");
            ApiError::internal()
        })
    })
    .await?;
    if let Ok(m) = call.app.meters.account(&account) {
        let _ = m.try_store(-(chars as i64), None);
    }
    Ok(response::json(StatusCode::OK, &Deleted { deleted: id }))
}
