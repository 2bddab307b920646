//! The ingest workers: threads that chunk, embed and log documents, each with its own
//! session of every loaded embedder. They run at SCHED_IDLE, so the kernel gives the shards' searches
//! the CPU whenever both want it: glommio cannot pre-empt a running ort call, the
//! kernel can.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use quarry_index::embed::{EmbedError, Embedder, Model};

/// What a job gets: this worker's sessions, one per loaded embedder in load order
/// (`super::embedders::Loaded`'s slots).
pub struct Worker {
    pub embedders: Vec<Embedder>,
}

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// The job panicked or the pool is gone.
#[derive(Debug)]
pub struct Lost;

pub struct IngestPool {
    tx: mpsc::Sender<Job>,
}

impl IngestPool {
    /// Starts `threads` workers, each opening its own session of every model on its own
    /// thread (side by side: a second model would otherwise add its sessions' time once
    /// per worker to start-up); returns once all have, or with the first failure.
    pub fn start(threads: usize, models: &[Arc<Model>]) -> Result<IngestPool, EmbedError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut opened = Vec::new();
        for i in 0..threads.max(1) {
            let (ready, is_ready) = mpsc::sync_channel(1);
            let (models, rx) = (models.to_vec(), rx.clone());
            thread::Builder::new()
                .name(format!("ingest-{i}"))
                .spawn(move || match models.iter().map(|m| m.embedder()).collect::<Result<Vec<_>, _>>() {
                    Ok(embedders) => {
                        let _ = ready.send(Ok(()));
                        work(Worker { embedders }, &rx)
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                })
                .expect("spawning an ingest thread");
            opened.push(is_ready);
        }
        for r in opened {
            r.recv().expect("an ingest thread says whether its sessions opened")?;
        }
        Ok(IngestPool { tx })
    }

    /// Runs `f` on a worker and returns its result; the calling task yields meanwhile.
    /// `Err` when the job panicked (the worker survives it).
    pub async fn run<R: Send + 'static>(&self, f: impl FnOnce(&mut Worker) -> R + Send + 'static) -> Result<R, Lost> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |w| {
            let _ = reply.send(f(w));
        });
        self.tx.send(job).map_err(|_| Lost)?;
        answer.await.map_err(|_| Lost)
    }
}

fn work(mut w: Worker, rx: &Mutex<mpsc::Receiver<Job>>) {
    crate::sys::set_idle_priority();
    loop {
        let job = match rx.lock().expect("ingest queue").recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut w))).is_err() {
            tracing::error!("an ingest job panicked; its request gets a 500");
        }
    }
}
