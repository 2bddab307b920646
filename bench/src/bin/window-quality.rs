//! Semantic ranking of long pages with windows and without (issue 22), on a long-document
//! set made from SciFact: every abstract a test query judges relevant plus seeded random
//! others (`--abstracts` in all), shuffled, then concatenated `--group` at a time into one
//! Markdown page each (`## title` then the abstract; no page breaks). A long document is
//! relevant to a query when it holds an abstract the query's qrels name. Both
//! collections go through the engine's own add and semantic search; "one vector" embeds
//! each page as before windows (title and text, cut at the model's window), "windows" as
//! ingest now does. Prints nDCG@10, recall@10 and recall@100 of each.
//!
//!   cargo run --release -p quarry-bench --bin window-quality -- [--scifact $EVAL_DIR/scifact] \
//!       [--model all-MiniLM-L6-v2] [--abstracts 1000] [--group 8]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use quarry_index::chunk::ChunkOptions;
use quarry_index::collection::{Collection, DocAt, Options};
use quarry_index::embed::{Embedder, Model, Precision};
use quarry_index::ingest::{self, DocDraft, PageDraft};
use quarry_index::search::{self, Mode, Query};
use quarry_index::segment::WindowRec;
use quarry_index::vector::sample::Rng;
use quarry_index::windows::{self, Plan};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "all-MiniLM-L6-v2")]
    model: String,
    #[arg(long, default_value = "models")]
    models_dir: PathBuf,
    /// A BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv (default: the
    /// evaluation sets' SciFact, see `quarry_bench::eval`).
    #[arg(long)]
    scifact: Option<PathBuf>,
    #[arg(long, default_value_t = 1000)]
    abstracts: usize,
    #[arg(long, default_value_t = 8)]
    group: usize,
    #[arg(long, default_value_t = 22)]
    seed: u64,
}

fn jsonl(path: &std::path::Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect())
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let scifact = a.scifact.clone().unwrap_or_else(|| quarry_bench::eval::eval_set("scifact"));
    let lib = a.models_dir.join("lib/libonnxruntime.so.1.31.1");
    let model = Model::load(&a.models_dir, &lib, &a.model, Precision::Int8).context("loading the model")?;
    let mut e = model.embedder().context("a session")?;

    let mut qrels: HashMap<String, Vec<String>> = HashMap::new();
    for line in std::fs::read_to_string(scifact.join("qrels/test.tsv"))?.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        qrels.entry(f[0].to_owned()).or_default().push(f[1].to_owned());
    }
    let relevant: HashSet<&str> = qrels.values().flatten().map(String::as_str).collect();
    let corpus = jsonl(&scifact.join("corpus.jsonl"))?;
    let mut rng = Rng::new(a.seed);
    let mut picked: Vec<&serde_json::Value> = corpus.iter().filter(|d| relevant.contains(d["_id"].as_str().unwrap())).collect();
    let mut others: Vec<&serde_json::Value> = corpus.iter().filter(|d| !relevant.contains(d["_id"].as_str().unwrap())).collect();
    shuffle(&mut others, &mut rng);
    picked.extend(others.into_iter().take(a.abstracts.saturating_sub(picked.len())));
    shuffle(&mut picked, &mut rng);

    // Long document id → the abstracts it holds.
    let mut holds: HashMap<String, HashSet<String>> = HashMap::new();
    let opts = ChunkOptions::default();
    let dir = std::env::temp_dir().join(format!("window-quality-{}", std::process::id()));
    let (single, _) = Collection::open("single", &dir.join("single"), Options::default())?;
    let (windowed, _) = Collection::open("windowed", &dir.join("windowed"), Options::default())?;
    let (mut windows_total, mut pages) = (0, 0);
    for (g, group) in picked.chunks(a.group).enumerate() {
        let id = format!("long_{g}");
        let text: Vec<String> =
            group.iter().map(|d| format!("## {}\n\n{}", d["title"].as_str().unwrap_or(""), d["text"].as_str().unwrap_or(""))).collect();
        holds.insert(id.clone(), group.iter().map(|d| d["_id"].as_str().unwrap().to_owned()).collect());
        let title = format!("SciFact abstracts, part {}", g + 1);
        let draft = DocDraft {
            id,
            title: Some(title.clone()),
            pages: vec![PageDraft { text: text.join("\n\n"), ..PageDraft::default() }],
            ..DocDraft::default()
        };
        let batch = ingest::prepare(draft, &opts);
        let page = &batch.pages[0];
        let one = Plan { inputs: vec![format!("{title}\n\n{}", page.text)], windows: vec![WindowRec { page: 0, first_pos: 0, chunks: page.chunks }] };
        let plan = windows::plan(&batch, false, &e)?;
        windows_total += plan.windows.len();
        pages += 1;
        single.add(embedded(&mut e, batch.clone(), one)?)?;
        windowed.add(embedded(&mut e, batch, plan)?)?;
    }
    println!("{} abstracts in {pages} long pages ({:.1} windows a page, model {})", picked.len(), windows_total as f64 / pages as f64, a.model);

    let queries: Vec<(String, String)> = jsonl(&scifact.join("queries.jsonl"))?
        .into_iter()
        .filter_map(|q| {
            let id = q["_id"].as_str()?.to_owned();
            qrels.contains_key(&id).then(|| (id, q["text"].as_str().unwrap_or("").to_owned()))
        })
        .collect();
    let vectors: Vec<Vec<f32>> = queries.iter().map(|(_, t)| e.embed_query(t)).collect::<Result<_, _>>()?;
    for (name, c) in [("one vector", &single), ("windows", &windowed)] {
        let snap = c.snapshot();
        let (mut ndcg, mut r10, mut r100) = (0.0, 0.0, 0.0);
        for ((qid, _), v) in queries.iter().zip(&vectors) {
            let want: HashSet<&str> = holds.iter().filter(|(_, h)| qrels[qid].iter().any(|r| h.contains(r))).map(|(id, _)| id.as_str()).collect();
            let q = Query { vector: Some(v.clone()), k: 100, depth: 100, ..Query::new("", Mode::Semantic) };
            let got: Vec<&str> = search::search(&snap, &q)
                .hits
                .iter()
                .map(|h| snap.doc(DocAt { view: h.view, doc: snap.views[h.view].batch().pages[h.page as usize].doc.to_native() }).id.as_str())
                .collect();
            let dcg: f64 = got.iter().take(10).enumerate().filter(|(_, id)| want.contains(*id)).map(|(i, _)| 1.0 / (i as f64 + 2.0).log2()).sum();
            let ideal: f64 = (0..want.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
            ndcg += dcg / ideal;
            let found = |k: usize| got.iter().take(k).filter(|id| want.contains(*id)).count() as f64 / want.len() as f64;
            (r10, r100) = (r10 + found(10), r100 + found(100));
        }
        let n = queries.len() as f64;
        println!("{name:>10}: nDCG@10 {:.4}  recall@10 {:.4}  recall@100 {:.4}  ({} queries)", ndcg / n, r10 / n, r100 / n, queries.len());
    }
    drop((single, windowed));
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(())
}

fn embedded(e: &mut Embedder, mut batch: quarry_index::segment::Batch, plan: Plan) -> anyhow::Result<quarry_index::segment::Batch> {
    let v = windows::embed(e, &plan)?;
    ingest::attach_vectors(&mut batch, plan.windows, v.dims, v.data);
    Ok(batch)
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
}
