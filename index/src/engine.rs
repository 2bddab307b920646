//! The engine: every collection of this server, opened at start-up and kept in a map
//! swapped atomically, so a search finds its collection without a lock.
//!
//! With segments in object storage, the local disk is a cache bounded in bytes: past
//! the bound, the background round closes the least recently taken collections whose
//! segments are all published, and drops their segment files (the manifest and WAL
//! stay). The next request that takes one opens it again, fetching and checking its
//! segments. A collection in use is never evicted: its segments are mapped.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::collection::remote::{Objects, Remote};
use crate::collection::{Collection, CollectionError, Options, Recovery};
use crate::journal::Journal;

pub struct Engine {
    root: PathBuf,
    opts: Options,
    collections: ArcSwap<HashMap<String, Arc<Collection>>>,
    /// Serializes changes to the map; holds the collections evicted from the cache
    /// (known, closed, their segments in the bucket only).
    changes: Mutex<HashSet<String>>,
    /// The bucket segments are published in, when they are (`[segments] store = "s3"`).
    objects: Option<Arc<dyn Objects>>,
    /// The shared journal, when the write-ahead log is kept there (a cluster).
    journal: Option<Arc<dyn Journal>>,
    /// Bytes of segment files the local cache keeps at most (0: no bound).
    cache_bytes: u64,
    /// The evicted set's size, read without its lock (which a fetch may hold).
    cold: AtomicU64,
    evictions: AtomicU64,
    reopens: AtomicU64,
    /// Following the shared journal: records behind at the last round's read, whether
    /// that read succeeded, and the maintenance leases held after the last round.
    behind: AtomicU64,
    following: std::sync::atomic::AtomicBool,
    leases: AtomicU64,
}

/// Following the shared journal, for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowStats {
    /// Records other nodes wrote that this one had not applied when it last read the
    /// journal's heads (it applies them right after).
    pub behind: u64,
    /// Whether the last read of the heads succeeded.
    pub following: bool,
    /// Collections whose flushes and merges this node holds the lease of.
    pub leases: u64,
}

/// Where segments are published besides local disk, and how much of them local disk
/// keeps.
pub struct Bucket {
    pub objects: Arc<dyn Objects>,
    /// The local cache's bound in bytes; 0 keeps every segment.
    pub cache_bytes: u64,
    /// The shared journal every collection's write-ahead log is kept in, when it is:
    /// then every node serves every collection ([`crate::journal`]).
    pub journal: Option<Arc<dyn Journal>>,
}

/// The local segment cache, for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheStats {
    /// Segment bytes on local disk over the open collections.
    pub bytes: u64,
    /// The bound (0: none).
    pub bound: u64,
    /// Collections closed with their segments in the bucket only.
    pub cold: u64,
    pub evictions: u64,
    /// Evicted collections opened again (their segments fetched).
    pub reopens: u64,
}

/// What opening one collection reported.
pub struct Opened {
    pub id: String,
    pub recovery: Recovery,
}

impl Engine {
    /// Opens the collections named by `ids` under `root`; directories of collections no
    /// longer recorded (a create or delete cut short) are removed.
    pub fn open<'a>(root: &Path, ids: impl IntoIterator<Item = &'a str>, opts: Options) -> Result<(Engine, Vec<Opened>), CollectionError> {
        Engine::open_with(root, ids, opts, None)
    }

    /// [`Engine::open`] with segments published in a bucket too, each collection under
    /// `collections/<id>/`; a collection this disk lacks is fetched from there.
    pub fn open_with<'a>(
        root: &Path,
        ids: impl IntoIterator<Item = &'a str>,
        opts: Options,
        bucket: Option<Bucket>,
    ) -> Result<(Engine, Vec<Opened>), CollectionError> {
        let (objects, cache_bytes, journal) = match bucket {
            Some(b) => (Some(b.objects), b.cache_bytes, b.journal),
            None => (None, 0, None),
        };
        fs::create_dir_all(root).map_err(|source| CollectionError::Io { op: "create", path: root.to_owned(), source })?;
        let mut map = HashMap::new();
        let mut report = Vec::new();
        for id in ids {
            let (c, recovery) = Collection::open_with(id, &root.join(id), opts, remote_of(&objects, &journal, id))?;
            map.insert(id.to_owned(), Arc::new(c));
            report.push(Opened { id: id.to_owned(), recovery });
        }
        for entry in fs::read_dir(root).map_err(|source| CollectionError::Io { op: "list", path: root.to_owned(), source })? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if !map.contains_key(&name) && entry.path().is_dir() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
        let engine = Engine {
            root: root.to_owned(),
            opts,
            collections: ArcSwap::from_pointee(map),
            changes: Mutex::new(HashSet::new()),
            objects,
            journal,
            cache_bytes,
            cold: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
            behind: AtomicU64::new(0),
            following: std::sync::atomic::AtomicBool::new(false),
            leases: AtomicU64::new(0),
        };
        Ok((engine, report))
    }

    /// Collection `id` if it is open here: a map read, no lock, no I/O. What a
    /// caller on a shard thread tries before [`Engine::get`], whose open of a
    /// collection not held here (evicted, or created on another node) reads the
    /// journal and may fetch segments, and so belongs on the blocking pool.
    pub fn loaded(&self, id: &str) -> Option<Arc<Collection>> {
        let c = self.collections.load().get(id)?.clone();
        c.touch();
        Some(c)
    }

    /// The collection `id`, `None` when there is no such collection. One evicted from
    /// the segment cache is opened again here, its segments fetched from the bucket:
    /// that request waits for them, and fails if the bucket is out of reach.
    pub fn get(&self, id: &str) -> Result<Option<Arc<Collection>>, CollectionError> {
        if let Some(c) = self.loaded(id) {
            return Ok(Some(c));
        }
        let mut cold = self.changes.lock().expect("engine lock");
        if let Some(c) = self.collections.load().get(id) {
            return Ok(Some(c.clone())); // opened while this waited
        }
        let evicted = cold.contains(id);
        // On the shared journal every collection is every node's: one another node
        // created is opened here on its first request.
        let elsewhere = || -> Result<bool, CollectionError> {
            let Some(j) = &self.journal else { return Ok(false) };
            let head = j.head(id).map_err(|reason| CollectionError::Journal { op: "open", collection: id.to_owned(), reason })?;
            Ok(head.is_some())
        };
        if !evicted && !elsewhere()? {
            return Ok(None);
        }
        let (c, _) = Collection::open_with(id, &self.root.join(id), self.opts, remote_of(&self.objects, &self.journal, id))?;
        let c = Arc::new(c);
        let mut map = HashMap::clone(&self.collections.load());
        map.insert(id.to_owned(), c.clone());
        self.collections.store(Arc::new(map));
        if evicted {
            cold.remove(id);
            self.cold.store(cold.len() as u64, Ordering::Relaxed);
            self.reopens.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Some(c))
    }

    pub fn create(&self, id: &str) -> Result<Arc<Collection>, CollectionError> {
        let _g = self.changes.lock().expect("engine lock");
        // A new collection starts from its own empty manifest: nothing to look up in
        // the bucket, so creating one does not wait on object storage.
        let dir = self.root.join(id);
        fs::create_dir_all(&dir).map_err(|source| CollectionError::Io { op: "create", path: dir.clone(), source })?;
        if let Some(j) = &self.journal {
            j.create(id).map_err(|reason| CollectionError::Journal { op: "create", collection: id.to_owned(), reason })?;
        } else if crate::collection::manifest::Manifest::load(&dir)?.is_none() {
            crate::collection::manifest::Manifest::new().store(&dir)?;
        }
        let (c, _) = Collection::open_with(id, &dir, self.opts, remote_of(&self.objects, &self.journal, id))?;
        let c = Arc::new(c);
        let mut map = HashMap::clone(&self.collections.load());
        map.insert(id.to_owned(), c.clone());
        self.collections.store(Arc::new(map));
        Ok(c)
    }

    /// Forgets a collection and removes its files.
    pub fn remove(&self, id: &str) -> Result<(), CollectionError> {
        if let Some(j) = &self.journal {
            j.remove(id).map_err(|reason| CollectionError::Journal { op: "remove", collection: id.to_owned(), reason })?;
        }
        self.forget(id)
    }

    /// Drops collection `id` from this node: its map entry and local files (and its
    /// objects, when it is gone for every node).
    fn forget(&self, id: &str) -> Result<(), CollectionError> {
        let gone = {
            let mut cold = self.changes.lock().expect("engine lock");
            cold.remove(id);
            self.cold.store(cold.len() as u64, Ordering::Relaxed);
            let mut map = HashMap::clone(&self.collections.load());
            let gone = map.remove(id);
            self.collections.store(Arc::new(map));
            gone
        };
        // A flush or merge under way writes into the directory: it ends first, and none
        // starts after (the maintenance loop may hold the collection from before).
        let _retired = gone.as_ref().map(|c| c.retire());
        if let Some(o) = &self.objects {
            // Collection ids are never reused, so objects a failure here leaves behind
            // are garbage no manifest of a live collection names.
            // Off this thread (a request's): listing and deleting take round trips.
            let (o, at) = (o.clone(), prefix(id));
            let _ = std::thread::Builder::new().name("quarry-forget".into()).spawn(move || o.delete_prefix(&at));
        }
        let dir = self.root.join(id);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CollectionError::Io { op: "remove", path: dir, source: e }),
            _ => Ok(()),
        }
    }

    /// The open collections (not those evicted from the segment cache).
    pub fn all(&self) -> Vec<Arc<Collection>> {
        self.collections.load().values().cloned().collect()
    }

    /// How many collections there are, open or evicted.
    pub fn count(&self) -> usize {
        self.collections.load().len() + self.cold.load(Ordering::Relaxed) as usize
    }

    pub fn cache(&self) -> CacheStats {
        let bytes = match self.objects {
            Some(_) => self.all().iter().map(|c| c.segment_bytes()).sum(),
            None => 0,
        };
        CacheStats {
            bytes,
            bound: self.cache_bytes,
            cold: self.cold.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            reopens: self.reopens.load(Ordering::Relaxed),
        }
    }

    /// Evicts the least recently taken collections whose segments are all published
    /// until local segment files fit the bound. One taken within the last second is
    /// kept (a request may be about to map it), and so is one a request holds.
    fn shrink_cache(&self) -> Vec<(String, CollectionError)> {
        let mut errors = Vec::new();
        if self.objects.is_none() || self.cache_bytes == 0 {
            return errors;
        }
        let mut sized: Vec<(u64, u64, Arc<Collection>)> = self.all().into_iter().map(|c| (c.idle_secs(), c.segment_bytes(), c)).collect();
        let mut total: u64 = sized.iter().map(|s| s.1).sum();
        if total <= self.cache_bytes {
            return errors;
        }
        // Longest idle first.
        sized.sort_by_key(|s| std::cmp::Reverse(s.0));
        let candidates: Vec<(String, u64)> =
            sized.iter().filter(|(idle, bytes, _)| *idle >= 1 && *bytes > 0).map(|(_, b, c)| (c.id().to_owned(), *b)).collect();
        drop(sized);
        for (id, bytes) in candidates {
            if total <= self.cache_bytes {
                break;
            }
            match self.evict(&id) {
                Ok(true) => total = total.saturating_sub(bytes),
                Ok(false) => {}
                Err(e) => errors.push((id, e)),
            }
        }
        errors
    }

    /// Closes collection `id` and drops its segment files, if it may go and nothing
    /// but the map holds it. Whether it went.
    fn evict(&self, id: &str) -> Result<bool, CollectionError> {
        let mut cold = self.changes.lock().expect("engine lock");
        let cur = self.collections.load_full();
        let Some(c) = cur.get(id).cloned() else { return Ok(false) };
        if !c.evictable() {
            return Ok(false);
        }
        let mut map = HashMap::clone(&cur);
        map.remove(id);
        drop(cur);
        self.collections.store(Arc::new(map));
        // Sole owner once the map no longer holds it: no request has it, and none can
        // take it again (a request that misses the map waits on this lock).
        match Arc::try_unwrap(c) {
            Ok(c) => {
                // Cold before its files go: if removing them fails part way, the next
                // request opens it again and fetches what is missing.
                cold.insert(id.to_owned());
                self.cold.store(cold.len() as u64, Ordering::Relaxed);
                c.evict()?;
                // Counted once its files are gone: what the counter says has happened.
                self.evictions.fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            Err(c) => {
                let mut map = HashMap::clone(&self.collections.load());
                map.insert(id.to_owned(), c);
                self.collections.store(Arc::new(map));
                Ok(false)
            }
        }
    }

    pub fn follow_stats(&self) -> FollowStats {
        FollowStats {
            behind: self.behind.load(Ordering::Relaxed),
            following: self.following.load(Ordering::Relaxed),
            leases: self.leases.load(Ordering::Relaxed),
        }
    }

    /// Renews the maintenance leases this node holds ([`Journal::keep`]); nothing on a
    /// local WAL.
    pub fn keep_leases(&self) -> Result<(), String> {
        self.journal.as_ref().map_or(Ok(()), |j| j.keep())
    }

    /// Whether collections' write-ahead logs are the shared journal.
    pub fn is_shared(&self) -> bool {
        self.journal.is_some()
    }

    /// One round of following the shared journal: every open collection brought up
    /// to its head (one read for all of them), and those deleted on another node
    /// dropped here. The error of the heads' read, or each collection's.
    pub fn follow(&self) -> Result<Vec<(String, CollectionError)>, CollectionError> {
        let Some(j) = &self.journal else { return Ok(Vec::new()) };
        let heads = j.heads().map_err(|reason| {
            self.following.store(false, Ordering::Relaxed);
            CollectionError::Journal { op: "follow", collection: "*".into(), reason }
        })?;
        self.following.store(true, Ordering::Relaxed);
        let all = self.all();
        let behind = all.iter().filter_map(|c| heads.get(c.id()).map(|h| h.lsn.saturating_sub(c.applied()))).sum();
        self.behind.store(behind, Ordering::Relaxed);
        let mut errors = Vec::new();
        for c in all {
            let result = match heads.get(c.id()) {
                Some(head) => c.follow(*head),
                // Created after the read, by this node: not gone.
                None if c.applied() == 0 && c.snapshot().views.is_empty() => continue,
                None => self.forget(c.id()),
            };
            if let Err(e) = result {
                errors.push((c.id().to_owned(), e));
            }
        }
        Ok(errors)
    }

    /// One round of background work: flush the tails that are big enough (or all of
    /// them when `all_tails`), then merge where there are too many segments. On the
    /// shared journal, only for the collections whose maintenance lease this node
    /// holds (taken here when free).
    pub fn maintain(&self, all_tails: bool) -> Vec<(String, CollectionError)> {
        let mut errors = Vec::new();
        let mut held = 0;
        for c in self.all() {
            let flush = if all_tails { c.has_tail() } else { c.wants_flush() };
            let lease = match &self.journal {
                None => None,
                Some(j) => match j.lease(c.id()) {
                    Ok(Some(epoch)) => {
                        held += 1;
                        Some(epoch)
                    }
                    Ok(None) => continue, // another node's to do
                    Err(reason) => {
                        errors.push((c.id().to_owned(), CollectionError::Journal { op: "lease", collection: c.id().to_owned(), reason }));
                        continue;
                    }
                },
            };
            if flush {
                if let Err(e) = c.flush_as(lease) {
                    errors.push((c.id().to_owned(), e));
                }
            }
            if let Err(e) = c.merge_as(lease) {
                errors.push((c.id().to_owned(), e));
            }
            if let Err(e) = c.attach_graphs() {
                errors.push((c.id().to_owned(), e));
            }
        }
        self.leases.store(held, Ordering::Relaxed);
        crate::collection::view::graveyard::empty();
        // The cache is sized by reading the directories: once per flush interval, not
        // every round.
        if all_tails {
            errors.extend(self.shrink_cache());
        }
        errors
    }
}

/// A collection's key prefix in the bucket.
fn prefix(id: &str) -> String {
    format!("collections/{id}/")
}

fn remote_of(objects: &Option<Arc<dyn Objects>>, journal: &Option<Arc<dyn Journal>>, id: &str) -> Option<Remote> {
    objects.as_ref().map(|o| Remote { journal: journal.clone(), ..remote(o, id) })
}

/// Collection `id`'s place in the bucket.
pub fn remote(objects: &Arc<dyn Objects>, id: &str) -> Remote {
    Remote { objects: objects.clone(), prefix: prefix(id), journal: None }
}
