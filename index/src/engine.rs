//! The engine: every collection of this server, opened at start-up and kept in a map
//! swapped atomically, so a search finds its collection without a lock.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::collection::{Collection, CollectionError, Options, Recovery};

pub struct Engine {
    root: PathBuf,
    opts: Options,
    collections: ArcSwap<HashMap<String, Arc<Collection>>>,
    /// Serializes changes to the map.
    changes: Mutex<()>,
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
        fs::create_dir_all(root).map_err(|source| CollectionError::Io { op: "create", path: root.to_owned(), source })?;
        let mut map = HashMap::new();
        let mut report = Vec::new();
        for id in ids {
            let (c, recovery) = Collection::open(id, &root.join(id), opts)?;
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
        let engine = Engine { root: root.to_owned(), opts, collections: ArcSwap::from_pointee(map), changes: Mutex::new(()) };
        Ok((engine, report))
    }

    pub fn get(&self, id: &str) -> Option<Arc<Collection>> {
        self.collections.load().get(id).cloned()
    }

    pub fn create(&self, id: &str) -> Result<Arc<Collection>, CollectionError> {
        let _g = self.changes.lock().expect("engine lock");
        let (c, _) = Collection::open(id, &self.root.join(id), self.opts)?;
        let c = Arc::new(c);
        let mut map = HashMap::clone(&self.collections.load());
        map.insert(id.to_owned(), c.clone());
        self.collections.store(Arc::new(map));
        Ok(c)
    }

    /// Forgets a collection and removes its files.
    pub fn remove(&self, id: &str) -> Result<(), CollectionError> {
        let _g = self.changes.lock().expect("engine lock");
        let mut map = HashMap::clone(&self.collections.load());
        map.remove(id);
        self.collections.store(Arc::new(map));
        let dir = self.root.join(id);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CollectionError::Io { op: "remove", path: dir, source: e }),
            _ => Ok(()),
        }
    }

    pub fn all(&self) -> Vec<Arc<Collection>> {
        self.collections.load().values().cloned().collect()
    }

    /// One round of background work: flush the tails that are big enough (or all of
    /// them when `all_tails`), then merge where there are too many segments.
    pub fn maintain(&self, all_tails: bool) -> Vec<(String, CollectionError)> {
        let mut errors = Vec::new();
        for c in self.all() {
            let flush = if all_tails { c.has_tail() } else { c.wants_flush() };
            if flush {
                if let Err(e) = c.flush() {
                    errors.push((c.id().to_owned(), e));
                }
            }
            if let Err(e) = c.merge() {
                errors.push((c.id().to_owned(), e));
            }
            if let Err(e) = c.attach_graphs() {
                errors.push((c.id().to_owned(), e));
            }
        }
        crate::collection::view::graveyard::empty();
        errors
    }
}
