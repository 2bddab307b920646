//! MANIFEST: the live set of a collection — its segments, the first WAL file still
//! needed, and the documents deleted from those segments. Replaced whole by an atomic
//! rename, so a crash leaves the old or the new one, never a mix. With segments in
//! object storage the same manifest is published in the bucket (before the local one).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::remote::FileSum;
use super::CollectionError;

pub const FILE: &str = "MANIFEST";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    /// Segment sequence numbers, oldest first.
    pub segments: Vec<u64>,
    /// The first WAL file replay needs.
    pub wal_from: u64,
    /// The next sequence number for a segment or WAL file.
    pub next_seq: u64,
    /// Documents deleted that still sit in a segment.
    pub tombstones: Vec<String>,
    /// Per segment: the WAL files it covers and, in object storage, its files' sums.
    /// (Manifests written before this have none: their segments are local only.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub published: BTreeMap<u64, Published>,
    /// On the shared journal: the (generation, epoch) of the manifest this one replaced,
    /// so the one before that can be removed from the bucket once this one lands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<(u64, u64)>,
}

/// What the manifest records of one segment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Published {
    /// Every operation of WAL files below this sequence number is in the segment or an
    /// older one: replay of a node that fetched it starts at the manifest's `wal_from`.
    pub wal_before: u64,
    /// The segment's files as uploaded, with their checksums; empty on local disk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSum>,
}

impl Manifest {
    pub fn new() -> Manifest {
        Manifest {
            format: crate::FORMAT_VERSION,
            segments: Vec::new(),
            wal_from: 1,
            next_seq: 2,
            tombstones: Vec::new(),
            published: BTreeMap::new(),
            previous: None,
        }
    }

    /// Reads `dir/MANIFEST`; `None` when the collection has none yet.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, CollectionError> {
        let path = dir.join(FILE);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CollectionError::Io { op: "read", path, source }),
        };
        Manifest::parse(&bytes, &path).map(Some)
    }

    /// Reads a manifest's bytes (`origin` names where they came from, for errors).
    pub fn parse(bytes: &[u8], origin: &Path) -> Result<Manifest, CollectionError> {
        let path = origin.to_owned();
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| CollectionError::Corrupt { path: path.clone(), reason: e.to_string() })?;
        // Older formats' collections are read as they are: their segments and WAL
        // records are upgraded as they are opened; the next manifest written says today's.
        if !(1..=crate::FORMAT_VERSION).contains(&m.format) {
            let reason = format!("format version {}, this build reads 1 to {}", m.format, crate::FORMAT_VERSION);
            return Err(CollectionError::Corrupt { path, reason });
        }
        Ok(m)
    }

    /// The bytes written: stamped with today's format (what this build writes; older
    /// segments it still lists say their own version in their headers).
    pub fn to_bytes(&self) -> Vec<u8> {
        let today = Manifest { format: crate::FORMAT_VERSION, ..self.clone() };
        serde_json::to_vec_pretty(&today).expect("a manifest serializes")
    }

    /// Writes it durably: temporary file, fsync, rename, fsync of the directory.
    pub fn store(&self, dir: &Path) -> Result<(), CollectionError> {
        let path = dir.join(FILE);
        let tmp = dir.join("MANIFEST.tmp");
        let io = |op, p: &Path| {
            let p = p.to_owned();
            move |source| CollectionError::Io { op, path: p, source }
        };
        let bytes = self.to_bytes();
        let mut f = File::create(&tmp).map_err(io("create", &tmp))?;
        f.write_all(&bytes).map_err(io("write", &tmp))?;
        f.sync_all().map_err(io("fsync", &tmp))?;
        fs::rename(&tmp, &path).map_err(io("rename", &path))?;
        crate::segment::sync_dir(dir)?;
        Ok(())
    }
}
