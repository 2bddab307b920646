//! Which semantic unit ranks best: page vectors, chunk vectors rolled up to pages by
//! their best chunk, or both fused. Embeds a BEIR set the way the engine does (title,
//! then the text; chunks from the prose chunker), ranks by exact cosine, and prints
//! nDCG@10 for each choice.
//!
//!     cargo run --release -p quarry-bench --bin semantic-unit -- --model all-MiniLM-L6-v2

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use quarry_bench::quality::beir::Dataset;
use quarry_bench::quality::metrics::{mean_over_queries, ndcg_at_k};
use quarry_index::chunk::{chunk_prose, ChunkOptions};
use quarry_index::embed::{Model, Precision};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "all-MiniLM-L6-v2")]
    model: String,
    #[arg(long, default_value = "models")]
    models_dir: PathBuf,
    /// BEIR-layout directory (default: `scifact` in `$EVAL_DIR`, else in
    /// `shared/eval` beside the checkout).
    #[arg(long, default_value_os_t = quarry_bench::eval::eval_set("scifact"))]
    dataset: PathBuf,
    /// The chunker's target and maximum (characters).
    #[arg(long, default_value_t = 1000)]
    target: usize,
    #[arg(long, default_value_t = 2000)]
    max: usize,
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let data = Dataset::load(&a.dataset, "test")?;
    let model = Arc::new(Model::load(&a.models_dir, &a.models_dir.join("lib/libonnxruntime.so.1.31.1"), &a.model, Precision::Int8)?);
    let opts = ChunkOptions { target_chars: a.target, max_chars: a.max };
    // (doc index, text) for pages and for chunks.
    let mut pages = Vec::new();
    let mut chunks = Vec::new();
    for (i, d) in data.corpus.iter().enumerate() {
        let with_title = |t: &str| if d.title.is_empty() { t.to_owned() } else { format!("{}\n\n{t}", d.title) };
        pages.push((i, with_title(&d.text)));
        for s in chunk_prose(&d.text, &opts) {
            chunks.push((i, with_title(&d.text[s.byte_start as usize..s.byte_end as usize])));
        }
    }
    eprintln!("{} documents, {} chunks", pages.len(), chunks.len());
    let page_vecs = embed_all(&model, &pages, a.threads);
    let chunk_vecs = embed_all(&model, &chunks, a.threads);
    let mut e = model.embedder()?;
    let mut runs: [HashMap<String, Vec<String>>; 3] = Default::default();
    for q in &data.queries {
        let qv = e.embed_query(&q.text)?;
        let page_scores: Vec<f32> = page_vecs.iter().map(|v| dot(v, &qv)).collect();
        let mut chunk_best = vec![f32::MIN; data.corpus.len()];
        for ((doc, _), v) in chunks.iter().zip(&chunk_vecs) {
            chunk_best[*doc] = chunk_best[*doc].max(dot(v, &qv));
        }
        let by_page = ranked(&page_scores);
        let by_chunk = ranked(&chunk_best);
        let both = rrf(&by_page, &by_chunk);
        for (r, list) in runs.iter_mut().zip([by_page, by_chunk, both]) {
            r.insert(q.id.clone(), list.iter().take(10).map(|&d| data.corpus[d].id.clone()).collect());
        }
    }
    println!("| semantic unit | nDCG@10 |\n|---|---:|");
    for (name, run) in ["page vectors", "chunk vectors, best chunk per page", "both, fused (RRF k=60)"].iter().zip(&runs) {
        let (ndcg, n) = mean_over_queries(run, &data.qrels, |r, rels| ndcg_at_k(r, rels, 10));
        println!("| {name} | {ndcg:.4} ({n} queries) |");
    }
    Ok(())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn ranked(scores: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    idx.truncate(100);
    idx
}

fn rrf(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut s: HashMap<usize, f64> = HashMap::new();
    for list in [a, b] {
        for (r, d) in list.iter().enumerate() {
            *s.entry(*d).or_default() += 1.0 / (60.0 + r as f64 + 1.0);
        }
    }
    let mut v: Vec<(usize, f64)> = s.into_iter().collect();
    v.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    v.into_iter().map(|(d, _)| d).collect()
}

fn embed_all(model: &Arc<Model>, texts: &[(usize, String)], threads: usize) -> Vec<Vec<f32>> {
    let per = texts.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .chunks(per)
            .map(|part| {
                let model = model.clone();
                s.spawn(move || {
                    let mut e = model.embedder().expect("a session");
                    let refs: Vec<&str> = part.iter().map(|(_, t)| t.as_str()).collect();
                    let out = e.embed_passages(&refs).expect("embedding");
                    (0..out.len()).map(|i| out.row(i).to_vec()).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}
