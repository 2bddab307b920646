//! The command line: `quarry serve`, `quarry accounts …`, `quarry ingest`, `quarry migrate`,
//! `quarry --version`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::Flags;
use crate::ingest_cli::ProgressMode;

/// The environment variable `quarry ingest` reads its key from when `--key` is not given.
/// The server's configuration loader passes it over (config::RESERVED_ENV), so a shell that
/// sets it for ingest can still start `quarry serve`.
pub const API_KEY_ENV: &str = crate::config::INGEST_KEY_ENV;

#[derive(Debug, Parser)]
#[command(name = "quarry", version, about = "Quarry: hybrid search, research and agents in one binary")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (until SIGTERM or SIGINT).
    Serve {
        #[command(flatten)]
        common: Common,
        /// Address to listen on, e.g. 127.0.0.1:4400 (port 0 picks a free one).
        #[arg(long)]
        listen: Option<String>,
        /// Shards (one per core, pinned); 0 or absent = every CPU this process may use.
        #[arg(long)]
        shards: Option<usize>,
    },
    /// Manage accounts (operators). Works on a stopped server's data directory.
    Accounts {
        #[command(subcommand)]
        action: AccountsAction,
    },
    /// Send a directory of files or a JSONL / BEIR corpus to a running server. Exits 1 when a
    /// document failed (each is reported with the server's reason), 2 when the run could not
    /// go on (a bad key, a missing collection, the server unreachable).
    Ingest(IngestArgs),
    /// Copy a stopped server's data directory onto the shared backends its configuration
    /// names: the records into PostgreSQL ([store] kind = "postgres") and every
    /// collection's segments into the bucket ([segments] store = "s3"), each read back and
    /// checked. Safe to re-run; a database that holds other records is refused untouched.
    Migrate {
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["collection", "create"])))]
pub struct IngestArgs {
    /// A directory of files (.txt .md .markdown → text, .html .htm → html, .csv, .tsv, .json;
    /// other files are reported and skipped), a JSONL file of {"_id", "title", "text"}
    /// records, or a BEIR directory holding corpus.jsonl. A file's path relative to the
    /// directory, or a record's _id, is its stable id (kept in metadata.source_id): a second
    /// run skips every id the collection already holds.
    pub path: PathBuf,
    /// The server: http://HOST:PORT.
    #[arg(long, default_value = "http://127.0.0.1:4400")]
    pub server: String,
    /// The API key (al_...).
    #[arg(long, env = API_KEY_ENV, hide_env_values = true)]
    pub key: String,
    /// Add to this collection (col_...).
    #[arg(long)]
    pub collection: Option<String>,
    /// Create a collection with this name and add to it.
    #[arg(long)]
    pub create: Option<String>,
    /// With --create: the collection's embedder, one the server loads (its default when
    /// absent).
    #[arg(long, requires = "create")]
    pub embedder: Option<String>,
    /// Adds in flight at once.
    #[arg(long, short = 'j', default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Send a BEIR directory's files rather than its corpus.jsonl.
    #[arg(long)]
    pub files: bool,
    /// auto: a bar on a terminal, plain lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Seconds one document may keep waiting out rate refusals before it counts as failed.
    #[arg(long, default_value_t = 900)]
    pub max_rate_wait: u64,
}

#[derive(Debug, Args)]
pub struct Common {
    /// A TOML configuration file (see ops/quarry.toml for every key).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The data directory.
    #[arg(long)]
    pub data: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AccountsAction {
    /// Create an account and print its first key (shown once).
    Create {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        email: String,
        /// The plan; default: auth.default_plan.
        #[arg(long)]
        plan: Option<String>,
    },
    /// Move an account to another plan.
    SetPlan {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        email: String,
        #[arg(long)]
        plan: String,
    },
    /// List every account.
    List {
        #[command(flatten)]
        common: Common,
    },
}

impl Common {
    pub fn flags(&self) -> Flags {
        Flags { data: self.data.clone(), ..Flags::default() }
    }
}
