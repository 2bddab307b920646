//! The reference dot product: plain, portable, and the yardstick the SIMD kernels are
//! tested against. It is also the fallback on CPUs without a faster kernel.

/// `Σ a[i]·b[i]` over the common length, summed left to right in f32.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `Σ a[i]·b[i]` over int8 codes, exactly, in i32.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}
