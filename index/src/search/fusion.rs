//! Weighted reciprocal-rank fusion: a page's score is Σ wᵢ / (k + rankᵢ) over the lists
//! that ranked it (rank from 1): the keyword and semantic lists, and one keyword list per
//! query expansion.

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

/// One ranked list (best first) to fuse: its pages, its weight, and the retriever it
/// counts as (0 keyword, 1 semantic: a query expansion's list is a keyword list).
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    pub keys: &'a [PageKey],
    pub weight: f64,
    pub slot: usize,
}

/// Fuses the keyword and semantic lists (best first) with `weights`; ties go to the
/// better best rank, then the smaller key, so the same inputs always give the same order.
pub fn rrf(lists: [&[PageKey]; 2], weights: [f64; 2], k: f64) -> Vec<Fused> {
    rrf_lists(&[List { keys: lists[0], weight: weights[0], slot: 0 }, List { keys: lists[1], weight: weights[1], slot: 1 }], k)
}

/// Fuses any number of lists (at most 64). A page's rank for a retriever is its best
/// over that retriever's lists; its score adds each list's term in list order, so two
/// lists fuse exactly as [`rrf`] always has.
pub fn rrf_lists(lists: &[List], k: f64) -> Vec<Fused> {
    assert!(lists.len() <= 64, "at most 64 lists fuse");
    // One list (keyword or semantic mode): its order is the fused order, since a score
    // falls with the rank (or is 0 for every page, and ties go to the better rank).
    let mut filled = lists.iter().filter(|l| !l.keys.is_empty());
    if let (Some(only), None) = (filled.next(), filled.next()) {
        let mut seen = rustc_hash::FxHashSet::with_capacity_and_hasher(only.keys.len(), Default::default());
        return only
            .keys
            .iter()
            .zip(1u32..)
            .filter(|(key, _)| seen.insert(**key))
            .map(|(key, rank)| {
                let mut ranks = [None, None];
                ranks[only.slot] = Some(rank);
                Fused { key: *key, score: only.weight / (k + rank as f64), ranks }
            })
            .collect();
    }
    let capacity = lists.iter().map(|l| l.keys.len()).sum();
    // Per page its fused entry and the lists that ranked it (a page counts once a list).
    let mut by_key: HashMap<PageKey, (Fused, u64)> = HashMap::with_capacity_and_hasher(capacity, Default::default());
    for (l, list) in lists.iter().enumerate() {
        for (i, key) in list.keys.iter().enumerate() {
            let rank = i as u32 + 1;
            let (e, seen) = by_key.entry(*key).or_insert((Fused { key: *key, score: 0.0, ranks: [None, None] }, 0));
            if *seen & (1 << l) == 0 {
                *seen |= 1 << l;
                let r = &mut e.ranks[list.slot];
                *r = Some(r.map_or(rank, |r| r.min(rank)));
                e.score += list.weight / (k + rank as f64);
            }
        }
    }
    let mut fused: Vec<Fused> = by_key.into_values().map(|(f, _)| f).collect();
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

    /// N lists against the definition; two lists through [`rrf_lists`] are [`rrf`]'s
    /// result to the bit, and an expansion's list counts as a keyword list.
    #[test]
    fn n_lists_fuse_by_the_definition_and_two_as_before() {
        let a = [(0, 1), (0, 2), (0, 3), (1, 0)];
        let b = [(0, 3), (0, 9), (0, 1)];
        let c = [(0, 9), (2, 2), (0, 2)];
        let two = rrf([&a, &b], [1.0, 0.7], 60.0);
        let general = rrf_lists(&[List { keys: &a, weight: 1.0, slot: 0 }, List { keys: &b, weight: 0.7, slot: 1 }], 60.0);
        assert_eq!(two.len(), general.len());
        for (x, y) in two.iter().zip(&general) {
            assert_eq!((x.key, x.ranks, x.score.to_bits()), (y.key, y.ranks, y.score.to_bits()));
        }
        let three = rrf_lists(
            &[List { keys: &a, weight: 1.0, slot: 0 }, List { keys: &b, weight: 1.0, slot: 1 }, List { keys: &c, weight: 0.5, slot: 0 }],
            60.0,
        );
        assert_eq!(three.len(), 6);
        for f in &three {
            let want =
                reference([&a, &b], [1.0, 1.0], 60.0, f.key) + c.iter().position(|x| *x == f.key).map_or(0.0, |r| 0.5 / (60.0 + r as f64 + 1.0));
            assert!((f.score - want).abs() < 1e-12);
        }
        let page = |key| three.iter().find(|f| f.key == key).unwrap();
        assert_eq!(page((2, 2)).ranks, [Some(2), None], "found by the expansion only: a keyword hit");
        assert_eq!(page((0, 9)).ranks, [Some(1), Some(2)], "the best keyword-side rank");
        assert_eq!(page((0, 2)).ranks, [Some(2), None]);
        // Only an expansion's list matched: the one-list path, as a keyword list.
        let only = rrf_lists(
            &[List { keys: &[], weight: 1.0, slot: 0 }, List { keys: &[], weight: 1.0, slot: 1 }, List { keys: &c, weight: 0.5, slot: 0 }],
            60.0,
        );
        assert_eq!(only.iter().map(|f| f.key).collect::<Vec<_>>(), c);
        assert!(only.iter().all(|f| f.ranks[1].is_none() && f.ranks[0].is_some()));
    }
}
