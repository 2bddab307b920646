//! `quarry ingest`: bulk ingest from the command line. Sends a directory of files or a JSONL /
//! BEIR corpus to a running server through its public API, as any client would, so what it
//! stores is exactly what an add stores.
//!
//! Each document carries a stable id the user gave it (a file's relative path, a record's
//! `_id`) in `metadata.source_id`; a run first lists the collection's documents and passes over
//! every id already there, so re-running after a failure or an interruption sends only what is
//! missing. `concurrency` workers each send one add at a time; rate refusals are waited out
//! (`client`); a document the server refuses is reported with its code and message and the
//! rest go on; only an answer every document would get (a bad key, a missing collection)
//! stops the run. The quality harness (bench/src/quality) loads its corpora through [`run`].

mod client;
mod error;
mod payload;
mod progress;
mod source;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub use client::Created;
pub use error::IngestError;
pub use payload::{Field, SOURCE_ID};
pub use progress::ProgressMode;
pub use source::{Input, Record};

use client::{Answer, Client};
use payload::Body;
use progress::Progress;
use source::{Feed, Job, Work};

/// The collection to add to.
#[derive(Debug, Clone)]
pub enum Target {
    Existing(String),
    /// Created with this name (and this embedder, else the server's default); its id is
    /// in the summary.
    Create {
        name: String,
        embedder: Option<String>,
    },
}

/// Told `(documents done, documents in the input)` as each document finishes.
pub type Observer = Arc<dyn Fn(u64, u64) + Send + Sync>;

pub struct Options {
    /// `http://HOST:PORT`.
    pub server: String,
    pub key: String,
    pub collection: Target,
    pub input: Input,
    /// Adds in flight at once.
    pub concurrency: usize,
    pub progress: ProgressMode,
    /// The longest one document keeps waiting out rate refusals before it is reported failed.
    pub max_rate_wait: Duration,
    /// For a caller with a display of its own (the quality harness).
    pub observer: Option<Observer>,
}

/// What became of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    Added(Created),
    /// The collection already holds a document with this source id.
    Present,
    /// A file of a format `quarry ingest` does not send.
    Unsupported(String),
    /// Refused by the server (its status, code and message) or before sending.
    Failed(String),
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub source_id: String,
    pub done: Done,
}

/// A finished run: every document's outcome in input order.
#[derive(Debug)]
pub struct Summary {
    pub collection: String,
    pub outcomes: Vec<Outcome>,
    /// Input bytes handled.
    pub bytes: u64,
    pub elapsed: Duration,
    /// Rate refusals (and overloads) waited out.
    pub rate_limited: u64,
}

/// Adds every document of `options.input` not already in the collection.
pub fn run(options: Options) -> Result<Summary, IngestError> {
    let client = Client::new(&options.server, &options.key, options.max_rate_wait)?;
    let (collection, present) = match options.collection {
        Target::Existing(id) => {
            let present = client.source_ids(&id)?;
            (id, present)
        }
        Target::Create { name, embedder } => (client.create_collection(&name, embedder.as_deref())?, HashSet::new()),
    };
    let feed = options.input.open()?;
    let total = feed.total_docs;
    let progress = Progress::new(options.progress, feed.total_docs, feed.total_bytes);
    let started = Instant::now();
    let shared = Shared {
        client: &client,
        collection: &collection,
        present: &present,
        progress: &progress,
        observer: options.observer.as_deref(),
        done: Mutex::new(0),
        total,
        feed: Mutex::new(feed),
        stop: AtomicBool::new(false),
        fatal: Mutex::new(None),
        outcomes: Mutex::new(Vec::new()),
    };
    thread::scope(|scope| {
        for _ in 0..options.concurrency.max(1) {
            scope.spawn(|| shared.work());
        }
    });
    progress.finish();
    if let Some(e) = shared.fatal.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let mut outcomes = shared.outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    outcomes.sort_unstable_by_key(|(index, _, _)| *index);
    let bytes = outcomes.iter().map(|(_, bytes, _)| bytes).sum();
    let outcomes = outcomes.into_iter().map(|(_, _, outcome)| outcome).collect();
    Ok(Summary { collection, outcomes, bytes, elapsed: started.elapsed(), rate_limited: client.waited_out() })
}

/// What the workers share.
struct Shared<'a> {
    client: &'a Client,
    collection: &'a str,
    present: &'a HashSet<String>,
    progress: &'a Progress,
    observer: Option<&'a (dyn Fn(u64, u64) + Send + Sync)>,
    /// Documents finished, for the observer.
    done: Mutex<u64>,
    total: u64,
    feed: Mutex<Feed>,
    stop: AtomicBool,
    fatal: Mutex<Option<IngestError>>,
    /// (input index, input bytes, outcome).
    outcomes: Mutex<Vec<(usize, u64, Outcome)>>,
}

impl Shared<'_> {
    /// Takes jobs until the input ends or the run is stopped.
    fn work(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            let next = self.feed.lock().unwrap_or_else(|e| e.into_inner()).next_job();
            let result = match next {
                None => return,
                Some(job) => job.and_then(|job| self.handle(&job).map(|done| (job, done))),
            };
            match result {
                Ok((job, done)) => self.record(job, done),
                Err(e) => return self.fail(e),
            }
        }
    }

    fn handle(&self, job: &Job) -> Result<Done, IngestError> {
        if !matches!(job.work, Work::Invalid(_)) && self.present.contains(&job.source_id) {
            return Ok(Done::Present);
        }
        let record = match &job.work {
            Work::Unsupported(why) => return Ok(Done::Unsupported(why.clone())),
            Work::Invalid(why) => return Ok(Done::Failed(why.clone())),
            Work::File { path, field } => {
                let bytes = std::fs::read(path).map_err(|source| IngestError::io("reading", path, source))?;
                let Ok(text) = String::from_utf8(bytes) else {
                    return Ok(Done::Failed("the file is not UTF-8 text".into()));
                };
                let title = path.file_stem().and_then(|s| s.to_str());
                let body = Body { title, field: *field, content: &text, metadata: &Default::default(), source_id: &job.source_id };
                return self.send(&body);
            }
            Work::Record(record) => record,
        };
        let body =
            Body { title: record.title.as_deref(), field: Field::Text, content: &record.text, metadata: &record.metadata, source_id: &job.source_id };
        self.send(&body)
    }

    fn send(&self, body: &Body<'_>) -> Result<Done, IngestError> {
        Ok(match self.client.add(self.collection, &body.to_vec())? {
            Answer::Created(created) => Done::Added(created),
            Answer::Refused { status, code, message } => Done::Failed(format!("HTTP {status} {code}: {message}")),
        })
    }

    fn record(&self, job: Job, done: Done) {
        let pages = match &done {
            Done::Added(created) => created.pages,
            Done::Failed(why) => {
                self.progress.report(&format!("quarry ingest: failed {}: {why}", job.source_id));
                0
            }
            Done::Unsupported(why) => {
                self.progress.report(&format!("quarry ingest: skipped {}: {why}", job.source_id));
                0
            }
            Done::Present => 0,
        };
        self.progress.done(job.bytes, pages, |s| match &done {
            Done::Present => s.present += 1,
            Done::Unsupported(_) => s.unsupported += 1,
            Done::Failed(_) => s.failed += 1,
            Done::Added(_) => {}
        });
        let outcome = Outcome { source_id: job.source_id, done };
        self.outcomes.lock().unwrap_or_else(|e| e.into_inner()).push((job.index, job.bytes, outcome));
        if let Some(observe) = self.observer {
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            *done += 1;
            observe(*done, self.total);
        }
    }

    /// Stops every worker; the first error is the run's.
    fn fail(&self, e: IngestError) {
        self.stop.store(true, Ordering::Relaxed);
        self.fatal.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
    }
}

/// Tallies of a run's outcomes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub present: usize,
    pub unsupported: usize,
    pub failed: usize,
    pub pages: u64,
    pub chunks: u64,
    pub chars: u64,
}

impl Summary {
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for outcome in &self.outcomes {
            match &outcome.done {
                Done::Added(created) => {
                    c.added += 1;
                    c.pages += created.pages;
                    c.chunks += created.chunks;
                    c.chars += created.chars;
                }
                Done::Present => c.present += 1,
                Done::Unsupported(_) => c.unsupported += 1,
                Done::Failed(_) => c.failed += 1,
            }
        }
        c
    }

    /// The closing report: the tallies, then every failed document again with its reason.
    pub fn text(&self) -> String {
        let c = self.counts();
        let seconds = self.elapsed.as_secs_f64();
        let mut out = format!(
            "collection {}: {} added ({} pages, {} chunks, {} chars), {} already present, {} skipped (unsupported format), {} failed; \
             {} documents, {} input bytes in {seconds:.1} s ({:.1} documents/s); {} rate refusals waited out\n",
            self.collection,
            c.added,
            c.pages,
            c.chunks,
            c.chars,
            c.present,
            c.unsupported,
            c.failed,
            self.outcomes.len(),
            self.bytes,
            self.outcomes.len() as f64 / seconds.max(1e-3),
            self.rate_limited,
        );
        for outcome in &self.outcomes {
            if let Done::Failed(why) = &outcome.done {
                let _ = writeln!(out, "failed {}: {why}", outcome.source_id);
            }
        }
        out
    }
}
