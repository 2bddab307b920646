//! A run: one OS thread per client thread, each with its own current-thread tokio runtime and
//! its share of the connections, optionally pinned to a CPU. Threads share nothing while
//! they run; their stats are merged at the end.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::conn::{self, Plan, ThreadState};
use super::pin::CpuList;
use super::report::{Report, RunShape};
use super::scenario::Scenario;
use super::stats::Stats;
use super::sys::pin_current_thread;
use super::target::Target;

/// Everything a run needs, resolved from the command line (or a scenario's code).
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub label: String,
    pub target: Target,
    pub scenario: Scenario,
    pub connections: usize,
    pub threads: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    pub pin: Option<CpuList>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("need at least one connection and one thread")]
    NoConnections,
    #[error("the measured duration must be longer than zero")]
    NoDuration,
    #[error("starting client thread {thread}: {source}")]
    Thread {
        thread: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("pinning client thread {thread} to CPU {cpu}: {source}")]
    Pin {
        thread: usize,
        cpu: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("client thread {thread} panicked")]
    Panicked { thread: usize },
}

/// Runs the load for warmup + duration and reports on the measured window.
pub fn run(config: LoadConfig) -> Result<Report, RunError> {
    if config.connections == 0 || config.threads == 0 {
        return Err(RunError::NoConnections);
    }
    if config.duration.is_zero() {
        return Err(RunError::NoDuration);
    }
    let threads = config.threads.min(config.connections);
    let warmup_end = Instant::now() + config.warmup;
    let plan = Arc::new(Plan {
        addr: config.target.addr(),
        scenario: config.scenario,
        connections: config.connections,
        warmup_end,
        end: warmup_end + config.duration,
        timeout: config.timeout,
    });
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let plan = Arc::clone(&plan);
            let cpu = config.pin.as_ref().map(|list| list.for_thread(thread));
            let conns: Vec<usize> = (thread..config.connections).step_by(threads).collect();
            std::thread::Builder::new()
                .name(format!("load-{thread}"))
                .spawn(move || client_thread(plan, thread, cpu, conns))
                .map_err(|source| RunError::Thread { thread, source })
        })
        .collect::<Result<_, _>>()?;
    let mut total = Stats::new();
    for (thread, handle) in handles.into_iter().enumerate() {
        total.merge(&handle.join().map_err(|_| RunError::Panicked { thread })??);
    }
    let shape =
        RunShape { label: config.label, target: config.target.to_string(), connections: config.connections, threads, window: config.duration };
    Ok(Report::new(shape, &total))
}

fn client_thread(plan: Arc<Plan>, thread: usize, cpu: Option<usize>, conns: Vec<usize>) -> Result<Stats, RunError> {
    if let Some(cpu) = cpu {
        pin_current_thread(cpu).map_err(|source| RunError::Pin { thread, cpu, source })?;
    }
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(|source| RunError::Thread { thread, source })?;
    let state = Rc::new(ThreadState {
        plan: Arc::clone(&plan),
        stats: RefCell::new(Stats::new()),
        in_flight: conns.iter().map(|_| Cell::new(None)).collect(),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        for (slot, &conn) in conns.iter().enumerate() {
            tokio::task::spawn_local(conn::run(Rc::clone(&state), conn, slot));
        }
        tokio::time::sleep_until(plan.end.into()).await;
    });
    drop(local); // cancels the connections, which hold the other references to `state`
    let mut stats = state.stats.take();
    stats.errors.timeout += stalled_requests(&state, plan.end, plan.timeout);
    Ok(stats)
}

/// Requests still unanswered at the end that had already waited longer than the timeout.
fn stalled_requests(state: &ThreadState, end: Instant, timeout: Duration) -> u64 {
    let stalled = |sent: Instant| end.saturating_duration_since(sent) > timeout;
    state.in_flight.iter().filter(|slot| slot.get().is_some_and(stalled)).count() as u64
}
