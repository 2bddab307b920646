//! `/api/v1/files` (files.yaml): create (a record), upload (multipart, or base64), get,
//! list, delete, download (the bytes, or `{"content": "<base64>"}`), tags and metadata.
//! The service is `agents::files`; disk and store work runs on the blocking pool. A
//! presigned URL (`createPresignedUrl`) names a single-use token that uploads one file
//! with no other credential (`uploadFileWithToken`, multipart or base64 JSON).

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

/// `uploadFile`: `multipart/form-data` with a `file` part (its bytes as sent; its
/// part's name and type when the form gives no `filename`/`content_type`) and the text
/// parts `project_id`, `prefix`, `filename`, `content_type`, `metadata`.
pub async fn upload(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let content_type = call.parts.headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = call.bytes().await?;
    let form = read_form(content_type.as_deref(), body).await?;
    let (scope, app) = (scope(&call, form.project_id.as_deref()).await?, call.app.clone());
    let f = blocking(move || files::upload(&app.records, &app.config.data, &scope, form.naming, &form.bytes)).await?;
    Ok(response::json(StatusCode::CREATED, &FileOut::from(f)))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PresignIn {
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
}

/// `createPresignedUrl`: a token good for one upload in the next 15 minutes, and the
/// path to post it to (relative: Quarry does not guess the address clients reach it by).
pub async fn presign(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let p: PresignIn = body::read(&mut call).await?;
    let scope = scope(&call, p.project_id.as_deref()).await?;
    let n = Naming { prefix: p.prefix, filename: p.filename, content_type: p.content_type, metadata: None };
    let out = files::presign(&call.app.secrets, &scope, n)?;
    let url = format!("/api/v1/files/upload/{}", out.token);
    Ok(response::json(StatusCode::CREATED, &serde_json::json!({"upload_token": out.token, "upload_url": url, "expires_at": out.expires_at})))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenUploadIn {
    content: String,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    metadata: Option<String>,
}

/// `uploadFileWithToken` (public: the token is the credential): a multipart form with
/// a `file` part, or JSON with base64 `content`.
pub async fn upload_with_token(mut call: Call<'_>, token: String) -> Result<Reply, ApiError> {
    let content_type = call.parts.headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = call.bytes().await?;
    let (naming, bytes) = if content_type.as_deref().is_some_and(|t| t.starts_with("multipart/")) {
        let form = read_form(content_type.as_deref(), body).await?;
        if form.project_id.is_some() || form.naming.prefix.is_some() {
            return Err(ApiError::new(
                Code::SoatValidation,
                "The token names the project and prefix; send only the file, filename, content_type and metadata.",
            )
            .at("file"));
        }
        (form.naming, form.bytes.to_vec())
    } else {
        let up: TokenUploadIn = crate::http::body::json(&body, Code::SoatValidation).map_err(|mut e| {
            e.code = Code::SoatValidation;
            e
        })?;
        let bytes = files::decode_base64(&up.content)?;
        (Naming { prefix: None, filename: up.filename, content_type: up.content_type, metadata: up.metadata }, bytes)
    };
    let app = call.app.clone();
    let f = blocking(move || files::upload_with_token(&app.records, &app.config.data, &app.secrets, &token, naming, &bytes)).await?;
    Ok(response::json(StatusCode::CREATED, &FileOut::from(f)))
}

struct Form {
    project_id: Option<String>,
    naming: Naming,
    bytes: bytes::Bytes,
}

async fn read_form(content_type: Option<&str>, body: bytes::Bytes) -> Result<Form, ApiError> {
    let bad = |msg: String| ApiError::new(Code::SoatValidation, msg).at("file");
    let boundary = content_type.and_then(|ct| multer::parse_boundary(ct).ok()).ok_or_else(|| {
        bad(format!("Send the file as multipart/form-data with a file part, not as {}.", content_type.unwrap_or("a body without a type")))
    })?;
    let stream = futures_util::stream::once(async move { Ok::<bytes::Bytes, std::convert::Infallible>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    let broken = |e: multer::Error| bad(format!("The multipart body could not be read: {e}."));
    let (mut file, mut project_id, mut naming) = (None, None, Naming::default());
    let (mut part_name, mut part_type) = (None, None);
    while let Some(part) = parts.next_field().await.map_err(broken)? {
        let name = part.name().map(str::to_owned);
        match name.as_deref() {
            Some("file") => {
                part_name = part.file_name().map(str::to_owned);
                part_type = part.content_type().map(|m| m.essence_str().to_owned());
                file = Some(part.bytes().await.map_err(broken)?);
            }
            Some(field @ ("project_id" | "prefix" | "filename" | "content_type" | "metadata")) => {
                let text = Some(part.text().await.map_err(broken)?).filter(|t| !t.is_empty());
                match field {
                    "project_id" => project_id = text,
                    "prefix" => naming.prefix = text,
                    "filename" => naming.filename = text,
                    "content_type" => naming.content_type = text,
                    _ => naming.metadata = text,
                }
            }
            Some(other) => return Err(ApiError::new(Code::SoatValidation, format!("{other}: not a field of an upload.")).at(other.to_owned())),
            None => return Err(bad("A part without a name.".into())),
        }
    }
    let bytes = file.ok_or_else(|| bad("file: field required (the file's bytes as a part named file).".into()))?;
    naming.filename = naming.filename.or(part_name);
    naming.content_type = naming.content_type.or(part_type.filter(|t| t != "application/octet-stream"));
    Ok(Form { project_id, naming, bytes })
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
