//! Weighted reciprocal-rank fusion: a page's score is Σ wᵢ / (k + rankᵢ) over the lists
//! that ranked it (rank from 1).

use rustc_hash::FxHashMap as HashMap;

/// A page in a collection snapshot: (view, page ordinal).
pub type PageKey = (u32, u32);

#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub key: PageKey,
    pub score: f64,
    /// Rank in each input list (1-based), when it was there.
    pub ranks: [Option<u32>; 2],
}

/// Fuses ranked lists (best first) with `weights`; ties go to the better best rank,
/// then the smaller key, so the same inputs always give the same order.
pub fn rrf(lists: [&[PageKey]; 2], weights: [f64; 2], k: f64) -> Vec<Fused> {
    // One list (keyword or semantic mode): its order is the fused order, since a score
    // falls with the rank (or is 0 for every page, and ties go to the better rank).
    if let Some(only) = (0..2).find(|&l| lists[1 - l].is_empty()) {
        let mut seen = rustc_hash::FxHashSet::with_capacity_and_hasher(lists[only].len(), Default::default());
        return lists[only]
            .iter()
            .zip(1u32..)
            .filter(|(key, _)| seen.insert(**key))
            .map(|(key, rank)| {
                let mut ranks = [None, None];
                ranks[only] = Some(rank);
                Fused { key: *key, score: weights[only] / (k + rank as f64), ranks }
            })
            .collect();
    }
    let mut by_key: HashMap<PageKey, Fused> = HashMap::with_capacity_and_hasher(lists[0].len() + lists[1].len(), Default::default());
    for (l, list) in lists.iter().enumerate() {
        for (i, key) in list.iter().enumerate() {
            let rank = i as u32 + 1;
            let e = by_key.entry(*key).or_insert(Fused { key: *key, score: 0.0, ranks: [None, None] });
            if e.ranks[l].is_none() {
                e.ranks[l] = Some(rank);
                e.score += weights[l] / (k + rank as f64);
            }
        }
    }
    let mut fused: Vec<Fused> = by_key.into_values().collect();
    let best = |f: &Fused| f.ranks.iter().flatten().min().copied().unwrap_or(u32::MAX);
    // Keys are unique, so the order is total and an unstable sort is deterministic.
    fused.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(best(a).cmp(&best(b))).then(a.key.cmp(&b.key)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook definition, written out slowly.
    fn reference(lists: [&[PageKey]; 2], w: [f64; 2], k: f64, key: PageKey) -> f64 {
        (0..2).map(|l| lists[l].iter().position(|x| *x == key).map_or(0.0, |r| w[l] / (k + r as f64 + 1.0))).sum()
    }

    #[test]
    fn scores_match_the_definition_and_order_is_deterministic() {
        let a = [(0, 1), (0, 2), (0, 3), (1, 0)];
        let b = [(0, 3), (0, 9), (0, 1)];
        let fused = rrf([&a, &b], [1.0, 1.0], 60.0);
        assert_eq!(fused.len(), 5);
        for f in &fused {
            assert!((f.score - reference([&a, &b], [1.0, 1.0], 60.0, f.key)).abs() < 1e-12);
        }
        assert_eq!(fused[0].key, (0, 1), "first in one list and third in the other");
        assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(fused, rrf([&a, &b], [1.0, 1.0], 60.0));
        let weighted = rrf([&a, &b], [0.0, 1.0], 60.0);
        assert_eq!(weighted[0].key, (0, 3));
    }

    /// A single list takes the short path; it must give what the general one gives.
    #[test]
    fn one_list_fuses_as_the_general_path_does() {
        let a = [(0, 1), (0, 2), (1, 0), (0, 7)];
        for w in [[1.0, 1.0], [0.5, 2.0], [0.0, 0.0]] {
            for lists in [[&a[..], &[][..]], [&[][..], &a[..]]] {
                let fast = rrf(lists, w, 60.0);
                // The general path, forced by a list that matches nothing else.
                let mut general = rrf([lists[0], lists[1]].map(|l| if l.is_empty() { &[(9, 9)][..] } else { l }), w, 60.0);
                general.retain(|f| f.key != (9, 9));
                assert_eq!(fast.len(), a.len());
                for (x, y) in fast.iter().zip(&general) {
                    assert_eq!((x.key, x.ranks), (y.key, y.ranks), "weights {w:?}");
                    assert!((x.score - y.score).abs() < 1e-12);
                }
                assert!(fast.iter().all(|f| (f.score - reference(lists, w, 60.0, f.key)).abs() < 1e-12));
            }
        }
    }
}
