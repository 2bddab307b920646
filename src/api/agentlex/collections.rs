//! `/v1/collections` and `/v1/collections/{id}`.

use hyper::StatusCode;
use serde::Serialize;

use super::super::Call;
use super::input::settings;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::search::Owned;
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
    /// What the request asked that was ignored (unknown settings keys); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

fn out(owned: Owned) -> CollectionOut {
    let counts = owned.snapshot().counts();
    let record = owned.record;
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
        domain: counts.main_chunker().map(|c| c.as_str()),
        warnings: Vec::new(),
    }
}

#[derive(Serialize)]
struct List {
    collections: Vec<CollectionOut>,
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let collections = call.app.search.collections(&call.principal().account_id)?.into_iter().map(out).collect();
    Ok(response::json(StatusCode::OK, &List { collections }))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let mut body = settings::parse(&call.bytes().await?)?;
    let name = body.name(true)?.expect("required");
    let (settings, warnings) = body.merge(&CollectionSettings::default());
    let embedder = call.app.search.embedders().choose(body.embedder()).map_err(|e| ApiError::from(e).at("settings.embedder"))?;
    let record = CollectionRecord {
        id: format!("col_{}", crate::ids::random_base62(16)),
        account_id: call.principal().account_id.clone(),
        name,
        embedder,
        created_at: crate::clock::now_rfc3339(),
        settings,
    };
    let owned = call.app.search.create(record).await?;
    Ok(response::json(StatusCode::CREATED, &CollectionOut { warnings, ..out(owned) }))
}

pub async fn get(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id)?;
    Ok(response::json(StatusCode::OK, &out(owned)))
}

pub async fn update(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let mut owned = call.app.search.owned(&call.principal().account_id, &id)?;
    let mut body = settings::parse(&call.bytes().await?)?;
    if let Some(name) = body.name(false)? {
        owned.record.name = name;
    }
    let (settings, mut warnings) = body.merge(&owned.record.settings);
    let documents = owned.snapshot().counts().documents;
    if let Some(asked) = body.embedder() {
        owned.record.embedder =
            call.app.search.embedders().change(&owned.record, asked, documents).map_err(|e| ApiError::from(e).at("settings.embedder"))?;
    }
    warnings.extend(changed_on_documents(&owned.record.settings, &settings, documents));
    owned.record.settings = settings;
    call.app.search.update(&owned).await?;
    Ok(response::json(StatusCode::OK, &CollectionOut { warnings, ..out(owned) }))
}

/// What a settings change means for the documents already indexed, which it does not
/// touch (the spec): said, so a collection never turns mixed silently.
fn changed_on_documents(old: &CollectionSettings, new: &CollectionSettings, documents: u64) -> Vec<String> {
    let mut out = Vec::new();
    if documents == 0 {
        return out;
    }
    let n = if documents == 1 { "The 1 document already indexed".to_owned() } else { format!("The {documents} documents already indexed") };
    match (old.redact_storage, new.redact_storage) {
        (false, true) => out.push(format!(
            "redact_storage is now on for documents added from now on; {n} keep their stored text as it is (unmasked): delete and add them again to redact them."
        )),
        (true, false) => out.push(format!("redact_storage is now off for documents added from now on; {n} stay redacted (their originals were never stored).")),
        _ => {}
    }
    match (old.mask_identifiers, new.mask_identifiers) {
        (false, true) => out.push(format!(
            "mask_identifiers is now on for documents added from now on; {n} keep the vectors of their unmasked text: add them again to embed them masked."
        )),
        (true, false) => out.push(format!("mask_identifiers is now off for documents added from now on; {n} keep the vectors of their masked text.")),
        _ => {}
    }
    if old.domain != new.domain {
        out.push(format!("domain is now {}; {n} keep the chunker they were indexed with.", new.domain));
    }
    out
}

#[derive(Serialize)]
pub struct Deleted {
    pub deleted: String,
}

pub async fn delete(call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id)?;
    call.app.search.remove(owned).await?;
    Ok(response::json(StatusCode::OK, &Deleted { deleted: id }))
}
