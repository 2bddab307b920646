//! The local model: llama.cpp's OpenAI-compatible server (run by `models/llm.py serve`
//! in the runtime venv `ops/setup` installs), supervised by `quarry serve` on a thread
//! of its own. It is started on loopback at a higher niceness than the shards, with a
//! parent-death signal so that a `kill -9` of Quarry takes it along; it is ready when
//! its `/health` answers 200 (until then `/v1/health` says `llm: false` and search is
//! not held up); it is restarted with backoff when it dies, and stopped on shutdown.
//! To the rest of the server it is only the provider `local` of the generic
//! `openai-compatible` manifest, at `http://127.0.0.1:<port>/v1`.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::config::{LocalConfig, ProviderConfig};
use super::manifest::Catalog;

/// The provider id the local model is reached by (`local/<name>`).
pub const PROVIDER: &str = "local";
/// The manifest it is an instance of.
const MANIFEST: &str = "openai-compatible";
/// The first wait before a restart; doubled after each failure, up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A run that stayed ready this long resets the backoff.
const STABLE: Duration = Duration::from_secs(60);
/// How long a stop waits for SIGTERM to end it before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
const TICK: Duration = Duration::from_millis(100);
/// Until a call's response head arrives (see [`Local::provider`]).
const LOCAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The local model, found installed and given a port, not yet started.
pub struct Local {
    config: LocalConfig,
    port: u16,
    log: PathBuf,
    ready: Arc<AtomicBool>,
}

impl Local {
    /// `None` (logged) when a file it needs is missing: the server runs without it.
    /// `data` holds its log (`local-model.log`).
    pub fn prepare(c: &LocalConfig, data: &Path) -> Option<Local> {
        for (what, path) in [("model", &c.model), ("runtime", &c.runtime), ("launcher", &c.launcher)] {
            if !path.is_file() {
                tracing::info!(missing = what, path = %path.display(), "the local model is not installed (ops/setup installs it); running without it");
                return None;
            }
        }
        let port = match c.port {
            0 => free_port().map_err(|e| tracing::error!(error = %e, "no free loopback port for the local model")).ok()?,
            p => p,
        };
        Some(Local { config: c.clone(), port, log: data.join("local-model.log"), ready: Arc::default() })
    }

    /// The provider instance the gateway and the service route `local/<name>` to.
    pub fn provider(&self, catalog: &Catalog) -> Option<ProviderConfig> {
        let manifest = catalog.get(MANIFEST)?.clone();
        Some(ProviderConfig {
            id: PROVIDER.to_owned(),
            manifest,
            base_url: Some(format!("http://127.0.0.1:{}/v1", self.port)),
            token: None,
            models: vec![self.config.name.clone()],
            // A whole answer's head comes when the answer is done: on a busy 2-core
            // machine a small model may take minutes, not the manifest's 60 s.
            timeout: Some(LOCAL_TIMEOUT),
        })
    }

    /// The loopback port it listens on (kept from tenants by the egress policy).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `local/<name>`.
    pub fn model_id(&self) -> String {
        format!("{PROVIDER}/{}", self.config.name)
    }

    /// Set while the model answers its health check.
    pub fn ready(&self) -> Arc<AtomicBool> {
        self.ready.clone()
    }

    /// Starts the supervisor thread; it ends (stopping the model) once `stop` is set.
    pub fn start(self, stop: Arc<AtomicBool>) -> Supervisor {
        let handle =
            thread::Builder::new().name("quarry-local-llm".into()).spawn(move || self.supervise(&stop)).expect("the local model's supervisor starts");
        Supervisor { handle }
    }

    fn supervise(self, stop: &AtomicBool) {
        let mut backoff = MIN_BACKOFF;
        while !stop.load(Ordering::Acquire) {
            let started = Instant::now();
            let outcome = match self.spawn() {
                Ok(child) => self.watch(child, stop),
                Err(e) => Outcome::NotStarted(e),
            };
            self.ready.store(false, Ordering::Release);
            let ran = started.elapsed();
            match outcome {
                Outcome::Stopped => return,
                Outcome::Exited { status, was_ready } => {
                    if was_ready && ran >= STABLE {
                        backoff = MIN_BACKOFF;
                    }
                    tracing::warn!(%status, ran_s = ran.as_secs(), retry_in_ms = backoff.as_millis() as u64, log = %self.log.display(),
                        "the local model exited; restarting it");
                }
                Outcome::TimedOut => tracing::warn!(
                    after_s = ran.as_secs(),
                    retry_in_ms = backoff.as_millis() as u64,
                    "the local model did not become ready in llm.local.ready_timeout; restarting it"
                ),
                Outcome::NotStarted(e) => tracing::error!(error = %e, runtime = %self.config.runtime.display(),
                    retry_in_ms = backoff.as_millis() as u64, "the local model could not be started"),
            }
            if !sleep_unless(stop, backoff) {
                return;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn spawn(&self) -> std::io::Result<Child> {
        let c = &self.config;
        let log = File::create(&self.log)?;
        let mut cmd = Command::new(&c.runtime);
        cmd.arg(&c.launcher)
            .arg("serve")
            .arg("--model")
            .arg(&c.model)
            .args(["--port", &self.port.to_string(), "--threads", &c.threads.to_string(), "--ctx", &c.ctx_size.to_string()])
            .args(["--alias", &c.name])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        crate::sys::child_dies_with_parent(&mut cmd, c.nice);
        let child = cmd.spawn()?;
        tracing::info!(pid = child.id(), port = self.port, model = %c.model.display(), threads = c.threads, nice = c.nice, "local model starting");
        Ok(child)
    }

    /// Until the child exits, the start times out, or `stop` is set (then stops it).
    fn watch(&self, mut child: Child, stop: &AtomicBool) -> Outcome {
        let started = Instant::now();
        let mut was_ready = false;
        loop {
            if stop.load(Ordering::Acquire) {
                self.ready.store(false, Ordering::Release);
                terminate(&mut child);
                return Outcome::Stopped;
            }
            match child.try_wait() {
                Ok(Some(status)) => return Outcome::Exited { status, was_ready },
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot poll the local model's process"),
            }
            if !was_ready {
                if healthy(self.port) {
                    was_ready = true;
                    self.ready.store(true, Ordering::Release);
                    tracing::info!(model = %self.model_id(), pid = child.id(), ms = started.elapsed().as_millis() as u64, "local model ready");
                } else if started.elapsed() > self.config.ready_timeout {
                    terminate(&mut child);
                    return Outcome::TimedOut;
                }
            }
            thread::sleep(TICK);
        }
    }
}

/// The running supervisor.
pub struct Supervisor {
    handle: thread::JoinHandle<()>,
}

impl Supervisor {
    /// Waits until it has stopped the model (after `stop` was set).
    pub fn join(self) {
        if self.handle.join().is_err() {
            tracing::error!("the local model's supervisor panicked");
        }
    }
}

enum Outcome {
    Stopped,
    Exited { status: ExitStatus, was_ready: bool },
    TimedOut,
    NotStarted(std::io::Error),
}

/// SIGTERM, then SIGKILL after [`STOP_GRACE`].
fn terminate(child: &mut Child) {
    crate::sys::terminate(child.id());
    let until = Instant::now() + STOP_GRACE;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            tracing::info!(pid = child.id(), "local model stopped");
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    tracing::warn!(pid = child.id(), "the local model did not stop on SIGTERM; killed");
}

/// Sleeps `d` in ticks; false if `stop` was set meanwhile.
fn sleep_unless(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        thread::sleep(TICK);
    }
    !stop.load(Ordering::Acquire)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}

/// `GET /health` answers 200 (llama.cpp's server says 503 while it loads).
fn healthy(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}
