//! Retrieval metrics of one ranked list of pages against a question's judged pages,
//! and the means and percentiles an evaluation reports over many questions.
//!
//! Pure functions, no I/O: the definitions follow trec_eval as BEIR runs it through
//! pytrec_eval, so figures can sit beside published ones.
//!
//! - A question's gold is a set of distinct pages, each with a gain > 0 (a page that is
//!   not in the gold gains 0). Only the first `k` results count, and a page counts at
//!   its first rank only.
//! - nDCG@k, linear gain (trec_eval `ndcg_cut`): DCG@k = Σ_{i=1..k} gain_i / log2(i + 1);
//!   the ideal DCG@k takes the gold gains sorted descending, cut at k.
//! - precision@k = hits in the first k / k (trec_eval `P_k`: a list shorter than k is
//!   padded with misses, so 1 hit of 1 result at k = 10 is 0.1).
//! - recall@k = hits in the first k / gold pages.
//! - reciprocal rank = 1 / rank of the first hit in the first k, else 0.
//! - AP@k = Σ over the ranks r ≤ k holding a gold page of precision@r, divided by
//!   min(gold pages, k). This is trec_eval's `map_cut_k` sum; trec_eval divides by all
//!   gold pages instead, so the two agree whenever a question has at most k gold pages
//!   and ours still reaches 1 when more than k are judged and the first k are all hits.

use std::collections::HashSet;

/// One judged page: its key (the citation) and its gain, > 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub page: u32,
    pub gain: f64,
}

/// A gold page found in the first k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// From 1.
    pub rank: usize,
    /// Its index in the gold.
    pub gold: usize,
}

/// One question's scores in one ranked list.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    pub ndcg: f64,
    pub precision: f64,
    pub recall: f64,
    pub reciprocal_rank: f64,
    pub average_precision: f64,
    /// In rank order.
    pub hits: Vec<Hit>,
}

impl Scores {
    pub fn first_hit(&self) -> Option<usize> {
        self.hits.first().map(|h| h.rank)
    }
}

/// Scores `ranked` (page keys, best first) against `gold` (distinct pages) at `k` ≥ 1.
/// An empty gold scores 0 everywhere: there is nothing to find.
pub fn score(ranked: &[u32], gold: &[Judged], k: usize) -> Scores {
    let hits = hits(ranked, gold, k);
    let actual = dcg(hits.iter().map(|h| (h.rank, gold[h.gold].gain)));
    let ideal = dcg(ideal_gains(gold, k).into_iter().enumerate().map(|(i, g)| (i + 1, g)));
    let found = hits.len() as f64;
    Scores {
        ndcg: ratio(actual, ideal),
        precision: ratio(found, k as f64),
        recall: ratio(found, gold.len() as f64),
        reciprocal_rank: hits.first().map_or(0.0, |h| 1.0 / h.rank as f64),
        average_precision: ratio(precision_sum(&hits), gold.len().min(k) as f64),
        hits,
    }
}

/// Gold pages in the first k, each at its first rank.
fn hits(ranked: &[u32], gold: &[Judged], k: usize) -> Vec<Hit> {
    let mut seen = HashSet::new();
    ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|&(_, page)| seen.insert(*page))
        .filter_map(|(i, page)| gold.iter().position(|g| g.page == *page).map(|gold| Hit { rank: i + 1, gold }))
        .collect()
}

/// Σ gain / log2(rank + 1) over (rank from 1, gain).
fn dcg(ranked_gains: impl Iterator<Item = (usize, f64)>) -> f64 {
    ranked_gains.map(|(rank, gain)| gain / ((rank + 1) as f64).log2()).fold(0.0, |a, b| a + b)
}

/// The gold gains, best first, cut at k.
fn ideal_gains(gold: &[Judged], k: usize) -> Vec<f64> {
    let mut gains: Vec<f64> = gold.iter().map(|g| g.gain).collect();
    gains.sort_by(|a, b| b.total_cmp(a));
    gains.truncate(k);
    gains
}

/// Σ precision@r over the ranks r of the hits (the i-th hit at rank r adds i / r).
fn precision_sum(hits: &[Hit]) -> f64 {
    hits.iter().enumerate().map(|(i, h)| (i + 1) as f64 / h.rank as f64).fold(0.0, |a, b| a + b)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The mean, 0 over nothing.
pub fn mean(values: &[f64]) -> f64 {
    ratio(values.iter().fold(0.0, |a, b| a + b), values.len() as f64)
}

/// The `p`-th percentile (0 < p ≤ 100) by nearest rank: the smallest value with at
/// least p% of the values at or below it. 0 over nothing.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pages are named by small numbers: 1 = a, 2 = b, ...; 90.. are pages no one judged.
    const A: u32 = 1;
    const B: u32 = 2;
    const C: u32 = 3;
    const D: u32 = 4;
    const X: u32 = 90;
    const Y: u32 = 91;

    fn gold(pairs: &[(u32, f64)]) -> Vec<Judged> {
        pairs.iter().map(|&(page, gain)| Judged { page, gain }).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn graded_ndcg_uses_linear_gain_and_the_ideal_order() {
        // Gold a = 3, b = 2, c = 1. Ranked b, x, a, y; k = 10.
        // DCG  = 2/log2(2) + 0 + 3/log2(4) + 0         = 2 + 1.5              = 3.5
        // IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4)      = 3 + 1.26186 + 0.5    = 4.76186
        // nDCG = 3.5 / 4.76186                                                 = 0.73501
        // precision@10 = 2 hits / 10 = 0.2; recall = 2 of 3 = 0.66667; RR = 1/1
        // AP@10 = (1/1 + 2/3) / min(3, 10) = 1.66667 / 3                       = 0.55556
        let s = score(&[B, X, A, Y], &gold(&[(A, 3.0), (B, 2.0), (C, 1.0)]), 10);
        assert!(close(s.ndcg, 0.73501), "{s:?}");
        assert!(close(s.precision, 0.2), "{s:?}");
        assert!(close(s.recall, 2.0 / 3.0), "{s:?}");
        assert_eq!(s.reciprocal_rank, 1.0);
        assert!(close(s.average_precision, 0.55556), "{s:?}");
        assert_eq!(s.hits, [Hit { rank: 1, gold: 1 }, Hit { rank: 3, gold: 0 }]);
        assert_eq!(s.first_hit(), Some(1));
    }

    #[test]
    fn average_precision_divides_by_the_gold_that_fits_in_k() {
        // Gold a, b, c, d (gain 1). Ranked x, a, y, b, c.
        // k = 5: hits at 2, 4, 5 → 1/2 + 2/4 + 3/5 = 0.5 + 0.5 + 0.6 = 1.6; / min(4, 5) = 4 → 0.4
        //        RR = 1/2; recall = 3/4; precision = 3/5
        // k = 3: one hit at 2 → 1/2 = 0.5; / min(4, 3) = 3 → 0.16667
        //        (trec_eval's map_cut_3 divides by all 4: 0.125)
        let g = gold(&[(A, 1.0), (B, 1.0), (C, 1.0), (D, 1.0)]);
        let ranked = [X, A, Y, B, C];
        let at5 = score(&ranked, &g, 5);
        assert!(close(at5.average_precision, 0.4), "{at5:?}");
        assert_eq!((at5.reciprocal_rank, at5.recall, at5.precision), (0.5, 0.75, 0.6));
        let at3 = score(&ranked, &g, 3);
        assert!(close(at3.average_precision, 1.0 / 6.0), "{at3:?}");
        assert_eq!(at3.hits, [Hit { rank: 2, gold: 0 }]);
    }

    #[test]
    fn the_ideal_is_cut_at_k_too() {
        // Gold a, b, c (gain 1), k = 2. Ranked a, x, b:
        // DCG@2 = 1/log2(2) = 1; IDCG@2 = 1 + 1/log2(3) = 1.63093; nDCG = 0.61315
        // AP@2 = (1/1) / min(3, 2) = 0.5
        let s = score(&[A, X, B], &gold(&[(A, 1.0), (B, 1.0), (C, 1.0)]), 2);
        assert!(close(s.ndcg, 0.61315), "{s:?}");
        assert!(close(s.average_precision, 0.5), "{s:?}");
    }

    #[test]
    fn k_larger_than_the_result_list_counts_the_missing_results_as_misses() {
        // Gold a. Ranked x, a; k = 10.
        // nDCG = (1/log2(3)) / (1/log2(2)) = 0.63093; precision = 1/10 (not 1/2);
        // recall = 1; RR = 1/2; AP = (1/2) / min(1, 10) = 0.5
        let s = score(&[X, A], &gold(&[(A, 1.0)]), 10);
        assert!(close(s.ndcg, 0.63093), "{s:?}");
        assert_eq!((s.precision, s.recall, s.reciprocal_rank, s.average_precision), (0.1, 1.0, 0.5, 0.5));
    }

    #[test]
    fn a_question_whose_only_page_ranks_first_is_perfect() {
        let s = score(&[A, X, Y], &gold(&[(A, 2.0)]), 5);
        assert_eq!((s.ndcg, s.reciprocal_rank, s.average_precision, s.recall), (1.0, 1.0, 1.0, 1.0));
        assert_eq!(s.precision, 0.2);
    }

    #[test]
    fn misses_and_empty_lists_score_zero() {
        let s = score(&[X, Y], &gold(&[(A, 1.0)]), 10);
        assert_eq!((s.ndcg, s.precision, s.recall, s.reciprocal_rank, s.average_precision), (0.0, 0.0, 0.0, 0.0, 0.0));
        assert_eq!(s.first_hit(), None);
        // f64's Sum starts from -0.0, which would serialize as -0.0: the zeros are positive.
        assert!([s.ndcg, s.average_precision, mean(&[s.ndcg])].iter().all(|z| z.is_sign_positive()), "{s:?}");
        assert_eq!(score(&[], &gold(&[(A, 1.0)]), 10).ndcg, 0.0);
        assert_eq!(score(&[A], &[], 10).ndcg, 0.0, "no gold: nothing to find, no division by zero");
    }

    #[test]
    fn a_page_repeated_in_the_list_counts_once() {
        // Ranked a, a with gold a, b: one hit at 1. Counting the repeat would give recall 1.
        let s = score(&[A, A], &gold(&[(A, 1.0), (B, 1.0)]), 10);
        assert_eq!(s.hits.len(), 1);
        assert_eq!(s.recall, 0.5);
    }

    #[test]
    fn means_and_nearest_rank_percentiles() {
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(mean(&[1.0, 0.5]), 0.75);
        let ms: Vec<f64> = (1..=20).map(f64::from).collect();
        // p50 of 1..20: rank ceil(0.5 × 20) = 10 → 10; p95: ceil(0.95 × 20) = 19 → 19.
        assert_eq!((percentile(&ms, 50.0), percentile(&ms, 95.0)), (10.0, 19.0));
        assert_eq!((percentile(&[7.0], 50.0), percentile(&[7.0], 95.0)), (7.0, 7.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[], 95.0), 0.0);
    }
}
