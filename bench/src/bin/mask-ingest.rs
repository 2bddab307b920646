//! What `mask_identifiers` costs ingest: SciFact's 500-document subset (tests/data), each
//! document prepared as the server's ingest worker prepares it (identifiers counted,
//! chunked) and embedded as passages one document per call, with the embedder's input
//! masked (on) or not (off). Rounds alternate off and on on one thread; the figure is the
//! median rate of each and their ratio (issue 4/9's aim: on ≥ 0.9× off).
//!
//!   cargo run --release -p quarry-bench --bin mask-ingest -- [--rounds 3] [--model multilingual-e5-small]

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use quarry_index::chunk::ChunkOptions;
use quarry_index::embed::{Model, Precision};
use quarry_index::ingest::{self, DocDraft, PageDraft, Privacy};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "multilingual-e5-small")]
    model: String,
    #[arg(long, default_value = "models")]
    models_dir: PathBuf,
    #[arg(long, default_value = "tests/data/scifact-500/corpus.jsonl")]
    corpus: PathBuf,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let lib = a.models_dir.join("lib/libonnxruntime.so.1.31.1");
    let model = Model::load(&a.models_dir, &lib, &a.model, Precision::Int8).context("loading the model")?;
    let mut e = model.embedder().context("a session")?;
    let docs: Vec<(String, String)> = std::fs::read_to_string(&a.corpus)?
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            (v["title"].as_str().unwrap_or("").to_owned(), v["text"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    let opts = ChunkOptions::default();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 0..a.rounds {
        for mask in [false, true] {
            let t = Instant::now();
            let mut found = 0u64;
            for (i, (title, text)) in docs.iter().enumerate() {
                let draft = DocDraft {
                    id: format!("doc_{i}"),
                    title: Some(title.clone()),
                    privacy: Privacy { mask_embedding: mask, redact: false },
                    pages: vec![PageDraft { text: text.clone(), ..PageDraft::default() }],
                    ..DocDraft::default()
                };
                let (batch, counts) = ingest::prepare_counted(draft, &opts);
                found += counts.total() as u64;
                let plan = quarry_index::windows::plan(&batch, mask, &e).context("planning windows")?;
                quarry_index::windows::embed(&mut e, &plan).context("embedding")?;
            }
            let rate = docs.len() as f64 / t.elapsed().as_secs_f64();
            println!("round {}: mask {} {rate:.1} documents/s ({found} identifiers counted)", round + 1, if mask { "on " } else { "off" });
            if mask {
                on.push(rate)
            } else {
                off.push(rate)
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut off), median(&mut on));
    println!("median: off {off:.1} documents/s, on {on:.1} documents/s, ratio {:.3}", on / off);
    Ok(())
}
