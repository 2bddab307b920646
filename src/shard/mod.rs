//! Starting and stopping the shards: one glommio executor per core, pinned, each with
//! its own listener on the same port; the signal thread; the meters flusher.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use glommio::{LocalExecutorBuilder, Placement};

use crate::app::App;
use crate::config::Config;
use crate::http::{serve_shard, Shard};

pub mod uring;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Open(#[from] crate::app::OpenError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    /// Another process listens on the port: the shards' SO_REUSEPORT would otherwise let
    /// this server join it and split the traffic between two installations.
    #[error(
        "cannot listen on {addr}: another process is listening there (a second quarry would split its traffic); stop it or pass another --listen"
    )]
    PortTaken { addr: SocketAddr },
    #[error("cannot start shard {shard}: {message}")]
    Executor { shard: usize, message: String },
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("shard {shard} ended while the server was serving (its panic is in the log above); the server stopped rather than serve on without it")]
    ShardEnded { shard: usize },
}

/// Runs the server until SIGTERM or SIGINT, then shuts down gracefully.
pub fn run(config: Config) -> Result<(), ServeError> {
    let cpus = crate::sys::allowed_cpus();
    let shards = if config.shards == 0 { cpus.len().max(1) } else { config.shards };
    // HNSW graphs are built on rayon's global pool: its threads run at idle priority,
    // like every other background job, so searches keep their latency meanwhile.
    let _ =
        rayon::ThreadPoolBuilder::new().thread_name(|i| format!("quarry-bg-{i}")).start_handler(|_| crate::sys::set_idle_priority()).build_global();
    let router = crate::api::routes::router(&config);
    crate::http::surface::set_docs_base(&format!("http://{}", config.listen));
    let names = router.routes().iter().map(|r| r.name).collect();
    let app = Arc::new(App::open(config, shards, names)?);
    let stop = Arc::new(AtomicBool::new(false));
    let signals = watch_signals(stop.clone())?;
    let flusher = start_flusher(app.clone(), stop.clone());
    let maintenance = start_maintenance(app.clone(), stop.clone());
    let follower = app.engine.is_shared().then(|| start_follower(app.clone(), stop.clone()));
    // Its own thread: it loads and warms up beside the shards, never in their way.
    let local_model = app.start_local_model(stop.clone());

    let ended = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::with_capacity(shards);
    let mut addr = app.config.listen;
    uring::set_coop_taskrun(app.config.runtime.coop_taskrun);
    // A cluster's node beats once before any shard starts: it is a member before it
    // runs or takes anything, so no other node's look for dead nodes' runs finds one
    // of its first runs and takes it, and each key's rate is its share from the first
    // request. (Until bound, the record names the configured address.)
    if app.cluster.shared() {
        beat(&app, &addr.to_string());
    }
    let _small_pages = SmallPages::during_start_up();
    // Every shard opens its model sessions first, side by side; only when all have
    // are the listeners bound, one right after another. A listener bound early would
    // be the port's only socket while the others load their models: every connection
    // opened meanwhile (a load balancer's pool, a client that saw /v1/health answer)
    // would stay on that one shard for its whole life.
    let mut starts = Vec::with_capacity(shards);
    for id in 0..shards {
        let (start, waiting) = Start::channels();
        let watch = Watch::new(id, stop.clone(), ended.clone());
        handles.push(spawn_shard(id, cpus[id % cpus.len()], app.clone(), router, watch, start, shards)?);
        starts.push(waiting);
    }
    if let Err(e) = bind_in_turn(&starts, &mut addr) {
        stop.store(true, Ordering::Release);
        // Shards still waiting for their turn to bind see the channels close and end.
        drop(starts);
        handles.into_iter().for_each(|h| drop(h.join()));
        local_model.into_iter().for_each(|l| l.join());
        return Err(e);
    }
    drop(_small_pages);
    // No request is served before the listeners are bound: from the first one, a
    // tenant's destination is never this server's own port.
    app.egress.serving_on(addr.port());
    let (coop, refused) = uring::coop_taskrun_rings();
    if refused > 0 {
        tracing::warn!(rings = refused, "this kernel refused IORING_SETUP_COOP_TASKRUN (it needs Linux 5.19): ready sockets interrupt busy shards");
    } else {
        tracing::debug!(rings = coop, enabled = app.config.runtime.coop_taskrun, "io_uring rings created");
    }
    let heartbeat = app.cluster.shared().then(|| start_heartbeat(app.clone(), stop.clone(), addr.to_string()));
    let data = app.config.data.display().to_string();
    tracing::info!(%addr, node = %app.cluster.node, shards, data, version = crate::app::VERSION, "quarry is serving");
    println!("quarry {} listening on http://{addr} ({shards} shards, data {data})", crate::app::VERSION);

    for (id, h) in handles.into_iter().enumerate() {
        if let Err(e) = h.join() {
            tracing::error!(shard = id, error = ?e, "shard ended abnormally");
        }
    }
    stop.store(true, Ordering::Release);
    signals.close();
    let _ = flusher.join();
    let _ = maintenance.join();
    if let Some(f) = follower {
        let _ = f.join();
    }
    if let Some(h) = heartbeat {
        let _ = h.join();
        app.cluster.leave(&app.records);
    }
    if let Some(l) = local_model {
        l.join();
    }
    app.release_meters();
    if let Some(shard) = ended.load(Ordering::Acquire).checked_sub(1) {
        tracing::error!(shard, "quarry stopped: a shard ended while serving");
        return Err(ServeError::ShardEnded { shard });
    }
    tracing::info!("quarry stopped");
    Ok(())
}

/// Kept by a serving shard's thread: when the thread ends while the server still
/// serves (a panic unwound out of the shard's executor, say from a background task), it
/// stops the server. The other shards drain, `run` returns [`ServeError::ShardEnded`]
/// and the process exits non-zero for its supervisor to start again. Serving on would
/// be worse than stopping: the dead shard's listener would still take its share of new
/// connections, and nothing would ever answer them.
struct Watch {
    shard: usize,
    stop: Arc<AtomicBool>,
    /// The first shard that ended while serving, plus one (0: none).
    ended: Arc<AtomicUsize>,
    /// Set once the shard serves: a shard that never started is start-up's to report.
    armed: bool,
}

impl Watch {
    fn new(shard: usize, stop: Arc<AtomicBool>, ended: Arc<AtomicUsize>) -> Watch {
        Watch { shard, stop, ended, armed: false }
    }

    /// Keeps the watch on this thread until the thread ends, by any road: a thread's
    /// locals are dropped after a panic has unwound out of its code, as after a return.
    fn arm(mut self) {
        thread_local! { static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) }; }
        self.armed = true;
        WATCH.with(|w| *w.borrow_mut() = Some(self));
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // Only atomics here: a thread's other locals (the log's among them) may be gone.
        if self.armed && !self.stop.swap(true, Ordering::AcqRel) {
            let _ = self.ended.compare_exchange(0, self.shard + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// Blocking-pool threads per shard.
const BLOCKING_THREADS: usize = 32;

/// A starting shard's side of its start-up: it reports its sessions open (`ready`),
/// waits for the address to bind (`bind`), and reports the address it bound (`bound`).
struct Start {
    ready: mpsc::Sender<Result<(), ServeError>>,
    bind: mpsc::Receiver<SocketAddr>,
    bound: mpsc::Sender<Result<SocketAddr, ServeError>>,
}

/// The server's side of one shard's [`Start`].
struct Waiting {
    ready: mpsc::Receiver<Result<(), ServeError>>,
    bind: mpsc::Sender<SocketAddr>,
    bound: mpsc::Receiver<Result<SocketAddr, ServeError>>,
}

impl Start {
    fn channels() -> (Start, Waiting) {
        let (ready_tx, ready) = mpsc::channel();
        let (bind_tx, bind) = mpsc::channel();
        let (bound_tx, bound) = mpsc::channel();
        (Start { ready: ready_tx, bind, bound: bound_tx }, Waiting { ready, bind: bind_tx, bound })
    }
}

/// Waits until every shard has its sessions open, then has them bind one after another
/// (the first to `addr`, the rest to the port it got); `addr` ends as the bound address.
fn bind_in_turn(starts: &[Waiting], addr: &mut SocketAddr) -> Result<(), ServeError> {
    let exited = |shard: usize, when: &str| ServeError::Executor { shard, message: format!("it exited {when}") };
    for (id, w) in starts.iter().enumerate() {
        w.ready.recv().map_err(|_| exited(id, "before it was ready"))??;
    }
    refuse_a_taken_port(*addr)?;
    for (id, w) in starts.iter().enumerate() {
        let _ = w.bind.send(*addr);
        *addr = w.bound.recv().map_err(|_| exited(id, "before binding"))??;
    }
    Ok(())
}

/// The shards bind with SO_REUSEPORT, which lets any process of the same user join a
/// port: a second server (another data directory, another installation) would start
/// without a word and take half the connections. So before they bind, a connection is
/// tried to the address (loopback for an unspecified one): an answer means someone
/// listens there, and the start is refused. (A bind without SO_REUSEPORT cannot tell:
/// the last run's connections in TIME_WAIT refuse it too.) Port 0 asks for a fresh
/// port, which nobody holds.
fn refuse_a_taken_port(addr: SocketAddr) -> Result<(), ServeError> {
    if addr.port() == 0 {
        return Ok(());
    }
    let mut target = addr;
    if target.ip().is_unspecified() {
        target.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    match std::net::TcpStream::connect_timeout(&target, std::time::Duration::from_secs(1)) {
        // Accepted, or a listener too busy to answer: either way the port is taken.
        Ok(_) => Err(ServeError::PortTaken { addr }),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(ServeError::PortTaken { addr }),
        Err(_) => Ok(()),
    }
}

fn spawn_shard(
    id: usize,
    cpu: usize,
    app: Arc<App>,
    router: &'static crate::http::router::Router,
    watch: Watch,
    start: Start,
    shards: usize,
) -> Result<glommio::ExecutorJoinHandle<()>, ServeError> {
    let rt = app.config.runtime.clone();
    LocalExecutorBuilder::new(Placement::Fixed(cpu))
        .name(&format!("quarry-shard-{id}"))
        .spin_before_park(rt.spin_before_park)
        .io_memory(rt.io_memory)
        .ring_depth(rt.ring_depth)
        .preempt_timer(rt.preempt_timer)
        // Blocking calls are store commits and adds waiting on the WAL's sync: enough
        // threads that concurrent adds share one group commit instead of queueing for it.
        .blocking_thread_pool_placement(glommio::PoolPlacement::Unbound(BLOCKING_THREADS))
        .spawn(move || async move {
            let embedders = match open_embedders(&app) {
                Ok(e) => e,
                Err(e) => {
                    let _ = start.ready.send(Err(ServeError::Executor { shard: id, message: format!("opening its model sessions: {e}") }));
                    return;
                }
            };
            let rerankers = match app.rerankers.sessions() {
                Ok(r) => r,
                Err(e) => {
                    let _ = start.ready.send(Err(ServeError::Executor { shard: id, message: format!("opening its reranker sessions: {e}") }));
                    return;
                }
            };
            let _ = start.ready.send(Ok(()));
            // Closed when another shard failed to start: nothing to serve.
            let Ok(addr) = start.bind.recv() else { return };
            let listen_error = |e: glommio::GlommioError<()>| ServeError::Listen { addr, source: std::io::Error::other(e.to_string()) };
            let listener = match glommio::net::TcpListener::bind(addr) {
                Ok(l) => l,
                Err(e) => {
                    let _ = start.bound.send(Err(listen_error(e)));
                    return;
                }
            };
            let _ = start.bound.send(listener.local_addr().map_err(listen_error));
            let mut shard = Shard::new(id, app, router, embedders);
            shard.rerankers = rerankers;
            // Generations the last boot left running: this shard's share resumes.
            let host = Rc::new(crate::agents::generation::run::Host { agents: shard.app.agents.clone(), embedders: shard.embedders.clone() });
            // evaluations (issue 37): eval runs the last boot left unsettled.
            glommio::spawn_local(crate::agents::evals::run::resume(host.clone(), id, shards)).detach();
            glommio::spawn_local(crate::agents::generation::recover::take_over(host, id, shards)).detach();
            // webhooks: shard 0 sends what the outbox owes (the deliveries a restart finds too).
            if id == 0 {
                glommio::spawn_local(crate::agents::webhooks::deliver::run(shard.app.webhooks.clone(), shard.app.cluster.clone())).detach();
                // policies (issue 37): the audit log's retention.
                let agents = &shard.app.config.agents;
                let retain = crate::agents::audit::retain(shard.app.records.clone(), agents.audit_retention_days, agents.audit_sweep_interval);
                glommio::spawn_local(retain).detach();
            }
            let stop = watch.stop.clone();
            watch.arm();
            serve_shard(Rc::new(shard), listener, stop).await;
        })
        .map_err(|e| ServeError::Executor { shard: id, message: e.to_string() })
}

/// While the shards start, transparent huge pages are off for this process. Each
/// shard registers `runtime.io_memory` with three io_uring rings, which pins it three
/// times; backed by a 2 MiB huge page, 64 KiB would pin 6 MiB per shard and a non-root
/// server would not fit two shards under the usual 8 MiB RLIMIT_MEMLOCK. Huge pages
/// come back on once the rings hold their (small, pinned) pages.
struct SmallPages;

impl SmallPages {
    fn during_start_up() -> SmallPages {
        crate::sys::set_thp_disabled(true);
        SmallPages
    }
}

impl Drop for SmallPages {
    fn drop(&mut self) {
        crate::sys::set_thp_disabled(false);
    }
}

/// This shard's own sessions, one per loaded embedder, in load order (a collection's
/// model is found by its slot, `search::embedders::Loaded`).
fn open_embedders(app: &App) -> Result<Vec<quarry_index::embed::Embedder>, quarry_index::embed::EmbedError> {
    app.embedders.iter().map(|m| m.embedder()).collect()
}

struct SignalWatch {
    handle: signal_hook::iterator::Handle,
    thread: thread::JoinHandle<()>,
}

impl SignalWatch {
    fn close(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}

fn watch_signals(stop: Arc<AtomicBool>) -> Result<SignalWatch, ServeError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT]).map_err(ServeError::Signals)?;
    let handle = signals.handle();
    let thread = thread::Builder::new()
        .name("quarry-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                tracing::info!(signal = sig, "shutting down: no new connections, finishing requests in flight");
                stop.store(true, Ordering::Release);
            }
        })
        .expect("the signal thread starts");
    Ok(SignalWatch { handle, thread })
}

fn start_flusher(app: Arc<App>, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let every = app.config.meters_flush_interval;
    thread::Builder::new()
        .name("quarry-meters".into())
        .spawn(move || {
            let step = Duration::from_millis(20).min(every);
            let mut waited = Duration::ZERO;
            while !stop.load(Ordering::Acquire) {
                thread::sleep(step);
                waited += step;
                if waited >= every {
                    app.flush_meters();
                    waited = Duration::ZERO;
                }
            }
        })
        .expect("the meters thread starts")
}

/// This node's heartbeat in the shared records store (`services::cluster`), from the
/// moment it serves until it stops; then it leaves the cluster.
fn start_heartbeat(app: Arc<App>, stop: Arc<AtomicBool>, addr: String) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name("quarry-heartbeat".into())
        .spawn(move || {
            let every = app.cluster.heartbeat_every();
            let step = Duration::from_millis(100).min(every);
            let mut next = std::time::Instant::now();
            while !stop.load(Ordering::Acquire) {
                if std::time::Instant::now() >= next {
                    if beat(&app, &addr) {
                        // The maintenance leases this node holds are renewed here too:
                        // the flushing thread runs at idle priority and may be starved.
                        if let Err(e) = app.engine.keep_leases() {
                            tracing::warn!(error = %e, "could not renew this node's maintenance leases; will retry");
                        }
                    }
                    next = std::time::Instant::now() + every;
                }
                thread::sleep(step);
            }
        })
        .expect("the heartbeat thread starts")
}

/// Writes this node's heartbeat; when it lands, each key's rate becomes its share of
/// the live nodes counted (the key caches refill). Whether it landed.
fn beat(app: &App, addr: &str) -> bool {
    let nodes = app.cluster.beat(&app.records, addr);
    if let Some(nodes) = nodes {
        app.keyring.set_cluster_nodes(nodes);
    }
    nodes.is_some()
}

/// Following the shared journal (a cluster): every `cluster.follow`, the journal's
/// heads are read and what other nodes wrote is applied here. When PostgreSQL is out
/// of reach the node keeps serving what it has; the first failure and the recovery
/// are logged, not every round.
fn start_follower(app: Arc<App>, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let every = app.config.cluster.follow;
    thread::Builder::new()
        .name("quarry-follow".into())
        .spawn(move || {
            let mut failing = false;
            while !stop.load(Ordering::Acquire) {
                let started = std::time::Instant::now();
                match app.engine.follow() {
                    Ok(errors) => {
                        if failing {
                            tracing::info!("the shared journal is back; following again");
                            failing = false;
                        }
                        for (id, e) in errors {
                            tracing::warn!(collection = %id, error = %e, "could not follow a collection's journal; will retry");
                        }
                    }
                    Err(e) if !failing => {
                        tracing::warn!(error = %e, "the shared journal is out of reach; serving what this node has");
                        failing = true;
                    }
                    Err(_) => {}
                }
                thread::sleep(every.saturating_sub(started.elapsed()));
            }
        })
        .expect("the follower thread starts")
}

/// The index's background work: flush in-memory tails into segments (when big enough,
/// or when older than `index.flush_interval`) and merge segments, at idle priority.
fn start_maintenance(app: Arc<App>, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let every = app.config.index.flush_interval;
    thread::Builder::new()
        .name("quarry-index".into())
        .spawn(move || {
            crate::sys::set_idle_priority();
            let step = Duration::from_millis(100);
            let mut since_all = Duration::ZERO;
            while !stop.load(Ordering::Acquire) {
                thread::sleep(step);
                since_all += step;
                let all = since_all >= every;
                if all {
                    since_all = Duration::ZERO;
                }
                for (id, e) in app.engine.maintain(all) {
                    tracing::error!(collection = %id, error = %e, "index background work failed; will retry");
                }
            }
        })
        .expect("the index thread starts")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `body` as a shard's serving would: on a glommio executor's thread, with the
    /// watch armed; whether the thread panicked, and what `stop` and `ended` read once it
    /// has ended.
    fn ending(body: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> (bool, bool, usize) {
        let (stop, ended) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let watch = Watch::new(3, stop.clone(), ended.clone());
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .spawn(move || async move {
                let stop = watch.stop.clone();
                watch.arm();
                body(stop);
                // A detached task's panic unwinds out of the executor, not out of this future.
                glommio::spawn_local(async {}).detach();
                glommio::yield_if_needed().await;
            })
            .unwrap();
        let panicked = handle.join().is_err();
        (panicked, stop.load(Ordering::Acquire), ended.load(Ordering::Acquire))
    }

    #[test]
    fn a_shard_whose_executor_panics_stops_the_server_and_is_named() {
        let ended = ending(|_| {
            glommio::spawn_local(async { panic!("a background task's bug") }).detach();
        });
        assert_eq!(ended, (true, true, 4), "the executor panicked; the server stops, and shard 3 is the one that ended");
    }

    #[test]
    fn a_shard_that_ends_because_the_server_stops_is_no_failure() {
        assert_eq!(ending(|stop| stop.store(true, Ordering::Release)), (false, true, 0));
    }

    #[test]
    fn a_shard_that_never_served_leaves_its_failure_to_start_up() {
        let (stop, ended) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        drop(Watch::new(1, stop.clone(), ended.clone()));
        assert_eq!((stop.load(Ordering::Acquire), ended.load(Ordering::Acquire)), (false, 0));
    }
}
