//! The events of the generations this shard runs now, so a stream, a waiting request
//! or a resumed reader on this shard sees them as they happen. A run appends each
//! event here as it emits it and commits the step's events to the store with the
//! step; a reader takes what the store has after its last id, then what is here after
//! that, then waits for more. An entry lives for one run segment (start or resume to
//! a pause or an end).
//!
//! The registry is the shard's own (a run is a task on its shard, and so is every
//! reader of it here): no lock, nothing shared between cores. A reader on another
//! shard finds no entry and reads the store, which has every event of each step once
//! the step commits (`events::Reader` polls it), so it sees the same events in the
//! same order, a step at a time rather than as they are emitted.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use tokio::sync::Notify;

/// One SSE event: its id and its `data:` payload.
pub type Event = (u64, Rc<str>);

#[derive(Default)]
pub struct Log {
    inner: RefCell<Inner>,
    notify: Notify,
}

#[derive(Default)]
struct Inner {
    events: Vec<Event>,
    /// The run segment ended: no event will follow here.
    closed: bool,
}

impl Log {
    pub fn push(&self, seq: u64, data: impl Into<Rc<str>>) {
        self.inner.borrow_mut().events.push((seq, data.into()));
        self.notify.notify_waiters();
    }

    pub fn close(&self) {
        self.inner.borrow_mut().closed = true;
        self.notify.notify_waiters();
    }

    /// The events after `after`, and whether the segment has ended.
    pub fn after(&self, after: u64) -> (Vec<Event>, bool) {
        let inner = self.inner.borrow();
        let start = inner.events.partition_point(|(seq, _)| *seq <= after);
        (inner.events[start..].to_vec(), inner.closed)
    }

    /// Waits until an event after `after` arrives or the segment ends.
    pub async fn wait(&self, after: u64) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = self.inner.borrow();
                if inner.closed || inner.events.last().is_some_and(|(seq, _)| *seq > after) {
                    return;
                }
            }
            notified.await;
        }
    }
}

thread_local! {
    /// This shard's running segments (each shard is one thread).
    static RUNS: RefCell<HashMap<String, Rc<Log>>> = RefCell::default();
}

/// Registers a run segment of `id`; the returned log is the one readers find.
pub fn open(id: &str) -> Rc<Log> {
    let log = Rc::new(Log::default());
    RUNS.with(|r| r.borrow_mut().insert(id.to_owned(), log.clone()));
    log
}

/// The segment of `id` running on this shard, if one runs here.
pub fn get(id: &str) -> Option<Rc<Log>> {
    RUNS.with(|r| r.borrow().get(id).cloned())
}

/// Ends the segment: readers holding it see it closed; new readers read the store.
pub fn finish(id: &str, log: &Rc<Log>) {
    RUNS.with(|r| {
        let mut runs = r.borrow_mut();
        if runs.get(id).is_some_and(|l| Rc::ptr_eq(l, log)) {
            runs.remove(id);
        }
    });
    log.close();
}

/// How many run segments are live on this shard (metrics, tests).
pub fn running() -> usize {
    RUNS.with(|r| r.borrow().len())
}
