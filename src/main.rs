//! `quarry`: parse the command line, resolve the configuration, run.

use anyhow::{Context, Result};
use clap::Parser;
use quarry::cli::{AccountsAction, Cli, Command, Common, IngestArgs};
use quarry::config::{Config, Flags};
use quarry::store::Records;
use quarry::{identity, ingest_cli, shard, telemetry};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A command that cannot go on says why in one line on stderr (each cause after a
/// colon, no backtrace: the sentence is for the operator) and exits 1.
fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("quarry: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve { common, listen, shards } => {
            let flags = Flags { listen, shards, ..common.flags() };
            let config = load(&common, &flags)?;
            telemetry::init(&config.log);
            shard::run(config).context("quarry serve")
        }
        Command::Accounts { action } => accounts(action),
        Command::Ingest(args) => ingest(args),
        Command::Migrate { common } => migrate(&common),
    }
}

/// Runs `quarry ingest`, prints its summary, and exits 1 if a document failed, 2 if the run
/// could not go on.
fn ingest(args: IngestArgs) -> Result<()> {
    let input = ingest_cli::Input::detect(&args.path, args.files).map_err(|e| anyhow::anyhow!(e))?;
    let collection = match (args.collection, args.create) {
        (Some(id), _) => ingest_cli::Target::Existing(id),
        (None, Some(name)) => ingest_cli::Target::Create { name, embedder: args.embedder },
        (None, None) => unreachable!("clap requires --collection or --create"),
    };
    eprintln!("quarry ingest: sending {} to {} with {} in flight", input.describe(), args.server, args.concurrency);
    let options = ingest_cli::Options {
        server: args.server,
        key: args.key,
        collection,
        input,
        concurrency: usize::from(args.concurrency),
        progress: args.progress,
        max_rate_wait: std::time::Duration::from_secs(args.max_rate_wait),
        observer: None,
    };
    match ingest_cli::run(options) {
        Ok(summary) => {
            print!("{}", summary.text());
            if summary.counts().failed > 0 {
                std::process::exit(1);
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("quarry ingest: {e}");
            std::process::exit(2);
        }
    }
}

fn load(common: &Common, flags: &Flags) -> Result<Config> {
    Config::load(common.config.as_deref(), std::env::vars(), flags).context("configuration")
}

/// `quarry migrate`: the data directory's records into PostgreSQL, then its segments
/// into the bucket (either half when the configuration names that backend; neither is
/// an error). The data directory is locked for the run, so no server is using it.
fn migrate(common: &Common) -> Result<()> {
    use quarry_core::segments::{S3Objects, SegmentSettings};
    use quarry_core::store::StoreSettings;
    let config = load(common, &common.flags())?;
    let to_postgres = matches!(config.store, StoreSettings::Postgres(_));
    let to_bucket = matches!(config.segments, SegmentSettings::S3(_));
    anyhow::ensure!(
        to_postgres || to_bucket,
        "nothing to migrate to: set [store] kind = \"postgres\" (and url) and/or [segments] store = \"s3\" (and bucket), in the config file or the environment"
    );
    // Opening the records takes the data directory's lock (and migrates the schema).
    let records = Records::open_with(&config.data, &config.store)?;
    if to_postgres {
        let copied = records.migrate_from(&config.data.join("records.redb"))?;
        let shapes: Vec<String> = copied.by_shape.iter().map(|(shape, n)| format!("{n} {shape}")).collect();
        println!("records: {} copied to {} ({} written now), every entry read back and equal", shapes.join(", "), records.at(), copied.written);
    }
    if let SegmentSettings::S3(s3) = &config.segments {
        let objects = S3Objects::open(s3).map_err(|e| anyhow::anyhow!("[segments]: {e}"))?;
        let root = config.data.join("collections");
        let mut ids: Vec<String> = match std::fs::read_dir(&root) {
            Ok(dirs) => dirs.flatten().filter(|d| d.path().is_dir()).map(|d| d.file_name().to_string_lossy().into_owned()).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(anyhow::anyhow!("listing {}: {e}", root.display())),
        };
        ids.sort();
        // Records and segments both shared: the write-ahead log is the shared journal
        // from now on, so each collection's local tail goes into a segment first and
        // the journal's head is pointed at the published manifest.
        let journal = match to_postgres {
            true => quarry_core::store::journal::SharedJournal::open(std::sync::Arc::new(records), "migrate", std::time::Duration::from_secs(5)),
            false => None,
        };
        let (mut files, mut bytes) = (0, 0);
        for id in &ids {
            let dir = root.join(id);
            let remote = quarry_index::engine::remote(&objects, id);
            let (f, b) = match &journal {
                Some(j) => quarry_index::collection::adopt_into_journal(id, &dir, quarry_index::collection::Options::default(), &remote, j)?,
                None => quarry_index::collection::publish_dir(&dir, &remote)?,
            };
            files += f;
            bytes += b;
        }
        println!(
            "segments: {} collections, {files} files ({bytes} bytes) in {}, each read back and its SHA-256 checked",
            ids.len(),
            objects.describe()
        );
    }
    Ok(())
}

/// What an `accounts` subcommand does with the store and the configuration.
type AccountsRun<'a> = &'a dyn Fn(&Records, &Config) -> Result<()>;

fn accounts(action: AccountsAction) -> Result<()> {
    let (common, run): (&Common, AccountsRun) = match &action {
        AccountsAction::Create { common, email, plan } => (common, &move |records, config| {
            let plan = plan.as_deref().unwrap_or(&config.auth.default_plan);
            let done = identity::create_account(records, &config.plans, email, plan)?;
            println!("account {} ({}) on plan {}", done.account.id, done.account.email, done.account.plan);
            println!("api key (shown once): {}", done.key.secret);
            Ok(())
        }),
        AccountsAction::SetPlan { common, email, plan } => (common, &move |records, config| {
            let a = identity::set_plan(records, &config.plans, email, plan)?;
            println!("account {} ({}) is now on plan {}", a.id, a.email, a.plan);
            Ok(())
        }),
        AccountsAction::List { common } => (common, &|records, _| {
            for a in records.accounts()? {
                println!("{}\t{}\t{}\t{}", a.id, a.email, a.plan, a.created_at);
            }
            Ok(())
        }),
    };
    let config = load(common, &common.flags())?;
    let records = Records::open_with(&config.data, &config.store)?;
    run(&records, &config)
}
