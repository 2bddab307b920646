//! Shared by the tests: `TestServer`, the real binary on a free loopback port with a temporary data directory.
//!
//! `TestServer`: the real `quarry` binary on a free loopback port with its own
//! temporary data directory (kept across restarts), 2 shards unless told otherwise, and
//! loopback opened to tenants' tools and AI providers (the fakes listen there; the
//! product's default refuses it) unless [`Egress::Closed`] is asked for.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::client::{Conn, Response};

pub struct TestServer {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub data: PathBuf,
    _dir: Option<tempfile::TempDir>,
    config: Option<tempfile::NamedTempFile>,
    shards: usize,
    embedder: String,
    env: Vec<(String, String)>,
    log: Option<PathBuf>,
    egress: Egress,
    /// The PostgreSQL URL (its own schema) the records are kept in, or `None`: redb.
    store_url: Option<String>,
    segments: Option<crate::store::S3>,
}

/// What the server's `[egress] allow` opens to tenants' tools and AI providers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    /// Loopback ([`LOOPBACK`]): the tests' fake upstreams and tool targets listen
    /// there, and the product's default refuses it. Given as `QUARRY_EGRESS__ALLOW`,
    /// which outranks the config file: a test that writes its own `[egress]` starts
    /// with [`Egress::Closed`].
    #[default]
    Loopback,
    /// No `allow` but what the test's config writes: the product's default, closed
    /// to loopback, private and reserved addresses.
    Closed,
}

/// What [`Egress::Loopback`] allows, as the environment writes a TOML array.
pub const LOOPBACK: &str = r#"["127.0.0.0/8", "::1"]"#;

#[derive(Default)]
pub struct Options {
    pub config: String,
    pub shards: Option<usize>,
    /// The embedding model; tests that do not search run without one ("none"), which
    /// keeps each start-up short.
    pub embedder: Option<String>,
    /// The address to listen on; a free port by default.
    pub listen: Option<SocketAddr>,
    /// More environment variables for the server process.
    pub env: Vec<(String, String)>,
    /// A file the server's log (stderr) is appended to, across restarts, instead of the
    /// test's own stderr.
    pub log: Option<PathBuf>,
    /// Loopback open to tenants unless told otherwise.
    pub egress: Egress,
    /// Where the records are kept: as `STORE_UNDER_TEST` says, unless told.
    pub store: crate::store::Store,
    /// Where the segments are kept besides the data directory: as
    /// `SEGMENTS_UNDER_TEST` says, unless told.
    pub segments: crate::store::Segments,
}

/// The `quarry` binary the tests drive: `CARGO_BIN_EXE_quarry` when the runner sets it
/// (nextest does), else the one cargo built beside the running test binary
/// (`target/<profile>/deps/<test>` runs, `target/<profile>/quarry` is driven).
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let path = std::env::var_os("CARGO_BIN_EXE_quarry").map(PathBuf::from).unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("the test binary's path");
            exe.parent().and_then(Path::parent).expect("target/<profile>/deps").join(format!("quarry{}", std::env::consts::EXE_SUFFIX))
        });
        assert!(path.is_file(), "no quarry binary at {} (cargo builds it for the quarry package's tests)", path.display());
        path.to_str().expect("a UTF-8 path").to_owned()
    })
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::with(Options::default())
    }

    /// With a config file holding `config` (TOML) on top of the defaults.
    pub fn with_config(config: &str) -> TestServer {
        TestServer::with(Options { config: config.into(), ..Options::default() })
    }

    pub fn with(options: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        TestServer::launch(data, Some(dir), options)
    }

    /// On an existing data directory (a copy of a frozen fixture, say), which the
    /// caller owns and keeps for the server's life.
    pub fn with_data(data: PathBuf, options: Options) -> TestServer {
        assert!(data.is_dir(), "{} is not a data directory", data.display());
        TestServer::launch(data, None, options)
    }

    fn launch(data: PathBuf, dir: Option<tempfile::TempDir>, options: Options) -> TestServer {
        let mut config = tempfile::NamedTempFile::new().unwrap();
        // Quiet, fast-flushing defaults for tests; the test's own config comes after.
        write!(config, "{}", options.config).unwrap();
        let shards = options.shards.unwrap_or(2);
        let embedder = options.embedder.unwrap_or_else(|| "none".into());
        let mut server = TestServer {
            child: None,
            addr: "127.0.0.1:0".parse().unwrap(),
            data,
            _dir: dir,
            config: Some(config),
            shards,
            embedder,
            env: options.env,
            log: options.log,
            egress: options.egress,
            store_url: options.store.url(),
            segments: options.segments.s3(),
        };
        server.spawn(&options.listen.map_or_else(|| "127.0.0.1:0".to_owned(), |a| a.to_string()));
        server
    }

    fn spawn(&mut self, listen: &str) {
        let config = self.config.as_ref().unwrap().path().to_owned();
        let mut command = Command::new(bin());
        match self.egress {
            Egress::Loopback => command.env("QUARRY_EGRESS__ALLOW", LOOPBACK),
            Egress::Closed => command.env_remove("QUARRY_EGRESS__ALLOW"),
        };
        let mut child = command
            .args(["serve", "--listen", listen, "--shards", &self.shards.to_string()])
            .arg("--data")
            .arg(&self.data)
            .arg("--config")
            .arg(&config)
            .env_remove("QUARRY_LISTEN")
            .env("QUARRY_EMBEDDER", &self.embedder)
            // One model, the one the test names, unless its `env` says otherwise: the
            // product's default loads an English model beside the default embedder.
            .env("QUARRY_ENGLISH_EMBEDDER", "")
            .env_remove("QUARRY_STORE__KIND")
            .env_remove("QUARRY_STORE__URL")
            .envs(self.store_url.iter().flat_map(|url| [("QUARRY_STORE__KIND", "postgres"), ("QUARRY_STORE__URL", url.as_str())]))
            .envs(self.segments.iter().flat_map(|s3| s3.env()))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(match &self.log {
                Some(path) => Stdio::from(std::fs::OpenOptions::new().create(true).append(true).open(path).expect("the log file opens")),
                None => Stdio::inherit(),
            })
            .spawn()
            .expect("quarry starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            for _ in lines {}
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("quarry prints its address");
        let addr = line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).expect("an address");
        self.addr = addr.parse().unwrap();
        self.child = Some(child);
    }

    /// Restarts on the same data directory and port.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "stop the server first");
        let listen = self.addr.to_string();
        self.spawn(&listen);
    }

    pub fn data(&self) -> &Path {
        &self.data
    }

    /// The backends the next (re)start runs on: records in PostgreSQL at `store_url`
    /// (redb when `None`), segments also in `segments` (local disk alone when `None`).
    pub fn set_backends(&mut self, store_url: Option<String>, segments: Option<crate::store::S3>) {
        self.store_url = store_url;
        self.segments = segments;
    }

    /// The bucket and prefix its segments are published under, when they are.
    pub fn segments(&self) -> Option<&crate::store::S3> {
        self.segments.as_ref()
    }

    /// The PostgreSQL URL the records are kept in (a schema of this server's own), or
    /// `None` when they are in the data directory's redb.
    pub fn store_url(&self) -> Option<&str> {
        self.store_url.as_deref()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0);
    }

    /// Sends SIGTERM and waits for the exit (at most `limit`).
    pub fn terminate(&mut self, limit: Duration) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait(limit)
    }

    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("quarry did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The config file (TOML) the next (re)start reads, replacing the one it had.
    pub fn set_config(&mut self, config: &str) {
        std::fs::write(self.config.as_ref().unwrap().path(), config).unwrap();
    }

    /// The embedder the next (re)start uses.
    pub fn set_embedder(&mut self, embedder: &str) {
        self.embedder = embedder.to_owned();
    }

    pub fn conn(&self) -> Conn {
        Conn::open(self.addr)
    }

    /// One request on a fresh connection.
    pub fn request(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>) -> Response {
        let auth = key.map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        self.conn().send(method, path, &headers, body.map(str::as_bytes))
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> Response {
        self.request("GET", path, key, None)
    }

    /// Signs up `email` and returns (account id, key).
    pub fn signup(&self, email: &str) -> (String, String) {
        let r = self.request("POST", "/v1/signup", None, Some(&format!("{{\"email\":\"{email}\"}}")));
        assert_eq!(r.status, 201, "{}", r.text());
        let j = r.json();
        (j["account"]["id"].as_str().unwrap().to_owned(), j["api_key"].as_str().unwrap().to_owned())
    }

    /// Keep-alive connections, one landing on each shard (the kernel spreads them).
    pub fn conn_per_shard(&self) -> Vec<Conn> {
        let mut found: Vec<Option<Conn>> = (0..self.shards).map(|_| None).collect();
        for _ in 0..200 {
            let mut c = self.conn();
            let shard = c.send("GET", "/v1/health", &[], None).shard();
            if found[shard].is_none() {
                found[shard] = Some(c);
            }
            if found.iter().all(Option::is_some) {
                return found.into_iter().map(Option::unwrap).collect();
            }
        }
        panic!("connections never reached every shard");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
