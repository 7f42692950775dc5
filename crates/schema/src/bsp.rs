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

use serde::{Deserialize, Serialize};

use crate::noise::NoiseClass;
use crate::workload::Barrier;

/// One source's share of the blame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BspBlame {
    /// The source's class; `None` when the producer cannot tell which source it was (the
    /// host lab's ranks see their detours but not what ran in them: docs/noise.md).
    pub class: Option<NoiseClass>,
    /// Its name, as in the noise report's sources.
    pub name: String,
    /// Late iterations whose last rank lost the most to this source.
    pub iterations: u64,
    /// The excess of those iterations, summed (ns).
    pub excess_ns: u64,
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
    pub fn check(&self) -> Result<(), String> {
        if self.iterations == 0 {
            return Ok(());
        }
        let (min, max) = (self.min_ns as f64, self.max_ns as f64);
        if !(min <= self.mean_ns + 0.5 && self.mean_ns <= max + 0.5) {
            return Err(format!(
                "mean iteration {} ns outside [{}, {}]",
                self.mean_ns, self.min_ns, self.max_ns
            ));
        }
        if self.p99_ns > self.max_ns + self.max_ns / 500 + 1 {
            return Err(format!(
                "p99 {} ns above max {} ns",
                self.p99_ns, self.max_ns
            ));
        }
        if self.noiseless_ns > self.min_ns {
            return Err(format!(
                "noiseless iteration {} ns above the shortest {} ns",
                self.noiseless_ns, self.min_ns
            ));
        }
        let blamed: u64 = self.blame.iter().map(|b| b.iterations).sum();
        if blamed != self.late_iterations {
            return Err(format!(
                "blame covers {blamed} iterations, {} were late",
                self.late_iterations
            ));
        }
        Ok(())
    }
}
