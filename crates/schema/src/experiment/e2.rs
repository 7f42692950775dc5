//! E2: frame-scheduler jitter on a 64-CPU server of 2012 (kernel 3.0-rt), with and without
//! `skew_tick=1` (docs/experiments.md E2).
//!
//! This module holds what the experiment is — its frame [`GROUPS`], the jitter [`BUDGET_US`],
//! the two kernel command lines ([`cmdline`]) — and what a run of it yields: one [`Outcome`]
//! per configuration, the per-group [`GroupSummary`], the per-CPU JSON view
//! ([`ConfigSummary`]), all gathered in [`Results`]. The twin builds the scenarios and runs
//! them (`ticklab_twin::experiments::e2`, where the configurations and assumptions are
//! explained); `ticklab-report` renders the results.

use crate::report::{FrameGroupReport, Report, WorkloadResult};
use serde::{Deserialize, Serialize};

/// The frame groups: (name, Hz, LOOP, first CPU, last CPU) — docs/experiments.md E2.
pub const GROUPS: [(&str, f64, u64, u32, u32); 3] = [
    ("A", 960.0, 50_000, 4, 23),
    ("B", 666.0, 72_072, 24, 43),
    ("C", 300.0, 160_000, 44, 63),
];

/// The user's jitter budget (docs/experiments.md E2), µs.
pub const BUDGET_US: f64 = 30.0;

/// Rcu leaf fan-out of the 3.0 MAXSMP build (docs/experiments.md E2).
pub const MAXSMP_RCU_FANOUT: u32 = 64;

/// Simulated warm-up before each configuration's window, ns.
pub const WARMUP_NS: u64 = 1_000_000_000;

/// The E2 kernel command line: (a) without skew, (b) with `skew_tick=1` and periodic ticks.
pub fn cmdline(skew: bool) -> &'static str {
    if skew {
        "skew_tick=1 nohz=off intel_idle.max_cstate=1"
    } else {
        "nohz=on intel_idle.max_cstate=1"
    }
}

/// The short name of a configuration in tables: `skew` or `no-skew`.
pub fn config_name(skew: bool) -> &'static str {
    if skew { "skew" } else { "no-skew" }
}

/// One configuration's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// `skew_tick=1` (configuration b).
    pub skew: bool,
    /// The full report of the run.
    pub report: Report,
    /// Events the run processed (the twin's speed, not a result of the experiment).
    pub events: u64,
}

impl Outcome {
    /// The frame groups of the report, in group order.
    pub fn groups(&self) -> Vec<&FrameGroupReport> {
        self.report
            .workloads
            .iter()
            .filter_map(|w| match w {
                WorkloadResult::Frames(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    /// The JSON view of this configuration: per-group summaries and per-CPU jitter.
    pub fn summary(&self) -> ConfigSummary {
        let groups = self.groups();
        ConfigSummary {
            skew: self.skew,
            groups: groups.iter().map(|g| summary(g)).collect(),
            cpus: groups
                .iter()
                .flat_map(|g| g.rows.iter())
                .map(|r| CpuJitter {
                    cpu: r.cpu,
                    frames: r.frames,
                    min_us: r.min_us,
                    max_us: r.max_us,
                    avg_us: r.avg_us,
                    sigma_us: r.sigma_us,
                    overruns: r.overruns,
                    fliers: r.fliers,
                })
                .collect(),
        }
    }
}

/// A group's summary over its CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group name.
    pub group: String,
    /// Largest jitter of any worker, µs.
    pub max_us: f64,
    /// Mean over all frames, µs.
    pub avg_us: f64,
    /// Standard deviation over all frames (pooled), µs.
    pub sigma_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Frames above the budget-independent flier threshold, all CPUs.
    pub fliers: u64,
    /// Overruns, all CPUs.
    pub overruns: u64,
}

/// Summarises a group (pooled mean and sigma from the per-CPU rows).
pub fn summary(g: &FrameGroupReport) -> GroupSummary {
    let n: f64 = g.rows.iter().map(|r| r.frames as f64).sum();
    let mean = if n > 0.0 {
        g.rows
            .iter()
            .map(|r| r.frames as f64 * r.avg_us)
            .sum::<f64>()
            / n
    } else {
        0.0
    };
    let var = if n > 0.0 {
        g.rows
            .iter()
            .map(|r| {
                r.frames as f64 * (r.sigma_us * r.sigma_us + (r.avg_us - mean) * (r.avg_us - mean))
            })
            .sum::<f64>()
            / n
    } else {
        0.0
    };
    GroupSummary {
        group: g.group.clone(),
        max_us: g.rows.iter().map(|r| r.max_us).fold(0.0, f64::max),
        avg_us: mean,
        sigma_us: var.sqrt(),
        p999_us: g.p999_us,
        fliers: g.rows.iter().map(|r| r.fliers).sum(),
        overruns: g.rows.iter().map(|r| r.overruns).sum(),
    }
}

/// The JSON of one configuration: `skew`, the group summaries, then per CPU `cpu`, `frames`,
/// `min_us`, `max_us`, `avg_us`, `sigma_us`, `overruns`, `fliers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// Configuration (b).
    pub skew: bool,
    /// Per-group summaries.
    pub groups: Vec<GroupSummary>,
    /// One entry per worker CPU.
    pub cpus: Vec<CpuJitter>,
}

/// One worker CPU's jitter in the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuJitter {
    /// CPU.
    pub cpu: u32,
    /// Frames completed.
    pub frames: u64,
    /// Minimum jitter, µs.
    pub min_us: f64,
    /// Maximum jitter, µs.
    pub max_us: f64,
    /// Mean jitter, µs.
    pub avg_us: f64,
    /// Standard deviation, µs.
    pub sigma_us: f64,
    /// Overruns.
    pub overruns: u64,
    /// Fliers.
    pub fliers: u64,
}

/// A whole E2 run: both configurations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Seed of both configurations.
    pub seed: u64,
    /// Measured time per configuration, ns (after [`WARMUP_NS`] of warm-up).
    pub duration_ns: u64,
    /// Frames with more jitter than this are fliers, µs.
    pub flier_us: f64,
    /// (a) without skew, then (b) with skew.
    pub outcomes: Vec<Outcome>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FrameRow;

    #[test]
    fn pooled_summary_of_two_cpus() {
        let row = |cpu, frames, avg_us, sigma_us, max_us| FrameRow {
            cpu,
            frames,
            min_us: 1.0,
            max_us,
            max_frame: 0,
            avg_us,
            sigma_us,
            overruns: 1,
            last_overrun: 0,
            fliers: 2,
            first_fliers: Vec::new(),
            last_flier: None,
        };
        let g = FrameGroupReport {
            group: "A".into(),
            frequency_hz: 960.0,
            loop_units: 50_000,
            flier_threshold_us: 10.0,
            rows: vec![row(4, 100, 2.0, 1.0, 5.0), row(5, 300, 4.0, 1.0, 9.0)],
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 7.5,
            policy: None,
        };
        let s = summary(&g);
        assert_eq!(s.max_us, 9.0);
        assert_eq!(s.avg_us, 3.5);
        // pooled: (100·(1 + 2.25) + 300·(1 + 0.25)) / 400 = 1.75
        assert!((s.sigma_us - 1.75f64.sqrt()).abs() < 1e-12);
        assert_eq!((s.fliers, s.overruns, s.p999_us), (4, 2, 7.5));
    }
}
