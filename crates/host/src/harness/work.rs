//! The frame workers' unit of work and its calibration.
//!
//! One *work unit* is four dependent rounds of a 64-bit multiply-add and xor-shift, with the
//! state passed through [`std::hint::black_box`] so the compiler can neither vectorise nor
//! fold the loop. That is roughly 25 cycles, about 8–10 ns on a 3 GHz core, so E2's
//! LOOP × FREQ ≈ 48 M units/s keeps a worker busy for about 40–50 % of each frame.
//!
//! [`calibrate`] times batches of units on the calling thread (pinned, with its final
//! scheduling policy) and keeps the *minimum* cost per unit, after subtracting the cost of the
//! clock reads around a batch: the undisturbed duration of a frame is LOOP × that minimum.

use std::hint::black_box;

use super::os::now_ns;

/// Units per calibration batch (≈ 100 µs of work).
pub(crate) const CALIBRATION_BATCH: u64 = 10_000;

/// Runs `units` work units and returns the final state (feed it to `black_box`).
#[inline(never)]
pub(crate) fn work(units: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..units {
        for _ in 0..4 {
            x = x
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            x ^= x >> 29;
        }
        x = black_box(x);
    }
    x
}

/// Result of calibrating the work unit on one thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Calibration {
    /// Minimum cost of one unit in nanoseconds.
    pub ns_per_unit: f64,
    /// Minimum cost of the two clock reads around a piece of work, in nanoseconds.
    pub clock_pair_ns: u64,
    /// Batches timed.
    pub batches: u32,
}

impl Calibration {
    /// Undisturbed duration of `units` units, in nanoseconds.
    pub(crate) fn undisturbed_ns(&self, units: u64) -> u64 {
        (units as f64 * self.ns_per_unit).round() as u64
    }
}

/// Times at least `min_batches` batches (and at most `budget_ns` of wall time beyond them)
/// and keeps the minimum.
pub(crate) fn calibrate(min_batches: u32, budget_ns: u64) -> Calibration {
    let mut clock_pair_ns = u64::MAX;
    for _ in 0..1000 {
        let a = now_ns();
        let b = now_ns();
        clock_pair_ns = clock_pair_ns.min(b - a);
    }
    // Warm the core (frequency, caches) before timing.
    black_box(work(CALIBRATION_BATCH * 10, 7));
    let started = now_ns();
    let mut best = u64::MAX;
    let mut batches = 0u32;
    while batches < min_batches || (now_ns() - started < budget_ns && batches < 10 * min_batches) {
        let a = now_ns();
        black_box(work(CALIBRATION_BATCH, batches as u64));
        let b = now_ns();
        best = best.min((b - a).saturating_sub(clock_pair_ns));
        batches += 1;
    }
    Calibration {
        ns_per_unit: best.max(1) as f64 / CALIBRATION_BATCH as f64,
        clock_pair_ns,
        batches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_depends_on_units_and_seed() {
        assert_ne!(work(1, 1), work(2, 1));
        assert_ne!(work(5, 1), work(5, 3));
        assert_eq!(work(0, 4), 5);
    }

    #[test]
    fn calibration_is_positive_and_scales() {
        let c = calibrate(20, 5_000_000);
        assert!(c.batches >= 20);
        assert!(c.ns_per_unit > 0.0 && c.ns_per_unit < 10_000.0, "{c:?}");
        assert_eq!(c.undisturbed_ns(0), 0);
        assert!(c.undisturbed_ns(2000) >= c.undisturbed_ns(1000));
    }
}
