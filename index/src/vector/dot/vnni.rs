//! The int8 scan on AVX-512 VNNI: `vpdpbusd` multiplies 64 unsigned bytes by 64 signed
//! bytes and adds each group of four products into one of 16 i32 lanes, so a 384-dim row
//! is six instructions. The products and their sums cannot overflow i32 for any row this
//! index holds (|255·-128| · 4 per lane per step), so the result is exact and equals the
//! scalar reference bit for bit.
//!
//! Like `avx2.rs`, the kernel is reachable only through [`detect`], which checks the CPU.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The kernel, if this CPU has AVX-512 F, BW and VNNI.
pub(super) fn detect() -> Option<super::ScanKernel> {
    let ok = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni");
    ok.then_some(scan as super::ScanKernel)
}

/// Only ever handed out by [`detect`] after the feature check.
fn scan(rows: &[u8], query: &[i8], out: &mut [i32]) {
    // SAFETY: `detect` returns this function only when the CPU reports the features
    // `scan_vnni` is compiled for.
    unsafe { scan_vnni(rows, query, out) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn scan_vnni(rows: &[u8], query: &[i8], out: &mut [i32]) {
    let dims = query.len();
    let full = dims / 64;
    let tail = dims % 64;
    // The tail's bytes, read under a mask (the masked-off bytes are zero, and read
    // nothing: a masked load does not touch memory past the row).
    let mask: __mmask64 = if tail == 0 { 0 } else { (1u64 << tail) - 1 };
    let q = query.as_ptr();
    for (row, o) in rows.chunks_exact(dims).zip(out.iter_mut()) {
        let r = row.as_ptr();
        let mut acc = _mm512_setzero_si512();
        for step in 0..full {
            // SAFETY: `row` and `query` are `dims` bytes long and `step < dims / 64`,
            // so the 64 bytes at `step * 64` are in bounds; loadu needs no alignment.
            let (a, b) = unsafe { (_mm512_loadu_si512(r.add(step * 64).cast()), _mm512_loadu_si512(q.add(step * 64).cast())) };
            acc = _mm512_dpbusd_epi32(acc, a, b);
        }
        if tail != 0 {
            // SAFETY: the mask selects the `tail` bytes left at `full * 64`, which are
            // inside both slices; masked-off bytes are not read.
            let (a, b) = unsafe { (_mm512_maskz_loadu_epi8(mask, r.add(full * 64).cast()), _mm512_maskz_loadu_epi8(mask, q.add(full * 64).cast())) };
            acc = _mm512_dpbusd_epi32(acc, a, b);
        }
        *o = _mm512_reduce_add_epi32(acc);
    }
}
