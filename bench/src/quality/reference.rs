//! Published nDCG@10 on the full evaluation sets (shared/README.md), printed beside ours. They are
//! measured on the whole corpus; a subset run is not directly comparable.

use super::client::Mode;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    pub system: &'static str,
    pub ndcg_at_10: f64,
}

const fn r(system: &'static str, ndcg_at_10: f64) -> Reference {
    Reference { system, ndcg_at_10 }
}

const SCIFACT_KEYWORD: &[Reference] = &[r("BM25 Anserini", 0.6789), r("bm25s", 0.6791), r("tantivy en_stem", 0.6843)];
const SCIFACT_SEMANTIC: &[Reference] = &[r("all-MiniLM-L6-v2", 0.6451), r("multilingual-e5-small", 0.6759)];
const SCIFACT_HYBRID: &[Reference] = &[r("RRF bm25s + MiniLM", 0.7154)];
const NFCORPUS_KEYWORD: &[Reference] = &[r("bm25s", 0.3345), r("tantivy en_stem", 0.3301)];

/// The references for a data set (by its directory name) and mode; empty when there are none
/// (NFCorpus is pre-processed text, so only lexical systems are quoted for it).
pub fn references(dataset: &str, mode: Mode) -> &'static [Reference] {
    let name = dataset.to_ascii_lowercase();
    match mode {
        Mode::Keyword if name.starts_with("scifact") => SCIFACT_KEYWORD,
        Mode::Semantic if name.starts_with("scifact") => SCIFACT_SEMANTIC,
        Mode::Hybrid if name.starts_with("scifact") => SCIFACT_HYBRID,
        Mode::Keyword if name.starts_with("nfcorpus") => NFCORPUS_KEYWORD,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sets_by_directory_name() {
        assert_eq!(references("scifact", Mode::Keyword)[0].ndcg_at_10, 0.6789);
        assert_eq!(references("nfcorpus-test-preproc", Mode::Keyword).len(), 2);
        assert!(references("nfcorpus-test-preproc", Mode::Semantic).is_empty());
        assert!(references("trec-covid", Mode::Hybrid).is_empty());
    }
}
