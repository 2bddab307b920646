//! A read-only view of a batch: a segment file mapped into memory, or a batch held in
//! memory (the WAL tail). Validated once when opened; every later read is zero-copy.
//!
//! This module holds the engine's `unsafe`: the mapping itself and the unchecked
//! accesses that rely on the validation done at open.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rkyv::util::AlignedVec;

use super::format::ArchivedBatch;
use super::SegmentError;

/// "QSEG", the format version, the archive's length and its CRC-32, padded to 64 bytes
/// so the archive that follows is aligned for rkyv.
pub const HEADER_LEN: usize = 64;
pub const MAGIC: &[u8; 4] = b"QSEG";

enum Bytes {
    Mapped(Mmap),
    Owned(AlignedVec),
}

pub struct BatchView {
    bytes: Bytes,
    /// Where the archive starts within `bytes`.
    offset: usize,
}

impl BatchView {
    /// Maps a segment file and validates it (header, length, checksum, archive).
    pub fn open(path: &Path) -> Result<BatchView, SegmentError> {
        let corrupt = |reason: String| SegmentError::Corrupt { path: path.to_owned(), reason };
        let file = File::open(path).map_err(|source| SegmentError::Io { op: "open", path: path.to_owned(), source })?;
        // SAFETY: segment files are written once, fsynced and renamed into place, and
        // never modified afterwards; the engine deletes a file only after no snapshot
        // refers to it, and unlinking keeps a live mapping valid.
        let map = unsafe { Mmap::map(&file) }.map_err(|source| SegmentError::Io { op: "mmap", path: path.to_owned(), source })?;
        let (version, len, crc) = check_header(&map).map_err(corrupt)?;
        let archive = &map[HEADER_LEN..HEADER_LEN + len];
        if version < crate::FORMAT_VERSION {
            // Written in an older format: checked, then upgraded into memory. The next
            // merge that takes this segment writes it out in today's format.
            check_crc(archive, crc).map_err(corrupt)?;
            let batch = if version == 1 { super::v1::upgrade(archive) } else { super::v2::upgrade(archive) }.map_err(corrupt)?;
            return BatchView::from_bytes(super::archive(&batch), path);
        }
        check_archive(archive, crc, len >= SIDE_BY_SIDE).map_err(corrupt)?;
        Ok(BatchView { bytes: Bytes::Mapped(map), offset: HEADER_LEN })
    }

    /// [`open`](Self::open) without the rkyv validation of the archive: the mapping and
    /// the header checks (magic, version, length, CRC) only. For the segment-open bench
    /// (`bench/benches/segment_open.rs`), which weighs what validation costs; the engine
    /// always opens with [`open`](Self::open).
    ///
    /// # Safety
    /// The file must hold a valid archive, e.g. one that [`open`](Self::open) accepted
    /// and that has not changed since: [`batch`](Self::batch) reads it unchecked.
    #[doc(hidden)]
    pub unsafe fn open_unchecked(path: &Path) -> Result<BatchView, SegmentError> {
        let corrupt = |reason: String| SegmentError::Corrupt { path: path.to_owned(), reason };
        let file = File::open(path).map_err(|source| SegmentError::Io { op: "open", path: path.to_owned(), source })?;
        // SAFETY: as in `open`; the archive's validity is the caller's promise.
        let map = unsafe { Mmap::map(&file) }.map_err(|source| SegmentError::Io { op: "mmap", path: path.to_owned(), source })?;
        let (version, len, crc) = check_header(&map).map_err(corrupt)?;
        if version != crate::FORMAT_VERSION {
            return Err(corrupt(format!("format version {version}: the unchecked open reads only {}", crate::FORMAT_VERSION)));
        }
        check_crc(&map[HEADER_LEN..HEADER_LEN + len], crc).map_err(corrupt)?;
        Ok(BatchView { bytes: Bytes::Mapped(map), offset: HEADER_LEN })
    }

    /// A batch built in this process (or replayed from the WAL), validated once.
    pub fn from_bytes(bytes: AlignedVec, origin: &Path) -> Result<BatchView, SegmentError> {
        rkyv::access::<ArchivedBatch, rkyv::rancor::Error>(&bytes)
            .map_err(|e| format!("invalid batch: {e}"))
            .and_then(|b| b.check_windows())
            .map_err(|reason| SegmentError::Corrupt { path: PathBuf::from(origin), reason })?;
        Ok(BatchView { bytes: Bytes::Owned(bytes), offset: 0 })
    }

    pub fn batch(&self) -> &ArchivedBatch {
        let bytes = match &self.bytes {
            Bytes::Mapped(m) => &m[self.offset..],
            Bytes::Owned(v) => &v[self.offset..],
        };
        // SAFETY: the same bytes passed `rkyv::access` when this view was made, and
        // neither a mapping of an immutable file nor an owned buffer changes after.
        unsafe { rkyv::access_unchecked::<ArchivedBatch>(bytes) }
    }

    /// The page vectors as plain floats, row-major.
    pub fn vectors(&self) -> &[f32] {
        let v = self.batch().vectors.as_slice();
        // SAFETY: on a little-endian target rkyv's archived `f32_le` has the layout of
        // `f32` (same size, alignment 4 at most, same bits), so the slice reinterprets
        // without copying.
        const _: () = assert!(cfg!(target_endian = "little"));
        const _: () = assert!(std::mem::size_of::<rkyv::rend::f32_le>() == 4);
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<f32>(), v.len()) }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(_))
    }
}

/// From this archive size on, [`check_archive`] runs the checksum on a second thread
/// beside rkyv's validation: both read every byte, and on a large segment (tens of MB
/// at 100k chunks) that is most of what opening costs. Below it a thread costs more than
/// it saves.
const SIDE_BY_SIDE: usize = 8 << 20;

/// The format version, archive length and checksum the header announces, after checking
/// magic, that this build reads the version (format 1, 2 or today's) and that the file holds
/// that many bytes.
fn check_header(map: &[u8]) -> Result<(u32, usize, u32), String> {
    if map.len() < HEADER_LEN {
        return Err(format!("truncated: {} bytes, shorter than the header", map.len()));
    }
    if &map[0..4] != MAGIC {
        return Err("not a segment file (bad magic)".into());
    }
    let version = u32::from_le_bytes(map[4..8].try_into().expect("4 bytes"));
    if !(1..=crate::FORMAT_VERSION).contains(&version) {
        return Err(format!("format version {version}, this build reads 1 to {}", crate::FORMAT_VERSION));
    }
    let len = u64::from_le_bytes(map[8..16].try_into().expect("8 bytes")) as usize;
    let crc = u32::from_le_bytes(map[16..20].try_into().expect("4 bytes"));
    if map.len() < HEADER_LEN + len {
        return Err(format!("truncated: the header announces {len} bytes, the file holds {}", map.len() - HEADER_LEN));
    }
    Ok((version, len, crc))
}

fn check_crc(archive: &[u8], crc: u32) -> Result<(), String> {
    if crc32fast::hash(archive) != crc {
        return Err("checksum mismatch".into());
    }
    Ok(())
}

/// The checksum, then rkyv's validation of every offset and string; with `side_by_side`
/// the two run at once on two threads. A checksum mismatch is reported first either way:
/// it says more than whatever the validation trips on in damaged bytes.
pub(super) fn check_archive(archive: &[u8], crc: u32, side_by_side: bool) -> Result<(), String> {
    let validate = || {
        let b = rkyv::access::<ArchivedBatch, rkyv::rancor::Error>(archive).map_err(|e| format!("invalid archive: {e}"))?;
        b.check_windows()
    };
    let (checksum, valid) = if side_by_side {
        std::thread::scope(|s| {
            let checksum = s.spawn(|| check_crc(archive, crc));
            let valid = validate();
            (checksum.join().unwrap_or_else(|_| Err("the checksum thread panicked".into())), valid)
        })
    } else {
        match check_crc(archive, crc) {
            Ok(()) => (Ok(()), validate()),
            Err(e) => (Err(e), Ok(())),
        }
    };
    checksum.and(valid)
}

/// The header for an archive of `archive` bytes.
pub fn header(archive: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..4].copy_from_slice(MAGIC);
    h[4..8].copy_from_slice(&crate::FORMAT_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&(archive.len() as u64).to_le_bytes());
    h[16..20].copy_from_slice(&crc32fast::hash(archive).to_le_bytes());
    h
}
