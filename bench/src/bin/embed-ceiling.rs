//! The physical ceilings of search and ingest: raw embedding throughput, one thread per
//! CPU (as the server runs one shard per core), each with its own ort session with one
//! intra-op thread.
//!
//! - `--queries FILE`: single-query embedding of the same queries a search load sends. A
//!   hybrid search cannot be faster than embedding its query.
//! - `--corpus FILE --batch 32`: documents embedded as passages in batches of 32, each
//!   document's text as ingest gives it to the embedder (title, blank line, text). Adding a
//!   document cannot be faster than embedding it.
//!
//! `bench/load/run.sh` prints the server's figures as ratios of these.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use quarry_index::embed::{Model, Precision};

#[derive(Parser)]
struct Args {
    /// The model id (models/models.toml).
    #[arg(long, default_value = "multilingual-e5-small")]
    model: String,
    #[arg(long, default_value = "int8")]
    precision: String,
    #[arg(long, default_value = "models")]
    models_dir: PathBuf,
    /// Threads, each pinned to one of these CPUs (taskset syntax: 0-1, 0,2).
    #[arg(long, default_value = "0-1")]
    cpus: String,
    /// BEIR queries.jsonl whose texts are embedded in turn, one query per call.
    #[arg(long, required_unless_present = "corpus", conflicts_with = "corpus")]
    queries: Option<PathBuf>,
    /// BEIR corpus.jsonl whose documents are embedded as passages, `--batch` per call.
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Documents per call with `--corpus`.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    #[arg(long, default_value = "10s", value_parser = humantime_duration)]
    duration: Duration,
    #[arg(long, default_value = "2s", value_parser = humantime_duration)]
    warmup: Duration,
}

fn humantime_duration(s: &str) -> Result<Duration, String> {
    quarry_bench::load::duration::parse_duration(s)
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let precision = if a.precision == "fp32" { Precision::Fp32 } else { Precision::Int8 };
    let lib = a.models_dir.join("lib/libonnxruntime.so.1.31.1");
    let model = Arc::new(Model::load(&a.models_dir, &lib, &a.model, precision).context("loading the model")?);
    // Texts are embedded in turn: queries one per call, documents `batch` per call.
    let (path, per_call) = match (&a.queries, &a.corpus) {
        (Some(q), _) => (q, 1),
        (None, Some(c)) => (c, a.batch.max(1)),
        (None, None) => anyhow::bail!("give --queries or --corpus"),
    };
    let texts: Vec<String> = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?
        .lines()
        .filter_map(|l| {
            let v = serde_json::from_str::<serde_json::Value>(l).ok()?;
            let text = v["text"].as_str()?;
            Some(match v["title"].as_str().filter(|t| !t.is_empty()) {
                Some(title) if a.corpus.is_some() => format!("{title}\n\n{text}"),
                _ => text.to_owned(),
            })
        })
        .collect();
    anyhow::ensure!(texts.len() >= per_call, "{}: fewer texts than one call takes", path.display());
    let queries = Arc::new(texts);
    let passages = a.corpus.is_some();
    let cpus = quarry_bench::load::CpuList::parse(&a.cpus).map_err(|e| anyhow::anyhow!("--cpus: {e:?}"))?.cpus().to_vec();
    // Each thread times the calls it starts inside the measured window (finishing the last
    // one after the window closes, and making at least one): a batch of 32 documents takes seconds, so counting only
    // the calls that end inside the window would round a short run down to nothing.
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = cpus
        .iter()
        .enumerate()
        .map(|(t, &cpu)| {
            let (model, queries, measuring, stop) = (model.clone(), queries.clone(), measuring.clone(), stop.clone());
            std::thread::spawn(move || {
                quarry_bench::load::sys::pin_current_thread(cpu).expect("pinning");
                let mut e = model.embedder().expect("a session");
                let mut i = t * 7919;
                let (mut texts, mut busy) = (0u64, Duration::ZERO);
                // Every thread times at least one call, however short the window.
                while !(stop.load(Ordering::Acquire) && texts > 0) {
                    let counted = measuring.load(Ordering::Acquire);
                    let started = Instant::now();
                    if !passages {
                        e.embed_query(&queries[i % queries.len()]).expect("embedding");
                    } else {
                        let batch: Vec<&str> = (0..per_call).map(|j| queries[(i + j) % queries.len()].as_str()).collect();
                        e.embed_passages(&batch).expect("embedding");
                    }
                    i += per_call;
                    if counted {
                        texts += per_call as u64;
                        busy += started.elapsed();
                    }
                }
                (texts, busy)
            })
        })
        .collect();
    std::thread::sleep(a.warmup);
    measuring.store(true, Ordering::Release);
    std::thread::sleep(a.duration);
    stop.store(true, Ordering::Release);
    let rate: f64 = threads
        .into_iter()
        .map(|t| t.join().expect("an embedding thread panicked"))
        .map(|(texts, busy)| if busy.is_zero() { 0.0 } else { texts as f64 / busy.as_secs_f64() })
        .sum();
    let out = if !passages {
        serde_json::json!({"model": a.model, "precision": a.precision, "threads": cpus.len(), "queries_per_s": rate})
    } else {
        serde_json::json!({"model": a.model, "precision": a.precision, "threads": cpus.len(), "batch": per_call, "docs_per_s": rate})
    };
    println!("{out}");
    Ok(())
}
