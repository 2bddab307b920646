//! The reference dot product: plain, portable, and the yardstick the SIMD kernels are
//! tested against. It is also the fallback on CPUs without a faster kernel.

/// `Σ a[i]·b[i]` over the common length, summed left to right in f32.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Each `query.len()`-byte row of `rows` against `query`, exactly, in i32: `out[r] =
/// Σ rows[r][i]·query[i]`, the row's bytes read unsigned.
pub fn scan(rows: &[u8], query: &[i8], out: &mut [i32]) {
    for (row, o) in rows.chunks_exact(query.len()).zip(out.iter_mut()) {
        *o = row.iter().zip(query).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
    }
}
