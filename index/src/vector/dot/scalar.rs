//! The reference dot product: plain, portable, and the yardstick the SIMD kernels are
//! tested against. It is also the fallback on CPUs without a faster kernel.

/// `Σ a[i]·b[i]` over the common length, summed left to right in f32.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
