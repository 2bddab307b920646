//! An int8 copy of a segment's vectors for the scan: a quarter of the bytes to stream
//! per query (a 5k-row × 384-dim segment is 8 MB of f32 — more than the cache keeps
//! beside the embedder's weights), scored approximately, then the best candidates
//! re-scored exactly against the f32 rows. Symmetric per-row scales.
//!
//! A row's codes are stored +128, as unsigned bytes: AVX-512 VNNI multiplies unsigned
//! by signed bytes, so the scan reads them as they lie and takes `128·Σ query` off each
//! score afterwards, which leaves it exact.

use super::dot::{dot, prefetch, scan_u8_i8};
use super::exact::Hit;
use super::top_k::TopK;

/// Candidates re-scored exactly: half again as many as the results wanted, and at least
/// [`RESCORE_MIN`]. On SciFact's page vectors (300 queries, depth 100) no page of the
/// exact top 100 ranked below 105th (MiniLM) or 121st (e5-small) by its int8 score, so
/// 150 candidates gave the exact list for every query; each one more is a scattered
/// row read from memory.
pub fn rescored(k: usize) -> usize {
    (k + k / 2).max(RESCORE_MIN)
}
pub const RESCORE_MIN: usize = 50;

/// How many candidates ahead of the one being re-scored its row is prefetched: a row
/// from memory takes about as long as scoring eight rows from cache.
const PREFETCH_AHEAD: usize = 8;

/// Rows scored per call of the scan kernel: their scores (4 kB) stay in L1 for the
/// selection that follows.
const BLOCK_ROWS: usize = 1024;

pub struct Quantized {
    dims: usize,
    /// Each row's int8 codes + 128, in memory of its own (see [`Codes`]).
    codes: Codes,
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
        Quantized { dims, codes: Codes::new(codes.into_iter().map(biased)), scales }
    }

    /// The `k` admitted rows most similar to `query`: approximate int8 scores pick
    /// [`rescored`]`(k)` candidates, whose exact f32 scores rank
    /// them; best first, ties by id ascending.
    pub fn search(&self, rows: &[f32], query: &[f32], k: usize, allow: impl Fn(u32) -> bool) -> Vec<Hit> {
        if k == 0 || self.dims == 0 {
            return Vec::new();
        }
        let mut q = Vec::with_capacity(self.dims);
        let q_scale = quantize_row(query, &mut q);
        // The best `wanted` approximate scores, as integer keys that order like
        // `best_first` (score descending, then id ascending): rows land in a buffer of
        // twice that, which is cut back to the best `wanted` by selection whenever it
        // fills, and a row below the last cut's worst is not kept at all. Most rows of
        // a scan fall below it, so the selections run on a few hundred keys where
        // selecting among every row's score cost as much as the int8 dot products.
        let wanted = rescored(k);
        let mut keys: Vec<u64> = Vec::with_capacity(2 * wanted);
        let mut floor = 0u64;
        let cut = |keys: &mut Vec<u64>| {
            keys.select_nth_unstable_by(wanted - 1, |a, b| b.cmp(a));
            keys.truncate(wanted);
            keys[wanted - 1]
        };
        let bias = 128 * q.iter().map(|&c| i32::from(c)).sum::<i32>();
        let mut scores = vec![0i32; BLOCK_ROWS.min(self.scales.len())];
        for (block, codes) in (0u32..).zip(self.codes.chunks(BLOCK_ROWS * self.dims)) {
            let scores = &mut scores[..codes.len() / self.dims];
            scan_u8_i8(codes, &q, scores);
            let first = block * BLOCK_ROWS as u32;
            for (id, &raw) in (first..).zip(scores.iter()) {
                if !allow(id) {
                    continue;
                }
                let key = order_key((raw - bias) as f32 * self.scales[id as usize] * q_scale, id);
                if key < floor {
                    continue;
                }
                keys.push(key);
                if keys.len() == 2 * wanted {
                    floor = cut(&mut keys);
                }
            }
        }
        if keys.len() > wanted {
            cut(&mut keys);
        }
        let mut candidates: Vec<u32> = keys.iter().map(|&key| u32::MAX - key as u32).collect();
        // Re-scored in row order, so the f32 rows are read front to back.
        candidates.sort_unstable();
        let row = |id: u32| &rows[id as usize * self.dims..(id as usize + 1) * self.dims];
        let mut top = TopK::new(k);
        // The rows are scattered and, right after the embedder has run, not in any
        // cache: each is asked for `PREFETCH_AHEAD` rows before its turn, so several
        // loads from memory are in flight while one row is scored.
        candidates.iter().take(PREFETCH_AHEAD).for_each(|&id| prefetch(row(id)));
        for (n, &id) in candidates.iter().enumerate() {
            if let Some(&ahead) = candidates.get(n + PREFETCH_AHEAD) {
                prefetch(row(ahead));
            }
            top.push(id, dot(row(id), query));
        }
        top.into_sorted()
    }
}

/// The codes' memory: an anonymous mapping the kernel is asked to back with 2 MiB
/// pages. Every search streams all of it right after the embedder has flushed the
/// TLB's and caches' contents; on 4 KiB pages that is a page walk every 4 KiB, and the
/// hardware prefetcher stops at each page's end. A plain `Vec` when the mapping cannot
/// be made.
enum Codes {
    Mapped(memmap2::MmapMut),
    Heap(Vec<u8>),
}

impl Codes {
    fn new(codes: impl ExactSizeIterator<Item = u8>) -> Codes {
        let len = codes.len();
        let mapped = (len > 0).then(|| memmap2::MmapMut::map_anon(len).ok()).flatten();
        match mapped {
            Some(mut m) => {
                #[cfg(target_os = "linux")]
                let _ = m.advise(memmap2::Advice::HugePage);
                m.iter_mut().zip(codes).for_each(|(slot, c)| *slot = c);
                Codes::Mapped(m)
            }
            None => Codes::Heap(codes.collect()),
        }
    }
}

impl std::ops::Deref for Codes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Codes::Mapped(m) => m,
            Codes::Heap(v) => v,
        }
    }
}

/// An int8 code as the scan stores it: + 128, unsigned.
#[inline]
fn biased(code: i8) -> u8 {
    (code as u8) ^ 0x80
}

/// A scored row as one integer whose order is [`best_first`](super::top_k::best_first)'s reversed (the greater
/// key is the better hit): the score's bits made order-preserving (`-0.0` read as
/// `0.0`, as there), above the id inverted so that the smaller id wins a tie.
#[inline]
fn order_key(score: f32, id: u32) -> u64 {
    (u64::from(super::total_order_bits(score + 0.0)) << 32) | u64::from(u32::MAX - id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::exact_top_k;
    use crate::vector::sample::{Clusters, Rng};

    /// 6,000 rows of 384 dims in 40 tight clusters, their int8 copy, and the clusters
    /// and generator to draw queries from.
    fn clustered(seed: u64) -> (Vec<f32>, Quantized, Clusters, Rng) {
        let mut rng = Rng::new(seed);
        let clusters = Clusters::new(&mut rng, 384, 40);
        let rows = clusters.sample(&mut rng, 6000, 0.05);
        let q = Quantized::new(&rows, 384);
        (rows, q, clusters, rng)
    }

    #[test]
    fn int8_then_exact_rescoring_keeps_recall_at_10_above_0_99() {
        let dims = 384;
        let (rows, q, clusters, mut rng) = clustered(42);
        let queries = clusters.sample(&mut rng, 100, 0.05);
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

    /// At a search's depth (100 pages per list) the candidates hold the exact list, in
    /// its order (re-scoring only as many as wanted gives a different list for a third
    /// of these queries).
    #[test]
    fn at_depth_100_rescoring_gives_the_exact_top_100() {
        let dims = 384;
        let (rows, q, clusters, mut rng) = clustered(11);
        for query in clusters.sample(&mut rng, 50, 0.05).chunks_exact(dims) {
            assert_eq!(q.search(&rows, query, 100, |_| true), exact_top_k(&rows, dims, query, 100, &|_| true));
        }
    }

    /// The bounded buffer keeps exactly the candidates a selection over every row's
    /// approximate score keeps (ties included: many rows share a score here), so the
    /// results are those of re-scoring that set.
    #[test]
    fn the_buffer_keeps_what_a_full_selection_keeps() {
        use crate::vector::top_k::best_first;
        let (dims, n) = (16, 3000);
        let mut rng = Rng::new(7);
        let clusters = Clusters::new(&mut rng, dims, 5);
        let mut rows = clusters.sample(&mut rng, n, 0.3);
        // Duplicate rows: equal approximate scores, ordered by id.
        rows.extend_from_within(0..dims * 200);
        let q = Quantized::new(&rows, dims);
        for (query, k) in clusters.sample(&mut rng, 20, 0.3).chunks_exact(dims).zip([1, 10, 100, 1000].into_iter().cycle()) {
            let allow = |id: u32| id % 7 != 3;
            let mut qc = Vec::new();
            let q_scale = quantize_row(query, &mut qc);
            // The approximate scores from the codes, by the plain int8 product.
            let dot_i8 = |row: &[u8]| row.iter().zip(&qc).map(|(&b, &c)| i32::from(b as i8 ^ i8::MIN) * i32::from(c)).sum::<i32>();
            let mut all: Vec<Hit> = (0u32..)
                .zip(q.codes.chunks_exact(dims))
                .filter(|(id, _)| allow(*id))
                .map(|(id, c)| Hit { id, score: dot_i8(c) as f32 * q.scales[id as usize] * q_scale })
                .collect();
            all.sort_by(best_first);
            all.truncate(rescored(k));
            let mut top = TopK::new(k);
            for h in &all {
                top.push(h.id, dot(&rows[h.id as usize * dims..(h.id as usize + 1) * dims], query));
            }
            assert_eq!(q.search(&rows, query, k, allow), top.into_sorted(), "k {k}");
        }
        for (a, b) in [(1.0f32, 2.0f32), (-0.0, 0.0), (-1.0, -0.5), (3.0, 3.0)] {
            for (i, j) in [(1u32, 2u32), (2, 1), (5, 5)] {
                let (x, y) = (Hit { id: i, score: a }, Hit { id: j, score: b });
                assert_eq!(order_key(a, i).cmp(&order_key(b, j)), best_first(&x, &y).reverse(), "{x:?} {y:?}");
            }
        }
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
        for code in [-127i8, -1, 0, 1, 127] {
            assert_eq!(i32::from(biased(code)), i32::from(code) + 128);
        }
    }
}
