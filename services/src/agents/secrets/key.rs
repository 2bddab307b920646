//! The secrets key: from the configuration (`[secrets] key`, or `QUARRY_SECRETS__KEY`),
//! else `DATA/secrets.key`, generated once on the first start.
//!
//! The file is written so that no reader ever sees half a key and no second start
//! replaces it: 32 random bytes into a temporary file created exclusively with mode
//! 0600, fsync'd, then hard-linked to its name (which fails if the name exists, so a
//! key once there is never overwritten), and the directory fsync'd. A key file readable
//! by others is refused at start-up rather than used.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::llm::secret::Secret;

pub const KEY_FILE: &str = "secrets.key";
pub const KEY_LEN: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("secrets key file {path}: {op} failed: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("secrets key file {path} holds {len} bytes, not {KEY_LEN}; restore it from a backup, or remove it to start over (every stored secret is then lost)")]
    Length { path: PathBuf, len: usize },
    #[error("secrets key file {path} can be read by others (mode {mode:o}); run `chmod 600 {path}`")]
    Mode { path: PathBuf, mode: u32 },
    #[error("secrets.key must be 64 hex characters")]
    Config,
}

/// 32 bytes that never print.
pub struct KeyBytes(pub(super) [u8; KEY_LEN]);

impl std::fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyBytes(***)")
    }
}

/// The configured key, else the data directory's (made on first use).
pub fn load(configured: Option<&Secret>, data: &Path) -> Result<KeyBytes, KeyError> {
    match configured {
        Some(hex) => from_hex(hex.expose()).ok_or(KeyError::Config),
        None => load_or_create(&data.join(KEY_FILE)),
    }
}

fn from_hex(text: &str) -> Option<KeyBytes> {
    let bytes = text.as_bytes();
    if bytes.len() != KEY_LEN * 2 {
        return None;
    }
    let mut key = [0u8; KEY_LEN];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        key[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(KeyBytes(key))
}

fn load_or_create(path: &Path) -> Result<KeyBytes, KeyError> {
    match read(path) {
        Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => create(path),
        r => r,
    }
}

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> KeyError + 'p {
    move |source| KeyError::Io { op, path: path.to_owned(), source }
}

fn read(path: &Path) -> Result<KeyBytes, KeyError> {
    let mut f = File::open(path).map_err(io("open", path))?;
    let mode = f.metadata().map_err(io("stat", path))?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Mode { path: path.to_owned(), mode });
    }
    let mut bytes = Vec::with_capacity(KEY_LEN);
    f.read_to_end(&mut bytes).map_err(io("read", path))?;
    let key: [u8; KEY_LEN] = bytes.as_slice().try_into().map_err(|_| KeyError::Length { path: path.to_owned(), len: bytes.len() })?;
    Ok(KeyBytes(key))
}

fn create(path: &Path) -> Result<KeyBytes, KeyError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io("create directory", dir))?;
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| KeyError::Io { op: "draw random bytes", path: path.to_owned(), source: std::io::Error::other(e) })?;
    let tmp = dir.join(format!(".{KEY_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(io("create", &tmp))?;
        f.write_all(&key).map_err(io("write", &tmp))?;
        f.sync_all().map_err(io("fsync", &tmp))?;
        std::fs::hard_link(&tmp, path).map_err(io("link", path))
    })();
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => {
            File::open(dir).and_then(|d| d.sync_all()).map_err(io("fsync directory", dir))?;
            tracing::info!(path = %path.display(), "generated the secrets key");
            Ok(KeyBytes(key))
        }
        // Another process made it first: that one is the key.
        Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = load(None, dir.path()).unwrap();
        let path = dir.path().join(KEY_FILE);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let again = load(None, dir.path()).unwrap();
        assert_eq!(first.0, again.0, "a second start reads the same key");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from(KEY_FILE)], "no temporary file is left");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(load(None, dir.path()), Err(KeyError::Mode { .. })));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, b"short").unwrap();
        assert!(matches!(load(None, dir.path()), Err(KeyError::Length { len: 5, .. })));
    }

    #[test]
    fn a_configured_key_wins_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let hex = Secret::new("00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF");
        let k = load(Some(&hex), dir.path()).unwrap();
        assert_eq!(k.0[1], 0x11);
        assert_eq!(k.0[31], 0xff);
        assert!(!dir.path().join(KEY_FILE).exists());
        assert!(matches!(load(Some(&Secret::new("zz")), dir.path()), Err(KeyError::Config)));
        assert_eq!(format!("{k:?}"), "KeyBytes(***)");
    }
}
