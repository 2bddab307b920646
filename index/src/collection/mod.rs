//! A collection: immutable segments + a write-ahead log + a MANIFEST, and the
//! published [`Snapshot`] searches read.
//!
//! Write path: the caller prepares a one-document [`Batch`]; `add` assigns its
//! citations, appends it to the WAL, waits for the group-commit sync, then publishes a
//! snapshot holding it — only then does it return, so an acknowledged document is both
//! durable and searchable. `flush` turns the in-memory tail into a segment and trims
//! the WAL; `merge` bounds the number of segments. Deletes are tombstones.

pub mod manifest;
pub mod read;
mod reanalyse;
pub mod remote;
mod shared;
pub mod snapshot;
pub mod view;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::bm25::{Bm25, Bm25Error};
use crate::segment::{self, Batch, SegmentError};
use crate::wal::{self, Failpoint, Op, TornTail, Wal, WalError};
use manifest::{Manifest, Published};
pub use read::{ChunkView, DocView, HitView, PageView};
use remote::Remote;
pub use snapshot::{Counts, DocAt, Snapshot};
use view::{Dead, Source, View};

#[derive(Debug, thiserror::Error)]
pub enum CollectionError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("corrupt collection file {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(transparent)]
    Segment(#[from] SegmentError),
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Bm25(#[from] Bm25Error),
    #[error("document {0} already exists")]
    DuplicateId(String),
    #[error("document {0} not found")]
    DocumentNotFound(String),
    /// Object storage out of reach or answering wrongly; nothing was published.
    #[error("segments in object storage: {op} {at}: {reason}")]
    Remote { op: &'static str, at: String, reason: String },
    /// The shared journal out of reach or refusing; nothing was acknowledged.
    #[error("the journal of {collection}: {op}: {reason}")]
    Journal { op: &'static str, collection: String, reason: String },
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub failpoint: Failpoint,
    /// Flush when the in-memory tail holds this many batches...
    pub flush_batches: usize,
    /// ...or this many chunks.
    pub flush_chunks: usize,
    /// Merge when a collection has more segments than this.
    pub max_segments: usize,
    /// Segments with at least this many vectors (window rows) get an HNSW graph.
    pub hnsw_min_rows: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { failpoint: Failpoint::None, flush_batches: 64, flush_chunks: 50_000, max_segments: 8, hnsw_min_rows: crate::vector::HNSW_MIN_ROWS }
    }
}

/// What opening found worth reporting.
#[derive(Debug, Default)]
pub struct Recovery {
    pub replayed_ops: usize,
    pub torn_tail: Option<TornTail>,
    pub removed_files: Vec<PathBuf>,
}

struct Writer {
    manifest: Manifest,
    /// Live document ids and every citation taken: built from the snapshot on the
    /// first write (see [`Writer::load`]), so opening stays independent of the size.
    ids: Option<HashSet<String>>,
    /// Deleted ids whose documents still sit in some view.
    deleted: HashSet<String>,
    citations: Option<HashSet<u32>>,
    /// WAL files of adds between append and publish.
    in_flight: Vec<u64>,
}

impl Writer {
    /// Fills the id and citation sets from `snap` the first time a write needs them.
    fn load(&mut self, snap: &Snapshot) {
        if self.ids.is_none() {
            self.ids = Some(snap.docs().map(|at| snap.doc(at).id.as_str().to_owned()).collect());
        }
        if self.citations.is_none() {
            let all = snap.views.iter().flat_map(|v| v.batch().pages.iter().map(|p| p.citation.to_native()));
            self.citations = Some(all.collect());
        }
    }

    fn ids(&mut self) -> &mut HashSet<String> {
        self.ids.as_mut().expect("Writer::load runs before any write")
    }
}

pub struct Collection {
    id: String,
    dir: PathBuf,
    opts: Options,
    /// The local write-ahead log; `None` when the log is the shared journal.
    wal: Option<Wal>,
    /// The shared journal, when it is the log ([`shared`]).
    shared: Option<shared::Shared>,
    writer: Mutex<Writer>,
    snapshot: ArcSwap<Snapshot>,
    /// Serializes flush and merge (one background job per collection at a time).
    maintenance: Mutex<()>,
    /// Set when the collection is being removed: no flush or merge runs after.
    retired: std::sync::atomic::AtomicBool,
    /// Where its segments are published besides local disk, when they are.
    remote: Option<Remote>,
    /// After object storage failed a publish: when to try again, and the wait that
    /// doubles with each failure (1 s to 1 min), so a bucket that is down is not
    /// handed a rebuilt segment every round.
    backoff: Mutex<Option<(std::time::Instant, std::time::Duration)>>,
    /// When a request last took it ([`Collection::touch`]): seconds since [`epoch`],
    /// what the engine's segment cache evicts by.
    touched: std::sync::atomic::AtomicU64,
}

/// The process's own clock origin for [`Collection::touch`].
fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CollectionError {
    let path = path.to_owned();
    move |source| CollectionError::Io { op, path, source }
}

/// A collection's size, as [`Collection::stats`] reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub documents: u64,
    pub segments: u64,
    pub wal_bytes: u64,
}

impl Collection {
    /// Opens (or creates) the collection in `dir`: segments mapped and validated, the
    /// WAL replayed (a torn tail cut), files the manifest does not name removed.
    pub fn open(id: &str, dir: &Path, opts: Options) -> Result<(Collection, Recovery), CollectionError> {
        Collection::open_with(id, dir, opts, None)
    }

    /// [`Collection::open`], with its segments published in object storage too: a
    /// collection with no local manifest takes the bucket's, and segment files missing
    /// from disk are fetched and checked against it.
    pub fn open_with(id: &str, dir: &Path, opts: Options, remote: Option<Remote>) -> Result<(Collection, Recovery), CollectionError> {
        if let Some(journal) = remote.as_ref().and_then(|r| r.journal.clone()) {
            return Collection::open_shared(id, dir, opts, remote.expect("checked"), journal);
        }
        let seg_dir = dir.join("segments");
        fs::create_dir_all(&seg_dir).map_err(io("create", dir))?;
        let published = match (Manifest::load(dir)?, &remote) {
            (Some(m), _) => Some(m),
            (None, Some(r)) => r.get_manifest()?.map(|bytes| Manifest::parse(&bytes, &dir.join(manifest::FILE))).transpose()?,
            (None, None) => None,
        };
        let manifest = match published {
            Some(m) => m,
            None => Manifest::new(),
        };
        if let Some(r) = &remote {
            fetch_missing(r, &manifest, &seg_dir)?;
        }
        // Stored once its segments are on disk (taken from the bucket, or a new one).
        if !dir.join(manifest::FILE).exists() {
            manifest.store(dir)?;
        }
        let mut recovery = Recovery { removed_files: remove_orphans(dir, &manifest)?, ..Recovery::default() };
        let mut views = Vec::new();
        for &seq in &manifest.segments {
            views.push(Arc::new(View::segment(dir, seq)?));
        }
        let mut deleted: HashSet<String> = manifest.tombstones.iter().cloned().collect();
        let (ops, torn, last_seq) = wal::replay(&dir.join("wal"), manifest.wal_from)?;
        recovery.replayed_ops = ops.len();
        recovery.torn_tail = torn;
        let wal_seq = last_seq.max(manifest.wal_from);
        if !ops.is_empty() {
            let mut ids: HashSet<String> = HashSet::new();
            for v in &views {
                ids.extend(v.batch().docs.iter().map(|d| d.id.as_str().to_owned()));
            }
            if let Some(bytes) = replay_tail(dir, &ops, &mut ids, &mut deleted)? {
                views.push(Arc::new(View::memory(bytes, manifest.wal_from, &dir.join("wal"))?));
            }
        }
        let dead = views.iter().map(|v| Dead::of(v, &deleted)).collect();
        let wal = Wal::open(&dir.join("wal"), wal_seq, opts.failpoint)?;
        let writer = Writer { manifest, ids: None, deleted, citations: None, in_flight: Vec::new() };
        let c = Collection {
            id: id.to_owned(),
            dir: dir.to_owned(),
            opts,
            wal: Some(wal),
            shared: None,
            writer: Mutex::new(writer),
            snapshot: ArcSwap::from_pointee(Snapshot { views, dead }),
            maintenance: Mutex::new(()),
            remote,
            backoff: Mutex::new(None),
            touched: std::sync::atomic::AtomicU64::new(0),
            retired: std::sync::atomic::AtomicBool::new(false),
        };
        c.touch();
        Ok((c, recovery))
    }

    /// [`Collection::open_with`] on the shared journal: the segments of the manifest
    /// its head points at (fetched if missing), then every record after them.
    fn open_shared(
        id: &str,
        dir: &Path,
        opts: Options,
        remote: Remote,
        journal: std::sync::Arc<dyn crate::journal::Journal>,
    ) -> Result<(Collection, Recovery), CollectionError> {
        let seg_dir = dir.join("segments");
        fs::create_dir_all(&seg_dir).map_err(io("create", dir))?;
        let fail = |reason| CollectionError::Journal { op: "open", collection: id.to_owned(), reason };
        let head = match journal.head(id).map_err(fail)? {
            Some(h) => h,
            // A collection written before its log was the journal (records and segments
            // turned shared without `quarry migrate`): its local state goes in first.
            None => {
                adopt_into_journal(id, dir, opts, &remote, &*journal)?;
                journal.head(id).map_err(fail)?.ok_or_else(|| fail("it has no journal".into()))?
            }
        };
        let manifest = shared::manifest_at(&remote, head, dir)?;
        fetch_missing(&remote, &manifest, &seg_dir)?;
        // A local copy, for an operator to read; the journal's head says which is current.
        manifest.store(dir)?;
        let recovery = Recovery { removed_files: remove_orphans(dir, &manifest)?, ..Recovery::default() };
        let mut views = Vec::new();
        for &seq in &manifest.segments {
            views.push(Arc::new(View::segment(dir, seq)?));
        }
        let deleted: HashSet<String> = manifest.tombstones.iter().cloned().collect();
        let dead = views.iter().map(|v| Dead::of(v, &deleted)).collect();
        let writer = Writer { manifest, ids: None, deleted, citations: None, in_flight: Vec::new() };
        let c = Collection {
            id: id.to_owned(),
            dir: dir.to_owned(),
            opts,
            wal: None,
            shared: Some(shared::Shared::new(journal)),
            writer: Mutex::new(writer),
            snapshot: ArcSwap::from_pointee(Snapshot { views, dead }),
            maintenance: Mutex::new(()),
            remote: Some(remote),
            backoff: Mutex::new(None),
            touched: std::sync::atomic::AtomicU64::new(0),
            retired: std::sync::atomic::AtomicBool::new(false),
        };
        c.start_shared(head)?;
        c.touch();
        Ok((c, recovery))
    }

    fn wal(&self) -> &Wal {
        self.wal.as_ref().expect("a collection with a local WAL")
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Notes that a request took this collection now. A relaxed load and, at most once
    /// a second, a store: cheap on the search path.
    pub fn touch(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let now = epoch().elapsed().as_secs();
        if self.touched.load(Relaxed) != now {
            self.touched.store(now, Relaxed);
        }
    }

    /// Seconds since [`Collection::touch`] last ran.
    pub fn idle_secs(&self) -> u64 {
        epoch().elapsed().as_secs().saturating_sub(self.touched.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Bytes of its segment files on local disk (data, BM25 index, graphs), read from
    /// the directory.
    pub fn segment_bytes(&self) -> u64 {
        fn size(p: &Path) -> u64 {
            match fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => fs::read_dir(p).map(|es| es.flatten().map(|e| size(&e.path())).sum()).unwrap_or(0),
                Ok(m) => m.len(),
                Err(_) => 0,
            }
        }
        size(&self.dir.join("segments"))
    }

    /// Whether its local segment files may be dropped from the cache: every segment is
    /// published in object storage, nothing waits in the in-memory tail, and no publish
    /// is failing. What is dropped is fetched again (and checked) when it is next taken.
    pub fn evictable(&self) -> bool {
        if self.remote.is_none() || self.has_tail() || self.backing_off() {
            return false;
        }
        let w = self.writer.lock().expect("writer lock");
        w.in_flight.is_empty() && w.manifest.segments.iter().all(|s| w.manifest.published.get(s).is_some_and(|p| !p.files.is_empty()))
    }

    /// Drops its segment files from local disk, keeping the manifest and the WAL: the
    /// engine's cache, once it holds the only reference (nothing maps them any more).
    pub fn evict(self) -> Result<u64, CollectionError> {
        let freed = self.segment_bytes();
        let seg_dir = self.dir.join("segments");
        drop(self);
        fs::remove_dir_all(&seg_dir).map_err(io("remove", &seg_dir))?;
        Ok(freed)
    }

    /// The current snapshot; hold it for the length of one search.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// What the collection holds now, for metrics: live documents, segment files, and
    /// the bytes of its write-ahead log (read from the directory, not tracked).
    pub fn stats(&self) -> Stats {
        let snap = self.snapshot();
        let wal_bytes = std::fs::read_dir(self.dir.join("wal"))
            .map(|files| files.flatten().filter_map(|f| f.metadata().ok()).map(|m| m.len()).sum())
            .unwrap_or(0);
        Stats { documents: snap.docs().count() as u64, segments: snap.views.iter().filter(|v| !v.is_memory()).count() as u64, wal_bytes }
    }

    /// Adds the one document of `batch`: citations assigned, logged, synced, published.
    /// Returns its place in the shared journal (what a read-your-writes request waits
    /// for), 0 on a local WAL.
    pub fn add(&self, mut batch: Batch) -> Result<u64, CollectionError> {
        if self.shared.is_some() {
            return self.add_shared(batch);
        }
        let doc_id = batch.docs.first().map(|d| d.id.clone()).unwrap_or_default();
        // Checked before it is logged: a record the replay would refuse is never written.
        batch.check_windows().map_err(|reason| CollectionError::Corrupt { path: self.dir.clone(), reason })?;
        let (bytes, lsn, wal_seq) = {
            let mut w = self.writer.lock().expect("writer lock");
            w.load(&self.snapshot.load());
            if w.ids().contains(&doc_id) {
                return Err(CollectionError::DuplicateId(doc_id));
            }
            assign_citations(&self.id, &mut batch, w.citations.as_mut().expect("loaded"));
            let bytes = segment::archive(&batch);
            let lsn = self.wal().append(&Op::Add(bytes.to_vec()))?;
            let wal_seq = self.wal().seq();
            w.ids().insert(doc_id.clone());
            w.in_flight.push(wal_seq);
            (bytes, lsn, wal_seq)
        };
        let built = self.wal().sync(lsn).map_err(CollectionError::from).and_then(|()| View::memory(bytes, wal_seq, &self.dir));
        let mut w = self.writer.lock().expect("writer lock");
        let at = w.in_flight.iter().position(|&s| s == wal_seq).expect("registered above");
        w.in_flight.swap_remove(at);
        let view = match built {
            Ok(v) => Arc::new(v),
            Err(e) => {
                w.ids().remove(&doc_id);
                return Err(e);
            }
        };
        let mut next = Snapshot::clone(&self.snapshot.load());
        next.dead.push(Dead::of(&view, &w.deleted));
        next.views.push(view);
        self.snapshot.store(Arc::new(next));
        Ok(0)
    }

    /// Deletes a document: logged, synced, and gone from the next snapshot. Returns its
    /// place in the shared journal, 0 on a local WAL.
    pub fn delete(&self, doc_id: &str) -> Result<u64, CollectionError> {
        if self.shared.is_some() {
            return self.delete_shared(doc_id);
        }
        let lsn = {
            let mut w = self.writer.lock().expect("writer lock");
            w.load(&self.snapshot.load());
            if !w.ids().remove(doc_id) {
                return Err(CollectionError::DocumentNotFound(doc_id.to_owned()));
            }
            self.wal().append(&Op::Delete(doc_id.to_owned()))?
        };
        self.wal().sync(lsn)?;
        let mut w = self.writer.lock().expect("writer lock");
        w.deleted.insert(doc_id.to_owned());
        let cur = self.snapshot.load();
        let mut next = Snapshot::clone(&cur);
        for (i, v) in cur.views.iter().enumerate() {
            if v.doc(doc_id).is_some() {
                next.dead[i] = Dead::of(v, &w.deleted);
            }
        }
        self.snapshot.store(Arc::new(next));
        Ok(0)
    }

    /// Whether the in-memory tail is big enough to flush.
    pub fn wants_flush(&self) -> bool {
        let snap = self.snapshot.load();
        let mem: Vec<_> = snap.views.iter().filter(|v| v.is_memory()).collect();
        mem.len() >= self.opts.flush_batches || mem.iter().map(|v| v.batch().chunks.len()).sum::<usize>() >= self.opts.flush_chunks
    }

    pub fn has_tail(&self) -> bool {
        self.snapshot.load().views.iter().any(|v| v.is_memory())
    }

    /// Builds (or loads) the HNSW graphs of segments big enough to want one. Returns
    /// how many were attached.
    pub fn attach_graphs(&self) -> Result<usize, CollectionError> {
        let _m = self.maintenance.lock().expect("maintenance lock");
        if self.retired.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(0);
        }
        let mut n = 0;
        for v in self.snapshot.load().views.iter() {
            v.warm();
        }
        for v in self.snapshot.load().views.iter().filter(|v| v.wants_graph(self.opts.hnsw_min_rows)) {
            v.attach_graph(&self.dir).map_err(|source| CollectionError::Io { op: "build HNSW graph", path: self.dir.join("segments"), source })?;
            n += 1;
        }
        Ok(n)
    }

    /// Ends this copy's maintenance for good, for the collection's removal: waits for a
    /// flush, merge or graph build under way (they write into its directory), and
    /// makes every later one do nothing. Maintenance waits while the guard is held.
    pub fn retire(&self) -> std::sync::MutexGuard<'_, ()> {
        let m = self.maintenance.lock().expect("maintenance lock");
        self.retired.store(true, std::sync::atomic::Ordering::Release);
        m
    }

    /// Writes the in-memory tail as a segment, records it in the manifest and trims
    /// the WAL. Returns whether there was anything to flush.
    pub fn flush(&self) -> Result<bool, CollectionError> {
        self.flush_as(None)
    }

    /// [`Collection::flush`]; on the shared journal only the holder of the
    /// collection's maintenance lease flushes, and `lease` is its epoch.
    pub fn flush_as(&self, lease: Option<u64>) -> Result<bool, CollectionError> {
        let _m = self.maintenance.lock().expect("maintenance lock");
        if self.retired.load(std::sync::atomic::Ordering::Acquire) || self.backing_off() {
            return Ok(false);
        }
        if self.shared.is_some() {
            return match lease {
                Some(epoch) => self.flush_shared(epoch),
                None => Ok(false),
            };
        }
        let (tail, seq) = {
            let mut w = self.writer.lock().expect("writer lock");
            let tail: Vec<Arc<View>> = self.snapshot.load().views.iter().filter(|v| v.is_memory()).cloned().collect();
            if tail.is_empty() {
                return Ok(false);
            }
            self.wal().rotate()?;
            let seq = w.manifest.next_seq.max(self.wal().seq() + 1);
            w.manifest.next_seq = seq + 1;
            (tail, seq)
        };
        self.replace(&tail, seq, None)?;
        Ok(true)
    }

    /// Merges segments of the same size tier (a tier spans 4× in chunks, from 4,000),
    /// lowest tier first, so a collection keeps about one segment per tier and every
    /// chunk is rewritten about once per tier; and, past `max_segments`, the smallest.
    pub fn merge(&self) -> Result<bool, CollectionError> {
        self.merge_as(None)
    }

    /// [`Collection::merge`]; on the shared journal only under the maintenance lease
    /// of epoch `lease`, as [`Collection::flush_as`].
    pub fn merge_as(&self, lease: Option<u64>) -> Result<bool, CollectionError> {
        let _m = self.maintenance.lock().expect("maintenance lock");
        if self.retired.load(std::sync::atomic::Ordering::Acquire) || self.backing_off() {
            return Ok(false);
        }
        let Some(victims) = self.merge_victims() else { return Ok(false) };
        if self.shared.is_some() {
            return match lease {
                Some(epoch) => self.merge_shared(&victims, epoch),
                None => Ok(false),
            };
        }
        let (seq, covered) = {
            let mut w = self.writer.lock().expect("writer lock");
            let seq = w.manifest.next_seq.max(self.wal().seq() + 1);
            w.manifest.next_seq = seq + 1;
            let covered = victims.iter().filter_map(|v| match v.source {
                Source::Segment(s) => w.manifest.published.get(&s).map(|p| p.wal_before),
                Source::Memory { .. } => None,
            });
            (seq, covered.max().unwrap_or(0))
        };
        self.replace(&victims, seq, Some(covered))?;
        Ok(true)
    }

    /// The segments a merge would rewrite now, in snapshot order; `None` when none.
    fn merge_victims(&self) -> Option<Vec<Arc<View>>> {
        let mut segs: Vec<Arc<View>> = self.snapshot.load().views.iter().filter(|v| !v.is_memory()).cloned().collect();
        segs.sort_by_key(|v| v.batch().chunks.len());
        let mut victims: Vec<Arc<View>> = match crowded_tier(&segs) {
            Some(t) => segs.into_iter().filter(|v| tier(v.batch().chunks.len()) == t).collect(),
            None if segs.len() > self.opts.max_segments => {
                let take = segs.len() - self.opts.max_segments + 1;
                segs.into_iter().take(take.max(2)).collect()
            }
            None => return None,
        };
        // Rewritten in the order the snapshot holds them, so documents keep their order
        // (pages tied on every rank are ordered by where they sit).
        let views = self.snapshot.load();
        victims.sort_by_key(|v| views.views.iter().position(|w| Arc::ptr_eq(v, w)));
        Some(victims)
    }

    /// Writes the documents of `old` less those in `deleted` as segment `seq` (data and
    /// BM25 index, synced); returns the ids it left out.
    fn write_segment(&self, old: &[Arc<View>], seq: u64, deleted: &HashSet<String>) -> Result<Vec<String>, CollectionError> {
        let mut batch = Batch::default();
        for v in old {
            batch.extend_from(v.batch(), |id| deleted.contains(id));
        }
        let dropped: Vec<String> =
            old.iter().flat_map(|v| v.batch().docs.iter().map(|d| d.id.as_str().to_owned())).filter(|id| deleted.contains(id)).collect();
        segment::write(&view::segment_path(&self.dir, seq), &batch)?;
        let data = segment::BatchView::open(&view::segment_path(&self.dir, seq))?;
        Bm25::build(data.batch(), &view::bm25_path(&self.dir, seq))?;
        segment::sync_dir(&self.dir.join("segments"))?;
        Ok(dropped)
    }

    /// Uploads the live segments the manifest records no files of; their sums.
    fn upload_unpublished(&self, r: &Remote) -> Result<Vec<(u64, Vec<remote::FileSum>)>, CollectionError> {
        let unpublished: Vec<u64> = {
            let w = self.writer.lock().expect("writer lock");
            w.manifest.segments.iter().copied().filter(|s| w.manifest.published.get(s).is_none_or(|p| p.files.is_empty())).collect()
        };
        let seg_dir = self.dir.join("segments");
        let mut out = Vec::with_capacity(unpublished.len());
        for s in unpublished {
            out.push((s, r.upload(&seg_dir, &[view::segment_path(&self.dir, s), view::bm25_path(&self.dir, s)])?));
        }
        Ok(out)
    }

    /// Whether object storage failed the last publish and its wait has not passed.
    fn backing_off(&self) -> bool {
        self.backoff.lock().expect("backoff lock").is_some_and(|(at, _)| std::time::Instant::now() < at)
    }

    /// Notes how a publish to object storage went: a failure doubles the wait.
    fn published(&self, ok: bool) {
        let mut b = self.backoff.lock().expect("backoff lock");
        *b = match (ok, *b) {
            (true, _) => None,
            (false, prev) => {
                let wait = prev.map_or(std::time::Duration::from_secs(1), |(_, w)| (w * 2).min(std::time::Duration::from_secs(60)));
                Some((std::time::Instant::now() + wait, wait))
            }
        };
    }

    /// Writes the documents of `old` (minus deleted ones) as segment `seq`, then swaps
    /// it in for them: manifest first, then the snapshot, then the old files go. With
    /// object storage the files are uploaded and the bucket's manifest published before
    /// the local one; if either fails, nothing changes and the next round tries again.
    /// `covered` is what a merge's inputs covered of the WAL (a flush covers up to
    /// where replay now starts).
    fn replace(&self, old: &[Arc<View>], seq: u64, covered: Option<u64>) -> Result<(), CollectionError> {
        let deleted = self.writer.lock().expect("writer lock").deleted.clone();
        let dropped = self.write_segment(old, seq, &deleted)?;
        let files = match &self.remote {
            Some(r) => {
                r.upload(&self.dir.join("segments"), &[view::segment_path(&self.dir, seq), view::bm25_path(&self.dir, seq)]).inspect_err(|_| {
                    remove_segment_files(&self.dir, seq);
                    self.published(false);
                })?
            }
            None => Vec::new(),
        };
        // Segments written before the bucket was configured (a data directory that
        // turned `store = "s3"` on without `quarry migrate`) go up with this one, so the
        // manifest published below never names a segment the bucket lacks. (Segments
        // change only under the maintenance lock, which this holds.)
        let legacy = match &self.remote {
            Some(r) => self.upload_unpublished(r).inspect_err(|_| {
                remove_segment_files(&self.dir, seq);
                self.published(false);
            })?,
            None => Vec::new(),
        };
        let new_view = Arc::new(View::segment(&self.dir, seq)?);
        let mut w = self.writer.lock().expect("writer lock");
        for (s, sums) in legacy {
            let wal_from = w.manifest.wal_from;
            w.manifest.published.entry(s).or_insert_with(|| Published { wal_before: wal_from, files: Vec::new() }).files = sums;
        }
        for id in &dropped {
            w.deleted.remove(id);
        }
        let cur = self.snapshot.load();
        let views = swap_in(&cur.views, old, &new_view);
        let mut m = w.manifest.clone();
        m.segments = views
            .iter()
            .filter_map(|v| match v.source {
                Source::Segment(s) => Some(s),
                Source::Memory { .. } => None,
            })
            .collect();
        let mem_from = views.iter().filter_map(|v| match v.source {
            Source::Memory { wal_seq } => Some(wal_seq),
            Source::Segment(_) => None,
        });
        m.wal_from = mem_from.chain(w.in_flight.iter().copied()).chain([self.wal().seq()]).min().expect("non-empty");
        m.tombstones = w.deleted.iter().cloned().collect();
        m.tombstones.sort();
        let gone: Vec<remote::FileSum> = m.published.iter().filter(|(s, _)| !m.segments.contains(s)).flat_map(|(_, p)| p.files.clone()).collect();
        m.published.retain(|s, _| m.segments.contains(s));
        m.published.insert(seq, Published { wal_before: covered.unwrap_or(m.wal_from), files });
        if let Some(r) = &self.remote {
            if let Err(e) = r.put_manifest(m.to_bytes()) {
                drop(w);
                remove_segment_files(&self.dir, seq);
                self.published(false);
                return Err(e);
            }
            self.published(true);
        }
        m.store(&self.dir)?;
        w.manifest = m;
        let dead = views.iter().map(|v| Dead::of(v, &w.deleted)).collect();
        self.snapshot.store(Arc::new(Snapshot { views, dead }));
        let wal_from = w.manifest.wal_from;
        drop(w);
        self.wal().trim(wal_from)?;
        for v in old {
            if let Source::Segment(s) = v.source {
                remove_segment_files(&self.dir, s);
            }
        }
        if let Some(r) = &self.remote {
            // Objects no manifest names any more; one left behind by a failure here is
            // garbage, never a file a reader needs.
            let _ = r.forget(&gone);
        }
        Ok(())
    }
}

/// `quarry migrate`'s half for one collection (its server stopped): every segment its
/// local manifest names is uploaded (each file named by its checksum, so a re-run
/// writes the same objects again) and read back and checked, then the manifest, with
/// the sums, is published in the bucket, read back, and stored locally. Returns the
/// files and bytes it holds in the bucket; a directory with no manifest holds none.
pub fn publish_dir(dir: &Path, remote: &Remote) -> Result<(usize, u64), CollectionError> {
    let Some(mut m) = Manifest::load(dir)? else { return Ok((0, 0)) };
    let seg_dir = dir.join("segments");
    let (mut files, mut bytes) = (0, 0);
    for seq in m.segments.clone() {
        let sums = remote.upload(&seg_dir, &[view::segment_path(dir, seq), view::bm25_path(dir, seq)])?;
        for sum in &sums {
            remote.verify(sum)?;
            files += 1;
            bytes += sum.bytes;
        }
        let wal_from = m.wal_from;
        m.published.entry(seq).or_insert_with(|| Published { wal_before: wal_from, files: Vec::new() }).files = sums;
    }
    let body = m.to_bytes();
    remote.put_manifest(body.clone())?;
    if remote.get_manifest()?.as_deref() != Some(body.as_slice()) {
        return Err(CollectionError::Remote {
            op: "verify",
            at: format!("{}/{}{}", remote.objects.describe(), remote.prefix, remote::MANIFEST_KEY),
            reason: "the manifest read back is not the one written".into(),
        });
    }
    m.store(dir)?;
    Ok((files, bytes))
}

/// Moves a collection kept on local disk onto the shared journal: its WAL's tail
/// flushed into a segment, every segment and the manifest published in the bucket
/// ([`publish_dir`]), that manifest published as generation 1, and the journal's head
/// pointed at it (unless the collection has a journal with writes already, which is
/// then left as it is). `quarry migrate` runs it; so does a node that opens such a
/// collection. Safe to run again.
pub fn adopt_into_journal(
    id: &str,
    dir: &Path,
    opts: Options,
    remote: &Remote,
    journal: &dyn crate::journal::Journal,
) -> Result<(usize, u64), CollectionError> {
    {
        let (c, _) = Collection::open(id, dir, opts)?;
        c.flush()?;
    }
    let published = publish_dir(dir, remote)?;
    let path = dir.join(manifest::FILE);
    let bytes = fs::read(&path).map_err(io("read", &path))?;
    remote.put_manifest_at(1, 0, bytes)?;
    journal.adopt(id, 1).map_err(|reason| CollectionError::Journal { op: "adopt", collection: id.to_owned(), reason })?;
    Ok(published)
}

/// Fetches the files of `m`'s segments that `seg_dir` lacks (an empty disk, a wiped
/// cache) from object storage, each checked against the manifest's sum.
fn fetch_missing(r: &Remote, m: &Manifest, seg_dir: &Path) -> Result<(), CollectionError> {
    for seq in &m.segments {
        for sum in m.published.get(seq).map(|p| p.files.as_slice()).unwrap_or_default() {
            // A file of another size is not the one the manifest names (a segment a
            // crash left half-written, or another writer's of the same name).
            if !fs::metadata(seg_dir.join(&sum.name)).is_ok_and(|f| f.len() == sum.bytes) {
                r.fetch(sum, seg_dir)?;
            }
        }
    }
    segment::sync_dir(seg_dir)?;
    Ok(())
}

/// A segment's size tier: 0 below 4,000 chunks, then one tier per 4×.
fn tier(chunks: usize) -> u32 {
    let (mut t, mut cap) = (0, 4_000usize);
    while chunks >= cap {
        t += 1;
        cap = cap.saturating_mul(4);
    }
    t
}

/// The lowest tier holding two segments or more.
fn crowded_tier(segs: &[Arc<View>]) -> Option<u32> {
    let mut tiers: Vec<u32> = segs.iter().map(|v| tier(v.batch().chunks.len())).collect();
    tiers.sort_unstable();
    tiers.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// `views` with `old` replaced by `new`, placed where the first of them was.
fn swap_in(views: &[Arc<View>], old: &[Arc<View>], new: &Arc<View>) -> Vec<Arc<View>> {
    let mut out = Vec::with_capacity(views.len());
    let mut inserted = false;
    for v in views {
        if !old.iter().any(|o| Arc::ptr_eq(o, v)) {
            out.push(v.clone());
        } else if !inserted {
            out.push(new.clone());
            inserted = true;
        }
    }
    out
}

/// Removes every file of segment `seq` (data, BM25, graph).
fn remove_segment_files(dir: &Path, seq: u64) {
    let seg_dir = dir.join("segments");
    let prefix = format!("{seq:016}.");
    let Ok(entries) = fs::read_dir(&seg_dir) else { return };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let p = e.path();
            let _ = if p.is_dir() { fs::remove_dir_all(&p) } else { fs::remove_file(&p) };
        }
    }
}

/// Folds the replayed operations into one in-memory batch (adds of documents already
/// in a segment are skipped: a flush may have left their WAL file behind).
fn replay_tail(
    dir: &Path,
    ops: &[Op],
    ids: &mut HashSet<String>,
    deleted: &mut HashSet<String>,
) -> Result<Option<rkyv::util::AlignedVec>, CollectionError> {
    let mut tail = Batch::default();
    let mut any = false;
    for op in ops {
        match op {
            Op::Add(bytes) => {
                let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(bytes.len());
                aligned.extend_from_slice(bytes);
                let view = segment::BatchView::from_bytes(aligned, &dir.join("wal"))?;
                let id = view.batch().docs.first().map(|d| d.id.as_str().to_owned()).unwrap_or_default();
                if ids.insert(id) {
                    tail.extend_from(view.batch(), |_| false);
                    any = true;
                }
            }
            Op::Delete(id) => {
                deleted.insert(id.clone());
            }
        }
    }
    Ok(any.then(|| segment::archive(&tail)))
}

/// Segment files and directories the manifest does not name (a flush or merge that
/// crashed before its manifest landed, or one whose old files were not yet removed).
fn remove_orphans(dir: &Path, m: &Manifest) -> Result<Vec<PathBuf>, CollectionError> {
    let seg_dir = dir.join("segments");
    let mut removed = Vec::new();
    for entry in fs::read_dir(&seg_dir).map_err(io("list", &seg_dir))? {
        let path = entry.map_err(io("list", &seg_dir))?.path();
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        let seq = name.split('.').next().and_then(|s| s.parse::<u64>().ok());
        if seq.is_none_or(|s| !m.segments.contains(&s)) {
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Gives every page its citation: a hash of (collection, document, page n), re-hashed
/// with a counter on a collision, so it is unique within the collection and, once
/// stored, never changes.
fn assign_citations(collection: &str, batch: &mut Batch, taken: &mut HashSet<u32>) {
    let docs = &batch.docs;
    for page in &mut batch.pages {
        let doc = &docs[page.doc as usize].id;
        let mut salt = 0u32;
        loop {
            let c = citation_hash(collection, doc, page.n, salt);
            if taken.insert(c) {
                page.citation = c;
                break;
            }
            salt += 1;
        }
    }
}

pub fn citation_hash(collection: &str, doc: &str, n: u32, salt: u32) -> u32 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(collection.as_bytes());
    h.update([0]);
    h.update(doc.as_bytes());
    h.update([0]);
    h.update(n.to_le_bytes());
    if salt > 0 {
        h.update(salt.to_le_bytes());
    }
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod shared_tests;
