//! nDCG@k and recall@k computed the way BEIR's numbers are (BEIR hands runs to pytrec_eval, which
//! runs trec_eval's `ndcg_cut` and `recall`), so our figures sit beside published ones.
//!
//! - Gain is linear: the judged relevance itself; a relevance ≤ 0 and an unjudged document
//!   gain 0. DCG@k = Σ_{i=1..k} gain_i / log2(i + 1).
//! - The ideal DCG@k takes the positive judgements sorted descending, cut at k.
//! - A query with no positive judgement scores 0 (trec_eval leaves the value at 0 when the ideal
//!   DCG is 0) and still counts in the mean, as pytrec_eval reports it for every query that is
//!   both judged and run. Judged queries with no run also score 0: BEIR runs every query.

use std::collections::HashMap;

use super::beir::Qrels;

/// nDCG@k of one ranked list of document ids (best first, no duplicates).
pub fn ndcg_at_k(ranked: &[String], rels: &HashMap<String, i32>, k: usize) -> f64 {
    let gain = |doc: &String| rels.get(doc).copied().unwrap_or(0).max(0) as f64;
    let actual = dcg(ranked.iter().take(k).map(gain));
    let mut ideal: Vec<f64> = rels.values().filter(|&&r| r > 0).map(|&r| r as f64).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let ideal = dcg(ideal.into_iter().take(k));
    if ideal > 0.0 {
        actual / ideal
    } else {
        0.0
    }
}

/// Recall@k: the share of the positively judged documents found in the first k; 0 without any.
pub fn recall_at_k(ranked: &[String], rels: &HashMap<String, i32>, k: usize) -> f64 {
    let relevant = rels.values().filter(|&&r| r > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked.iter().take(k).filter(|doc| rels.get(*doc).is_some_and(|&r| r > 0)).count();
    found as f64 / relevant as f64
}

/// Reciprocal rank within the first k: 1/rank of the first positively judged document, 0 when
/// none is in the first k (trec_eval's `recip_rank` cut at k, as BEIR reports MRR@k).
pub fn mrr_at_k(ranked: &[String], rels: &HashMap<String, i32>, k: usize) -> f64 {
    ranked.iter().take(k).position(|doc| rels.get(doc).is_some_and(|&r| r > 0)).map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// The mean of `metric` over every judged query, with a missing run counting as an empty list.
/// Returns the mean and the number of queries it averages (0.0 over none).
pub fn mean_over_queries(
    runs: &HashMap<String, Vec<String>>,
    qrels: &Qrels,
    metric: impl Fn(&[String], &HashMap<String, i32>) -> f64,
) -> (f64, usize) {
    let scores: Vec<f64> = qrels.iter().map(|(query, rels)| metric(runs.get(query).map_or(&[][..], |r| &r[..]), rels)).collect();
    (mean(&scores), scores.len())
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

fn dcg(gains: impl Iterator<Item = f64>) -> f64 {
    gains.enumerate().map(|(i, gain)| gain / ((i + 2) as f64).log2()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    fn rels(pairs: &[(&str, i32)]) -> HashMap<String, i32> {
        pairs.iter().map(|&(d, r)| (d.to_string(), r)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn ndcg_binary_relevance() {
        // Relevant a, b. Ranked x, a, y, b:
        // DCG = 1/log2(3) + 1/log2(5) = 0.63093 + 0.43068 = 1.06161
        // IDCG = 1/log2(2) + 1/log2(3) = 1 + 0.63093 = 1.63093
        // nDCG = 1.06161 / 1.63093 = 0.65092
        let got = ndcg_at_k(&ranked(&["x", "a", "y", "b"]), &rels(&[("a", 1), ("b", 1)]), 10);
        assert!(close(got, 0.65092), "{got}");
    }

    #[test]
    fn ndcg_graded_relevance_is_linear_gain() {
        // a = 2, b = 1. Ranked b, a:
        // DCG = 1/log2(2) + 2/log2(3) = 1 + 1.26186 = 2.26186
        // IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.63093 = 2.63093
        // nDCG = 2.26186 / 2.63093 = 0.85972
        // (exponential gain 2^r - 1 would give 2.89279 / 3.63093 = 0.79671)
        let got = ndcg_at_k(&ranked(&["b", "a"]), &rels(&[("a", 2), ("b", 1)]), 10);
        assert!(close(got, 0.85972), "{got}");
    }

    #[test]
    fn ndcg_cut_applies_to_the_ideal_too() {
        // Three relevant (1 each), k = 2. Ranked a, x, b, c:
        // DCG@2 = 1/log2(2) + 0 = 1
        // IDCG@2 = 1 + 1/log2(3) = 1.63093 (the third relevant document is past the cut)
        // nDCG@2 = 1 / 1.63093 = 0.61315
        let judged = rels(&[("a", 1), ("b", 1), ("c", 1)]);
        let got = ndcg_at_k(&ranked(&["a", "x", "b", "c"]), &judged, 2);
        assert!(close(got, 0.61315), "{got}");
    }

    #[test]
    fn non_positive_judgements_gain_nothing() {
        // a = 1, n = 0, m = -1. Ranked m, n, a:
        // DCG = 0 + 0 + 1/log2(4) = 0.5; IDCG = 1 (only a counts); nDCG = 0.5
        let judged = rels(&[("a", 1), ("n", 0), ("m", -1)]);
        let got = ndcg_at_k(&ranked(&["m", "n", "a"]), &judged, 10);
        assert!(close(got, 0.5), "{got}");
    }

    #[test]
    fn query_without_positive_judgement_scores_zero_and_counts() {
        // pytrec_eval reports 0 for such a query and BEIR averages it in:
        // q1 perfect (1.0), q2 only judged 0 (0.0): mean = (1 + 0) / 2 = 0.5 over 2 queries.
        let mut qrels = Qrels::new();
        qrels.insert("q1".into(), rels(&[("a", 1)]));
        qrels.insert("q2".into(), rels(&[("b", 0)]));
        let runs: HashMap<String, Vec<String>> = [("q1".to_string(), ranked(&["a"])), ("q2".to_string(), ranked(&["b"]))].into();
        let (got, n) = mean_over_queries(&runs, &qrels, |r, j| ndcg_at_k(r, j, 10));
        assert_eq!(n, 2);
        assert!(close(got, 0.5), "{got}");
    }

    #[test]
    fn judged_query_without_run_scores_zero() {
        // q1: ranked a, b with a relevant: nDCG = 1. q2 has no run: 0. Mean = 0.5.
        let mut qrels = Qrels::new();
        qrels.insert("q1".into(), rels(&[("a", 1)]));
        qrels.insert("q2".into(), rels(&[("c", 1)]));
        let runs: HashMap<String, Vec<String>> = [("q1".to_string(), ranked(&["a", "b"]))].into();
        let (got, n) = mean_over_queries(&runs, &qrels, |r, j| ndcg_at_k(r, j, 10));
        assert_eq!(n, 2);
        assert!(close(got, 0.5), "{got}");
    }

    #[test]
    fn recall_counts_positive_judgements_within_k() {
        // Relevant a, b, c (and n judged 0). Ranked a, n, x, b, c with k = 4:
        // found a, b = 2 of 3 → 0.66667
        let judged = rels(&[("a", 1), ("b", 2), ("c", 1), ("n", 0)]);
        let got = recall_at_k(&ranked(&["a", "n", "x", "b", "c"]), &judged, 4);
        assert!(close(got, 2.0 / 3.0), "{got}");
        assert_eq!(recall_at_k(&ranked(&["n"]), &rels(&[("n", 0)]), 4), 0.0);
    }

    #[test]
    fn mrr_is_the_first_positive_rank_within_k() {
        // Relevant b (and n judged 0). Ranked n, x, b: first positive at rank 3 → 1/3.
        let judged = rels(&[("b", 1), ("n", 0)]);
        let got = mrr_at_k(&ranked(&["n", "x", "b"]), &judged, 10);
        assert!(close(got, 1.0 / 3.0), "{got}");
        // Past the cut it is a miss.
        assert_eq!(mrr_at_k(&ranked(&["n", "x", "b"]), &judged, 2), 0.0);
    }
}
