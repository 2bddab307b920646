//! The physical ceiling of hybrid search: raw single-query embedding throughput, one
//! thread per CPU (as the server runs one shard per core), each with its own ort session
//! with one intra-op thread, embedding the same queries a search load sends. A search
//! cannot be faster than embedding its query; `bench/search/run.sh` prints the server's
//! hybrid throughput as a ratio of this.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// BEIR queries.jsonl whose texts are embedded in turn.
    #[arg(long)]
    queries: PathBuf,
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
    let queries: Arc<Vec<String>> = Arc::new(
        std::fs::read_to_string(&a.queries)?
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["text"].as_str().map(str::to_owned))
            .collect(),
    );
    let cpus = quarry_bench::load::CpuList::parse(&a.cpus).map_err(|e| anyhow::anyhow!("--cpus: {e:?}"))?.cpus().to_vec();
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = cpus
        .iter()
        .enumerate()
        .map(|(t, &cpu)| {
            let (model, queries, measuring, stop, done) = (model.clone(), queries.clone(), measuring.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || {
                quarry_bench::load::sys::pin_current_thread(cpu).expect("pinning");
                let mut e = model.embedder().expect("a session");
                let mut i = t * 7919;
                while !stop.load(Ordering::Relaxed) {
                    e.embed_query(&queries[i % queries.len()]).expect("embedding");
                    i += 1;
                    if measuring.load(Ordering::Relaxed) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(a.warmup);
    measuring.store(true, Ordering::Release);
    let t = Instant::now();
    std::thread::sleep(a.duration);
    let n = done.load(Ordering::Acquire);
    let secs = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    threads.into_iter().for_each(|t| drop(t.join()));
    println!("{}", serde_json::json!({"model": a.model, "precision": a.precision, "threads": cpus.len(), "queries_per_s": n as f64 / secs}));
    Ok(())
}
