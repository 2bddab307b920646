//! The events of generations running now, process-wide, so a stream, a waiting
//! request or a resumed reader on any shard sees them as they happen. A run appends
//! each event here as it emits it and commits the step's events to the store with
//! the step; a reader takes what the store has after its last id, then what is here
//! after that, then waits for more. An entry lives for one run segment (start or
//! resume to a pause or an end).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::Notify;

/// One SSE event: its id and its `data:` payload.
pub type Event = (u64, Arc<str>);

/// The `data:` of the frame that ends a turn that completed or paused.
pub const DONE: &str = "[DONE]";

#[derive(Default)]
pub struct Log {
    inner: Mutex<Inner>,
    notify: Notify,
}

#[derive(Default)]
struct Inner {
    events: Vec<Event>,
    /// The run segment ended: no event will follow here.
    closed: bool,
}

impl Log {
    pub fn push(&self, seq: u64, data: impl Into<Arc<str>>) {
        self.inner.lock().expect("log lock").events.push((seq, data.into()));
        self.notify.notify_waiters();
    }

    pub fn close(&self) {
        self.inner.lock().expect("log lock").closed = true;
        self.notify.notify_waiters();
    }

    /// The events after `after`, and whether the segment has ended.
    pub fn after(&self, after: u64) -> (Vec<Event>, bool) {
        let inner = self.inner.lock().expect("log lock");
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
                let inner = self.inner.lock().expect("log lock");
                if inner.closed || inner.events.last().is_some_and(|(seq, _)| *seq > after) {
                    return;
                }
            }
            notified.await;
        }
    }
}

static RUNS: LazyLock<Mutex<HashMap<String, Arc<Log>>>> = LazyLock::new(Mutex::default);

/// Registers a run segment of `id`; the returned log is the one readers find.
pub fn open(id: &str) -> Arc<Log> {
    let log = Arc::new(Log::default());
    RUNS.lock().expect("runs lock").insert(id.to_owned(), log.clone());
    log
}

/// The running segment of `id`, if one runs.
pub fn get(id: &str) -> Option<Arc<Log>> {
    RUNS.lock().expect("runs lock").get(id).cloned()
}

/// Ends the segment: readers holding it see it closed; new readers read the store.
pub fn finish(id: &str, log: &Arc<Log>) {
    let mut runs = RUNS.lock().expect("runs lock");
    if runs.get(id).is_some_and(|l| Arc::ptr_eq(l, log)) {
        runs.remove(id);
    }
    drop(runs);
    log.close();
}

/// How many run segments are live (metrics, tests).
pub fn running() -> usize {
    RUNS.lock().expect("runs lock").len()
}

/// Whether `data` ends a stream: `[DONE]` or an error frame.
pub fn terminal(data: &str) -> bool {
    data == DONE || data.starts_with("{\"error\"")
}
