//! Which records store a test server runs on. The suite runs on the embedded store
//! (redb in the data directory); with `STORE_UNDER_TEST=postgres` (ops/test's second
//! pass over the tests that keep records), every server a test starts keeps them in
//! PostgreSQL instead: the server `ops/test-engines` starts (`PGTEST_URL`),
//! a fresh schema for each server, kept across its restarts.

/// Where a test server keeps its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Store {
    /// Whatever `STORE_UNDER_TEST` says: redb unless it is `postgres`.
    #[default]
    FromEnv,
    /// redb in the data directory, whatever the environment says.
    Embedded,
    /// A new schema on the test PostgreSQL.
    Postgres,
    /// This PostgreSQL URL (a server of the test's own, say).
    Url(String),
}

impl Store {
    /// The PostgreSQL URL (with its own schema) this choice runs on, or `None` for redb.
    pub fn url(&self) -> Option<String> {
        let postgres = match self {
            Store::FromEnv => std::env::var("STORE_UNDER_TEST").is_ok_and(|s| s == "postgres"),
            Store::Embedded => false,
            Store::Postgres => true,
            Store::Url(url) => return Some(url.clone()),
        };
        postgres.then(new_schema)
    }
}

/// The test PostgreSQL's URL; panics with how to start it when there is none.
pub fn postgres_url() -> String {
    std::env::var("PGTEST_URL").expect("PGTEST_URL: start the test PostgreSQL with ops/test-engines (ops/test does)")
}

/// Whether the test PostgreSQL is there; outside CI a test that needs it may skip (and
/// says so); under CI it must be.
pub fn have_postgres() -> bool {
    if std::env::var_os("PGTEST_URL").is_some() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI runs the PostgreSQL tests: ops/test starts the server (ops/test-engines)");
    eprintln!("skipped: no PGTEST_URL (ops/test-engines starts the test PostgreSQL)");
    false
}

/// A new, empty schema on the test PostgreSQL: its URL (`search_path` set to it).
pub fn new_schema() -> String {
    let base = postgres_url();
    let schema = format!("t_{:016x}", rand::random());
    crate::store::psql(&base, &format!("CREATE SCHEMA {schema}"));
    let join = if base.contains('?') { '&' } else { '?' };
    format!("{base}{join}options=-c%20search_path%3D{schema}")
}

/// Runs `sql` on the test PostgreSQL with Debian's psql (the client the server's package
/// brings), failing the test on an error.
pub fn psql(url: &str, sql: &str) -> String {
    let bin = std::env::var("PGTEST_BIN").map(|b| format!("{b}/psql")).unwrap_or_else(|_| "psql".to_owned());
    let out = std::process::Command::new(bin).args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql]).output().expect("psql runs");
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

mod rand {
    /// Distinct enough for schema names: the clock's nanoseconds and the process.
    pub fn random() -> u64 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        nanos ^ (u64::from(std::process::id()) << 40)
    }
}

/// A PostgreSQL server of a test's own (`ops/test-engines` under a temporary directory),
/// for a test that stops and starts it; stopped and removed when dropped.
pub struct OwnPostgres {
    dir: tempfile::TempDir,
    pub url: String,
}

impl OwnPostgres {
    pub fn start() -> OwnPostgres {
        let dir = tempfile::tempdir().unwrap();
        engines_only("start", dir.path(), "postgres");
        let env = std::fs::read_to_string(dir.path().join("env")).unwrap();
        let url = env.lines().find_map(|l| l.strip_prefix("export PGTEST_URL=")).expect("the engines' URL").to_owned();
        OwnPostgres { dir, url }
    }

    /// Stops it as a crash would (`pg_ctl -m immediate`): connections drop at once.
    pub fn kill(&self) {
        engines("pg-stop", self.dir.path());
    }

    /// Starts it again on the same data and port.
    pub fn restart(&self) {
        engines("pg-start", self.dir.path());
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        engines("stop", self.dir.path());
    }
}

fn engines(action: &str, dir: &std::path::Path) {
    engines_only(action, dir, "postgres s3");
}

/// `ops/test-engines ACTION DIR`, starting only `which` engines.
fn engines_only(action: &str, dir: &std::path::Path, which: &str) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ops/test-engines");
    let out =
        std::process::Command::new("bash").arg(&script).arg(action).arg(dir).env("TEST_ENGINES", which).output().expect("ops/test-engines runs");
    assert!(out.status.success(), "ops/test-engines {action}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Where a test server keeps its segments besides the data directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Segments {
    /// Whatever `SEGMENTS_UNDER_TEST` says: the data directory alone unless it is `s3`.
    #[default]
    FromEnv,
    /// The data directory alone, whatever the environment says.
    Local,
    /// This bucket and prefix (the shared test server's, or one of the test's own).
    S3(S3),
}

impl Segments {
    /// The bucket (with a fresh prefix) this choice runs on, or `None` for local disk.
    pub fn s3(&self) -> Option<S3> {
        match self {
            Segments::FromEnv if std::env::var("SEGMENTS_UNDER_TEST").is_ok_and(|s| s == "s3") => Some(S3::shared()),
            Segments::FromEnv | Segments::Local => None,
            Segments::S3(s3) => Some(s3.clone()),
        }
    }
}

/// A bucket on a real S3-compatible server (SeaweedFS, started by `ops/test-engines`)
/// and the key prefix a test's server keeps its segments under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3 {
    pub endpoint: String,
    pub bucket: String,
    pub key: String,
    pub secret: String,
    pub prefix: String,
}

/// Whether the test S3 server is there; outside CI a test that needs it may skip (and
/// says so); under CI it must be.
pub fn have_s3() -> bool {
    if std::env::var_os("S3TEST_ENDPOINT").is_some() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI runs the object-storage tests: ops/test starts the server (ops/test-engines)");
    eprintln!("skipped: no S3TEST_ENDPOINT (ops/test-engines starts the test S3 server)");
    false
}

impl S3 {
    /// The shared test server's bucket, under a prefix of this test's own.
    pub fn shared() -> S3 {
        let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k}: start the test S3 server with ops/test-engines (ops/test does)"));
        S3::from_env_file(&format!(
            "export S3TEST_ENDPOINT={}\nexport S3TEST_BUCKET={}\nexport S3TEST_KEY={}\nexport S3TEST_SECRET={}\n",
            var("S3TEST_ENDPOINT"),
            var("S3TEST_BUCKET"),
            var("S3TEST_KEY"),
            var("S3TEST_SECRET")
        ))
    }

    fn from_env_file(env: &str) -> S3 {
        let get = |k: &str| {
            env.lines().find_map(|l| l.strip_prefix(&format!("export {k}="))).unwrap_or_else(|| panic!("{k} in the engines' env")).to_owned()
        };
        S3 {
            endpoint: get("S3TEST_ENDPOINT"),
            bucket: get("S3TEST_BUCKET"),
            key: get("S3TEST_KEY"),
            secret: get("S3TEST_SECRET"),
            prefix: format!("t{:016x}", rand::random()),
        }
    }

    /// The server's settings for it, as environment variables.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("QUARRY_SEGMENTS__STORE", "s3"),
            ("QUARRY_SEGMENTS__BUCKET", self.bucket.as_str()),
            ("QUARRY_SEGMENTS__PREFIX", self.prefix.as_str()),
            ("QUARRY_SEGMENTS__ENDPOINT", self.endpoint.as_str()),
            ("QUARRY_SEGMENTS__ACCESS_KEY_ID", self.key.as_str()),
            ("QUARRY_SEGMENTS__SECRET_ACCESS_KEY", self.secret.as_str()),
            // A test that stops the server sees the failure in seconds, not minutes.
            ("QUARRY_SEGMENTS__TIMEOUT", "3s"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The keys under the prefix, listed over S3 itself (ListObjectsV2, signed by curl).
    pub fn keys(&self) -> Vec<String> {
        // The prefix's slash percent-encoded, as SigV4's canonical query has it.
        let url = format!("{}/{}?list-type=2&prefix={}%2F", self.endpoint, self.bucket, self.prefix);
        let out = std::process::Command::new("curl")
            .args(["-s", "-f", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", &format!("{}:{}", self.key, self.secret), &url])
            .output()
            .expect("curl runs");
        assert!(out.status.success(), "listing {url}: {}", String::from_utf8_lossy(&out.stderr));
        let xml = String::from_utf8_lossy(&out.stdout);
        let own = format!("{}/", self.prefix);
        xml.split("<Key>").skip(1).filter_map(|s| s.split("</Key>").next()).map(|k| k.strip_prefix(&own).unwrap_or(k).to_owned()).collect()
    }
}

/// An S3 server of a test's own (`ops/test-engines s3-start` under a temporary
/// directory), for a test that kills and restarts it; killed and removed when dropped.
pub struct OwnS3 {
    dir: tempfile::TempDir,
    pub s3: S3,
}

impl OwnS3 {
    pub fn start() -> OwnS3 {
        let dir = tempfile::tempdir().unwrap();
        engines("s3-start", dir.path());
        let s3 = S3::from_env_file(&std::fs::read_to_string(dir.path().join("s3.env")).unwrap());
        OwnS3 { dir, s3 }
    }

    /// Kills it as a crash would (SIGKILL).
    pub fn kill(&self) {
        engines("s3-stop", self.dir.path());
    }

    /// Starts it again on the same data and ports.
    pub fn restart(&self) {
        engines("s3-start", self.dir.path());
    }
}

impl Drop for OwnS3 {
    fn drop(&mut self) {
        engines("s3-stop", self.dir.path());
    }
}

/// What the nodes of a cluster a test simulates share: one PostgreSQL schema and, when
/// asked, one bucket prefix (then the write-ahead log is the shared journal too, and
/// every node serves every collection).
pub struct Cluster {
    pub url: String,
    pub s3: Option<S3>,
}

impl Cluster {
    /// A new schema on the test PostgreSQL (and a new prefix on the test S3 server).
    pub fn new(with_s3: bool) -> Cluster {
        Cluster { url: new_schema(), s3: with_s3.then(S3::shared) }
    }

    /// The options of node `name`: the shared store (and bucket), heartbeats every
    /// 200 ms so a dead node is gone in a second, the key that seals secrets (nodes
    /// sharing records share it), then `config`, which may start with its own sections
    /// (the `[cluster]` table comes last).
    pub fn node(&self, name: &str, config: &str) -> crate::server::Options {
        let config = format!("{config}\n[cluster]\nnode = \"{name}\"\nheartbeat = \"200ms\"\nnode_timeout = \"1s\"\n");
        crate::server::Options {
            config,
            store: Store::Url(self.url.clone()),
            segments: self.s3.clone().map_or(Segments::Local, Segments::S3),
            env: vec![("QUARRY_SECRETS__KEY".to_owned(), "7f".repeat(32))],
            ..crate::server::Options::default()
        }
    }
}
