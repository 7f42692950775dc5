//! The run's single seeded RNG and its per-CPU sub-streams.
//!
//! One `Xoshiro256PlusPlus` is seeded from the scenario seed; every CPU gets its own stream
//! by successive `jump()`s (2^128 draws apart, so streams never overlap), and one more stream
//! serves machine-wide sources. Adding a CPU or a draw on one CPU never changes what another
//! CPU sees. No wall clock, no thread RNG, no hashing order anywhere in here.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random stream.
#[derive(Debug, Clone)]
pub(crate) struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// Uniform in `[0, 1)` with 53 bits.
    #[inline]
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[0, n)` (`n > 0`), by multiply-shift.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponentially distributed delay with the given mean, in ns (at least 1).
    #[inline]
    pub(crate) fn exp_ns(&mut self, mean_ns: f64) -> u64 {
        let u = 1.0 - self.uniform(); // (0, 1]
        ((-u.ln()) * mean_ns).max(1.0) as u64
    }
}

/// A second family of per-CPU streams from the same seed, for timer-delivery jitter: it
/// starts a `long_jump()` (2^192 draws) ahead, past every stream of [`streams`], so drawing
/// jitter never changes what a CPU's background sources see.
pub(crate) fn delivery_streams(seed: u64, cpus: usize) -> Vec<Stream> {
    let mut base = Xoshiro256PlusPlus::seed_from_u64(seed);
    base.long_jump();
    (0..cpus)
        .map(|_| {
            let s = Stream(base.clone());
            base.jump();
            s
        })
        .collect()
}

/// One more stream from the same seed, for a synthetic noise source
/// (`crate::workloads::bsp::SyntheticNoise`): two `long_jump()`s ahead, past every stream of
/// [`streams`] and [`delivery_streams`], so adding it changes no other draw.
pub(crate) fn synthetic_stream(seed: u64) -> Stream {
    let mut base = Xoshiro256PlusPlus::seed_from_u64(seed);
    base.long_jump();
    base.long_jump();
    Stream(base)
}

/// Splits one seed into per-CPU streams plus a machine-wide one.
pub(crate) fn streams(seed: u64, cpus: usize) -> (Vec<Stream>, Stream) {
    let mut base = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut per_cpu = Vec::with_capacity(cpus);
    for _ in 0..cpus {
        per_cpu.push(Stream(base.clone()));
        base.jump();
    }
    (per_cpu, Stream(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let (mut a, mut ga) = streams(42, 3);
        let (mut b, mut gb) = streams(42, 3);
        let xs: Vec<u64> = (0..3).map(|i| a[i].below(1 << 40)).collect();
        let ys: Vec<u64> = (0..3).map(|i| b[i].below(1 << 40)).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs[0], xs[1]);
        assert_eq!(ga.below(1000), gb.below(1000));
        // A CPU's stream does not depend on how many CPUs exist.
        let (mut c, _) = streams(42, 8);
        let (mut d, _) = streams(42, 3);
        assert_eq!(c[2].below(u64::MAX), d[2].below(u64::MAX));
    }

    #[test]
    fn exp_has_the_right_mean() {
        let (mut s, _) = streams(7, 1);
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| s[0].exp_ns(1_000_000.0)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 1e6).abs() < 2e4, "mean {mean}");
    }
}
