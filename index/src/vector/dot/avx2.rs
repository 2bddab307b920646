//! The AVX2 + FMA dot product: four 8-lane accumulators (32 floats per step) so the
//! FMA latency is hidden, then an 8-lane step and a scalar tail. 384-dim rows take
//! 12 full steps and no tail.
//!
//! This file holds the vector module's only `unsafe`: the kernel may run only on a CPU
//! that has AVX2 and FMA, so it is reachable solely through [`detect`], which checks.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The kernel, if this CPU can run it.
pub(super) fn detect() -> Option<super::Kernel> {
    let ok = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    ok.then_some(dot as super::Kernel)
}

/// Only ever handed out by [`detect`] after the feature check.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: `detect` returns this function only when the CPU reports AVX2 and FMA,
    // the features `dot_avx2_fma` is compiled for.
    unsafe { dot_avx2_fma(a, b) }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [_mm256_setzero_ps(); 4];
    let (a32, b32) = (a.chunks_exact(32), b.chunks_exact(32));
    let (a_rest, b_rest) = (a32.remainder(), b32.remainder());
    for (x, y) in a32.zip(b32) {
        for (lane, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `x` and `y` are exactly 32 floats long, so the 8 floats read at
            // offset `lane * 8` (lane < 4) are in bounds; loadu needs no alignment.
            let (vx, vy) = unsafe { (_mm256_loadu_ps(x.as_ptr().add(lane * 8)), _mm256_loadu_ps(y.as_ptr().add(lane * 8))) };
            *acc = _mm256_fmadd_ps(vx, vy, *acc);
        }
    }
    let mut sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let (a8, b8) = (a_rest.chunks_exact(8), b_rest.chunks_exact(8));
    let (a_tail, b_tail) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        // SAFETY: `x` and `y` are exactly 8 floats long; loadu needs no alignment.
        let (vx, vy) = unsafe { (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) };
        sum = _mm256_fmadd_ps(vx, vy, sum);
    }
    horizontal_sum(sum) + super::scalar::dot(a_tail, b_tail)
}

#[target_feature(enable = "avx2,fma")]
unsafe fn horizontal_sum(v: __m256) -> f32 {
    let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    let one = _mm_add_ss(pair, _mm_shuffle_ps::<0b01>(pair, pair));
    _mm_cvtss_f32(one)
}

/// The int8 scan, if this CPU has AVX2 (and not the VNNI kernel).
pub(super) fn detect_scan() -> Option<super::ScanKernel> {
    is_x86_feature_detected!("avx2").then_some(scan as super::ScanKernel)
}

/// Only ever handed out by [`detect_scan`] after the feature check.
fn scan(rows: &[u8], query: &[i8], out: &mut [i32]) {
    // SAFETY: `detect_scan` returns this function only when the CPU reports AVX2, the
    // feature `scan_avx2` is compiled for.
    unsafe { scan_avx2(rows, query, out) }
}

/// The scalar reference compiled for AVX2: the compiler widens to i16 and uses
/// `vpmaddwd`, 16 products per instruction; integer sums are exact, so it equals the
/// reference bit for bit.
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(rows: &[u8], query: &[i8], out: &mut [i32]) {
    super::scalar::scan(rows, query, out)
}

/// Asks the CPU to start loading `row` into its caches (a hint: no fault, no effect
/// on results). SSE, which `_mm_prefetch` needs, is part of every x86_64 CPU.
pub(super) fn prefetch(row: &[f32]) {
    for line in row.chunks(16) {
        // SAFETY: a prefetch never dereferences: any address is allowed, and this one
        // is inside `row`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
}
