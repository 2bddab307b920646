//! `/api/v1/files` (files.yaml): create (a record), upload as base64, get, list, delete,
//! download (the bytes, or `{"content": "<base64>"}`), tags and metadata. The service
//! is `agents::files`; disk and store work runs on the blocking pool. Not served yet:
//! the multipart upload and the presigned-URL pair (see `ops/build-openapi-documents`).

use std::collections::BTreeMap;

use hyper::header::HeaderValue;
use hyper::StatusCode;
use serde::Serialize;

use super::{body, scope, scope_in_query, Page};
use crate::agents::files::{self, Base64Upload, MetadataPatch, Naming, NewFile};
use crate::api::{blocking, Call};
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::store::FileRecord;

/// FileRecord as the spec writes it.
#[derive(Serialize)]
pub struct FileOut {
    id: String,
    project_id: String,
    prefix: String,
    filename: String,
    path: String,
    content_type: Option<String>,
    size: Option<u64>,
    metadata: Option<String>,
    tags: BTreeMap<String, String>,
    /// SHA-256 of the content, hex (Quarry's addition).
    sha256: Option<String>,
    created_at: String,
    updated_at: String,
}

impl From<FileRecord> for FileOut {
    fn from(f: FileRecord) -> FileOut {
        FileOut {
            path: files::path_of(&f),
            id: f.id,
            project_id: f.project_id,
            prefix: f.prefix,
            filename: f.filename,
            content_type: f.content_type,
            size: f.size,
            metadata: f.metadata,
            tags: f.tags,
            sha256: f.sha256,
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

#[derive(Serialize)]
struct Base64Out {
    content: String,
    filename: String,
    /// The spec's string: `application/octet-stream` for a file stored without one.
    content_type: String,
    size: Option<u64>,
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let new: NewFile = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, new.project_id.as_deref()).await?, call.app.clone());
    let f = blocking(move || files::create(&app.records, &scope, new)).await?;
    Ok(response::json(StatusCode::CREATED, &FileOut::from(f)))
}

pub async fn upload_base64(mut call: Call<'_>) -> Result<Reply, ApiError> {
    // Not through `body::read`: `content` is bounded by the body limit alone.
    let bytes = call.bytes().await?;
    let up: Base64Upload = crate::http::body::json(&bytes, Code::SoatValidation).map_err(|mut e| {
        e.code = Code::SoatValidation;
        e
    })?;
    let (scope, app) = (scope(&call, up.project_id.as_deref()).await?, call.app.clone());
    let f = blocking(move || {
        let content = files::decode_base64(&up.content)?;
        let n = Naming { prefix: up.prefix, filename: up.filename, content_type: up.content_type, metadata: up.metadata };
        files::upload(&app.records, &app.config.data, &scope, n, &content)
    })
    .await?;
    Ok(response::json(StatusCode::CREATED, &FileOut::from(f)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let scope = scope_in_query(&call).await?;
    let all: Vec<FileOut> = files::list(&call.app.records, &scope)?.into_iter().map(FileOut::from).collect();
    Ok(page.reply(&all))
}

pub async fn get(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let f = blocking(move || crate::agents::trace_files::find(&app.records, &app.config.data, &scope, &file_id)).await?;
    Ok(response::json(StatusCode::OK, &FileOut::from(f)))
}

pub async fn delete(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    blocking(move || files::delete(&app.records, &app.config.data, &scope, &file_id)).await?;
    Ok(super::no_content())
}

/// The record and its checked bytes.
async fn content(call: &Call<'_>, file_id: String) -> Result<(FileRecord, Vec<u8>), ApiError> {
    let (scope, app) = (scope(call, None).await?, call.app.clone());
    Ok(blocking(move || {
        let f = crate::agents::trace_files::find(&app.records, &app.config.data, &scope, &file_id)?;
        let bytes = files::read(&app.config.data, &f)?;
        Ok::<_, files::FileError>((f, bytes))
    })
    .await?)
}

pub async fn download(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let (f, bytes) = content(&call, file_id).await?;
    let kind = f.content_type.as_deref().and_then(|t| HeaderValue::from_str(t).ok()).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut r = response::bytes(StatusCode::OK, kind, bytes.into());
    let disposition = format!("attachment; filename=\"{}\"", f.filename.replace(['"', '\\'], "_"));
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        r.headers_mut().insert(hyper::header::CONTENT_DISPOSITION, v);
    }
    Ok(r)
}

pub async fn download_base64(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let (f, bytes) = content(&call, file_id).await?;
    let content_type = f.content_type.unwrap_or_else(|| "application/octet-stream".into());
    let out = Base64Out { content: files::encode_base64(&bytes), filename: f.filename, content_type, size: f.size };
    Ok(response::json(StatusCode::OK, &out))
}

pub async fn tags(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let scope = scope(&call, None).await?;
    Ok(response::json(StatusCode::OK, &files::get(&call.app.records, &scope, &file_id)?.tags))
}

async fn set_tags(mut call: Call<'_>, file_id: String, merge: bool) -> Result<Reply, ApiError> {
    let tags: BTreeMap<String, String> = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let f = blocking(move || files::set_tags(&app.records, &scope, &file_id, tags, merge)).await?;
    Ok(response::json(StatusCode::OK, &f.tags))
}

pub async fn replace_tags(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    set_tags(call, file_id, false).await
}

pub async fn merge_tags(call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    set_tags(call, file_id, true).await
}

pub async fn metadata(mut call: Call<'_>, file_id: String) -> Result<Reply, ApiError> {
    let p: MetadataPatch = body::read(&mut call).await?;
    let (scope, app) = (scope(&call, None).await?, call.app.clone());
    let f = blocking(move || files::patch_metadata(&app.records, &scope, &file_id, p)).await?;
    Ok(response::json(StatusCode::OK, &FileOut::from(f)))
}
