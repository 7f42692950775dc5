//! The result of a bulk-synchronous job (`bsp:N@LIST:work=DUR`): iteration times, their
//! excess over the noiseless iteration, and which CPU and which source made each iteration
//! late.
//!
//! Definitions (docs/noise.md): an iteration starts when the barrier releases the ranks and
//! ends when the last rank arrives at the next barrier; the **noiseless** iteration is one in
//! which no rank lost any time (`work_ns`, the barrier's own cost being the job's, not the
//! kernel's); the **excess** of an iteration is its length minus the noiseless one. The
//! **blame** of a late iteration goes to the rank that arrived last and to the source that
//! took the most time from that rank in that iteration.
//!
//! Invariants (kept by the producers): `min_ns ≤ mean_ns ≤ max_ns`, `p99_ns ≤ max_ns`,
//! `noiseless_ns ≤ min_ns` when `iterations > 0`, and the blame rows' iterations add up to
//! `late_iterations`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::noise::NoiseClass;
use crate::workload::Barrier;

/// One source's share of the blame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BspBlame {
    /// The source's class; `None` when the producer cannot tell which source it was (the
    /// host lab's ranks without a trace of their CPUs see their detours but not what ran in
    /// them: docs/noise.md).
    pub class: Option<NoiseClass>,
    /// Its name, as in the noise report's sources.
    pub name: String,
    /// Late iterations whose last rank lost the most to this source.
    pub iterations: u64,
    /// The excess of those iterations, summed (ns).
    pub excess_ns: u64,
}

impl BspBlame {
    /// The report's order of blame rows: largest excess first, then most iterations (a
    /// stable sort keeps equal rows in the producer's order).
    pub fn order(a: &BspBlame, b: &BspBlame) -> std::cmp::Ordering {
        b.excess_ns
            .cmp(&a.excess_ns)
            .then(b.iterations.cmp(&a.iterations))
    }
}

/// How often one CPU arrived last at a late iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BspLastArrival {
    /// The CPU.
    pub cpu: u32,
    /// Late iterations it arrived last at.
    pub iterations: u64,
}

/// A bulk-synchronous job's iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BspReport {
    /// Ranks.
    pub ranks: u32,
    /// The ranks' CPUs, in rank order.
    pub cpus: Vec<u32>,
    /// How the ranks wait at the barrier.
    pub barrier: Barrier,
    /// Compute per rank per iteration (ns).
    pub work_ns: u64,
    /// The noiseless iteration (ns).
    pub noiseless_ns: u64,
    /// Iterations completed in the window.
    pub iterations: u64,
    /// Shortest iteration (ns).
    pub min_ns: u64,
    /// Mean iteration (ns).
    pub mean_ns: f64,
    /// 99th percentile of the iterations (ns, 3 significant digits).
    pub p99_ns: u64,
    /// Longest iteration (ns).
    pub max_ns: u64,
    /// Mean excess over the noiseless iteration (ns).
    pub excess_mean_ns: f64,
    /// The mean excess as a share of the noiseless iteration (%).
    pub excess_pct: f64,
    /// Iterations longer than the noiseless one.
    pub late_iterations: u64,
    /// Per source, largest excess first.
    pub blame: Vec<BspBlame>,
    /// The CPUs that arrived last most often (at most eight, most often first).
    pub last_arrivals: Vec<BspLastArrival>,
}

impl BspReport {
    /// Checks the invariants of the module docs; the error names the first one broken.
    pub fn check(&self) -> Result<(), BspCheckError> {
        if self.iterations == 0 {
            return Ok(());
        }
        let (min, max) = (self.min_ns as f64, self.max_ns as f64);
        if !(min <= self.mean_ns + 0.5 && self.mean_ns <= max + 0.5) {
            return Err(BspCheckError::MeanOutside {
                mean_ns: self.mean_ns,
                min_ns: self.min_ns,
                max_ns: self.max_ns,
            });
        }
        if self.p99_ns > self.max_ns + self.max_ns / 500 + 1 {
            return Err(BspCheckError::P99AboveMax {
                p99_ns: self.p99_ns,
                max_ns: self.max_ns,
            });
        }
        if self.noiseless_ns > self.min_ns {
            return Err(BspCheckError::NoiselessAboveMin {
                noiseless_ns: self.noiseless_ns,
                min_ns: self.min_ns,
            });
        }
        let blamed: u64 = self.blame.iter().map(|b| b.iterations).sum();
        if blamed != self.late_iterations {
            return Err(BspCheckError::Blame {
                blamed,
                late: self.late_iterations,
            });
        }
        Ok(())
    }
}

/// Which invariant of a [`BspReport`] is broken ([`BspReport::check`]), with the figures that
/// break it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BspCheckError {
    /// The mean iteration outside the shortest and the longest.
    #[error("mean iteration {mean_ns} ns outside [{min_ns}, {max_ns}]")]
    MeanOutside {
        /// The mean iteration, ns.
        mean_ns: f64,
        /// The shortest, ns.
        min_ns: u64,
        /// The longest, ns.
        max_ns: u64,
    },
    /// The p99 above the longest iteration (beyond the histogram's resolution).
    #[error("p99 {p99_ns} ns above max {max_ns} ns")]
    P99AboveMax {
        /// The p99 iteration, ns.
        p99_ns: u64,
        /// The longest, ns.
        max_ns: u64,
    },
    /// The noiseless iteration longer than the shortest one measured.
    #[error("noiseless iteration {noiseless_ns} ns above the shortest {min_ns} ns")]
    NoiselessAboveMin {
        /// The noiseless iteration, ns.
        noiseless_ns: u64,
        /// The shortest, ns.
        min_ns: u64,
    },
    /// The blame does not account for every late iteration once.
    #[error("blame covers {blamed} iterations, {late} were late")]
    Blame {
        /// Iterations the blame parts cover.
        blamed: u64,
        /// Late iterations.
        late: u64,
    },
}

/// Longest iteration a [`BspTally`] resolves (60 s); longer ones saturate.
const TALLY_MAX_NS: u64 = 60_000_000_000;

/// The running statistics of a job's closed iterations, kept by whoever closes them (the
/// twin's job, the host lab's barrier) so that both build their [`BspReport`] one way.
///
/// Invariant: `late ≤ completed`, and the blame parts' iterations add up to `late` (each late
/// iteration is blamed once, through [`BspTally::blame`]). Allocates only in
/// [`BspTally::new`] and [`BspTally::report`].
#[derive(Debug, Clone)]
pub struct BspTally {
    hist: Histogram<u64>,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    completed: u64,
    late: u64,
    /// Per blame part: (late iterations, their excess).
    parts: Vec<(u64, u64)>,
    /// Per rank: late iterations at which it arrived last.
    last_count: Vec<u64>,
}

impl BspTally {
    /// An empty tally for `ranks` ranks and `parts` blame parts.
    pub fn new(ranks: usize, parts: usize) -> BspTally {
        BspTally {
            hist: Histogram::new_with_bounds(1, TALLY_MAX_NS, 3)
                .expect("1 ns..60 s at 3 significant digits is a valid histogram"),
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            completed: 0,
            late: 0,
            parts: vec![(0, 0); parts],
            last_count: vec![0; ranks],
        }
    }

    /// Forgets every iteration (the window opens).
    pub fn reset(&mut self) {
        self.hist.reset();
        self.sum_ns = 0;
        self.min_ns = u64::MAX;
        self.max_ns = 0;
        self.completed = 0;
        self.late = 0;
        self.parts.fill((0, 0));
        self.last_count.fill(0);
    }

    /// Iterations closed so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Records a closed iteration of `len_ns`.
    pub fn record(&mut self, len_ns: u64) {
        self.completed += 1;
        self.sum_ns += u128::from(len_ns);
        self.min_ns = self.min_ns.min(len_ns);
        self.max_ns = self.max_ns.max(len_ns);
        self.hist.saturating_record(len_ns.max(1));
    }

    /// Counts the iteration just recorded as late by `excess_ns`, blamed on rank `rank` (the
    /// last to arrive) and blame part `part`. Out-of-range indices are a producer's bug.
    pub fn blame(&mut self, rank: usize, part: usize, excess_ns: u64) {
        debug_assert!(
            self.late < self.completed,
            "blame follows a recorded iteration"
        );
        debug_assert!(rank < self.last_count.len() && part < self.parts.len());
        self.late += 1;
        if let Some(p) = self.parts.get_mut(part) {
            p.0 += 1;
            p.1 += excess_ns;
        }
        if let Some(c) = self.last_count.get_mut(rank) {
            *c += 1;
        }
    }

    /// The report of the iterations so far: `cpus` in rank order, and each blame part's class
    /// and name from `part` (asked only for parts that were blamed).
    pub fn report(
        &self,
        cpus: &[u32],
        barrier: Barrier,
        work_ns: u64,
        part: impl Fn(usize) -> (Option<NoiseClass>, String),
    ) -> BspReport {
        let n = self.completed;
        let mean = if n > 0 {
            self.sum_ns as f64 / n as f64
        } else {
            0.0
        };
        let mut blame: Vec<BspBlame> = self
            .parts
            .iter()
            .enumerate()
            .filter(|(_, b)| b.0 > 0)
            .map(|(i, &(iterations, excess_ns))| {
                let (class, name) = part(i);
                BspBlame {
                    class,
                    name,
                    iterations,
                    excess_ns,
                }
            })
            .collect();
        blame.sort_by(BspBlame::order);
        let mut last: Vec<BspLastArrival> = self
            .last_count
            .iter()
            .zip(cpus)
            .filter(|(n, _)| **n > 0)
            .map(|(&iterations, &cpu)| BspLastArrival { cpu, iterations })
            .collect();
        last.sort_by(|a, b| b.iterations.cmp(&a.iterations).then(a.cpu.cmp(&b.cpu)));
        last.truncate(8);
        let excess_mean = if n > 0 { mean - work_ns as f64 } else { 0.0 };
        BspReport {
            ranks: cpus.len() as u32,
            cpus: cpus.to_vec(),
            barrier,
            work_ns,
            noiseless_ns: work_ns,
            iterations: n,
            min_ns: if n > 0 { self.min_ns } else { 0 },
            mean_ns: mean,
            p99_ns: if n > 0 {
                self.hist.value_at_quantile(0.99).min(self.max_ns)
            } else {
                0
            },
            max_ns: self.max_ns,
            excess_mean_ns: excess_mean,
            excess_pct: 100.0 * excess_mean / work_ns as f64,
            late_iterations: self.late,
            blame,
            last_arrivals: last,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Iterations of 100 ns work: (length, blamed (rank, part)) -> what the report says.
    #[test]
    fn a_tally_reports_what_it_recorded() {
        let mut t = BspTally::new(3, 2);
        for (len, late) in [
            (100, None),
            (150, Some((2, 1))),
            (130, Some((2, 0))),
            (400, Some((0, 1))),
        ] {
            t.record(len);
            if let Some((rank, part)) = late {
                t.blame(rank, part, len - 100);
            }
        }
        let names = ["compute", "release"];
        let r = t.report(&[4, 5, 6], Barrier::Spin, 100, |i| (None, names[i].into()));
        assert_eq!(r.check(), Ok(()));
        assert_eq!((r.iterations, r.late_iterations), (4, 3));
        assert_eq!((r.min_ns, r.max_ns, r.mean_ns), (100, 400, 195.0));
        assert_eq!((r.excess_mean_ns, r.excess_pct), (95.0, 95.0));
        // Largest excess first: release 50 + 300, compute 30.
        let blame: Vec<(&str, u64, u64)> = r
            .blame
            .iter()
            .map(|b| (b.name.as_str(), b.iterations, b.excess_ns))
            .collect();
        assert_eq!(blame, [("release", 2, 350), ("compute", 1, 30)]);
        // CPU 6 (rank 2) arrived last twice, CPU 4 once; CPU 5 never.
        let last: Vec<(u32, u64)> = r
            .last_arrivals
            .iter()
            .map(|l| (l.cpu, l.iterations))
            .collect();
        assert_eq!(last, [(6, 2), (4, 1)]);
        t.reset();
        let empty = t.report(&[4, 5, 6], Barrier::Spin, 100, |_| unreachable!());
        assert_eq!(
            (empty.iterations, empty.min_ns, empty.p99_ns, empty.mean_ns),
            (0, 0, 0, 0.0)
        );
        assert!(empty.blame.is_empty() && empty.last_arrivals.is_empty());
    }
}
