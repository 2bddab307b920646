//! Pooling token states into one vector: the mean over real tokens (attention mask
//! 1), then L2 normalisation.

/// Mean of `hidden` ([batch, seq, dims], row-major) over positions where `mask` is 1.
pub fn mean_pool(hidden: &[f32], mask: &[i64], batch: usize, seq: usize, dims: usize) -> Vec<f32> {
    debug_assert_eq!(hidden.len(), batch * seq * dims);
    debug_assert_eq!(mask.len(), batch * seq);
    let mut out = vec![0f32; batch * dims];
    for b in 0..batch {
        let acc = &mut out[b * dims..(b + 1) * dims];
        let mut count = 0f32;
        for t in 0..seq {
            if mask[b * seq + t] == 0 {
                continue;
            }
            count += 1.0;
            let row = &hidden[(b * seq + t) * dims..(b * seq + t + 1) * dims];
            acc.iter_mut().zip(row).for_each(|(a, h)| *a += h);
        }
        let inv = 1.0 / count.max(1.0);
        acc.iter_mut().for_each(|a| *a *= inv);
    }
    out
}

/// Scales `v` to unit length (left as it is when it is all zeros).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(f32::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_skips_padding() {
        // batch 2, seq 3, dims 2; the second row has one padded position.
        let hidden = [1., 2., 3., 4., 5., 6., 10., 10., 20., 20., 99., 99.];
        let mask = [1, 1, 1, 1, 1, 0];
        assert_eq!(mean_pool(&hidden, &mask, 2, 3, 2), vec![3., 4., 15., 15.]);
    }

    #[test]
    fn normalised_vectors_have_unit_length() {
        let mut v = vec![3., 4.];
        l2_normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0., 0.];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0., 0.]);
        assert!((cosine(&[1., 0.], &[1., 0.]) - 1.0).abs() < 1e-6);
    }
}
