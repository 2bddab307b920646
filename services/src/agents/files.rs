//! SOAT files (files.yaml): a record per file in its project, and its bytes under
//! `DATA/files/<id>`, written to a temporary name, fsynced, renamed and the directory
//! fsynced before the record commits (an acknowledged upload survives a crash), with
//! their SHA-256 in the record, checked on every read: bytes changed on disk are
//! refused (500 `FILE_CORRUPT` in Quarry's code, logged), never served. The bytes count
//! against the plan's stored characters with the record (`store::files`).
//!
//! Blocking (disk and store): the handlers run these on the blocking pool.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::scope::Scope;
use super::secrets::Secrets;
use super::{Project, SoatError};
use crate::clock::now_rfc3339;
use crate::error::{Code, ErrorCode};
use crate::ids::random_base62;
use crate::llm::secret::Secret;
use crate::store::{Charge, FileRecord, Records, StoreError};

pub const FILE_ID_PREFIX: &str = "file_";
const MAX_NAME: usize = 255;
const MAX_PREFIX: usize = 1024;
const MAX_METADATA: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("The stored content of file {id} does not match its checksum; it was changed on disk and is not served.")]
    Corrupt { id: String },
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("The upload token was used already: a presigned URL uploads one file. Ask for another.")]
    TokenUsed,
    #[error("The upload token expired at {at}. Ask for another presigned URL.")]
    TokenExpired { at: String },
    #[error(transparent)]
    Soat(#[from] SoatError),
}

impl From<StoreError> for FileError {
    fn from(e: StoreError) -> FileError {
        FileError::Soat(e.into())
    }
}

impl ErrorCode for FileError {
    fn code(&self) -> Code {
        match self {
            FileError::Corrupt { .. } => Code::FileCorrupt,
            FileError::Io { .. } => Code::Internal,
            FileError::TokenUsed => Code::UploadTokenUsed,
            FileError::TokenExpired { .. } => Code::UploadTokenExpired,
            FileError::Soat(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            FileError::Soat(e) => e.meta(),
            FileError::Corrupt { id } => Some([("file_id".to_owned(), serde_json::Value::from(id.clone()))].into_iter().collect()),
            FileError::Io { .. } | FileError::TokenUsed | FileError::TokenExpired { .. } => None,
        }
    }
}

/// `POST /files`: a record without content (the spec's createFile).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewFile {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub metadata: Option<String>,
}

/// `POST /files/upload/base64`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Base64Upload {
    #[serde(default)]
    pub project_id: Option<String>,
    pub content: String,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub metadata: Option<String>,
}

/// `PATCH /files/{id}/metadata`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataPatch {
    #[serde(default)]
    pub metadata: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub filename: Option<String>,
}

/// What a file is called and holds, apart from its bytes.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    pub prefix: Option<String>,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub metadata: Option<String>,
}

/// The directory a server keeps file bytes in.
pub fn dir(data: &Path) -> PathBuf {
    data.join("files")
}

fn prefix_of(p: Option<String>) -> Result<String, SoatError> {
    let p = p.unwrap_or_else(|| "/".into());
    let p = if p.starts_with('/') { p } else { format!("/{p}") };
    let p = if p.len() > 1 { p.trim_end_matches('/').to_owned() } else { p };
    if p.len() > MAX_PREFIX || p.contains("//") || p.split('/').any(|s| s == "." || s == "..") || p.chars().any(char::is_control) {
        return Err(SoatError::invalid("prefix", "a directory like /documents: no empty, . or .. segment, at most 1024 characters."));
    }
    Ok(p)
}

fn filename_of(f: Option<String>, fallback: &str) -> Result<String, SoatError> {
    let f = f.unwrap_or_else(|| fallback.to_owned());
    if f.is_empty() || f.len() > MAX_NAME || f.contains('/') || f == "." || f == ".." || f.chars().any(char::is_control) {
        return Err(SoatError::invalid("filename", "1 to 255 characters, no / and no control character."));
    }
    Ok(f)
}

fn check_metadata(m: &Option<String>) -> Result<(), SoatError> {
    match m {
        Some(m) if m.len() > MAX_METADATA => Err(SoatError::invalid("metadata", "at most 64 KiB.")),
        Some(m) if serde_json::from_str::<serde_json::Value>(m).is_err() => {
            Err(SoatError::invalid("metadata", "must be a JSON string (e.g. {\"author\":\"John\"})."))
        }
        _ => Ok(()),
    }
}

fn check_text(field: &str, v: &Option<String>) -> Result<(), SoatError> {
    match v {
        Some(t) if t.len() > MAX_NAME || t.chars().any(char::is_control) => Err(SoatError::invalid(field, "at most 255 characters, none a control.")),
        _ => Ok(()),
    }
}

fn record(scope: &Scope, id: String, n: Naming, size: Option<u64>, sha256: Option<String>) -> Result<FileRecord, SoatError> {
    check_metadata(&n.metadata)?;
    check_text("content_type", &n.content_type)?;
    let now = now_rfc3339();
    Ok(FileRecord {
        filename: filename_of(n.filename, &id)?,
        prefix: prefix_of(n.prefix)?,
        id,
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        content_type: n.content_type,
        size,
        metadata: n.metadata,
        tags: BTreeMap::new(),
        sha256,
        created_at: now.clone(),
        updated_at: now,
    })
}

fn new_id() -> String {
    format!("{FILE_ID_PREFIX}{}", random_base62(16))
}

/// `POST /files`: the record alone (content may come later by no route Quarry serves).
pub fn create(records: &Records, scope: &Scope, new: NewFile) -> Result<FileRecord, FileError> {
    let n = Naming { prefix: new.prefix, filename: new.filename, content_type: new.content_type, metadata: new.metadata };
    let f = record(scope, new_id(), n, new.size, None)?;
    records.insert_file(&f, Charge::Capped(&scope.account_id))?;
    Ok(f)
}

/// An upload: the bytes made durable, then the record committed (charged their size).
pub fn upload(records: &Records, data: &Path, scope: &Scope, n: Naming, bytes: &[u8]) -> Result<FileRecord, FileError> {
    upload_as(records, data, scope, new_id(), n, bytes)
}

fn upload_as(records: &Records, data: &Path, scope: &Scope, id: String, n: Naming, bytes: &[u8]) -> Result<FileRecord, FileError> {
    let f = record(scope, id, n, Some(bytes.len() as u64), Some(sha256_hex(bytes)))?;
    write_durably(&dir(data), &f.id, bytes)?;
    if let Err(e) = records.insert_file(&f, Charge::Capped(&scope.account_id)) {
        let _ = std::fs::remove_file(dir(data).join(&f.id));
        return Err(e.into());
    }
    Ok(f)
}

/// How long a presigned upload's token holds.
pub const UPLOAD_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// The prefix of an upload token (SOAT's `upt_`).
pub const UPLOAD_TOKEN_PREFIX: &str = "upt_";
/// What an upload token's seal is bound to (no project: the token names its own).
const UPLOAD_TOKEN_OWNER: Project<'static> = Project { account_id: "", project_id: "" };
const UPLOAD_TOKEN_PURPOSE: &str = "files.upload_token";

/// What `createPresignedUrl` promises, sealed into its token with the secrets key
/// (ChaCha20-Poly1305: the server alone can make or read one): where the file goes,
/// the id it will have, and until when. Single use: the file id is fixed by the token,
/// so a second upload finds the first's record (409).
#[derive(serde::Serialize, serde::Deserialize)]
struct Promise {
    account_id: String,
    project_id: String,
    file_id: String,
    expires_at: u64,
    prefix: Option<String>,
    filename: Option<String>,
    content_type: Option<String>,
}

/// A presigned upload: its token and when it expires (RFC 3339).
pub struct Presigned {
    pub token: String,
    pub expires_at: String,
}

/// `createPresignedUrl`: a single-use token for one upload into the scope's project,
/// its naming checked now.
pub fn presign(secrets: &Secrets, scope: &Scope, n: Naming) -> Result<Presigned, FileError> {
    let file_id = new_id();
    let checked = record(scope, file_id.clone(), n.clone(), None, None)?;
    let until = std::time::SystemTime::now() + UPLOAD_TOKEN_TTL;
    let promise = Promise {
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        file_id,
        expires_at: until.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs(),
        prefix: Some(checked.prefix),
        filename: n.filename,
        content_type: n.content_type,
    };
    let json = serde_json::to_string(&promise).expect("a promise serializes");
    let sealed = secrets.seal_for(UPLOAD_TOKEN_OWNER, UPLOAD_TOKEN_PURPOSE, &Secret::new(json));
    let token = format!("{UPLOAD_TOKEN_PREFIX}{}", sealed.trim_start_matches("v1:"));
    Ok(Presigned { token, expires_at: humantime::format_rfc3339_seconds(until).to_string() })
}

/// Uploads already running per token (a second use at the same moment is 409 too).
static UPLOADING: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `uploadFileWithToken`: the bytes into the place the token names (`n`'s filename,
/// content type and metadata over the token's). An unknown or forged token is 404,
/// a used one 409, an expired one 410; none writes anything.
pub fn upload_with_token(records: &Records, data: &Path, secrets: &Secrets, token: &str, n: Naming, bytes: &[u8]) -> Result<FileRecord, FileError> {
    let unknown = || FileError::Soat(SoatError::not_found("upload token", token.chars().take(12).collect::<String>() + "…"));
    let sealed = token.strip_prefix(UPLOAD_TOKEN_PREFIX).ok_or_else(unknown)?;
    let json = secrets.open_for(UPLOAD_TOKEN_OWNER, UPLOAD_TOKEN_PURPOSE, &format!("v1:{sealed}")).map_err(|_| unknown())?;
    let p: Promise = serde_json::from_str(json.expose()).map_err(|_| unknown())?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    if now > p.expires_at {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(p.expires_at);
        return Err(FileError::TokenExpired { at: humantime::format_rfc3339_seconds(at).to_string() });
    }
    if records.get::<crate::store::ProjectRecord>(&p.account_id, &p.project_id)?.is_none() {
        return Err(unknown());
    }
    {
        let mut running = UPLOADING.lock().unwrap_or_else(|e| e.into_inner());
        if running.contains(&p.file_id) || records.get::<FileRecord>(&p.account_id, &p.file_id)?.is_some() {
            return Err(FileError::TokenUsed);
        }
        running.push(p.file_id.clone());
    }
    let scope = Scope {
        account_id: p.account_id.clone(),
        project_id: p.project_id.clone(),
        key: super::scope::KeyRef::Project { id: UPLOAD_TOKEN_PURPOSE.into() },
    };
    let n = Naming { prefix: p.prefix, filename: n.filename.or(p.filename), content_type: n.content_type.or(p.content_type), metadata: n.metadata };
    let done = upload_as(records, data, &scope, p.file_id.clone(), n, bytes);
    UPLOADING.lock().unwrap_or_else(|e| e.into_inner()).retain(|id| *id != p.file_id);
    done
}

/// `content` decoded from base64 (standard alphabet, padding optional).
pub fn decode_base64(content: &str) -> Result<Vec<u8>, SoatError> {
    use base64::Engine;
    let cleaned: String = content.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.trim_end_matches('='))
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(cleaned.trim_end_matches('=')))
        .map_err(|e| SoatError::invalid("content", format!("not base64: {e}.")))
}

pub fn encode_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<FileRecord, FileError> {
    Ok(scope.find::<FileRecord>(records, "file", id)?)
}

/// The scope's project's files, oldest first.
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<FileRecord>, FileError> {
    let mut all = scope.list::<FileRecord>(records)?;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

/// The file's bytes, checked against their checksum (none stored: empty).
pub fn read(data: &Path, f: &FileRecord) -> Result<Vec<u8>, FileError> {
    let Some(want) = &f.sha256 else { return Ok(Vec::new()) };
    let path = dir(data).join(&f.id);
    let bytes = std::fs::read(&path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => FileError::Corrupt { id: f.id.clone() },
        _ => FileError::Io { op: "reading", path: path.clone(), source },
    })?;
    if &sha256_hex(&bytes) != want {
        tracing::error!(file = %f.id, path = %path.display(), "a file's bytes do not match their checksum");
        return Err(FileError::Corrupt { id: f.id.clone() });
    }
    Ok(bytes)
}

/// `DELETE /files/{id}`: the record, then the bytes.
pub fn delete(records: &Records, data: &Path, scope: &Scope, id: &str) -> Result<(), FileError> {
    get(records, scope, id)?;
    if records.remove_file(&scope.account_id, id)?.is_some() {
        let _ = std::fs::remove_file(dir(data).join(id));
    }
    Ok(())
}

fn change(records: &Records, scope: &Scope, id: &str, f: impl FnOnce(&mut FileRecord) -> Result<(), SoatError>) -> Result<FileRecord, FileError> {
    get(records, scope, id)?;
    let now = now_rfc3339();
    let out = records.update::<FileRecord, Result<FileRecord, SoatError>>(&scope.account_id, id, |r| match f(r) {
        Ok(()) => {
            r.updated_at = now;
            crate::store::owned::Change::Write(Ok(r.clone()))
        }
        Err(e) => crate::store::owned::Change::Keep(Err(e)),
    })?;
    Ok(out.ok_or_else(|| SoatError::not_found("file", id))??)
}

/// Removes the bytes under `DATA/files` that no file record names: an upload cut
/// between its bytes and its record, a `.tmp` a crash left, a file whose record went
/// with its project. Run at start, before any upload can be in flight (an upload's
/// bytes are on disk before its record commits).
pub fn sweep(records: &Records, data: &Path) -> Result<usize, FileError> {
    let dir = dir(data);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(FileError::Io { op: "listing", path: dir, source }),
    };
    let named: std::collections::HashSet<String> = records.all::<FileRecord>()?.into_iter().map(|f| f.id).collect();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !named.contains(&name) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// `PUT /files/{id}/tags` (`merge`: `PATCH`, the given keys over the old).
pub fn set_tags(records: &Records, scope: &Scope, id: &str, tags: BTreeMap<String, String>, merge: bool) -> Result<FileRecord, FileError> {
    change(records, scope, id, |r| {
        if merge {
            r.tags.extend(tags);
        } else {
            r.tags = tags;
        }
        Ok(())
    })
}

/// `PATCH /files/{id}/metadata`.
pub fn patch_metadata(records: &Records, scope: &Scope, id: &str, p: MetadataPatch) -> Result<FileRecord, FileError> {
    check_metadata(&p.metadata)?;
    change(records, scope, id, |r| {
        if let Some(m) = p.metadata {
            r.metadata = Some(m);
        }
        if p.prefix.is_some() {
            r.prefix = prefix_of(p.prefix)?;
        }
        if p.filename.is_some() {
            r.filename = filename_of(p.filename, &r.id)?;
        }
        Ok(())
    })
}

/// The file's path: `prefix` + `/` + `filename`.
pub fn path_of(f: &FileRecord) -> String {
    if f.prefix == "/" {
        format!("/{}", f.filename)
    } else {
        format!("{}/{}", f.prefix, f.filename)
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::auth::keys::hex(&Sha256::digest(bytes))
}

/// Writes `bytes` to `dir/name` so that once this returns they survive a crash: a
/// temporary file written and fsynced, renamed over the name, the directory fsynced.
pub fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), FileError> {
    fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FileError + 'a {
        move |source| FileError::Io { op, path: path.to_owned(), source }
    }
    std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(io("creating", &tmp))?;
    f.write_all(bytes).map_err(io("writing", &tmp))?;
    f.sync_all().map_err(io("syncing", &tmp))?;
    let path = dir.join(name);
    std::fs::rename(&tmp, &path).map_err(io("renaming", &tmp))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io("syncing", dir))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::scope::testing;

    #[test]
    fn bytes_round_trip_and_a_changed_byte_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let records = Records::open(dir.path()).unwrap();
        let scope = testing::a();
        let n = Naming { filename: Some("a.txt".into()), prefix: Some("docs/".into()), ..Naming::default() };
        let f = upload(&records, dir.path(), &scope, n, b"hello").unwrap();
        assert_eq!((path_of(&f).as_str(), f.size), ("/docs/a.txt", Some(5)));
        assert_eq!(read(dir.path(), &get(&records, &scope, &f.id).unwrap()).unwrap(), b"hello");
        for other in testing::others() {
            assert!(get(&records, &other, &f.id).is_err(), "another project or account sees no file");
        }
        std::fs::write(super::dir(dir.path()).join(&f.id), b"hellO").unwrap();
        assert!(matches!(read(dir.path(), &f), Err(FileError::Corrupt { .. })));
        delete(&records, dir.path(), &scope, &f.id).unwrap();
        assert!(!super::dir(dir.path()).join(&f.id).exists());
    }

    #[test]
    fn names_and_metadata_are_checked() {
        assert_eq!(prefix_of(None).unwrap(), "/");
        assert!(prefix_of(Some("/a/../b".into())).is_err());
        assert!(filename_of(Some("a/b".into()), "x").is_err());
        assert!(check_metadata(&Some("{not json".into())).is_err());
        assert_eq!(decode_base64("SGVsbG8gV29ybGQ=").unwrap(), b"Hello World");
        assert!(decode_base64("***").is_err());
    }
}
