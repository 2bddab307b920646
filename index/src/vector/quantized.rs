//! An int8 copy of a segment's vectors for the scan: a quarter of the bytes to stream
//! per query (a 5k-row × 384-dim segment is 8 MB of f32 — more than the cache keeps
//! beside the embedder's weights), scored approximately, then the best candidates
//! re-scored exactly against the f32 rows. Symmetric per-row scales.

use super::dot::{dot, dot_i8, prefetch};
use super::exact::Hit;
use super::top_k::{best_first, TopK};

/// Candidates re-scored exactly per result wanted (and at least this many).
pub const RESCORE_PER_HIT: usize = 3;
pub const RESCORE_MIN: usize = 50;

pub struct Quantized {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

fn quantize_row(row: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.extend(std::iter::repeat_n(0i8, row.len()));
        return 0.0;
    }
    let scale = max / 127.0;
    out.extend(row.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8));
    scale
}

impl Quantized {
    pub fn new(rows: &[f32], dims: usize) -> Quantized {
        let mut codes = Vec::with_capacity(rows.len());
        let scales = rows.chunks_exact(dims).map(|r| quantize_row(r, &mut codes)).collect();
        Quantized { dims, codes, scales }
    }

    /// The `k` admitted rows most similar to `query`: approximate int8 scores pick
    /// `max(k * RESCORE_PER_HIT, RESCORE_MIN)` candidates, whose exact f32 scores rank
    /// them; best first, ties by id ascending.
    pub fn search(&self, rows: &[f32], query: &[f32], k: usize, allow: impl Fn(u32) -> bool) -> Vec<Hit> {
        if k == 0 || self.dims == 0 {
            return Vec::new();
        }
        let mut q = Vec::with_capacity(self.dims);
        let q_scale = quantize_row(query, &mut q);
        // Every admitted row's approximate score, then the best `wanted` by selection
        // (linear, where a heap of `wanted` entries paid a sift per improvement): the
        // same set a heap keeps, as the order — score, then id — is total.
        let wanted = (k * RESCORE_PER_HIT).max(RESCORE_MIN);
        let mut candidates: Vec<Hit> = Vec::with_capacity(self.scales.len());
        for (id, codes) in (0u32..).zip(self.codes.chunks_exact(self.dims)) {
            if allow(id) {
                candidates.push(Hit { id, score: dot_i8(codes, &q) as f32 * self.scales[id as usize] * q_scale });
            }
        }
        if candidates.len() > wanted {
            candidates.select_nth_unstable_by(wanted - 1, best_first);
            candidates.truncate(wanted);
        }
        // Re-scored in row order, so the f32 rows are read front to back.
        candidates.sort_unstable_by_key(|c| c.id);
        let row = |id: u32| &rows[id as usize * self.dims..(id as usize + 1) * self.dims];
        let mut top = TopK::new(k);
        for (n, c) in candidates.iter().enumerate() {
            if let Some(next) = candidates.get(n + 1) {
                prefetch(row(next.id));
            }
            top.push(c.id, dot(row(c.id), query));
        }
        top.into_sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::exact_top_k;
    use crate::vector::sample::{Clusters, Rng};

    #[test]
    fn int8_then_exact_rescoring_keeps_recall_at_10_above_0_99() {
        let (dims, n) = (384, 6000);
        let mut rng = Rng::new(42);
        let clusters = Clusters::new(&mut rng, dims, 40);
        let rows = clusters.sample(&mut rng, n, 0.05);
        let queries = clusters.sample(&mut rng, 100, 0.05);
        let q = Quantized::new(&rows, dims);
        let mut found = 0;
        for query in queries.chunks_exact(dims) {
            let exact: Vec<u32> = exact_top_k(&rows, dims, query, 10, &|_| true).iter().map(|h| h.id).collect();
            let fast = q.search(&rows, query, 10, |_| true);
            found += fast.iter().filter(|h| exact.contains(&h.id)).count();
            for h in &fast {
                let i = h.id as usize * dims;
                assert_eq!(h.score, dot(&rows[i..i + dims], query), "scores are exact");
            }
        }
        let recall = found as f64 / 1000.0;
        assert!(recall >= 0.99, "recall@10 {recall}");
    }

    #[test]
    fn filters_are_respected_and_zero_rows_are_harmless() {
        let dims = 8;
        let mut rows = vec![0.0; dims];
        rows.extend([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        rows.extend([0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let q = Quantized::new(&rows, dims);
        let query = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let hits = q.search(&rows, &query, 2, |id| id != 1);
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [0, 2]);
        let (a, b): (Vec<i8>, Vec<i8>) = (0..384i32).map(|i| (i * 7 % 255 - 127, i * 13 % 255 - 127)).map(|(x, y)| (x as i8, y as i8)).unzip();
        let reference: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        assert_eq!(dot_i8(&a, &b), reference, "the SIMD int8 kernel is exact");
    }
}
