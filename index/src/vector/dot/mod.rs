//! The dot product every vector search is built on. Rows are L2-normalised, so this is
//! the cosine similarity.
//!
//! One file per instruction set, a scalar reference, and runtime dispatch resolved once
//! per process: the first call picks the fastest kernel the CPU supports and later calls
//! go straight through a function pointer.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod scalar;

use std::sync::OnceLock;

type Kernel = fn(&[f32], &[f32]) -> f32;
type KernelI8 = fn(&[i8], &[i8]) -> i32;

static KERNEL: OnceLock<(Kernel, &'static str)> = OnceLock::new();
static KERNEL_I8: OnceLock<KernelI8> = OnceLock::new();

/// Starts loading `row` into the caches ahead of its use: for scattered rows (a re-score
/// of candidates), fetched one row ahead of the dot product, the wait for memory
/// overlaps the arithmetic. No effect on any result.
#[inline]
pub fn prefetch(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    avx2::prefetch(row);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// `Σ a[i]·b[i]` over int8 codes, in i32 (exact). Panics if the lengths differ.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    assert_eq!(a.len(), b.len(), "dot of vectors of different lengths");
    let k = KERNEL_I8.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if let Some(fast) = avx2::detect_i8() {
            return fast;
        }
        scalar::dot_i8
    });
    k(a, b)
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
