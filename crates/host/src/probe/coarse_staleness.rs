//! How stale the coarse clock is, seen from user space: a thread pinned to one CPU reads
//! `CLOCK_MONOTONIC_COARSE` and `CLOCK_MONOTONIC` back to back in a loop (`host staleness`).
//!
//! The coarse clock is the timekeeper's time at its last update, which happens only when a
//! CPU advances jiffies (docs/kernel-behaviour.md §2.4); the fine clock extrapolates from the
//! same base with the clocksource. Their difference is therefore how long ago timekeeping
//! last ran: below one tick period while some CPU keeps the duty, unbounded while none does
//! (the `nohz_full_aggressive` case of §5.3). Sampled evenly in time by a spinning reader,
//! the mean of the difference is the time-weighted mean staleness the twin reports
//! (`TimekeepingReport::mean_coarse_staleness_ns`), and the largest step of the coarse clock
//! is the longest gap between two updates (`max_jiffies_gap_ns`).
//!
//! The reader must spin: a task that sleeps is woken by an interrupt, and interrupt entry on
//! an idle CPU brings jiffies up to date first, so a sleeping sampler sees fresh time. The
//! spinning reader is itself one hog on its CPU.

use crate::harness::os::pin_to;

/// What the reader saw.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoarseStaleness {
    /// The CPU it spun on.
    pub cpu: u32,
    /// Window, ns.
    pub duration_ns: u64,
    /// Pairs of reads.
    pub samples: u64,
    /// Mean of `MONOTONIC - MONOTONIC_COARSE`, ns.
    pub mean_lag_ns: f64,
    /// Largest difference seen, ns.
    pub max_lag_ns: u64,
    /// Times the coarse clock moved (timekeeping updates seen).
    pub coarse_updates: u64,
    /// Largest single step of the coarse clock, ns (the longest gap between updates).
    pub max_coarse_step_ns: u64,
}

/// Accumulates pairs of readings (`coarse`, `fine`, ns) in time order.
#[derive(Debug, Clone, Default)]
pub struct LagStats {
    samples: u64,
    lag_sum: f64,
    max_lag: u64,
    updates: u64,
    max_step: u64,
    last_coarse: Option<u64>,
}

impl LagStats {
    /// One pair. `fine` is read after `coarse`, so it is never earlier in a correct kernel;
    /// a negative difference counts as 0.
    pub fn add(&mut self, coarse: u64, fine: u64) {
        let lag = fine.saturating_sub(coarse);
        self.samples += 1;
        self.lag_sum += lag as f64;
        self.max_lag = self.max_lag.max(lag);
        if let Some(prev) = self.last_coarse
            && coarse != prev
        {
            debug_assert!(coarse > prev, "CLOCK_MONOTONIC_COARSE went backwards");
            self.updates += 1;
            self.max_step = self.max_step.max(coarse.saturating_sub(prev));
        }
        self.last_coarse = Some(coarse);
    }

    /// The summary for a window of `duration_ns` on `cpu`.
    pub fn finish(&self, cpu: u32, duration_ns: u64) -> CoarseStaleness {
        CoarseStaleness {
            cpu,
            duration_ns,
            samples: self.samples,
            mean_lag_ns: if self.samples == 0 {
                0.0
            } else {
                self.lag_sum / self.samples as f64
            },
            max_lag_ns: self.max_lag,
            coarse_updates: self.updates,
            max_coarse_step_ns: self.max_step,
        }
    }
}

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clock ids exist on Linux ≥ 2.6.32.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Why [`measure`] measured nothing.
#[derive(Debug, thiserror::Error)]
pub enum StalenessError {
    /// The reader could not be pinned to the CPU asked for (`--cpu`): bad input.
    #[error("--cpu {cpu}: cannot pin the reader there: {source}")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error of `sched_setaffinity`.
        #[source]
        source: std::io::Error,
    },
    /// The reader thread panicked.
    #[error("the staleness reader panicked")]
    Panicked,
}

impl StalenessError {
    /// Whether the user's input is at fault (the CPU asked for); a panic is ticklab's.
    pub fn is_input(&self) -> bool {
        matches!(self, StalenessError::Pin { .. })
    }
}

/// Spins on `cpu` for `duration_ns`, reading both clocks; `Err` when the thread cannot be
/// pinned there (the message names the CPU).
pub fn measure(cpu: u32, duration_ns: u64) -> Result<CoarseStaleness, StalenessError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_to(cpu).map_err(|source| StalenessError::Pin { cpu, source })?;
            let mut st = LagStats::default();
            let start = read(libc::CLOCK_MONOTONIC);
            let end = start.saturating_add(duration_ns);
            loop {
                let coarse = read(libc::CLOCK_MONOTONIC_COARSE);
                let fine = read(libc::CLOCK_MONOTONIC);
                st.add(coarse, fine);
                if fine >= end {
                    return Ok(st.finish(cpu, fine - start));
                }
            }
        })
        .join()
        .map_err(|_| StalenessError::Panicked)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_stats_table() {
        // A coarse clock stepping every 1000 ns, read every 250 ns, then a 5000 ns freeze.
        let mut st = LagStats::default();
        let mut fine = 0;
        while fine < 4000 {
            st.add(fine / 1000 * 1000, fine);
            fine += 250;
        }
        for _ in 0..20 {
            st.add(3000, fine);
            fine += 250;
        }
        st.add(9000, 9000);
        let r = st.finish(3, 9000);
        assert_eq!(r.samples, 16 + 20 + 1);
        assert_eq!(r.coarse_updates, 4);
        assert_eq!(r.max_coarse_step_ns, 6000);
        assert_eq!(r.max_lag_ns, 8750 - 3000);
        // Mean of 0,250,500,750 ×4, then 1000..5750 during the freeze, then 0.
        let freeze: u64 = (0..20).map(|i| 1000 + 250 * i).sum();
        let want = (4 * (250 + 500 + 750) + freeze) as f64 / 37.0;
        assert!((r.mean_lag_ns - want).abs() < 1e-9);
        assert_eq!(r.cpu, 3);
    }

    #[test]
    fn empty_and_backwards_fine_clock() {
        assert_eq!(LagStats::default().finish(0, 0).mean_lag_ns, 0.0);
        let mut st = LagStats::default();
        st.add(100, 50);
        assert_eq!(st.finish(0, 1).max_lag_ns, 0);
    }

    #[test]
    fn live_reader_sees_bounded_lag() {
        // On any Linux host some CPU keeps timekeeping running within a second.
        let r = measure(0, 20_000_000).unwrap();
        assert!(r.samples > 0);
        assert!(r.max_lag_ns < 1_000_000_000, "{r:?}");
        assert!(r.mean_lag_ns <= r.max_lag_ns as f64);
    }
}
