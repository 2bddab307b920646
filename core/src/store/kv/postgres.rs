//! The shared backend: PostgreSQL (`[store] kind = "postgres"`). Every table of every
//! shape lives in one PostgreSQL table of that shape (`kv_rows`, `kv_names`, `kv_counts`,
//! `kv_sets`, `kv_logs`), keyed by the table's name and the key; keys compare in
//! `COLLATE "C"` (byte order, as redb's `&str` keys do), so scans and ranges read in the
//! order the embedded backend reads them. The schema is the versioned migrations in
//! `postgres/` (applied in order at open, once, under an advisory lock, and recorded in
//! `quarry_migrations`).
//!
//! Transactions keep kv's promises this way:
//! - a read is `REPEATABLE READ, READ ONLY`: every statement sees the snapshot of the
//!   first, and it never waits for a writer;
//! - a write takes one transaction-scoped advisory lock first, so writers run one at a
//!   time across every node on the database, as redb's do in one process: the checks a
//!   write makes hold when it commits, with no serialization failures to retry;
//! - `commit` returns once PostgreSQL has committed (durable under its
//!   `synchronous_commit`, on by default); a transaction dropped without it rolls back.
//!
//! A connection the server cannot get or keep is `StoreError::Unavailable` (a 503 the
//! client may retry), never a half-written record: the transaction never commits.
//! Connections come from an r2d2 pool; each keeps its prepared statements.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

use super::{chars, Counts, Keys, Logs, Names, Rows, Sets, Table};
use crate::store::StoreError;

/// The migrations, in order: `(version, name, SQL)`. A migration, once shipped, is never
/// edited; a change is a new one.
const MIGRATIONS: &[(i32, &str, &str)] =
    &[(1, "kv tables", include_str!("postgres/0001_kv.sql")), (2, "shared journal", include_str!("postgres/0002_journal.sql"))];

/// Held (transaction-scoped) by every write transaction: writers run one at a time.
const WRITER_LOCK: i64 = 0x5155_4152_5259_0001; // "QUARRY" 1
/// Held (session-scoped) while migrations are checked and applied.
const MIGRATION_LOCK: i64 = 0x5155_4152_5259_0002;

/// A walk reads this many rows a statement.
const WALK_PAGE: i64 = 64;

/// How to reach the database.
#[derive(Clone)]
pub struct Settings {
    /// A libpq connection string or URL (`postgres://user:pass@host:port/db?sslmode=require`).
    pub url: String,
    /// Most connections open at once.
    pub pool: u32,
    /// How long a request waits for a connection (and a connection for the server).
    pub connect_timeout: Duration,
    /// PEM certificates trusted beside the bundled Mozilla roots (a private CA).
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL itself: it may hold a password.
        f.debug_struct("Settings").field("pool", &self.pool).field("connect_timeout", &self.connect_timeout).finish_non_exhaustive()
    }
}

pub struct Db {
    pool: r2d2::Pool<Manager>,
    /// Where the database is, for messages: host, port and database, never credentials.
    at: Arc<str>,
}

struct Manager {
    config: postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

/// A pooled connection and the statements it has prepared.
pub struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Left in an unknown state (a rollback that failed): the pool drops it.
    broken: bool,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn { client: self.config.connect(self.tls.clone())?, statements: HashMap::new(), broken: false })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.batch_execute("")
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// The pool's own logging would print connection errors at every retry; a failed
/// checkout is reported once, by the request that met it.
#[derive(Debug)]
struct Quiet;

impl r2d2::HandleError<postgres::Error> for Quiet {
    fn handle_error(&self, error: postgres::Error) {
        tracing::debug!(%error, "records store: a PostgreSQL connection failed");
    }
}

/// Host, port and database of `config`: where the store is, without credentials.
fn place(config: &postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{host}:{port}/{}", config.get_dbname().or(config.get_user()).unwrap_or(""))
}

fn tls(ca_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = ca_pem {
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("store.ca_file: {e}"))?;
            roots.add(cert).map_err(|e| format!("store.ca_file: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Names the operation and the table of a PostgreSQL error. A lost or refused
/// connection (an error with no SQLSTATE), a connection exception (class 08) and the
/// server going down or not yet up (class 57: `admin_shutdown` when it is restarted,
/// `cannot_connect_now` while it starts) are the store being unavailable: the
/// statement did not commit, and the client may retry.
trait On<T> {
    fn on(self, op: &'static str, table: &'static str, at: &str) -> Result<T, StoreError>;
}

impl<T> On<T> for Result<T, postgres::Error> {
    fn on(self, op: &'static str, table: &'static str, at: &str) -> Result<T, StoreError> {
        self.map_err(|source| fault(op, table, at, source))
    }
}

fn fault(op: &'static str, table: &'static str, at: &str, source: postgres::Error) -> StoreError {
    let out_of_reach = match source.code() {
        None => true,
        Some(state) => state.code().starts_with("08") || state.code().starts_with("57"),
    };
    if out_of_reach || source.is_closed() {
        tracing::warn!(at, op, table, error = %source, "records store: PostgreSQL is out of reach");
        StoreError::Unavailable { at: at.to_owned(), reason: source.to_string() }
    } else {
        StoreError::Postgres { op, table, source }
    }
}

impl Db {
    pub fn open(settings: &Settings) -> Result<Db, StoreError> {
        let mut config: postgres::Config =
            settings.url.parse().map_err(|e: postgres::Error| StoreError::Settings { reason: format!("store.url is not a PostgreSQL URL: {e}") })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(settings.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("quarry");
        }
        let at: Arc<str> = place(&config).into();
        let tls = tls(settings.ca_pem.as_deref()).map_err(|reason| StoreError::Settings { reason })?;
        let manager = Manager { config, tls: tokio_postgres_rustls::MakeRustlsConnect::new(tls) };
        // One connection at open (so a wrong URL fails the start, not the first request);
        // more as requests need them, each checked by use rather than by a ping.
        let pool = r2d2::Pool::builder()
            .max_size(settings.pool.max(1))
            .min_idle(Some(1))
            .connection_timeout(settings.connect_timeout)
            .test_on_check_out(false)
            .error_handler(Box::new(Quiet))
            .build(manager)
            .map_err(|e| StoreError::Connect { at: at.to_string(), reason: e.to_string() })?;
        let db = Db { pool, at };
        db.migrate()?;
        Ok(db)
    }

    pub fn at(&self) -> &str {
        &self.at
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        self.pool.get().map_err(|e| {
            tracing::warn!(at = %self.at, error = %e, "records store: no PostgreSQL connection");
            StoreError::Unavailable { at: self.at.to_string(), reason: e.to_string() }
        })
    }

    /// Applies the migrations this database lacks, in order, each in its transaction;
    /// refuses a database migrated past what this build knows.
    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let at = self.at.clone();
        let client = &mut conn.client;
        client.query("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).on("lock", "the migrations", &at)?;
        let applied = (|| -> Result<(), StoreError> {
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS quarry_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now())",
                )
                .on("create", "quarry_migrations", &at)?;
            let done: Vec<i32> = client
                .query("SELECT version FROM quarry_migrations ORDER BY version", &[])
                .on("read", "quarry_migrations", &at)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let known = MIGRATIONS.last().map_or(0, |m| m.0);
            if let Some(&newest) = done.last().filter(|&&v| v > known) {
                return Err(StoreError::Version { at: at.to_string(), found: newest as u64, expected: known as u64 });
            }
            for &(version, name, sql) in MIGRATIONS.iter().filter(|m| !done.contains(&m.0)) {
                let mut tx = client.transaction().on("begin", "a migration", &at)?;
                tx.batch_execute(sql).on("migrate", name, &at)?;
                tx.execute("INSERT INTO quarry_migrations (version, name) VALUES ($1, $2)", &[&version, &name]).on(
                    "write",
                    "quarry_migrations",
                    &at,
                )?;
                tx.commit().on("commit", "a migration", &at)?;
                tracing::info!(version, name, at = %at, "records store: migration applied");
            }
            Ok(())
        })();
        let unlocked = client.query("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).on("unlock", "the migrations", &at);
        applied?;
        unlocked.map(drop)
    }

    pub fn read(&self) -> Result<ReadTx, StoreError> {
        // The snapshot is taken by a transaction's first statement, not by BEGIN: one
        // now, so the read sees the state as of its start, as redb's do.
        Tx::begin(self, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SELECT 1").map(ReadTx)
    }

    pub fn write(&self) -> Result<WriteTx, StoreError> {
        // One round trip: the transaction and the writers' lock.
        Tx::begin(self, &format!("BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})")).map(WriteTx)
    }
}

/// An open transaction on a pooled connection; rolled back when dropped uncommitted.
struct Tx {
    conn: RefCell<r2d2::PooledConnection<Manager>>,
    at: Arc<str>,
    open: Cell<bool>,
}

pub struct ReadTx(Tx);

pub struct WriteTx(Tx);

impl Drop for Tx {
    fn drop(&mut self) {
        if self.open.get() {
            let conn = self.conn.get_mut();
            if conn.client.batch_execute("ROLLBACK").is_err() {
                conn.broken = true;
            }
        }
    }
}

impl Tx {
    fn begin(db: &Db, sql: &str) -> Result<Tx, StoreError> {
        let mut conn = db.conn()?;
        if let Err(e) = conn.client.batch_execute(sql) {
            conn.broken = true;
            return Err(fault("begin", "a transaction", &db.at, e));
        }
        Ok(Tx { conn: RefCell::new(conn), at: db.at.clone(), open: Cell::new(true) })
    }

    fn conn(&self) -> RefMut<'_, r2d2::PooledConnection<Manager>> {
        self.conn.borrow_mut()
    }

    /// `sql`'s statement, prepared once per connection.
    fn statement(&self, conn: &mut Conn, sql: &'static str, table: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = conn.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = conn.client.prepare(sql).on("prepare", table, &self.at)?;
        conn.statements.insert(sql, s.clone());
        Ok(s)
    }

    fn query(&self, sql: &'static str, table: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let mut conn = self.conn();
        let statement = self.statement(&mut conn, sql, table)?;
        conn.client.query(&statement, params).on("read", table, &self.at)
    }

    fn query_opt(&self, sql: &'static str, table: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, StoreError> {
        let mut conn = self.conn();
        let statement = self.statement(&mut conn, sql, table)?;
        conn.client.query_opt(&statement, params).on("read", table, &self.at)
    }

    fn execute(&self, sql: &'static str, table: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        let mut conn = self.conn();
        let statement = self.statement(&mut conn, sql, table)?;
        conn.client.execute(&statement, params).on("write", table, &self.at)
    }

    // The reads, written once for both kinds of transaction.

    fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let row = self.query_opt("SELECT value FROM kv_rows WHERE tbl = $1 AND key = $2", t.0, &[&t.0, &key])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let rows = match keys {
            Keys::All => self.query("SELECT key, value FROM kv_rows WHERE tbl = $1 ORDER BY key", t.0, &[&t.0])?,
            Keys::Between(start, end) => {
                self.query("SELECT key, value FROM kv_rows WHERE tbl = $1 AND key >= $2 AND key < $3 ORDER BY key", t.0, &[&t.0, &start, &end])?
            }
        };
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
        // A page at a time, each starting past the last key read: the range is never
        // loaded whole, however long it is.
        let (mut low, mut high, mut first) = (start.to_owned(), end.to_owned(), true);
        loop {
            let rows = match (back, first) {
                (false, true) => self.query(
                    "SELECT key, value FROM kv_rows WHERE tbl = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4",
                    t.0,
                    &[&t.0, &low, &high, &WALK_PAGE],
                )?,
                (false, false) => self.query(
                    "SELECT key, value FROM kv_rows WHERE tbl = $1 AND key > $2 AND key < $3 ORDER BY key LIMIT $4",
                    t.0,
                    &[&t.0, &low, &high, &WALK_PAGE],
                )?,
                (true, _) => self.query(
                    "SELECT key, value FROM kv_rows WHERE tbl = $1 AND key >= $2 AND key < $3 ORDER BY key DESC LIMIT $4",
                    t.0,
                    &[&t.0, &low, &high, &WALK_PAGE],
                )?,
            };
            first = false;
            let full = rows.len() as i64 == WALK_PAGE;
            for row in &rows {
                let key: &str = row.get(0);
                if !f(key, row.get(1)) {
                    return Ok(());
                }
            }
            match rows.last() {
                Some(last) if full => {
                    let key: String = last.get(0);
                    if back {
                        high = key;
                    } else {
                        low = key;
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.query_opt("SELECT value FROM kv_names WHERE tbl = $1 AND key = $2", t.0, &[&t.0, &key])?.map(|r| r.get(0)))
    }

    fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self.query("SELECT key, value FROM kv_names WHERE tbl = $1 ORDER BY key", t.0, &[&t.0])?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
        let row = self.query_opt("SELECT value FROM kv_counts WHERE tbl = $1 AND key = $2", t.0, &[&t.0, &key])?;
        Ok(row.map(|r| r.get::<_, i64>(0) as u64))
    }

    fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self.query("SELECT key, value FROM kv_counts WHERE tbl = $1 ORDER BY key", t.0, &[&t.0])?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get::<_, i64>(1) as u64)).collect())
    }

    fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let rows =
            self.query("SELECT key, value FROM kv_counts WHERE tbl = $1 AND key >= $2 AND key < $3 ORDER BY key", t.0, &[&t.0, &start, &end])?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get::<_, i64>(1) as u64)).collect())
    }

    fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.query("SELECT member FROM kv_sets WHERE tbl = $1 AND key = $2 ORDER BY member", t.0, &[&t.0, &key])?;
        Ok(rows.into_iter().map(|r| r.get(0)).collect())
    }

    fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        let Ok(after) = i64::try_from(after) else { return Ok(Vec::new()) };
        let rows = self.query("SELECT seq, data FROM kv_logs WHERE tbl = $1 AND key = $2 AND seq > $3 ORDER BY seq", t.0, &[&t.0, &key, &after])?;
        Ok(rows.into_iter().map(|r| (r.get::<_, i64>(0) as u64, r.get(1))).collect())
    }

    fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
        for row in self.query("SELECT tbl, key, value FROM kv_rows ORDER BY tbl, key", "every table", &[])? {
            f(row.get(0), row.get(1), row.get(2));
        }
        Ok(())
    }

    fn finish(&self, sql: &str) -> Result<(), StoreError> {
        let result = self.conn().client.batch_execute(sql);
        self.open.set(false);
        if let Err(e) = result {
            self.conn().broken = true;
            return Err(fault("commit", "a write", &self.at, e));
        }
        Ok(())
    }
}

macro_rules! reads {
    ($tx:ty) => {
        impl $tx {
            pub fn row(&self, t: Rows, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
                self.0.row(t, key)
            }
            pub fn rows(&self, t: Rows, keys: Keys<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
                self.0.rows(t, keys)
            }
            pub fn walk(&self, t: Rows, start: &str, end: &str, back: bool, f: &mut dyn FnMut(&str, &[u8]) -> bool) -> Result<(), StoreError> {
                self.0.walk(t, start, end, back, f)
            }
            pub fn name(&self, t: Names, key: &str) -> Result<Option<String>, StoreError> {
                self.0.name(t, key)
            }
            pub fn names(&self, t: Names) -> Result<Vec<(String, String)>, StoreError> {
                self.0.names(t)
            }
            pub fn count(&self, t: Counts, key: &str) -> Result<Option<u64>, StoreError> {
                self.0.count(t, key)
            }
            pub fn counts(&self, t: Counts) -> Result<Vec<(String, u64)>, StoreError> {
                self.0.counts(t)
            }
            pub fn counts_between(&self, t: Counts, start: &str, end: &str) -> Result<Vec<(String, u64)>, StoreError> {
                self.0.counts_between(t, start, end)
            }
            pub fn members(&self, t: Sets, key: &str) -> Result<Vec<String>, StoreError> {
                self.0.members(t, key)
            }
            pub fn log(&self, t: Logs, key: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
                self.0.log(t, key, after)
            }
            pub fn every_row(&self, f: &mut dyn FnMut(&str, &str, &[u8])) -> Result<(), StoreError> {
                self.0.every_row(f)
            }
        }
    };
}

reads!(ReadTx);
reads!(WriteTx);

impl ReadTx {
    /// Every entry of every table, shape by shape.
    pub fn every_entry(&self, f: &mut dyn FnMut(super::Entry)) -> Result<(), StoreError> {
        use super::Entry;
        let q = |sql| self.0.query(sql, "every table", &[]);
        for r in q("SELECT tbl, key, value FROM kv_rows ORDER BY tbl, key")? {
            f(Entry::Row { table: r.get(0), key: r.get(1), value: r.get(2) });
        }
        for r in q("SELECT tbl, key, value FROM kv_names ORDER BY tbl, key")? {
            f(Entry::Name { table: r.get(0), key: r.get(1), value: r.get(2) });
        }
        for r in q("SELECT tbl, key, value FROM kv_counts ORDER BY tbl, key")? {
            f(Entry::Count { table: r.get(0), key: r.get(1), value: r.get::<_, i64>(2) as u64 });
        }
        for r in q("SELECT tbl, key, member FROM kv_sets ORDER BY tbl, key, member")? {
            f(Entry::Member { table: r.get(0), key: r.get(1), member: r.get(2) });
        }
        for r in q("SELECT tbl, key, seq, data FROM kv_logs ORDER BY tbl, key, seq")? {
            f(Entry::Log { table: r.get(0), key: r.get(1), seq: r.get::<_, i64>(2) as u64, data: r.get(3) });
        }
        Ok(())
    }
}

impl WriteTx {
    /// Nothing to make: every table of a shape shares its shape's PostgreSQL table.
    pub fn create(&self, _t: Table) -> Result<(), StoreError> {
        Ok(())
    }

    /// The characters of the value it replaced, if any.
    pub fn put_row(&self, t: Rows, key: &str, value: &[u8]) -> Result<Option<i64>, StoreError> {
        let row = self.0.query_opt(
            "WITH old AS (SELECT chars FROM kv_rows WHERE tbl = $1 AND key = $2),
                  put AS (INSERT INTO kv_rows (tbl, key, value, chars) VALUES ($1, $2, $3, $4)
                          ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value, chars = EXCLUDED.chars)
             SELECT chars FROM old",
            t.0,
            &[&t.0, &key, &value, &chars(value)],
        )?;
        Ok(row.map(|r| r.get(0)))
    }

    /// The characters of the value it removed, if there was one.
    pub fn delete_row(&self, t: Rows, key: &str) -> Result<Option<i64>, StoreError> {
        let row = self.0.query_opt("DELETE FROM kv_rows WHERE tbl = $1 AND key = $2 RETURNING chars", t.0, &[&t.0, &key])?;
        Ok(row.map(|r| r.get(0)))
    }

    /// The characters (keys and values) it removed.
    pub fn delete_rows(&self, t: Rows, start: &str, end: &str) -> Result<i64, StoreError> {
        let rows = self.0.query("DELETE FROM kv_rows WHERE tbl = $1 AND key >= $2 AND key < $3 RETURNING key, chars", t.0, &[&t.0, &start, &end])?;
        Ok(rows.iter().map(|r| chars(r.get::<_, &str>(0).as_bytes()) + r.get::<_, i64>(1)).sum())
    }

    pub fn put_name(&self, t: Names, key: &str, value: &str) -> Result<(), StoreError> {
        self.0
            .execute(
                "INSERT INTO kv_names (tbl, key, value) VALUES ($1, $2, $3) ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value",
                t.0,
                &[&t.0, &key, &value],
            )
            .map(drop)
    }

    pub fn delete_name(&self, t: Names, key: &str) -> Result<(), StoreError> {
        self.0.execute("DELETE FROM kv_names WHERE tbl = $1 AND key = $2", t.0, &[&t.0, &key]).map(drop)
    }

    pub fn put_count(&self, t: Counts, key: &str, value: u64) -> Result<(), StoreError> {
        // A u64 kept as the bigint of the same bits: read back exactly, never compared.
        self.0
            .execute(
                "INSERT INTO kv_counts (tbl, key, value) VALUES ($1, $2, $3) ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value",
                t.0,
                &[&t.0, &key, &(value as i64)],
            )
            .map(drop)
    }

    pub fn delete_count(&self, t: Counts, key: &str) -> Result<(), StoreError> {
        self.0.execute("DELETE FROM kv_counts WHERE tbl = $1 AND key = $2", t.0, &[&t.0, &key]).map(drop)
    }

    pub fn add_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        self.0.execute("INSERT INTO kv_sets (tbl, key, member) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", t.0, &[&t.0, &key, &member]).map(drop)
    }

    pub fn remove_member(&self, t: Sets, key: &str, member: &str) -> Result<(), StoreError> {
        self.0.execute("DELETE FROM kv_sets WHERE tbl = $1 AND key = $2 AND member = $3", t.0, &[&t.0, &key, &member]).map(drop)
    }

    /// The characters it added, less those of entries it replaced: every entry in one
    /// statement.
    pub fn append<'a>(&self, t: Logs, key: &str, entries: impl IntoIterator<Item = (u64, &'a str)>) -> Result<i64, StoreError> {
        // The last of a sequence given twice wins, as it would written one by one.
        let mut by_seq = std::collections::BTreeMap::new();
        for (seq, data) in entries {
            let seq = i64::try_from(seq)
                .map_err(|_| StoreError::Corrupt { what: format!("{} entry of {key}", t.0), reason: format!("sequence {seq} is past 2^63") })?;
            by_seq.insert(seq, data);
        }
        if by_seq.is_empty() {
            return Ok(0);
        }
        let seqs: Vec<i64> = by_seq.keys().copied().collect();
        let data: Vec<&str> = by_seq.values().copied().collect();
        let sizes: Vec<i64> = data.iter().map(|d| chars(d.as_bytes())).collect();
        let row = self.0.query_opt(
            "WITH new AS (SELECT * FROM unnest($3::bigint[], $4::text[], $5::bigint[]) AS n(seq, data, chars)),
                  old AS (SELECT coalesce(sum(l.chars), 0)::bigint AS chars FROM kv_logs l JOIN new n
                          ON l.tbl = $1 AND l.key = $2 AND l.seq = n.seq),
                  put AS (INSERT INTO kv_logs (tbl, key, seq, data, chars) SELECT $1, $2, seq, data, chars FROM new
                          ON CONFLICT (tbl, key, seq) DO UPDATE SET data = EXCLUDED.data, chars = EXCLUDED.chars)
             SELECT chars FROM old",
            t.0,
            &[&t.0, &key, &seqs, &data, &sizes],
        )?;
        let replaced: i64 = row.map_or(0, |r| r.get(0));
        Ok(sizes.iter().sum::<i64>() - replaced)
    }

    /// The characters of the entries it dropped.
    pub fn drop_log(&self, t: Logs, key: &str) -> Result<i64, StoreError> {
        let row = self.0.query_opt(
            "WITH gone AS (DELETE FROM kv_logs WHERE tbl = $1 AND key = $2 RETURNING chars) SELECT coalesce(sum(chars), 0)::bigint FROM gone",
            t.0,
            &[&t.0, &key],
        )?;
        Ok(row.map_or(0, |r| r.get(0)))
    }

    pub fn commit(self) -> Result<(), StoreError> {
        self.0.finish("COMMIT")
    }
}

/// The shared journal's statements (`postgres/0002_journal.sql`,
/// `quarry_index::journal`): each one statement in its own transaction, outside the
/// writers' lock, so appends to different collections never wait on each other or on
/// the records' writes.
impl Db {
    fn journal<T>(&self, op: &'static str, f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        let result = f(&mut conn.client);
        if result.is_err() && conn.client.is_closed() {
            conn.broken = true;
        }
        result.on(op, "quarry_journal", &self.at)
    }

    pub fn journal_create(&self, id: &str) -> Result<(), StoreError> {
        self.journal("create", |c| c.execute("INSERT INTO quarry_journal_heads (collection) VALUES ($1) ON CONFLICT DO NOTHING", &[&id]).map(drop))
    }

    /// Gives collection `id` a journal whose head points at manifest generation `gen`
    /// (published under epoch 0), covering nothing: a collection `quarry migrate` moved
    /// in whole. A journal that has records or a manifest already is left alone; whether
    /// the head now points at `gen`.
    pub fn journal_adopt(&self, id: &str, gen: u64) -> Result<bool, StoreError> {
        let gen = gen as i64;
        let n = self.journal("adopt", |c| {
            c.execute(
                "INSERT INTO quarry_journal_heads AS h (collection, manifest) VALUES ($1, $2)
                 ON CONFLICT (collection) DO UPDATE SET manifest = EXCLUDED.manifest WHERE h.lsn = 0 AND h.manifest IN (0, $2)",
                &[&id, &gen],
            )
        })?;
        Ok(n == 1)
    }

    pub fn journal_remove(&self, id: &str) -> Result<(), StoreError> {
        self.journal("remove", |c| {
            let mut tx = c.transaction()?;
            tx.execute("DELETE FROM quarry_journal_heads WHERE collection = $1", &[&id])?;
            tx.execute("DELETE FROM quarry_journal WHERE collection = $1", &[&id])?;
            tx.commit()
        })
    }

    /// Appends `records` in one statement (one commit); the last one's LSN, `None`
    /// when the collection has no journal.
    pub fn journal_append(&self, id: &str, records: &[Vec<u8>]) -> Result<Option<u64>, StoreError> {
        let n = records.len() as i64;
        let row = self.journal("append", |c| {
            c.query_opt(
                "WITH h AS (UPDATE quarry_journal_heads SET lsn = lsn + $2 WHERE collection = $1 RETURNING lsn),
                      ins AS (INSERT INTO quarry_journal (collection, lsn, record)
                              SELECT $1, h.lsn - $2 + r.n, r.record FROM h, unnest($3::bytea[]) WITH ORDINALITY AS r(record, n))
                 SELECT lsn FROM h",
                &[&id, &n, &records],
            )
        })?;
        Ok(row.map(|r| r.get::<_, i64>(0) as u64))
    }

    pub fn journal_read(&self, id: &str, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let (after, limit) = (after as i64, limit as i64);
        let rows = self.journal("read", |c| {
            c.query("SELECT lsn, record FROM quarry_journal WHERE collection = $1 AND lsn > $2 ORDER BY lsn LIMIT $3", &[&id, &after, &limit])
        })?;
        Ok(rows.into_iter().map(|r| (r.get::<_, i64>(0) as u64, r.get(1))).collect())
    }

    /// `(lsn, manifest, covered, publisher)` of one collection, or of all (`id` `None`).
    pub fn journal_heads(&self, id: Option<&str>) -> Result<Vec<(String, [u64; 4])>, StoreError> {
        let rows = self.journal("read", |c| match id {
            Some(id) => c.query("SELECT collection, lsn, manifest, covered, publisher FROM quarry_journal_heads WHERE collection = $1", &[&id]),
            None => c.query("SELECT collection, lsn, manifest, covered, publisher FROM quarry_journal_heads", &[]),
        })?;
        let n = |r: &Row, i| r.get::<_, i64>(i) as u64;
        Ok(rows.into_iter().map(|r| (r.get(0), [n(&r, 1), n(&r, 2), n(&r, 3), n(&r, 4)])).collect())
    }
}

impl WriteTx {
    /// In a write that checked its lease ([`crate::store::cluster::fenced_in`]): moves
    /// collection `id`'s manifest pointer from `from` to `to`, covering records up to
    /// `covered`, and drops them. False (nothing changed) when the pointer is not at
    /// `from` any more.
    pub fn journal_publish(&self, id: &str, from: u64, to: u64, covered: u64, epoch: u64) -> Result<bool, StoreError> {
        let (from, to, covered, epoch) = (from as i64, to as i64, covered as i64, epoch as i64);
        let moved = self.0.execute(
            "UPDATE quarry_journal_heads SET manifest = $3, covered = greatest(covered, $4), publisher = $5
             WHERE collection = $1 AND manifest = $2",
            "quarry_journal_heads",
            &[&id, &from, &to, &covered, &epoch],
        )?;
        if moved == 0 {
            return Ok(false);
        }
        self.0.execute("DELETE FROM quarry_journal WHERE collection = $1 AND lsn <= $2", "quarry_journal", &[&id, &covered])?;
        Ok(true)
    }
}
