//! What embedding a long page in windows costs ingest (issue 22): SciFact abstracts
//! (tests/data/scifact-500) concatenated `--group` at a time into long pages of several
//! windows, against the texts of those same windows ingested as pages of their own (each
//! one window: the same inputs, the same tokens). Each document is prepared, planned
//! (`windows::plan`) and embedded as the server's ingest worker does it, one document per
//! call, on one thread; rounds alternate the two sets. The ratio of their times is what
//! a long page costs beyond its embeddings (1.0: nothing); the abstracts as they are
//! (most one window, fewer tokens each) are timed beside for scale.
//!
//!   cargo run --release -p quarry-bench --bin window-ingest -- [--rounds 3] [--docs 200] [--group 8]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use quarry_index::chunk::ChunkOptions;
use quarry_index::embed::{Embedder, Model, Precision};
use quarry_index::ingest::{self, DocDraft, PageDraft};
use quarry_index::windows;

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
    /// Abstracts used (the long set concatenates the same ones).
    #[arg(long, default_value_t = 200)]
    docs: usize,
    /// Abstracts per long page.
    #[arg(long, default_value_t = 8)]
    group: usize,
}

/// One pass over a set: windows embedded, tokens they held, time planning, time in all.
#[derive(Default, Clone, Copy)]
struct Pass {
    pages: usize,
    windows: usize,
    single_window_pages: usize,
    tokens: usize,
    prepare: Duration,
    plan: Duration,
    embed: Duration,
    total: Duration,
}

fn ingest(e: &mut Embedder, pages: &[String]) -> anyhow::Result<Pass> {
    let opts = ChunkOptions::default();
    let mut p = Pass { pages: pages.len(), ..Pass::default() };
    let started = Instant::now();
    for (i, text) in pages.iter().enumerate() {
        let draft = DocDraft { id: format!("doc_{i}"), pages: vec![PageDraft { text: text.clone(), ..PageDraft::default() }], ..DocDraft::default() };
        let t = Instant::now();
        let mut batch = ingest::prepare(draft, &opts);
        p.prepare += t.elapsed();
        let t = Instant::now();
        let plan = windows::plan(&batch, false, &*e).context("planning")?;
        p.plan += t.elapsed();
        let refs: Vec<&str> = plan.inputs.iter().map(String::as_str).collect();
        let t = Instant::now();
        let v = windows::embed(e, &plan).context("embedding")?;
        p.embed += t.elapsed();
        p.windows += plan.windows.len();
        p.single_window_pages += usize::from(plan.windows.len() == 1);
        ingest::attach_vectors(&mut batch, plan.windows, v.dims, v.data);
        p.tokens += refs.iter().map(|r| e.passage_tokens(r).unwrap_or(0)).sum::<usize>();
    }
    p.total = started.elapsed();
    Ok(p)
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let lib = a.models_dir.join("lib/libonnxruntime.so.1.31.1");
    let model = Model::load(&a.models_dir, &lib, &a.model, Precision::Int8).context("loading the model")?;
    let mut e = model.embedder().context("a session")?;
    let abstracts: Vec<String> = std::fs::read_to_string(&a.corpus)?
        .lines()
        .take(a.docs)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["text"].as_str().unwrap_or("").to_owned()
        })
        .collect();
    let long: Vec<String> = abstracts.chunks(a.group).map(|g| g.join("\n\n")).collect();
    // The long pages' windows as pages of their own.
    let mut window_pages = Vec::new();
    for (i, text) in long.iter().enumerate() {
        let draft = DocDraft { id: format!("doc_{i}"), pages: vec![PageDraft { text: text.clone(), ..PageDraft::default() }], ..DocDraft::default() };
        window_pages.extend(windows::plan(&ingest::prepare(draft, &ChunkOptions::default()), false, &e)?.inputs);
    }
    let abs = ingest(&mut e, &abstracts)?;
    println!(
        "abstracts as they are: {:.2} ms/window ({} pages, {} windows, {:.0} tokens/window)",
        abs.total.as_secs_f64() * 1000.0 / abs.windows as f64,
        abs.pages,
        abs.windows,
        abs.tokens as f64 / abs.windows as f64
    );
    let (mut short_runs, mut long_runs) = (Vec::new(), Vec::new());
    for round in 0..a.rounds {
        let s = ingest(&mut e, &window_pages)?;
        let l = ingest(&mut e, &long)?;
        let per = |p: &Pass| p.total.as_secs_f64() * 1000.0 / p.windows as f64;
        println!(
            "round {}: windows as pages {:.2} ms/window ({} pages, {} windows), long pages {:.2} ms/window ({} pages, {} windows, planning {:.1}% of it)",
            round + 1,
            per(&s),
            s.pages,
            s.windows,
            per(&l),
            l.pages,
            l.windows,
            100.0 * l.plan.as_secs_f64() / l.total.as_secs_f64()
        );
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        for (name, p) in [("windows as pages", &s), ("long pages", &l)] {
            println!("  {name}: prepare {:.0} ms, plan {:.0} ms, embed {:.0} ms, all {:.0} ms", ms(p.prepare), ms(p.plan), ms(p.embed), ms(p.total));
        }
        short_runs.push(s);
        long_runs.push(l);
    }
    let median = |runs: &[Pass], f: &dyn Fn(&Pass) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (s, l) = (short_runs[0], long_runs[0]);
    let per_window = |p: &Pass| p.total.as_secs_f64() * 1000.0 / p.windows as f64;
    let per_token = |p: &Pass| p.total.as_secs_f64() * 1e6 / p.tokens as f64;
    let (sw, lw) = (median(&short_runs, &per_window), median(&long_runs, &per_window));
    let (st, lt) = (median(&short_runs, &per_token), median(&long_runs, &per_token));
    println!(
        "windows as pages: {} of {} pages one window, {:.0} tokens/window; long pages: {:.1} windows/page, {:.0} tokens/window",
        s.single_window_pages,
        s.pages,
        s.tokens as f64 / s.windows as f64,
        l.windows as f64 / l.pages as f64,
        l.tokens as f64 / l.windows as f64
    );
    println!("median: {sw:.2} ms per single-window page, {lw:.2} ms per window of a long page: ratio {:.3}", lw / sw);
    println!("per token embedded: {st:.1} µs against {lt:.1} µs: ratio {:.3}", lt / st);
    println!(
        "a long page costs {:.3}× its windows embedded as pages of their own",
        median(&long_runs, &|p| p.total.as_secs_f64()) / median(&short_runs, &|p| p.total.as_secs_f64())
    );
    Ok(())
}
