//! Where benches and harnesses find the full evaluation sets (BEIR layout: SciFact,
//! NFCorpus). They are too large and too restrictively licensed to live in the
//! repository, so they are read from `$EVAL_DIR`, or by default from
//! `shared/eval` in the directory that holds the checkout, where the team keeps them.
//! Tests never come here: they read the subsets vendored in `tests/data`.

use std::path::{Path, PathBuf};

/// The variable naming the directory that holds the full sets.
pub const EVAL_DIR_VAR: &str = "EVAL_DIR";

/// `$EVAL_DIR` when set and not empty, else `shared/eval` beside the checkout.
pub fn eval_dir() -> PathBuf {
    match std::env::var_os(EVAL_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => beside_the_checkout(),
    }
}

/// One set in [`eval_dir`]: `scifact`, `nfcorpus-test-preproc`.
pub fn eval_set(name: &str) -> PathBuf {
    eval_dir().join(name)
}

/// `shared/eval` in the directory holding the repository (this crate is `bench/` in it).
fn beside_the_checkout() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ sits in the repository");
    repository.parent().unwrap_or(repository).join("shared").join("eval")
}
