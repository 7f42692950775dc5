//! E2: frame-scheduler jitter on a 64-CPU server of 2012 (kernel 3.0-rt), with and without
//! `skew_tick=1` (experiments.md E2).
//!
//! Three frame groups (960, 666 and 300 Hz; LOOP × FREQ ≈ 48 M units/s each) run one SCHED_FIFO
//! worker per isolated CPU (4–63); CPUs 0–3 do the housekeeping. The twin predicts the jitter
//! from its mechanisms only: wake-up path costs, the tick interrupting the compute, and the
//! tick-time contention on the timekeeping seqlock and the leaf `rcu_node` lock
//! ([`crate::hw::lock`]). Nothing here is fitted to an E2 outcome (none is published).
//!
//! Configurations:
//! * (a) `nohz=on`, no skew: every ticking CPU's tick fires at the same instant on the jiffy
//!   grid. With a 3.0 kernel there is no full dynticks, so a worker's tick runs while it
//!   computes and may stop only while the CPU idles between frames (dyntick-idle).
//! * (b) `skew_tick=1 nohz=off`: every CPU ticks periodically, each on its own phase
//!   (`skew_offset`). experiments.md also turns RT push/pull off for the isolated CPUs; the
//!   twin has no RT load balancing (each worker is pinned and alone on its CPU, so there is
//!   nothing to push or pull and the IPIs it would send do not exist in the model), so that
//!   switch has nothing to act on.
//!
//! Both command lines limit idle to C1 (`intel_idle.max_cstate=1`): an assumption (E) about a
//! real-time setup of the era, which kept deep C-state exits (C1E: 10 µs) out of the wake-up
//! path; experiments.md does not say. Background: the default kernel sources; the per-CPU
//! user-space wakeups (`user_hrtimers`) are left out because the cpuset confines user tasks
//! other than the workers to CPUs 0–3, and the twin places per-CPU sources on every CPU.
//!
//! Assumed (experiments.md: "CONFIG_HZ=1000 is assumed"): HZ=1000, high-resolution timers,
//! `CONFIG_NO_HZ` (dyntick-idle), `CONFIG_MAXSMP` with one leaf `rcu_node` for up to 64 CPUs
//! (the fan-out of that era before the leaf fan-out limit), the -rt tree's `skew_tick` patch.

use crate::sim::{Sim, SimError};
use crate::sweep::parallel_map;
use serde::Serialize;
use ticklab_cmdline::CpuSet;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::server_2012_64;
use ticklab_schema::report::{FrameGroupReport, Report, WorkloadResult};
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

/// The frame groups: (name, Hz, LOOP, first CPU, last CPU) — experiments.md E2.
pub const GROUPS: [(&str, f64, u64, u32, u32); 3] = [
    ("A", 960.0, 50_000, 4, 23),
    ("B", 666.0, 72_072, 24, 43),
    ("C", 300.0, 160_000, 44, 63),
];

/// The user's jitter budget (experiments.md E2), µs.
pub const BUDGET_US: f64 = 30.0;

/// Rcu leaf fan-out of the 3.0 MAXSMP build (experiments.md E2).
pub const MAXSMP_RCU_FANOUT: u32 = 64;

/// The E2 kernel command line: (a) without skew, (b) with `skew_tick=1` and periodic ticks.
pub fn cmdline(skew: bool) -> &'static str {
    if skew {
        "skew_tick=1 nohz=off intel_idle.max_cstate=1"
    } else {
        "nohz=on intel_idle.max_cstate=1"
    }
}

/// The E2 scenario for one configuration.
pub fn scenario(skew: bool, run: Run) -> Scenario {
    let groups = GROUPS
        .iter()
        .map(|&(name, hz, lp, a, b)| TaskGroup::Frames {
            name: name.into(),
            frequency_hz: hz,
            loop_units: lp,
            cpus: CpuSet::from_iter(a..=b),
        })
        .collect();
    Scenario {
        name: format!("e2 {}", if skew { "skew" } else { "no-skew" }),
        machine: server_2012_64(),
        kernel: Kernel {
            version: "3.0".into(),
            hz: 1000,
            nohz: NohzBuild::Idle,
            high_res: true,
            cmdline: cmdline(skew).into(),
            rcu_fanout_leaf: Some(MAXSMP_RCU_FANOUT),
            skew_tick_backport: true,
        },
        workload: Workload { groups },
        background: default_background()
            .into_iter()
            .filter(|b| b.name != "user_hrtimers")
            .collect(),
        run,
    }
}

/// One configuration's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `skew_tick=1` (configuration b).
    pub skew: bool,
    /// The full twin report.
    pub report: Report,
    /// Events the run processed.
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
}

/// Runs one configuration with the flier threshold `flier_ns`.
pub fn run_one(skew: bool, run: Run, flier_ns: u64) -> Result<Outcome, SimError> {
    let mut sim = sim(skew, run, flier_ns)?;
    sim.run(|_| {});
    Ok(Outcome {
        skew,
        events: sim.events(),
        report: sim.report(),
    })
}

/// The simulation of configuration (a) or (b) as the experiment runs it: frame fliers above
/// `flier_ns`, and no power integration (E2 reports frame tables, not watts).
pub fn sim(skew: bool, run: Run, flier_ns: u64) -> Result<Sim, SimError> {
    let mut sim = Sim::new(&scenario(skew, run))?;
    sim.set_flier_threshold_ns(flier_ns);
    sim.without_energy();
    Ok(sim)
}

/// Runs (a) and (b) on up to two threads; `progress(done)` after each.
pub fn run(
    run: Run,
    flier_ns: u64,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Vec<Outcome>, SimError> {
    parallel_map(
        &[false, true],
        threads,
        |&skew| run_one(skew, run, flier_ns),
        &progress,
    )
    .into_iter()
    .collect()
}

/// A group's summary over its CPUs.
#[derive(Debug, Clone, Serialize)]
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

/// The JSON of one configuration: `skew`, then per CPU `cpu`, `frames`, `min_us`, `max_us`,
/// `avg_us`, `sigma_us`, `overruns`, `fliers`.
#[derive(Debug, Clone, Serialize)]
pub struct JsonConfig {
    /// Configuration (b).
    pub skew: bool,
    /// Per-group summaries.
    pub groups: Vec<GroupSummary>,
    /// One entry per worker CPU.
    pub cpus: Vec<JsonCpu>,
}

/// One CPU in the JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct JsonCpu {
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

/// The JSON view of an outcome.
pub fn json(o: &Outcome) -> JsonConfig {
    let groups = o.groups();
    JsonConfig {
        skew: o.skew,
        groups: groups.iter().map(|g| summary(g)).collect(),
        cpus: groups
            .iter()
            .flat_map(|g| g.rows.iter())
            .map(|r| JsonCpu {
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
