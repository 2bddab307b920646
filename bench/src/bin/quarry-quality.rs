//! `quarry-quality`: index a BEIR-layout data set into a running Quarry through its HTTP API
//! (with `quarry ingest`'s code: `quarry::ingest_cli`),
//! run every judged query in each mode through `POST /v1/collections/{id}/evaluate` in batches,
//! and print nDCG@10, recall@k and MRR@10 beside the published references, as Markdown.
//!
//! ```text
//! quarry-quality --server http://127.0.0.1:7700 --key al_... --dataset $EVAL_DIR/scifact
//! quarry-quality --server http://127.0.0.1:7700 --dataset $EVAL_DIR/scifact --subset 1000 \
//!     --modes keyword,hybrid --concurrency 8 --batch 100 --out results.md
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::builder::TypedValueParser as _;
use clap::Parser;
use quarry_bench::quality::beir::Dataset;
use quarry_bench::quality::client::{Client, Mode, MAX_QUESTIONS};
use quarry_bench::quality::run::{self, RunOptions, DEFAULT_BATCH, MAX_K};

#[derive(Parser, Debug)]
#[command(name = "quarry-quality", version, about = "nDCG@10, recall and MRR@10 of Quarry's search through its HTTP API on a BEIR-layout data set")]
struct Args {
    /// The server: http://HOST:PORT (plain HTTP).
    #[arg(long)]
    server: String,
    /// API key (al_...). Without one, a fresh account is signed up on the default plan.
    #[arg(long)]
    key: Option<String>,
    /// BEIR-layout directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.
    #[arg(long)]
    dataset: PathBuf,
    /// The qrels file to judge by: qrels/<split>.tsv.
    #[arg(long, default_value = "test")]
    split: String,
    /// Index only a fixed subset of this many documents (those relevant to a query first) and
    /// run only the queries whose relevant documents are all in it.
    #[arg(long)]
    subset: Option<usize>,
    /// Search modes to evaluate, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "keyword,semantic,hybrid")]
    modes: Vec<Mode>,
    /// Requests in flight at once, for adds and for evaluate calls.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Pages asked of each search (the API allows 1 to 50); recall is measured at this depth.
    #[arg(long, default_value_t = MAX_K, value_parser = clap::value_parser!(u64).range(1..=50).map(|k| k as usize))]
    k: usize,
    /// The collection's embedder: one the server loads (`embedders`); the server's default
    /// when absent.
    #[arg(long)]
    embedder: Option<String>,
    /// Questions per evaluate call (the API allows 1000 at most).
    #[arg(long, default_value_t = DEFAULT_BATCH, value_parser = clap::value_parser!(u64).range(1..=MAX_QUESTIONS as u64).map(|n| n as usize))]
    batch: usize,
    /// A peer system's scores on the same data set, as one JSON object (what
    /// `bench/quality/bm25s_peer.py` prints), shown under ours; repeatable.
    #[arg(long)]
    peer: Vec<PathBuf>,
    /// Query expansion in the evaluate calls: off (the query as typed), on, or both (each
    /// mode evaluated twice on the same collection, with a table of the change).
    #[arg(long, default_value = "off", value_parser = ["off", "on", "both"])]
    expand: String,
    /// Also write the Markdown report to this file (it is always printed).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quarry-quality: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<()> {
    let data = load(&args)?;
    let client = authenticate(Client::new(&args.server)?, args.key.clone())?;
    let options = RunOptions { concurrency: args.concurrency.max(1), search_k: args.k, batch: args.batch, expand: false, progress: Some(progress) };
    eprintln!(
        "quarry-quality: indexing {} documents of {} into {}, then evaluating {} queries × {}",
        data.corpus.len(),
        data.name,
        args.server,
        data.queries.len(),
        args.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(",")
    );
    let name = collection_name(&data.name, args.subset);
    let indexed = run::index_with(&client, &data, &name, args.embedder.as_deref(), &options)?;
    let runs: &[bool] = match args.expand.as_str() {
        "on" => &[true],
        "both" => &[false, true],
        _ => &[false],
    };
    let mut markdown = String::new();
    let mut modes = Vec::new();
    for &expand in runs {
        let options = RunOptions { expand, ..options };
        let mut report = run::evaluate(&client, &indexed, &data, &args.modes, &options)?;
        report.subset = args.subset;
        for path in &args.peer {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            report.peers.push(serde_json::from_str(&text).with_context(|| format!("{}: not a peer's scores", path.display()))?);
        }
        if runs.len() > 1 || expand {
            markdown.push_str(&format!("\n#### expand: {expand}\n\n"));
        }
        markdown.push_str(&report.markdown());
        modes.push(report.modes);
    }
    if let [off, on] = &modes[..] {
        markdown.push_str(&quarry_bench::quality::expand::comparison(off, on));
    }
    print!("{markdown}");
    if let Some(path) = &args.out {
        std::fs::write(path, &markdown).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn load(args: &Args) -> Result<Dataset> {
    let data = Dataset::load(&args.dataset, &args.split)?;
    let data = match args.subset {
        Some(n) => data.subset(n),
        None => data,
    };
    if data.queries.is_empty() {
        bail!(
            "{}: no judged query to run (split {:?}{})",
            args.dataset.display(),
            args.split,
            args.subset.map_or(String::new(), |n| format!(", subset {n}"))
        );
    }
    Ok(data)
}

/// Uses `--key`, or signs up a throwaway account and says what that means for the run.
fn authenticate(client: Client, key: Option<String>) -> Result<Client> {
    if let Some(key) = key {
        return Ok(client.with_key(key));
    }
    let email = format!("quality-{}@quarry.invalid", random_hex()?);
    let signup = client.signup(&email)?;
    eprintln!(
        "quarry-quality: warning: no --key, so signed up {email} (account {}) on the {} plan. \
         That plan's rate, search and storage limits may throttle or stop this run; raise it with \
         `quarry accounts set-plan {} <plan>` and rerun with --key {}.",
        signup.account.id, signup.account.plan, signup.account.id, signup.api_key
    );
    Ok(client.with_key(signup.api_key))
}

fn random_hex() -> Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("getrandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn collection_name(dataset: &str, subset: Option<usize>) -> String {
    let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let size = subset.map_or("full".to_string(), |n| format!("{n} docs"));
    format!("quality {dataset} {size} {seconds}")
}

/// A progress bar redrawn in place on a terminal; a line per step otherwise (logs, CI).
fn progress(phase: &str, done: usize, total: usize) {
    use std::io::{IsTerminal, Write};
    let mut err = std::io::stderr();
    if !err.is_terminal() {
        eprintln!("quarry-quality: {phase} {done}/{total}");
        return;
    }
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled));
    let end = if done >= total { "\n" } else { "" };
    let _ = write!(err, "\rquarry-quality: {phase:<9} [{bar}] {done}/{total}{end}");
    let _ = err.flush();
}
