//! A collection whose write-ahead log is the shared journal ([`crate::journal`]):
//! what it does differently from one with a local WAL.
//!
//! - Opening takes the manifest the journal's head points at (from the bucket) and
//!   applies the records after what it covers.
//! - `add` and `delete` append a record (group commit), then apply every record up to
//!   theirs in LSN order; the outcome of their own record (an add whose id a lower LSN
//!   took applies as nothing) is what they answer.
//! - [`Collection::follow`] brings the copy up to a head the engine read: a moved
//!   manifest is swapped in, then the records after it are applied.
//! - Flush and merge run only on the node holding the collection's maintenance lease,
//!   and land by [`Journal::publish`], fenced by that lease's epoch.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::journal::{Group, Head, Journal, PublishError};
use crate::segment::{self, Batch};
use crate::wal::{self, Op};

use super::manifest::{Manifest, Published};
use super::remote::Remote;
use super::view::{Dead, Source, View};
use super::{Collection, CollectionError, Snapshot};

/// Records read from the journal per round trip while catching up.
const READ_PAGE: usize = 512;
/// Outcomes of recent adds kept for the writers that wait on them.
const OUTCOMES: usize = 8192;

pub(super) struct Shared {
    pub journal: Arc<dyn Journal>,
    group: Group,
    /// What is applied; held while records are applied or a manifest swapped in, so
    /// they happen in LSN order.
    state: Mutex<Applied>,
    /// `state.lsn`, read without the lock.
    applied: AtomicU64,
    /// The generation of the manifest copy on local disk (for operators: the journal
    /// is the truth), so a copy written late never replaces a newer one.
    local: Mutex<u64>,
}

struct Applied {
    lsn: u64,
    /// The generation of the manifest the segments come from, and its publisher's
    /// lease epoch.
    manifest: u64,
    publisher: u64,
    covered: u64,
    /// (LSN, whether the add took effect) of recent adds, oldest first.
    outcomes: VecDeque<(u64, bool)>,
}

fn journal_error(op: &'static str, id: &str, reason: String) -> CollectionError {
    CollectionError::Journal { op, collection: id.to_owned(), reason }
}

impl Shared {
    pub fn new(journal: Arc<dyn Journal>) -> Shared {
        let state = Applied { lsn: 0, manifest: 0, covered: 0, publisher: 0, outcomes: VecDeque::new() };
        Shared { journal, group: Group::default(), state: Mutex::new(state), applied: AtomicU64::new(0), local: Mutex::new(0) }
    }
}

/// The published manifest `head` points at (a new one when there is none yet).
pub(super) fn manifest_at(remote: &Remote, head: Head, dir: &std::path::Path) -> Result<Manifest, CollectionError> {
    if head.manifest == 0 {
        return Ok(Manifest::new());
    }
    let bytes = remote.get_manifest_at(head.manifest, head.publisher)?.ok_or_else(|| CollectionError::Remote {
        op: "read",
        at: format!("{}/{}{}", remote.objects.describe(), remote.prefix, super::remote::manifest_key(head.manifest, head.publisher)),
        reason: "the manifest the journal points at is missing".into(),
    })?;
    Manifest::parse(&bytes, &dir.join(super::manifest::FILE))
}

impl Collection {
    fn shared(&self) -> &Shared {
        self.shared.as_ref().expect("a collection on the shared journal")
    }

    fn state(&self) -> MutexGuard<'_, Applied> {
        self.shared().state.lock().expect("journal state lock")
    }

    /// Keeps `m` (generation `gen`) as the local copy of the manifest, unless a newer
    /// one is kept already.
    fn keep_local(&self, m: &Manifest, gen: u64) -> Result<(), CollectionError> {
        let mut local = self.shared().local.lock().expect("local manifest lock");
        if gen < *local {
            return Ok(());
        }
        m.store(&self.dir)?;
        *local = gen;
        Ok(())
    }

    /// The last journal record this node applied (0 on a local WAL).
    pub fn applied(&self) -> u64 {
        self.shared.as_ref().map_or(0, |s| s.applied.load(Ordering::Acquire))
    }

    /// Whether its log is the shared journal.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// After opening: the manifest generation and coverage the segments came from.
    pub(super) fn start_shared(&self, head: Head) -> Result<(), CollectionError> {
        *self.shared().local.lock().expect("local manifest lock") = head.manifest; // stored by the open
        let mut st = self.state();
        st.manifest = head.manifest;
        st.covered = head.covered;
        st.publisher = head.publisher;
        st.lsn = head.covered;
        self.shared().applied.store(st.lsn, Ordering::Release);
        self.catch_up(&mut st, head.lsn, None)
    }

    pub(super) fn add_shared(&self, mut batch: Batch) -> Result<u64, CollectionError> {
        let doc_id = batch.docs.first().map(|d| d.id.clone()).unwrap_or_default();
        batch.check_windows().map_err(|reason| CollectionError::Corrupt { path: self.dir.clone(), reason })?;
        let record = {
            let mut w = self.writer.lock().expect("writer lock");
            w.load(&self.snapshot.load());
            if w.ids().contains(&doc_id) {
                return Err(CollectionError::DuplicateId(doc_id));
            }
            super::assign_citations(&self.id, &mut batch, w.citations.as_mut().expect("loaded"));
            wal::encode(&Op::Add(segment::archive(&batch).to_vec()))
        };
        let lsn = self.commit(record.clone())?;
        let mut st = self.state();
        self.catch_up(&mut st, lsn, Some((lsn, &record)))?;
        let took = match st.outcomes.binary_search_by_key(&lsn, |o| o.0) {
            Ok(i) => st.outcomes[i].1,
            // Fell out of the window (a very long wait): the document's place says.
            Err(_) => {
                let snap = self.snapshot();
                snap.find(&doc_id).is_some_and(|at| snap.views[at.view].source == Source::Memory { wal_seq: lsn })
            }
        };
        if took {
            Ok(lsn)
        } else {
            Err(CollectionError::DuplicateId(doc_id))
        }
    }

    pub(super) fn delete_shared(&self, doc_id: &str) -> Result<u64, CollectionError> {
        {
            let mut w = self.writer.lock().expect("writer lock");
            w.load(&self.snapshot.load());
            if !w.ids().contains(doc_id) {
                return Err(CollectionError::DocumentNotFound(doc_id.to_owned()));
            }
        }
        let record = wal::encode(&Op::Delete(doc_id.to_owned()));
        let lsn = self.commit(record.clone())?;
        let mut st = self.state();
        self.catch_up(&mut st, lsn, Some((lsn, &record)))?;
        // Another node's delete of the same document may have come first: either way
        // it is gone, as the caller asked.
        Ok(lsn)
    }

    /// Appends one record through the group commit; its LSN once committed.
    fn commit(&self, record: Vec<u8>) -> Result<u64, CollectionError> {
        let s = self.shared();
        let ticket = s.group.push(record);
        s.group.commit(&*s.journal, &self.id, ticket).map_err(|e| journal_error("append", &self.id, e))
    }

    /// Waits until everything up to `lsn` is applied here (reading the journal if
    /// this node is behind): what a read-your-writes request asks for. False when the
    /// journal never held `lsn` (a token of another collection, or made up).
    pub fn wait_for(&self, lsn: u64) -> Result<bool, CollectionError> {
        if self.shared.is_none() || self.applied() >= lsn {
            return Ok(true);
        }
        let head = self.shared().journal.head(&self.id).map_err(|e| journal_error("read", &self.id, e))?;
        if head.is_none_or(|h| h.lsn < lsn) {
            return Ok(false);
        }
        let mut st = self.state();
        self.catch_up(&mut st, lsn, None)?;
        Ok(true)
    }

    /// Brings this copy up to `head` (read by the engine's follower): the manifest
    /// swapped in if it moved, then the records after it.
    pub fn follow(&self, head: Head) -> Result<(), CollectionError> {
        if self.shared.is_none() {
            return Ok(());
        }
        let mut st = self.state();
        // Generations only grow: a head read before this node's own publish is older
        // than what it holds, and changes nothing.
        if head.manifest > st.manifest {
            self.reload(&mut st, head)?;
        }
        self.catch_up(&mut st, head.lsn, None)
    }

    /// Applies the records after `st.lsn` up to `upto` (`own` is a record of this node
    /// that needs no reading back). Records a newer manifest already covers (dropped
    /// from the journal under it) are taken from that manifest instead.
    fn catch_up(&self, st: &mut Applied, upto: u64, own: Option<(u64, &[u8])>) -> Result<(), CollectionError> {
        let s = self.shared();
        while st.lsn < upto {
            let records = match own {
                Some((lsn, bytes)) if lsn == st.lsn + 1 && lsn == upto => vec![(lsn, bytes.to_vec())],
                _ => s.journal.read(&self.id, st.lsn, READ_PAGE).map_err(|e| journal_error("read", &self.id, e))?,
            };
            if records.first().map(|r| r.0) != Some(st.lsn + 1) {
                let head = s.journal.head(&self.id).map_err(|e| journal_error("read", &self.id, e))?;
                match head {
                    Some(h) if h.manifest > st.manifest && h.covered > st.lsn => {
                        self.reload(st, h)?;
                        continue;
                    }
                    _ => {
                        return Err(CollectionError::Corrupt {
                            path: self.dir.clone(),
                            reason: format!("the journal lacks record {} (it holds up to {upto})", st.lsn + 1),
                        })
                    }
                }
            }
            self.apply(st, records)?;
        }
        Ok(())
    }

    /// Applies `records` (consecutive, from `st.lsn + 1`) to the tail in one new
    /// snapshot.
    fn apply(&self, st: &mut Applied, records: Vec<(u64, Vec<u8>)>) -> Result<(), CollectionError> {
        let mut w = self.writer.lock().expect("writer lock");
        w.load(&self.snapshot.load());
        let mut next = Snapshot::clone(&self.snapshot.load());
        for (lsn, record) in records {
            let op = wal::decode_one(&record)
                .map_err(|reason| CollectionError::Corrupt { path: self.dir.clone(), reason: format!("journal record {lsn}: {reason}") })?;
            match op {
                Op::Add(bytes) => {
                    let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(bytes.len());
                    aligned.extend_from_slice(&bytes);
                    let view = Arc::new(View::memory(aligned, lsn, &self.dir)?);
                    let id = view.batch().docs.first().map(|d| d.id.as_str().to_owned()).unwrap_or_default();
                    let took = w.ids().insert(id);
                    if took {
                        let taken = w.citations.as_mut().expect("loaded");
                        taken.extend(view.batch().pages.iter().map(|p| p.citation.to_native()));
                        next.dead.push(Dead::of(&view, &w.deleted));
                        next.views.push(view);
                    }
                    if st.outcomes.len() == OUTCOMES {
                        st.outcomes.pop_front();
                    }
                    st.outcomes.push_back((lsn, took));
                }
                Op::Delete(id) => {
                    if w.ids().remove(&id) {
                        w.deleted.insert(id.clone());
                        for (i, v) in next.views.iter().enumerate() {
                            if v.doc(&id).is_some() {
                                next.dead[i] = Dead::of(v, &w.deleted);
                            }
                        }
                    }
                }
            }
            st.lsn = lsn;
        }
        self.snapshot.store(Arc::new(next));
        self.shared().applied.store(st.lsn, Ordering::Release);
        Ok(())
    }

    /// Swaps in the manifest `head` points at: its segments (fetched if missing)
    /// replace this copy's, and the tail keeps only records after what it covers.
    fn reload(&self, st: &mut Applied, head: Head) -> Result<(), CollectionError> {
        let remote = self.remote.as_ref().expect("a shared collection has a bucket");
        let m = manifest_at(remote, head, &self.dir)?;
        super::fetch_missing(remote, &m, &self.dir.join("segments"))?;
        let cur = self.snapshot.load_full();
        let mut views = Vec::with_capacity(m.segments.len());
        for &seq in &m.segments {
            match cur.views.iter().find(|v| v.source == Source::Segment(seq)) {
                Some(v) => views.push(v.clone()),
                None => views.push(Arc::new(View::segment(&self.dir, seq)?)),
            }
        }
        views.extend(cur.views.iter().filter(|v| matches!(v.source, Source::Memory { wal_seq } if wal_seq > head.covered)).cloned());
        let gone: Vec<u64> = cur
            .views
            .iter()
            .filter_map(|v| match v.source {
                Source::Segment(s) if !m.segments.contains(&s) => Some(s),
                _ => None,
            })
            .collect();
        self.keep_local(&m, head.manifest)?;
        let mut w = self.writer.lock().expect("writer lock");
        let mut deleted: HashSet<String> = w.deleted.drain().chain(m.tombstones.iter().cloned()).collect();
        deleted.retain(|id| views.iter().any(|v| v.doc(id).is_some()));
        w.deleted = deleted;
        w.ids = None;
        w.citations = None;
        w.manifest = m;
        let dead = views.iter().map(|v| Dead::of(v, &w.deleted)).collect();
        self.snapshot.store(Arc::new(Snapshot { views, dead }));
        drop(w);
        drop(cur);
        for s in gone {
            super::remove_segment_files(&self.dir, s);
        }
        st.manifest = head.manifest;
        st.covered = head.covered;
        st.publisher = head.publisher;
        if st.lsn < head.covered {
            st.lsn = head.covered;
            // Outcomes of adds this node never applied are not known here.
            st.outcomes.clear();
        }
        self.shared().applied.store(st.lsn, Ordering::Release);
        Ok(())
    }

    /// Flush on the shared journal: the tail applied so far becomes a segment, published
    /// with the records it covers dropped. Only under the maintenance lease `epoch`.
    pub(super) fn flush_shared(&self, epoch: u64) -> Result<bool, CollectionError> {
        let (tail, covered) = {
            let st = self.state();
            let tail: Vec<Arc<View>> = self.snapshot.load().views.iter().filter(|v| v.is_memory()).cloned().collect();
            (tail, st.lsn)
        };
        if tail.is_empty() {
            return Ok(false);
        }
        self.publish_shared(&tail, epoch, Some(covered))
    }

    /// Merge on the shared journal: as [`Collection::merge`] picks, published under the
    /// maintenance lease `epoch`.
    pub(super) fn merge_shared(&self, victims: &[Arc<View>], epoch: u64) -> Result<bool, CollectionError> {
        self.publish_shared(victims, epoch, None)
    }

    /// Writes `old` (less deleted documents) as one new segment, uploads it and its
    /// manifest (a new generation), and moves the journal's pointer to it, covering up
    /// to `covered` (a flush) or what the last manifest covered (a merge). A lost lease
    /// or a manifest that moved meanwhile leaves everything as it was.
    fn publish_shared(&self, old: &[Arc<View>], epoch: u64, covered: Option<u64>) -> Result<bool, CollectionError> {
        let remote = self.remote.as_ref().expect("a shared collection has a bucket");
        let (base, base_covered, base_publisher) = {
            let st = self.state();
            (st.manifest, st.covered, st.publisher)
        };
        let (seq, deleted) = {
            let mut w = self.writer.lock().expect("writer lock");
            // Each lease epoch numbers its segments in a range of its own: a holder killed
            // mid-publish leaves a file its successor's segment of the same number would
            // otherwise be mistaken for (files are fetched by name).
            let seq = w.manifest.next_seq.max(epoch << 32);
            w.manifest.next_seq = seq + 1;
            (seq, w.deleted.clone())
        };
        let dropped = self.write_segment(old, seq, &deleted)?;
        let seg_dir = self.dir.join("segments");
        let files =
            remote.upload(&seg_dir, &[super::view::segment_path(&self.dir, seq), super::view::bm25_path(&self.dir, seq)]).inspect_err(|_| {
                super::remove_segment_files(&self.dir, seq);
                self.published(false);
            })?;
        let new_view = Arc::new(View::segment(&self.dir, seq)?);
        let covered = covered.unwrap_or(base_covered);

        // The manifest is made and uploaded before the locks the writers need are
        // taken (its upload is a round trip to the bucket). What it is made of does
        // not move meanwhile unless the journal's manifest does, which the swap below
        // checks: its segments change only by a publish (this node's, one at a time
        // under the maintenance lock) or a reload (another node's); and a delete
        // applied after this read has an LSN past `covered`, so it stays in the journal
        // for any reader of this manifest, and joins this copy's tombstones at the swap.
        let (m, gone, before) = {
            let w = self.writer.lock().expect("writer lock");
            let mut views = super::swap_in(&self.snapshot.load().views, old, &new_view);
            views.sort_by_key(|v| v.is_memory());
            let mut m = w.manifest.clone();
            m.segments = views.iter().filter_map(|v| if let Source::Segment(s) = v.source { Some(s) } else { None }).collect();
            let mut tombstones: Vec<String> = w.deleted.iter().filter(|id| !dropped.contains(id)).cloned().collect();
            tombstones.sort();
            m.tombstones = tombstones;
            let gone: Vec<super::remote::FileSum> =
                m.published.iter().filter(|(s, _)| !m.segments.contains(s)).flat_map(|(_, p)| p.files.clone()).collect();
            m.published.retain(|s, _| m.segments.contains(s));
            m.published.insert(seq, Published { wal_before: covered, files });
            m.wal_from = covered;
            let before = m.previous.take();
            m.previous = (base > 0).then_some((base, base_publisher));
            (m, gone, before)
        };
        let gen = base + 1;
        let unpublished = |e: CollectionError| {
            super::remove_segment_files(&self.dir, seq);
            self.published(false);
            e
        };
        remote.put_manifest_at(gen, epoch, m.to_bytes()).map_err(unpublished)?;

        let mut st = self.state();
        if st.manifest != base {
            drop(st);
            // The manifest uploaded is left: its key may be one the journal points at
            // (an earlier publish of this epoch whose commit landed unanswered).
            super::remove_segment_files(&self.dir, seq);
            return Ok(false); // another node published first; the next round starts again
        }
        let mut w = self.writer.lock().expect("writer lock");
        let landed = self.shared().journal.publish(&self.id, epoch, base, gen, covered).map_err(|e| match e {
            PublishError::Unavailable(reason) => journal_error("publish", &self.id, reason),
            e => journal_error("publish", &self.id, e.to_string()),
        });
        if let Err(e) = landed {
            drop(w);
            drop(st);
            return Err(unpublished(e));
        }
        self.published(true);
        let cur = self.snapshot.load_full();
        let mut views = super::swap_in(&cur.views, old, &new_view);
        // A flush's new segment goes after the older segments, before what the tail
        // applied since.
        views.sort_by_key(|v| v.is_memory());
        let mut still: HashSet<String> = w.deleted.clone();
        for id in &dropped {
            still.remove(id);
        }
        w.deleted = still;
        w.manifest = m.clone();
        let dead = views.iter().map(|v| Dead::of(v, &w.deleted)).collect();
        self.snapshot.store(Arc::new(Snapshot { views, dead }));
        drop(w);
        st.manifest = gen;
        st.covered = covered;
        st.publisher = epoch;
        drop(st);
        let _ = self.keep_local(&m, gen);
        for v in old {
            if let Source::Segment(s) = v.source {
                super::remove_segment_files(&self.dir, s);
            }
        }
        let _ = remote.forget(&gone);
        if let Some((gen, epoch)) = before {
            let _ = remote.forget_manifest_at(gen, epoch);
        }
        Ok(true)
    }
}
