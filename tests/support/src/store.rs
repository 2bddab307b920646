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
        engines("start", dir.path());
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
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ops/test-engines");
    let out = std::process::Command::new("bash").arg(&script).arg(action).arg(dir).output().expect("ops/test-engines runs");
    assert!(out.status.success(), "ops/test-engines {action}: {}", String::from_utf8_lossy(&out.stderr));
}
