//! Seeded, clustered unit vectors: the fixture the vector tests, the search tests and
//! the vector bench share. Rows and queries drawn around the same random centroids are
//! clustered the way real embeddings are (uniform random vectors are unrealistically
//! hard), and the same seed gives the same vectors on every run and machine.

/// SplitMix64: a seeded generator so fixtures are the same on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Standard normal (Box–Muller).
    pub fn gaussian(&mut self) -> f32 {
        let u = self.uniform().max(f32::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * self.uniform()).cos()
    }
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
}

/// Random unit centroids; rows and queries drawn around the same ones are clustered
/// the way real embeddings are, unlike uniform random vectors.
pub struct Clusters {
    dims: usize,
    centroids: Vec<f32>,
}

impl Clusters {
    pub fn new(rng: &mut Rng, dims: usize, count: usize) -> Clusters {
        Clusters { dims, centroids: (0..count).flat_map(|_| unit(rng, dims)).collect() }
    }

    /// `n` unit vectors, each a centroid plus gaussian noise of `sigma` per dimension.
    pub fn sample(&self, rng: &mut Rng, n: usize, sigma: f32) -> Vec<f32> {
        let count = self.centroids.len() / self.dims;
        let mut rows = Vec::with_capacity(n * self.dims);
        for _ in 0..n {
            let c = (rng.next_u64() % count as u64) as usize;
            let start = rows.len();
            let centroid = &self.centroids[c * self.dims..(c + 1) * self.dims];
            rows.extend(centroid.iter().map(|x| x + sigma * rng.gaussian()));
            normalise(&mut rows[start..]);
        }
        rows
    }
}

/// One random unit vector.
pub fn unit(rng: &mut Rng, dims: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.gaussian()).collect();
    normalise(&mut v);
    v
}
