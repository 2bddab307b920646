//! The engine: every collection of this server, opened at start-up and kept in a map
//! swapped atomically, so a search finds its collection without a lock.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::collection::remote::{Objects, Remote};
use crate::collection::{Collection, CollectionError, Options, Recovery};

pub struct Engine {
    root: PathBuf,
    opts: Options,
    collections: ArcSwap<HashMap<String, Arc<Collection>>>,
    /// Serializes changes to the map.
    changes: Mutex<()>,
    /// The bucket segments are published in, when they are (`[segments] store = "s3"`).
    objects: Option<Arc<dyn Objects>>,
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

    /// [`Engine::open`] with segments published in `objects` too, each collection under
    /// `collections/<id>/`; a collection this disk lacks is fetched from there.
    pub fn open_with<'a>(
        root: &Path,
        ids: impl IntoIterator<Item = &'a str>,
        opts: Options,
        objects: Option<Arc<dyn Objects>>,
    ) -> Result<(Engine, Vec<Opened>), CollectionError> {
        fs::create_dir_all(root).map_err(|source| CollectionError::Io { op: "create", path: root.to_owned(), source })?;
        let mut map = HashMap::new();
        let mut report = Vec::new();
        for id in ids {
            let (c, recovery) = Collection::open_with(id, &root.join(id), opts, remote_of(&objects, id))?;
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
        let engine = Engine { root: root.to_owned(), opts, collections: ArcSwap::from_pointee(map), changes: Mutex::new(()), objects };
        Ok((engine, report))
    }

    pub fn get(&self, id: &str) -> Option<Arc<Collection>> {
        self.collections.load().get(id).cloned()
    }

    pub fn create(&self, id: &str) -> Result<Arc<Collection>, CollectionError> {
        let _g = self.changes.lock().expect("engine lock");
        // A new collection starts from its own empty manifest: nothing to look up in
        // the bucket, so creating one does not wait on object storage.
        let dir = self.root.join(id);
        fs::create_dir_all(&dir).map_err(|source| CollectionError::Io { op: "create", path: dir.clone(), source })?;
        if crate::collection::manifest::Manifest::load(&dir)?.is_none() {
            crate::collection::manifest::Manifest::new().store(&dir)?;
        }
        let (c, _) = Collection::open_with(id, &dir, self.opts, remote_of(&self.objects, id))?;
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

/// A collection's key prefix in the bucket.
fn prefix(id: &str) -> String {
    format!("collections/{id}/")
}

fn remote_of(objects: &Option<Arc<dyn Objects>>, id: &str) -> Option<Remote> {
    objects.as_ref().map(|o| remote(o, id))
}

/// Collection `id`'s place in the bucket.
pub fn remote(objects: &Arc<dyn Objects>, id: &str) -> Remote {
    Remote { objects: objects.clone(), prefix: prefix(id) }
}
