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
//!
//! A frame's work is run by [`work_until`] in slices of [`CHECK_UNITS`] units, looking at a
//! deadline (the end of the run window) and the stop flags between slices, so that no LOOP —
//! not even `loop=18446744073709551615` — keeps a worker past the window or past Ctrl-C by
//! more than one slice (≈ 100 µs). Calibration times exactly such a slice, check included, so
//! the check's cost (one vDSO clock read and two relaxed loads per slice, ≈ 0.02 % of it) is
//! part of the calibrated unit cost and does not show up as jitter (docs/host-lab.md).

use std::hint::black_box;

use super::os::now_ns;

/// Units per calibration batch (≈ 100 µs of work).
pub(crate) const CALIBRATION_BATCH: u64 = 10_000;

/// Units between two looks at the deadline and the stop flags in [`work_until`]: one
/// calibration batch, so calibration measures the check with the work it interrupts.
pub(crate) const CHECK_UNITS: u64 = CALIBRATION_BATCH;

/// How a piece of work given to [`work_until`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkEnd {
    /// Every unit ran.
    Done,
    /// The deadline passed or a stop was requested first: the work was cut after `units_run`.
    Cut {
        /// Units that ran before the cut (a multiple of [`CHECK_UNITS`]).
        units_run: u64,
    },
}

/// Runs up to `units` work units (as [`work`] does) in slices of [`CHECK_UNITS`]; before each
/// slice it stops if `CLOCK_MONOTONIC` has reached `deadline_ns` or `stopped()` says so.
/// Returns the final state (feed it to `black_box`) and how the work ended.
///
/// One check per slice, also before the first: a frame of LOOP units makes ⌈LOOP / CHECK_UNITS⌉
/// checks, and a calibration batch (one slice) makes one, so both carry the same check cost
/// per unit.
#[inline(never)]
pub(crate) fn work_until(
    units: u64,
    seed: u64,
    deadline_ns: u64,
    stopped: impl Fn() -> bool,
) -> (u64, WorkEnd) {
    let mut x = seed | 1;
    let mut run = 0u64;
    while run < units {
        if now_ns() >= deadline_ns || stopped() {
            return (x, WorkEnd::Cut { units_run: run });
        }
        let slice = (units - run).min(CHECK_UNITS);
        x = work_from(slice, x);
        run += slice;
    }
    (x, WorkEnd::Done)
}

/// Runs `units` work units and returns the final state (feed it to `black_box`).
#[inline(never)]
pub(crate) fn work(units: u64, seed: u64) -> u64 {
    work_from(units, seed | 1)
}

/// [`work`] from a given state (slices of one piece of work chain their states).
#[inline(always)]
fn work_from(units: u64, mut x: u64) -> u64 {
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
        // One slice and its check, as a frame runs them: the check's cost is calibrated too.
        black_box(work_until(
            CALIBRATION_BATCH,
            batches as u64,
            u64::MAX,
            || black_box(false),
        ));
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
    fn work_until_runs_everything_before_the_deadline_and_cuts_after_it() {
        // (units, deadline, stopped, expected end)
        let far = u64::MAX;
        let cases = [
            (0, far, false, WorkEnd::Done),
            (0, 0, true, WorkEnd::Done),
            (3 * CHECK_UNITS + 1, far, false, WorkEnd::Done),
            (3 * CHECK_UNITS + 1, 0, false, WorkEnd::Cut { units_run: 0 }),
            (u64::MAX, far, true, WorkEnd::Cut { units_run: 0 }),
        ];
        for (units, deadline, stopped, want) in cases {
            let (_, end) = work_until(units, 1, deadline, || stopped);
            assert_eq!(
                end, want,
                "{units} units, deadline {deadline}, stop {stopped}"
            );
        }
        // Sliced work computes what unsliced work does.
        assert_eq!(
            work_until(2 * CHECK_UNITS + 5, 9, far, || false).0,
            work(2 * CHECK_UNITS + 5, 9)
        );
        // A stop seen between slices cuts after the slices already run.
        let calls = std::cell::Cell::new(0);
        let (_, end) = work_until(u64::MAX, 1, far, || {
            calls.set(calls.get() + 1);
            calls.get() > 3
        });
        assert_eq!(
            end,
            WorkEnd::Cut {
                units_run: 3 * CHECK_UNITS
            }
        );
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
