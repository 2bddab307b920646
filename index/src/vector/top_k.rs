//! Keeping the best `k` of a stream of scored ids: a binary heap of at most `k`
//! entries whose top is the worst kept hit, allocated once per search.
//!
//! The order is score descending, then id ascending, so equal scores always come back
//! in the same order whatever order the ids were offered in.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Hit;

pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k) }
    }

    /// Offers one hit; does not allocate once the heap holds `k` entries.
    #[inline]
    pub(crate) fn push(&mut self, id: u32, score: f32) {
        let hit = Worst(Hit { id, score });
        if self.heap.len() < self.k {
            self.heap.push(hit);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if hit < *worst {
                *worst = hit;
            }
        }
    }

    /// The kept hits, best first.
    pub(crate) fn into_sorted(self) -> Vec<Hit> {
        self.heap.into_sorted_vec().into_iter().map(|w| w.0).collect()
    }
}

/// Orders hits so that the greater one is the worse one: lower score, then higher id.
struct Worst(Hit);

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        best_first(&self.0, &other.0)
    }
}

/// `score`'s bits as an unsigned integer that orders as `f32::total_cmp` orders the
/// scores, for selections on plain integer keys.
#[inline]
pub(crate) fn total_order_bits(score: f32) -> u32 {
    let bits = score.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The order of results: score descending (-0.0 equal to 0.0, NaN last), then id ascending.
pub(crate) fn best_first(a: &Hit, b: &Hit) -> Ordering {
    // `+ 0.0` turns -0.0 into 0.0, which `total_cmp` would otherwise rank below it.
    (b.score + 0.0).total_cmp(&(a.score + 0.0)).then(a.id.cmp(&b.id))
}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worst {}
