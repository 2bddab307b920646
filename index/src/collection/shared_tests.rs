//! The shared journal's rules, on an in-memory journal and bucket: two "nodes" are two
//! copies of one collection in their own directories.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::remote::{Objects, Remote};
use super::tests::doc;
use super::*;
use crate::journal::{Head, Journal, PublishError};

/// Objects in memory; `gate`, when set, holds the next manifest's upload: it says
/// "uploading" on the first channel and waits for the second.
#[derive(Default)]
struct Bucket(Mutex<HashMap<String, Vec<u8>>>, Gate);

type Gate = Mutex<Option<(Sender<()>, Receiver<()>)>>;

impl Objects for Bucket {
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String> {
        if key.contains("manifests/") {
            let gate = self.1.lock().unwrap().take();
            if let Some((uploading, go_on)) = gate {
                uploading.send(()).unwrap();
                go_on.recv().unwrap();
            }
        }
        self.0.lock().unwrap().insert(key.into(), bytes);
        Ok(())
    }
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.0.lock().unwrap().get(key).cloned())
    }
    fn delete(&self, key: &str) -> Result<(), String> {
        self.0.lock().unwrap().remove(key);
        Ok(())
    }
    fn delete_prefix(&self, prefix: &str) -> Result<(), String> {
        self.0.lock().unwrap().retain(|k, _| !k.starts_with(prefix));
        Ok(())
    }
    fn describe(&self) -> String {
        "memory".into()
    }
}

/// One journal: heads, records, and the lease (holder, epoch).
#[derive(Default)]
struct Shared {
    heads: HashMap<String, Head>,
    records: HashMap<String, Vec<(u64, Vec<u8>)>>,
    lease: Option<(String, u64)>,
}

/// A node's handle on the one journal.
struct Node {
    name: String,
    j: Arc<Mutex<Shared>>,
}

impl Journal for Node {
    fn create(&self, id: &str) -> Result<(), String> {
        self.j.lock().unwrap().heads.entry(id.into()).or_default();
        Ok(())
    }
    fn remove(&self, id: &str) -> Result<(), String> {
        self.j.lock().unwrap().heads.remove(id);
        Ok(())
    }
    fn append(&self, id: &str, records: &[Vec<u8>]) -> Result<u64, String> {
        let mut j = self.j.lock().unwrap();
        let head = j.heads.get_mut(id).ok_or("no journal")?;
        let first = head.lsn + 1;
        head.lsn += records.len() as u64;
        let last = head.lsn;
        let log = j.records.entry(id.into()).or_default();
        log.extend(records.iter().enumerate().map(|(i, r)| (first + i as u64, r.clone())));
        Ok(last)
    }
    fn read(&self, id: &str, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let j = self.j.lock().unwrap();
        Ok(j.records.get(id).map(|l| l.iter().filter(|r| r.0 > after).take(limit).cloned().collect()).unwrap_or_default())
    }
    fn head(&self, id: &str) -> Result<Option<Head>, String> {
        Ok(self.j.lock().unwrap().heads.get(id).copied())
    }
    fn heads(&self) -> Result<HashMap<String, Head>, String> {
        Ok(self.j.lock().unwrap().heads.clone())
    }
    fn lease(&self, _id: &str) -> Result<Option<u64>, String> {
        let mut j = self.j.lock().unwrap();
        match &j.lease {
            Some((h, e)) if *h == self.name => Ok(Some(*e)),
            Some(_) => Ok(None),
            None => {
                j.lease = Some((self.name.clone(), 1));
                Ok(Some(1))
            }
        }
    }
    fn publish(&self, id: &str, epoch: u64, from: u64, to: u64, covered: u64) -> Result<(), PublishError> {
        let mut j = self.j.lock().unwrap();
        if j.lease != Some((self.name.clone(), epoch)) {
            return Err(PublishError::Fenced(id.into()));
        }
        let head = j.heads.get_mut(id).unwrap();
        if head.manifest != from {
            return Err(PublishError::Moved(id.into()));
        }
        head.manifest = to;
        head.publisher = epoch;
        head.covered = head.covered.max(covered);
        if let Some(l) = j.records.get_mut(id) {
            l.retain(|r| r.0 > covered);
        }
        Ok(())
    }
    fn adopt(&self, id: &str, gen: u64) -> Result<bool, String> {
        let mut j = self.j.lock().unwrap();
        let head = j.heads.entry(id.into()).or_default();
        if head.lsn > 0 || head.manifest > 0 {
            return Ok(false);
        }
        head.manifest = gen;
        Ok(true)
    }
    fn describe(&self) -> String {
        "memory journal".into()
    }
}

struct World {
    bucket: Arc<Bucket>,
    j: Arc<Mutex<Shared>>,
    dirs: Vec<tempfile::TempDir>,
}

impl World {
    fn new() -> World {
        let j = Arc::new(Mutex::new(Shared::default()));
        Node { name: "a".into(), j: j.clone() }.create("col").unwrap();
        World { bucket: Arc::new(Bucket::default()), j, dirs: Vec::new() }
    }

    /// Node `name`'s copy of the collection, in a new directory.
    fn open(&mut self, name: &str) -> Collection {
        let dir = tempfile::tempdir().unwrap();
        let journal: Arc<dyn Journal> = Arc::new(Node { name: name.into(), j: self.j.clone() });
        let remote = Remote { objects: self.bucket.clone(), prefix: "collections/col/".into(), journal: Some(journal) };
        let (c, _) = Collection::open_with("col", dir.path(), Options::default(), Some(remote)).unwrap();
        self.dirs.push(dir);
        c
    }

    fn head(&self) -> Head {
        self.j.lock().unwrap().heads["col"]
    }

    /// Node `name` takes the collection's maintenance lease: its epoch.
    fn lease(&self, name: &str) -> u64 {
        Node { name: name.into(), j: self.j.clone() }.lease("col").unwrap().unwrap()
    }

    /// Holds the next manifest upload: the receiver hears when it starts; a send on
    /// the sender lets it go on.
    fn hold_the_next_manifest_upload(&self) -> (Receiver<()>, Sender<()>) {
        let (uploading_tx, uploading) = channel();
        let (go_on, go_on_rx) = channel();
        *self.bucket.1.lock().unwrap() = Some((uploading_tx, go_on_rx));
        (uploading, go_on)
    }

    fn pass_lease_to(&self, name: &str) {
        let mut j = self.j.lock().unwrap();
        let epoch = j.lease.as_ref().map_or(0, |l| l.1) + 1;
        j.lease = Some((name.into(), epoch));
    }
}

/// Adds documents d0 … d{n-1}, each the one word "stone".
fn stones(c: &Collection, n: usize) {
    for i in 0..n {
        c.add(doc(&format!("d{i}"), &["stone"])).unwrap();
    }
}

fn ids(c: &Collection) -> Vec<String> {
    let s = c.snapshot();
    let mut v: Vec<String> = s.docs().map(|at| s.doc(at).id.as_str().to_owned()).collect();
    v.sort();
    v
}

#[test]
fn a_write_on_one_node_is_applied_on_the_other_in_order() {
    let mut w = World::new();
    let (a, b) = (w.open("a"), w.open("b"));
    assert_eq!(a.add(doc("d1", &["granite"])).unwrap(), 1);
    assert_eq!(b.add(doc("d2", &["marble"])).unwrap(), 2, "b applies a's record before its own");
    assert_eq!(ids(&b), ["d1", "d2"]);
    assert_eq!(ids(&a), ["d1"], "a has not followed yet");
    a.follow(w.head()).unwrap();
    assert_eq!(ids(&a), ["d1", "d2"]);
    assert_eq!(b.delete("d1").unwrap(), 3);
    assert!(a.wait_for(3).unwrap());
    assert_eq!(ids(&a), ["d2"]);
    assert!(!a.wait_for(99).unwrap(), "a write the journal never had");
    // Citations agree on both copies: they travel in the record.
    let cite = |c: &Collection| c.snapshot().views.iter().flat_map(|v| v.batch().pages.iter().map(|p| p.citation.to_native())).collect::<Vec<_>>();
    assert_eq!(cite(&a), cite(&b));
}

#[test]
fn the_same_id_added_on_two_nodes_is_taken_once_and_refused_once() {
    let mut w = World::new();
    let (a, b) = (w.open("a"), w.open("b"));
    // b has not applied a's add when it checks the id: its record is journaled (LSN 2)
    // and applies as nothing, on b and on a alike; b's caller is refused.
    a.add(doc("first", &["from a"])).unwrap();
    assert!(matches!(b.add(doc("first", &["from b"])), Err(CollectionError::DuplicateId(_))));
    assert_eq!(w.head().lsn, 2, "the refused add is in the journal");
    a.follow(w.head()).unwrap();
    assert_eq!((ids(&a), ids(&b)), (vec!["first".to_owned()], vec!["first".to_owned()]));
    // Both checked the id before either record was applied: the journal orders them,
    // the first applies on every node, the second applies as nothing and is refused.
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| a.add(doc("same", &["from a"])));
        let hb = s.spawn(|| b.add(doc("same", &["from b"])));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    let refused = [&ra, &rb].iter().filter(|r| matches!(r, Err(CollectionError::DuplicateId(_)))).count();
    assert_eq!((ra.is_ok() as u8 + rb.is_ok() as u8, refused), (1, 1), "{ra:?} {rb:?}");
    a.follow(w.head()).unwrap();
    b.follow(w.head()).unwrap();
    assert_eq!((ids(&a), ids(&b)), (vec!["first".to_owned(), "same".to_owned()], vec!["first".to_owned(), "same".to_owned()]));
    let text =
        |c: &Collection| c.snapshot().views.iter().flat_map(|v| v.batch().pages.iter().map(|p| p.text.as_str().to_owned())).collect::<Vec<_>>();
    assert_eq!(text(&a), text(&b), "the same document won on both");
}

#[test]
fn only_the_lease_holder_flushes_and_a_replaced_holder_is_fenced() {
    let mut w = World::new();
    let (a, b) = (w.open("a"), w.open("b"));
    stones(&a, 5);
    b.follow(w.head()).unwrap();
    // a takes the lease; b, without it, does not flush.
    let epoch = w.lease("a");
    assert!(!b.flush_as(None).unwrap());
    assert!(a.flush_as(Some(epoch)).unwrap());
    let h = w.head();
    assert_eq!((h.manifest, h.covered, h.lsn), (1, 5, 5));
    assert!(w.j.lock().unwrap().records["col"].is_empty(), "records the manifest covers are dropped");
    // b follows: the segment replaces its tail, nothing twice, nothing lost.
    b.add(doc("d5", &["stone"])).unwrap();
    b.follow(w.head()).unwrap();
    assert_eq!(ids(&b), ["d0", "d1", "d2", "d3", "d4", "d5"]);
    assert!(!b.snapshot().views[0].is_memory());
    assert_eq!(b.snapshot().views.iter().filter(|v| v.is_memory()).count(), 1, "only d5 is still a record");

    // a stalls; the lease passes to b, which flushes; a's late flush is refused and
    // changes nothing.
    a.follow(w.head()).unwrap();
    w.pass_lease_to("b");
    let err = a.flush_as(Some(epoch)).unwrap_err();
    assert!(matches!(err, CollectionError::Journal { .. }), "{err:?}");
    assert_eq!(w.head().manifest, 1, "the fenced flush moved nothing");
    assert!(b.flush_as(Some(2)).unwrap());
    let h = w.head();
    assert_eq!((h.manifest, h.covered), (2, 6));
    a.follow(w.head()).unwrap();
    assert_eq!(ids(&a), ids(&b));

    // A node on an empty disk: the bucket's segments and the journal's records.
    a.delete("d0").unwrap();
    a.add(doc("d6", &["stone"])).unwrap();
    let c = w.open("c");
    assert_eq!(ids(&c), ["d1", "d2", "d3", "d4", "d5", "d6"]);
    assert_eq!(c.applied(), w.head().lsn);
}

#[test]
fn a_node_that_missed_a_publish_takes_the_manifest_and_then_the_rest() {
    let mut w = World::new();
    let (a, b) = (w.open("a"), w.open("b"));
    stones(&a, 3);
    let epoch = w.lease("a");
    a.flush_as(Some(epoch)).unwrap();
    a.add(doc("d3", &["stone"])).unwrap();
    // b never saw records 1-3, which are gone from the journal: it reads the manifest.
    assert_eq!(b.applied(), 0);
    assert!(b.wait_for(4).unwrap());
    assert_eq!(ids(&b), ["d0", "d1", "d2", "d3"]);
}

/// A publish's manifest upload holds no lock a writer needs: an add and a delete on
/// the publishing node answer while the upload is under way, and neither is lost to
/// the manifest made before them, on this node, on a follower, or on an empty disk.
#[test]
fn writes_during_a_manifest_upload_answer_at_once_and_are_kept() {
    let mut w = World::new();
    let (a, b) = (w.open("a"), w.open("b"));
    stones(&a, 3);
    let epoch = w.lease("a");
    let (uploading, go_on) = w.hold_the_next_manifest_upload();
    std::thread::scope(|s| {
        let flush = s.spawn(|| a.flush_as(Some(epoch)));
        uploading.recv_timeout(Duration::from_secs(10)).expect("the flush uploads its manifest");
        let (done_tx, done) = channel();
        let a = &a;
        s.spawn(move || {
            let added = a.add(doc("late", &["stone"]));
            let deleted = a.delete("d1");
            done_tx.send((added, deleted)).unwrap();
        });
        let answered = done.recv_timeout(Duration::from_secs(5));
        go_on.send(()).unwrap();
        let (added, deleted) = answered.expect("an add and a delete answer while the manifest uploads");
        assert_eq!((added.unwrap(), deleted.unwrap()), (4, 5));
        assert!(flush.join().unwrap().unwrap(), "the flush lands");
    });
    let h = w.head();
    assert_eq!((h.manifest, h.covered, h.lsn), (1, 3, 5), "the manifest covers the three adds before it");
    let want = ["d0", "d2", "late"];
    assert_eq!(ids(&a), want);
    b.follow(w.head()).unwrap();
    assert_eq!(ids(&b), want);
    assert_eq!(ids(&w.open("c")), want, "an empty disk: the manifest, then the delete and the add after it");
}

/// A collection removed while its flush is under way: the removal waits for the flush
/// (which writes into its directory) and no flush or merge runs on it after, so its
/// directory goes whole (the A/B harness saw `Directory not empty` and a 500).
#[test]
fn a_removal_waits_for_a_flush_under_way_and_none_runs_after() {
    let mut w = World::new();
    let a = w.open("a");
    stones(&a, 3);
    let epoch = w.lease("a");
    let (uploading, go_on) = w.hold_the_next_manifest_upload();
    std::thread::scope(|s| {
        let a = &a;
        let flush = s.spawn(move || a.flush_as(Some(epoch)));
        uploading.recv_timeout(Duration::from_secs(10)).expect("the flush uploads its manifest");
        let (removed_tx, removed) = channel();
        s.spawn(move || {
            let _retired = a.retire();
            removed_tx.send(std::fs::remove_dir_all(a.dir())).unwrap();
        });
        assert!(removed.recv_timeout(Duration::from_millis(300)).is_err(), "the removal waits for the flush");
        go_on.send(()).unwrap();
        flush.join().unwrap().unwrap();
        removed.recv_timeout(Duration::from_secs(10)).unwrap().expect("the directory goes whole");
    });
    a.add(doc("late", &["stone"])).unwrap();
    assert_eq!((a.flush_as(Some(epoch)).unwrap(), a.merge_as(Some(epoch)).unwrap()), (false, false), "nothing runs on a retired copy");
    assert!(!a.dir().exists());
}
