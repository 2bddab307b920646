//! Fixtures the benches share: the installed models and realistic text.

// Each bench uses part of this module.
#![allow(dead_code)]

use std::path::PathBuf;

use quarry_index::embed::{Model, Precision};

pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

pub fn load(id: &str, precision: Precision) -> Model {
    let dir = models_dir();
    Model::load(&dir, &dir.join("lib/libonnxruntime.so.1.31.1"), id, precision)
        .unwrap_or_else(|e| panic!("{e} (run ops/setup to install the models)"))
}

/// `n` passages of about `words` words from SciFact's corpus (in `$EVAL_DIR`, see
/// `quarry_bench::eval`), or generated prose when that is not there.
pub fn passages(n: usize, words: usize) -> Vec<String> {
    let path = quarry_bench::eval::eval_set("scifact").join("corpus.jsonl");
    let from_corpus: Vec<String> = std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|d| d["text"].as_str().map(str::to_owned))
                .map(|t| t.split_whitespace().take(words).collect::<Vec<_>>().join(" "))
                .filter(|t| t.split_whitespace().count() == words)
                .take(n)
                .collect()
        })
        .unwrap_or_default();
    if from_corpus.len() == n {
        return from_corpus;
    }
    (0..n).map(|i| (0..words).map(|w| ["cell", "protein", "study", "patients", "risk", "gene"][(i + w) % 6]).collect::<Vec<_>>().join(" ")).collect()
}

pub const QUERIES: [&str; 4] = [
    "0-dimensional biomaterials show inductive properties",
    "ALDH1 expression is associated with poorer prognosis for breast cancer",
    "how do vaccines train the immune system",
    "ما هي أعراض مرض السكري",
];
