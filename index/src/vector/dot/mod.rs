//! The dot product every vector search is built on. Rows are L2-normalised, so this is
//! the cosine similarity.
//!
//! One file per instruction set, a scalar reference, and runtime dispatch resolved once
//! per process: the first call picks the fastest kernel the CPU supports and later calls
//! go straight through a function pointer.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod vnni;

use std::sync::OnceLock;

type Kernel = fn(&[f32], &[f32]) -> f32;
type ScanKernel = fn(&[u8], &[i8], &mut [i32]);

static KERNEL: OnceLock<(Kernel, &'static str)> = OnceLock::new();
static SCAN: OnceLock<(ScanKernel, &'static str)> = OnceLock::new();

/// Starts loading `row` into the caches ahead of its use: for scattered rows (a re-score
/// of candidates), fetched a few rows ahead of the dot product, the wait for memory
/// overlaps the arithmetic. No effect on any result.
#[inline]
pub fn prefetch(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    avx2::prefetch(row);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// Scores every row of `rows` (`query.len()` bytes each, read unsigned) against
/// `query`, exactly, in i32: `out[r] = Σ rows[r][i]·query[i]` for the first
/// `out.len()` rows. The int8 scan's kernel: its rows are int8 codes stored +128, which
/// is the operand order AVX-512 VNNI multiplies in. Panics if `rows` holds fewer rows
/// than `out` or `query` is empty.
#[inline]
pub fn scan_u8_i8(rows: &[u8], query: &[i8], out: &mut [i32]) {
    assert!(!query.is_empty() && rows.len() / query.len() >= out.len(), "scan of {} bytes of rows into {} scores", rows.len(), out.len());
    (scan_kernel().0)(&rows[..out.len() * query.len()], query, out)
}

/// Which kernel [`scan_u8_i8`] runs on this machine: `"avx512vnni"`, `"avx2"` or
/// `"scalar"`.
pub fn scan_kernel_name() -> &'static str {
    scan_kernel().1
}

fn scan_kernel() -> &'static (ScanKernel, &'static str) {
    SCAN.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(fast) = vnni::detect() {
                return (fast, "avx512vnni");
            }
            if let Some(fast) = avx2::detect_scan() {
                return (fast, "avx2");
            }
        }
        (scalar::scan, "scalar")
    })
}

/// `Σ a[i]·b[i]`. Panics if the lengths differ.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of vectors of different lengths");
    (kernel().0)(a, b)
}

/// Which kernel [`dot`] runs on this machine: `"avx2+fma"` or `"scalar"`.
pub fn kernel_name() -> &'static str {
    kernel().1
}

fn kernel() -> &'static (Kernel, &'static str) {
    KERNEL.get_or_init(select)
}

fn select() -> (Kernel, &'static str) {
    #[cfg(target_arch = "x86_64")]
    if let Some(fast) = avx2::detect() {
        return (fast, "avx2+fma");
    }
    (scalar::dot, "scalar")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pair() -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
        (0usize..1000).prop_flat_map(|n| {
            let v = || proptest::collection::vec(-1.0f32..1.0, n);
            (v(), v())
        })
    }

    proptest! {
        #[test]
        fn fast_path_equals_scalar_reference((a, b) in pair()) {
            let reference = scalar::dot(&a, &b);
            // Relative to the size of the terms: reordering a sum can move it by a few
            // ulps of Σ|a·b|, whatever the (possibly cancelling) total is.
            let magnitude: f32 = a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum();
            let fast = dot(&a, &b);
            prop_assert!((fast - reference).abs() <= 1e-5 * magnitude.max(f32::MIN_POSITIVE),
                "fast {fast} reference {reference} magnitude {magnitude}");
        }
    }

    /// Rows of any width (whole 64-byte steps, a masked tail, both) and the extreme
    /// bytes: every kernel this CPU can run equals the reference exactly.
    fn scan_case() -> impl Strategy<Value = (Vec<u8>, Vec<i8>, usize)> {
        (1usize..300, 0usize..20).prop_flat_map(|(dims, n)| {
            let byte = prop_oneof![Just(0u8), Just(255u8), any::<u8>()];
            let code = prop_oneof![Just(-128i8), Just(127i8), any::<i8>()];
            (proptest::collection::vec(byte, dims * n + dims / 2), proptest::collection::vec(code, dims), Just(n))
        })
    }

    proptest! {
        #[test]
        fn scan_kernels_equal_the_reference_exactly((rows, query, n) in scan_case()) {
            let mut reference = vec![0; n];
            scalar::scan(&rows, &query, &mut reference);
            let mut kernels: Vec<(ScanKernel, &str)> = vec![(scan_kernel().0, scan_kernel_name())];
            #[cfg(target_arch = "x86_64")]
            kernels.extend(vnni::detect().map(|k| (k, "avx512vnni")).into_iter().chain(avx2::detect_scan().map(|k| (k, "avx2"))));
            for (kernel, name) in kernels {
                // Poisoned, so a score left unwritten shows.
                let mut out = vec![i32::MIN; n];
                kernel(&rows[..n * query.len()], &query, &mut out);
                prop_assert_eq!(&out, &reference, "{}", name);
            }
        }
    }

    #[test]
    fn the_scan_writes_only_the_scores_asked_for() {
        let (rows, query) = (vec![2u8; 3 * 70], vec![-3i8; 70]);
        let mut out = [0i32; 2];
        scan_u8_i8(&rows, &query, &mut out);
        assert_eq!(out, [-420, -420]);
    }

    #[test]
    fn picks_avx512_vnni_for_the_scan_where_the_cpu_has_it() {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni") {
            assert_eq!(scan_kernel_name(), "avx512vnni");
        }
    }

    #[test]
    fn picks_avx2_where_the_cpu_has_it() {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            assert_eq!(kernel_name(), "avx2+fma");
        }
    }

    #[test]
    fn exact_on_small_integers() {
        let a: Vec<f32> = (0..77).map(|i| i as f32).collect();
        let expected: f32 = (0..77).map(|i| (i * i) as f32).sum();
        assert_eq!(dot(&a, &a), expected);
    }
}
