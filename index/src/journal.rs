//! The shared journal: a collection's write-ahead log kept on a shared engine
//! (PostgreSQL) instead of local disk, so every node of a cluster serves every
//! collection and losing the node that took a write loses nothing.
//!
//! The model is state-machine replication over one ordered log per collection, as
//! Quickwit's and Elasticsearch's stateless nodes do with their shared translog:
//! - an add or delete is a record appended to the collection's journal, numbered by a
//!   log sequence number (LSN) the engine assigns in commit order; it is acknowledged
//!   once the engine committed it;
//! - every node applies the records in LSN order to its in-memory tail: the node that
//!   took the write right after the commit, the others as they follow the journal's
//!   head. An add whose document id a lower LSN already holds applies as nothing, on
//!   every node alike, and its writer answers 409;
//! - one node at a time (a lease) turns the tail into segments in object storage and
//!   then, in one fenced transaction, moves the collection's manifest pointer and
//!   drops the records the new manifest covers. Other nodes see the pointer move and
//!   swap the covered part of their tail for the published segments.
//!
//! The engine is synchronous and speaks no protocol: [`Journal`] is what it needs of
//! the shared engine, implemented over PostgreSQL by the core crate.

use std::collections::HashMap;
use std::sync::Mutex;

/// A collection's place in the journal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Head {
    /// The last record appended (0: none yet).
    pub lsn: u64,
    /// The published manifest's generation (0: none yet).
    pub manifest: u64,
    /// Records up to this LSN are in the manifest's segments (and dropped from the
    /// journal).
    pub covered: u64,
    /// The lease epoch the manifest was published under: with its generation, what
    /// names its object ([`crate::collection::remote::manifest_key`]).
    pub publisher: u64,
}

/// Why a publish did not land.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The maintenance lease passed to another node (or lapsed): this node's work is
    /// void and nothing changed.
    #[error("the maintenance lease of {0} is no longer this node's")]
    Fenced(String),
    /// Another manifest was published since this one was based on it.
    #[error("the manifest of {0} moved on while this one was built")]
    Moved(String),
    #[error("{0}")]
    Unavailable(String),
}

/// What the engine needs of the shared engine. Each call is one transaction.
pub trait Journal: Send + Sync {
    /// Makes collection `id`'s journal (empty, no manifest); a no-op when it exists.
    fn create(&self, id: &str) -> Result<(), String>;
    /// Drops collection `id`'s journal and head.
    fn remove(&self, id: &str) -> Result<(), String>;
    /// Appends `records` in order and commits them; returns the LSN of the last (the
    /// others precede it one by one). `Err` when the collection has no journal.
    fn append(&self, id: &str, records: &[Vec<u8>]) -> Result<u64, String>;
    /// The records after `after`, in LSN order, at most `limit` of them.
    fn read(&self, id: &str, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, String>;
    /// Collection `id`'s head; `None` when it has no journal.
    fn head(&self, id: &str) -> Result<Option<Head>, String>;
    /// Every collection's head, in one read: what a node follows.
    fn heads(&self) -> Result<HashMap<String, Head>, String>;
    /// Takes or renews this node's lease on collection `id`'s flushes and merges;
    /// `Some(epoch)` while this node holds it.
    fn lease(&self, id: &str) -> Result<Option<u64>, String>;
    /// Renews every lease this node holds, under the epoch it was granted. Called from
    /// the node's heartbeat, not from the maintenance round: a flush that runs long
    /// (at idle priority on a busy machine, or a big upload) keeps its lease while its
    /// node lives, instead of losing it to another node mid-flush, again and again.
    fn keep(&self) -> Result<(), String> {
        Ok(())
    }
    /// Moves the manifest pointer from generation `from` to `to` (published under
    /// `epoch`), covering records up to `covered`, and drops those records, in one
    /// transaction that first checks the lease of `epoch` is still this node's.
    fn publish(&self, id: &str, epoch: u64, from: u64, to: u64, covered: u64) -> Result<(), PublishError>;
    /// Points collection `id`'s head at manifest generation `gen` (published under
    /// epoch 0) when it has no journal yet, or an empty one: a collection whose local
    /// segments were just published whole. False when it has writes of its own.
    fn adopt(&self, id: &str, gen: u64) -> Result<bool, String>;
    /// Where the journal lives, for messages, never a credential.
    fn describe(&self) -> String;
}

/// Group commit over a [`Journal`]: writers queue their records, and whoever commits
/// first takes every record queued so far into one append, so concurrent writers on
/// this node share one round trip and one commit.
#[derive(Default)]
pub struct Group {
    queue: Mutex<Queue>,
    /// Held by the writer committing a group.
    leader: Mutex<()>,
}

#[derive(Default)]
struct Queue {
    next: u64,
    waiting: Vec<(u64, Vec<u8>)>,
    /// Tickets committed (their LSN) or failed, until their writer collects them.
    done: HashMap<u64, Result<u64, String>>,
}

impl Group {
    /// Queues one record; the ticket [`Group::commit`] takes.
    pub fn push(&self, record: Vec<u8>) -> u64 {
        let mut q = self.queue.lock().expect("journal queue lock");
        q.next += 1;
        let ticket = q.next;
        q.waiting.push((ticket, record));
        ticket
    }

    /// Returns once the record of `ticket` is committed, with its LSN.
    pub fn commit(&self, journal: &dyn Journal, id: &str, ticket: u64) -> Result<u64, String> {
        let collect = |q: &mut Queue| q.done.remove(&ticket);
        if let Some(r) = collect(&mut self.queue.lock().expect("journal queue lock")) {
            return r;
        }
        let _leader = self.leader.lock().expect("journal leader lock");
        let batch = {
            let mut q = self.queue.lock().expect("journal queue lock");
            if let Some(r) = collect(&mut q) {
                return r; // a leader before this one took it
            }
            std::mem::take(&mut q.waiting)
        };
        let (tickets, records): (Vec<u64>, Vec<Vec<u8>>) = batch.into_iter().unzip();
        let result = journal.append(id, &records);
        let mut q = self.queue.lock().expect("journal queue lock");
        let n = tickets.len() as u64;
        for (i, t) in tickets.into_iter().enumerate() {
            q.done.insert(t, result.clone().map(|last| last + 1 + i as u64 - n));
        }
        collect(&mut q).expect("this writer's ticket was in the batch")
    }
}
