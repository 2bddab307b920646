//! The write-ahead log: every add and delete is appended here and fdatasync'ed before
//! it is acknowledged. Concurrent writers share one sync (group commit): whoever syncs
//! first covers everything written before it, and the others find their record already
//! durable. Files are `wal/<seq>.log`; a flush starts a new file, and files older than
//! the manifest's `wal_from` are deleted.
//!
//! A record is `[len u32][crc32 u32][tag u8][payload]`, little-endian; `len` counts tag
//! and payload. On replay a torn or garbled tail of the newest file is cut off and
//! reported, never fatal: it can only hold writes that were never acknowledged.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// An add in format 1 (written before format 2), upgraded as it is replayed.
const TAG_ADD_V1: u8 = 1;
const TAG_DELETE: u8 = 2;
/// An add in format 2 (written before format 3), upgraded as it is replayed.
const TAG_ADD_V2: u8 = 3;
/// An add: one document's batch in today's format.
const TAG_ADD: u8 = 4;
const FRAME: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("corrupt WAL {path} at byte {offset}: {reason}")]
    Corrupt { path: PathBuf, offset: u64, reason: String },
    #[error("the WAL of this collection failed an earlier sync; writes are refused until restart")]
    Failed,
}

/// Fault injection for crash tests (`debug.failpoint` in the server's config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Failpoint {
    #[default]
    None,
    /// Abort the process after a record is written and before it is synced.
    CrashBeforeSync,
    /// Report the sync as failed (as an fdatasync error would be).
    FailSync,
}

/// One logged operation.
#[derive(Debug, PartialEq)]
pub enum Op {
    /// An rkyv-archived `Batch`.
    Add(Vec<u8>),
    Delete(String),
}

/// A torn tail that replay cut off.
#[derive(Debug, Clone, PartialEq)]
pub struct TornTail {
    pub path: PathBuf,
    pub offset: u64,
    pub dropped_bytes: u64,
    pub reason: String,
}

struct Current {
    file: Arc<File>,
    seq: u64,
    path: PathBuf,
}

pub struct Wal {
    dir: PathBuf,
    current: Mutex<Current>,
    sync_lock: Mutex<()>,
    written: AtomicU64,
    synced: AtomicU64,
    failed: AtomicBool,
    failpoint: Failpoint,
}

pub fn file_name(seq: u64) -> String {
    format!("{seq:016}.log")
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WalError {
    let path = path.to_owned();
    move |source| WalError::Io { op, path, source }
}

impl Wal {
    /// Opens `dir/<seq>.log` for appending (creating it), after replay has run.
    pub fn open(dir: &Path, seq: u64, failpoint: Failpoint) -> Result<Wal, WalError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        let current = open_file(dir, seq)?;
        Ok(Wal {
            dir: dir.to_owned(),
            current: Mutex::new(current),
            sync_lock: Mutex::new(()),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            failpoint,
        })
    }

    pub fn seq(&self) -> u64 {
        self.current.lock().expect("wal lock").seq
    }

    /// Appends `op`; returns its sequence number for [`Wal::sync`].
    pub fn append(&self, op: &Op) -> Result<u64, WalError> {
        if self.failed.load(Ordering::Acquire) {
            return Err(WalError::Failed);
        }
        let record = encode(op);
        let cur = self.current.lock().expect("wal lock");
        (&*cur.file).write_all(&record).map_err(io("write", &cur.path))?;
        let lsn = self.written.fetch_add(1, Ordering::AcqRel) + 1;
        drop(cur);
        if self.failpoint == Failpoint::CrashBeforeSync {
            std::process::abort();
        }
        Ok(lsn)
    }

    /// Returns once record `lsn` (and everything before it) is on disk.
    pub fn sync(&self, lsn: u64) -> Result<(), WalError> {
        if self.synced.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let _leader = self.sync_lock.lock().expect("wal sync lock");
        if self.synced.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let (file, path) = {
            let cur = self.current.lock().expect("wal lock");
            (cur.file.clone(), cur.path.clone())
        };
        let target = self.written.load(Ordering::Acquire);
        let result = if self.failpoint == Failpoint::FailSync { Err(std::io::Error::other("injected fdatasync failure")) } else { file.sync_data() };
        if let Err(source) = result {
            self.failed.store(true, Ordering::Release);
            return Err(WalError::Io { op: "fdatasync", path, source });
        }
        self.synced.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Starts a new file; everything written so far is synced first. Returns the new
    /// file's sequence number.
    pub fn rotate(&self) -> Result<u64, WalError> {
        let _leader = self.sync_lock.lock().expect("wal sync lock");
        let mut cur = self.current.lock().expect("wal lock");
        cur.file.sync_data().map_err(io("fdatasync", &cur.path))?;
        self.synced.fetch_max(self.written.load(Ordering::Acquire), Ordering::AcqRel);
        *cur = open_file(&self.dir, cur.seq + 1)?;
        Ok(cur.seq)
    }

    /// Deletes the files before `seq` (their contents are in segments now).
    pub fn trim(&self, seq: u64) -> Result<(), WalError> {
        for (s, path) in list(&self.dir)? {
            if s < seq {
                fs::remove_file(&path).map_err(io("remove", &path))?;
            }
        }
        Ok(())
    }
}

fn open_file(dir: &Path, seq: u64) -> Result<Current, WalError> {
    let path = dir.join(file_name(seq));
    let file = OpenOptions::new().create(true).append(true).open(&path).map_err(io("open", &path))?;
    crate::segment::sync_dir(dir).map_err(|e| WalError::Io {
        op: "fsync directory",
        path: dir.to_owned(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Current { file: Arc::new(file), seq, path })
}

/// One record as the WAL frames it (length, CRC-32, tag, payload): also what a shared
/// journal stores per record.
pub fn encode(op: &Op) -> Vec<u8> {
    let (tag, payload): (u8, &[u8]) = match op {
        Op::Add(bytes) => (TAG_ADD, bytes),
        Op::Delete(id) => (TAG_DELETE, id.as_bytes()),
    };
    let mut body = Vec::with_capacity(1 + payload.len());
    body.push(tag);
    body.extend_from_slice(payload);
    let mut record = Vec::with_capacity(FRAME + body.len());
    record.extend_from_slice(&(body.len() as u32).to_le_bytes());
    record.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    record.extend_from_slice(&body);
    record
}

/// Reads one whole record [`encode`] made; anything else (a short, long or damaged
/// record) is an error.
pub fn decode_one(bytes: &[u8]) -> Result<Op, String> {
    let (op, used) = decode(bytes)?;
    if used != bytes.len() {
        return Err(format!("{} bytes after the record", bytes.len() - used));
    }
    Ok(op)
}

/// The WAL files in `dir`, oldest first.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, WalError> {
    let mut files = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(WalError::Io { op: "list", path: dir.to_owned(), source: e }),
    };
    for entry in entries {
        let path = entry.map_err(io("list", dir))?.path();
        let seq = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".log")).and_then(|n| n.parse().ok());
        if let Some(seq) = seq {
            files.push((seq, path));
        }
    }
    files.sort();
    Ok(files)
}

/// Reads every operation in the files from `from_seq` on, in order. A bad tail of the
/// newest file is truncated away and reported; a bad record anywhere else is corruption.
pub fn replay(dir: &Path, from_seq: u64) -> Result<(Vec<Op>, Option<TornTail>, u64), WalError> {
    let files: Vec<_> = list(dir)?.into_iter().filter(|(s, _)| *s >= from_seq).collect();
    let mut ops = Vec::new();
    let mut torn = None;
    let last_seq = files.last().map(|(s, _)| *s).unwrap_or(from_seq);
    for (i, (_, path)) in files.iter().enumerate() {
        let mut bytes = Vec::new();
        File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(io("read", path))?;
        let (good, bad) = decode_all(&bytes, &mut ops);
        if let Some(reason) = bad {
            if i + 1 != files.len() {
                return Err(WalError::Corrupt { path: path.clone(), offset: good as u64, reason });
            }
            let f = OpenOptions::new().write(true).open(path).map_err(io("open", path))?;
            f.set_len(good as u64).map_err(io("truncate", path))?;
            f.sync_all().map_err(io("fsync", path))?;
            torn = Some(TornTail { path: path.clone(), offset: good as u64, dropped_bytes: (bytes.len() - good) as u64, reason });
        }
    }
    Ok((ops, torn, last_seq))
}

/// Decodes records until the end or the first bad one; returns the good length and why
/// decoding stopped early.
fn decode_all(bytes: &[u8], ops: &mut Vec<Op>) -> (usize, Option<String>) {
    let mut at = 0;
    while at < bytes.len() {
        match decode(&bytes[at..]) {
            Ok((op, used)) => {
                ops.push(op);
                at += used;
            }
            Err(reason) => return (at, Some(reason)),
        }
    }
    (at, None)
}

fn decode(bytes: &[u8]) -> Result<(Op, usize), String> {
    if bytes.len() < FRAME {
        return Err(format!("a {}-byte fragment of a record header", bytes.len()));
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    let body = bytes.get(FRAME..FRAME + len).ok_or_else(|| format!("a record of {len} bytes cut short"))?;
    if len == 0 || crc32fast::hash(body) != crc {
        return Err("checksum mismatch".into());
    }
    let op = match body[0] {
        TAG_ADD => Op::Add(body[1..].to_vec()),
        TAG_ADD_V1 | TAG_ADD_V2 => {
            let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(body.len());
            aligned.extend_from_slice(&body[1..]);
            let upgrade = if body[0] == TAG_ADD_V1 { crate::segment::upgrade_v1 } else { crate::segment::upgrade_v2 };
            Op::Add(crate::segment::archive(&upgrade(&aligned)?).to_vec())
        }
        TAG_DELETE => Op::Delete(String::from_utf8(body[1..].to_vec()).map_err(|_| "a delete with a non-UTF-8 id")?),
        t => return Err(format!("unknown record tag {t}")),
    };
    Ok((op, FRAME + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_ops_replay_in_order_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, Failpoint::None).unwrap();
        let a = wal.append(&Op::Add(vec![1, 2, 3])).unwrap();
        wal.sync(a).unwrap();
        assert_eq!(wal.rotate().unwrap(), 2);
        let b = wal.append(&Op::Delete("doc_x".into())).unwrap();
        wal.sync(b).unwrap();
        let (ops, torn, last) = replay(dir.path(), 1).unwrap();
        assert_eq!(ops, vec![Op::Add(vec![1, 2, 3]), Op::Delete("doc_x".into())]);
        assert_eq!((torn, last), (None, 2));
        wal.trim(2).unwrap();
        assert_eq!(replay(dir.path(), 1).unwrap().0, vec![Op::Delete("doc_x".into())]);
    }

    #[test]
    fn a_torn_tail_is_cut_and_reported_and_the_good_records_stay() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, Failpoint::None).unwrap();
        let lsn = wal.append(&Op::Add(vec![9; 100])).unwrap();
        wal.sync(lsn).unwrap();
        drop(wal);
        let path = dir.path().join(file_name(1));
        let good_len = fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, TAG_ADD, 5]).unwrap();
        let (ops, torn, _) = replay(dir.path(), 1).unwrap();
        assert_eq!(ops.len(), 1);
        let torn = torn.expect("the tail is reported");
        assert_eq!((torn.offset, torn.dropped_bytes), (good_len, 10));
        assert_eq!(fs::metadata(&path).unwrap().len(), good_len, "the tail is truncated away");
        assert_eq!(replay(dir.path(), 1).unwrap().1, None);
    }

    #[test]
    fn a_bad_record_in_an_older_file_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, Failpoint::None).unwrap();
        wal.append(&Op::Delete("a".into())).unwrap();
        wal.rotate().unwrap();
        wal.append(&Op::Delete("b".into())).unwrap();
        wal.rotate().unwrap();
        let path = dir.path().join(file_name(1));
        let mut bytes = fs::read(&path).unwrap();
        bytes[9] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(matches!(replay(dir.path(), 1), Err(WalError::Corrupt { .. })));
    }

    #[test]
    fn a_failed_sync_refuses_later_writes() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, Failpoint::FailSync).unwrap();
        let lsn = wal.append(&Op::Delete("a".into())).unwrap();
        assert!(wal.sync(lsn).is_err());
        assert!(matches!(wal.append(&Op::Delete("b".into())), Err(WalError::Failed)));
    }

    #[test]
    fn concurrent_writers_share_syncs_and_all_become_durable() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Arc::new(Wal::open(dir.path(), 1, Failpoint::None).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..20 {
                        let lsn = wal.append(&Op::Delete(format!("{t}-{i}"))).unwrap();
                        wal.sync(lsn).unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(replay(dir.path(), 1).unwrap().0.len(), 160);
    }
}
