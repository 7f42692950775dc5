//! Hardware C-state auto-demotion: the core executes a requested deep state as a shallower one
//! while its recent idle periods were short (Intel's C1E/C3 auto-demotion, set up by firmware
//! in `MSR_PKG_CST_CONFIG_CONTROL`). The OS asks for a state; the hardware decides what runs.
//!
//! The machine's [`AutoDemotion`] spec says how many recent residencies are averaged, below
//! which mean a request is demoted, and to which state. Each core keeps its last
//! [`HISTORY`] residencies in a [`ResidencyHistory`], recorded at every wake-up when the
//! machine auto-demotes; [`demote`] applies the rule at every entry.

use ticklab_schema::machine::AutoDemotion;

/// Residencies a core remembers: the most a spec's window can average.
pub(crate) const HISTORY: usize = 16;

/// One core's recent idle residencies, a ring of [`HISTORY`].
///
/// Invariant: `recorded` counts every residency recorded; the newest sits at
/// `(recorded - 1) % HISTORY`, the `k`-th before it at `(recorded - 1 - k) % HISTORY`.
#[derive(Debug, Clone)]
pub(crate) struct ResidencyHistory {
    residencies: [u64; HISTORY],
    recorded: usize,
}

impl ResidencyHistory {
    /// Nothing recorded yet.
    pub(crate) fn new() -> Self {
        ResidencyHistory {
            residencies: [0; HISTORY],
            recorded: 0,
        }
    }

    /// Records the residency of the idle period that just ended.
    #[inline]
    pub(crate) fn record(&mut self, residency_ns: u64) {
        self.residencies[self.recorded % HISTORY] = residency_ns;
        self.recorded += 1;
    }

    /// The sum of the last `window` residencies, or `None` while fewer were recorded.
    #[inline]
    fn sum_of_last(&self, window: usize) -> Option<u64> {
        debug_assert!(window <= HISTORY);
        if self.recorded < window {
            return None;
        }
        Some(
            (0..window)
                .map(|k| self.residencies[(self.recorded - 1 - k) % HISTORY])
                .sum(),
        )
    }
}

/// The state the hardware executes for a `requested` one: a request deeper than
/// `spec.demote_to` becomes `demote_to` when the mean of the core's last `spec.window`
/// residencies (at most [`HISTORY`]) is at or below `spec.min_mean_residency_ns`; anything
/// else, and any request before the window has filled, runs as requested.
#[inline]
pub(crate) fn demote(spec: &AutoDemotion, history: &ResidencyHistory, requested: usize) -> usize {
    if requested <= spec.demote_to {
        return requested;
    }
    let window = (spec.window as usize).min(HISTORY);
    match history.sum_of_last(window) {
        Some(sum) if sum / window as u64 <= spec.min_mean_residency_ns => spec.demote_to,
        _ => requested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(window: u32) -> AutoDemotion {
        AutoDemotion {
            min_mean_residency_ns: 100_000,
            window,
            demote_to: 1,
        }
    }

    fn history(residencies: &[u64]) -> ResidencyHistory {
        let mut h = ResidencyHistory::new();
        for &r in residencies {
            h.record(r);
        }
        h
    }

    #[test]
    fn demotion_table() {
        // (window, residencies oldest first, requested, executed)
        let cases: &[(u32, &[u64], usize, usize)] = &[
            (2, &[], 3, 3),                        // window not filled yet
            (2, &[50_000], 3, 3),                  // still not filled
            (2, &[50_000, 150_000], 3, 1),         // mean 100 µs: at the bound, demoted
            (2, &[50_000, 150_002], 3, 3),         // mean just above: as requested
            (2, &[900_000, 10_000, 10_000], 3, 1), // only the last two count
            (2, &[10_000, 10_000], 1, 1),          // not deeper than demote_to
            (2, &[10_000, 10_000], 0, 0),          // shallower: untouched
            (64, &[10_000; 16], 3, 1),             // a window beyond the history: 16
            (64, &[10_000; 15], 3, 3),             // ...which must have filled
        ];
        for &(window, rs, requested, want) in cases {
            assert_eq!(
                demote(&spec(window), &history(rs), requested),
                want,
                "window {window} {rs:?} requested {requested}"
            );
        }
    }

    #[test]
    fn the_ring_keeps_the_newest() {
        // 20 long periods, then two short ones: the ring wrapped, the newest two decide.
        let mut rs = vec![1_000_000u64; 20];
        rs.extend([1_000, 1_000]);
        assert_eq!(demote(&spec(2), &history(&rs), 3), 1);
        assert_eq!(demote(&spec(3), &history(&rs), 3), 3);
    }
}
