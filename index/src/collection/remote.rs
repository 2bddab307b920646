//! Segments kept in object storage (`[segments] store = "s3"`): the engine's side.
//!
//! A flushed or merged segment's files are uploaded, each checksummed (SHA-256), and
//! only then is the manifest naming them published, in the bucket first and then on
//! local disk; a node whose disk lacks a segment (an empty disk, a wiped cache) fetches
//! its files again, checks them against the manifest and maps them as before. The
//! write-ahead log stays local: the manifest says which WAL files each segment covers.
//!
//! The engine is synchronous and speaks no protocol: [`Objects`] is what it needs of a
//! bucket, implemented over S3 by the core crate (`quarry_core::segments`).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::CollectionError;

/// What the engine needs of a bucket, under keys relative to the server's prefix.
/// Each call is one complete object operation: an object is whole or absent.
pub trait Objects: Send + Sync {
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String>;
    /// `Ok(None)` when there is no such object.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String>;
    fn delete(&self, key: &str) -> Result<(), String>;
    /// Removes every object under `prefix` (a collection deleted).
    fn delete_prefix(&self, prefix: &str) -> Result<(), String>;
    /// Where the objects live, for messages (`s3://bucket/prefix`), never a credential.
    fn describe(&self) -> String;
}

/// One collection's place in the bucket.
#[derive(Clone)]
pub struct Remote {
    pub objects: Arc<dyn Objects>,
    /// The collection's key prefix, ending in '/'.
    pub prefix: String,
    /// The shared journal, when the write-ahead log is kept there instead of on local
    /// disk (a cluster: [`crate::journal`]). Its manifests are then published one
    /// generation per object ([`manifest_key`]), and the journal says which is current.
    pub journal: Option<Arc<dyn crate::journal::Journal>>,
}

/// One uploaded file of a segment, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSum {
    /// The file's name in the collection's `segments/` directory.
    pub name: String,
    pub bytes: u64,
    /// SHA-256 of the contents, lowercase hex.
    pub sha256: String,
}

impl FileSum {
    /// The object's key under the collection's prefix: the name and its checksum, so a
    /// sequence number a crash let be taken twice never overwrites what a manifest names.
    pub fn key(&self) -> String {
        format!("segments/{}.{}", self.name, &self.sha256[..16])
    }
}

pub const MANIFEST_KEY: &str = "MANIFEST";

/// The key of a manifest of generation `gen` published under lease epoch `epoch` (on
/// the shared journal): a node whose lease lapsed writes under its old epoch, so it
/// never replaces what the lease's next holder published.
pub fn manifest_key(gen: u64, epoch: u64) -> String {
    format!("manifests/{gen:016}.{epoch:016}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unreachable(remote: &Remote, op: &'static str, key: &str, reason: String) -> CollectionError {
    CollectionError::Remote { op, at: format!("{}/{}{}", remote.objects.describe(), remote.prefix, key), reason }
}

impl Remote {
    /// Uploads the files of one segment (`paths` in `seg_dir`: files, or directories
    /// such as the BM25 index, whose files are taken one by one), returning their sums.
    pub fn upload(&self, seg_dir: &Path, paths: &[PathBuf]) -> Result<Vec<FileSum>, CollectionError> {
        let mut files = Vec::new();
        for path in paths {
            walk(path, &mut files)?;
        }
        let mut sums = Vec::with_capacity(files.len());
        for path in &files {
            let bytes = fs::read(path).map_err(|source| CollectionError::Io { op: "read", path: path.clone(), source })?;
            let name = path.strip_prefix(seg_dir).ok().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            let sum = FileSum { name, bytes: bytes.len() as u64, sha256: hex(&Sha256::digest(&bytes)) };
            let key = sum.key();
            self.objects.put(&format!("{}{key}", self.prefix), bytes).map_err(|e| unreachable(self, "upload", &key, e))?;
            sums.push(sum);
        }
        Ok(sums)
    }

    /// Reads an uploaded file back and checks it against its sum.
    pub fn verify(&self, sum: &FileSum) -> Result<(), CollectionError> {
        self.get_checked(sum).map(drop)
    }

    fn get_checked(&self, sum: &FileSum) -> Result<Vec<u8>, CollectionError> {
        let key = sum.key();
        let bytes = self
            .objects
            .get(&format!("{}{key}", self.prefix))
            .map_err(|e| unreachable(self, "fetch", &key, e))?
            .ok_or_else(|| unreachable(self, "fetch", &key, "the object is missing".into()))?;
        let got = hex(&Sha256::digest(&bytes));
        if bytes.len() as u64 != sum.bytes || got != sum.sha256 {
            let reason = format!("{} bytes with SHA-256 {got}; the manifest says {} bytes, {}", bytes.len(), sum.bytes, sum.sha256);
            return Err(unreachable(self, "verify", &key, reason));
        }
        Ok(bytes)
    }

    /// Fetches one file into `seg_dir`, checked against its sum, written durably
    /// (temporary file, fsync, rename) so a cut fetch leaves no half file behind.
    pub fn fetch(&self, sum: &FileSum, seg_dir: &Path) -> Result<(), CollectionError> {
        let bytes = self.get_checked(sum)?;
        let path = seg_dir.join(&sum.name);
        let tmp = seg_dir.join(format!("{}.fetching", sum.name));
        let parent = path.parent().unwrap_or(seg_dir);
        fs::create_dir_all(parent).map_err(|source| CollectionError::Io { op: "create", path: parent.to_owned(), source })?;
        let io = |op| {
            let tmp = tmp.clone();
            move |source| CollectionError::Io { op, path: tmp, source }
        };
        let mut f = File::create(&tmp).map_err(io("create"))?;
        f.write_all(&bytes).map_err(io("write"))?;
        f.sync_all().map_err(io("fsync"))?;
        fs::rename(&tmp, &path).map_err(|source| CollectionError::Io { op: "rename", path: path.clone(), source })?;
        if parent != seg_dir {
            crate::segment::sync_dir(parent)?;
        }
        Ok(())
    }

    pub fn put_manifest(&self, bytes: Vec<u8>) -> Result<(), CollectionError> {
        self.objects.put(&format!("{}{MANIFEST_KEY}", self.prefix), bytes).map_err(|e| unreachable(self, "publish", MANIFEST_KEY, e))
    }

    pub fn get_manifest(&self) -> Result<Option<Vec<u8>>, CollectionError> {
        self.objects.get(&format!("{}{MANIFEST_KEY}", self.prefix)).map_err(|e| unreachable(self, "read", MANIFEST_KEY, e))
    }

    pub fn put_manifest_at(&self, gen: u64, epoch: u64, bytes: Vec<u8>) -> Result<(), CollectionError> {
        let key = manifest_key(gen, epoch);
        self.objects.put(&format!("{}{key}", self.prefix), bytes).map_err(|e| unreachable(self, "publish", &key, e))
    }

    pub fn get_manifest_at(&self, gen: u64, epoch: u64) -> Result<Option<Vec<u8>>, CollectionError> {
        let key = manifest_key(gen, epoch);
        self.objects.get(&format!("{}{key}", self.prefix)).map_err(|e| unreachable(self, "read", &key, e))
    }

    /// Removes a manifest the journal no longer points at. The one before the current
    /// is kept, so a node that read the head just before a publish still finds the
    /// manifest it read about.
    pub fn forget_manifest_at(&self, gen: u64, epoch: u64) -> Result<(), CollectionError> {
        let key = manifest_key(gen, epoch);
        self.objects.delete(&format!("{}{key}", self.prefix)).map_err(|e| unreachable(self, "delete", &key, e))
    }

    /// Removes the objects of files no manifest names any more; a failure only leaves
    /// garbage (logged by the caller), never a missing file.
    pub fn forget(&self, sums: &[FileSum]) -> Result<(), CollectionError> {
        for sum in sums {
            let key = sum.key();
            self.objects.delete(&format!("{}{key}", self.prefix)).map_err(|e| unreachable(self, "delete", &key, e))?;
        }
        Ok(())
    }
}

/// The files under `path` (itself when it is a file), in name order; tantivy's lock
/// files, which hold nothing, are left out.
fn walk(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), CollectionError> {
    let io = |source| CollectionError::Io { op: "list", path: path.to_owned(), source };
    if !fs::metadata(path).map_err(io)?.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
    entries.sort();
    for e in entries {
        if e.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(".tantivy-") && n.ends_with(".lock")) {
            continue;
        }
        walk(&e, out)?;
    }
    Ok(())
}
