//! E2: frame-scheduler jitter on a 64-CPU server of 2012 (kernel 3.0-rt), with and without
//! `skew_tick=1` (docs/experiments.md E2).
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
//!   (`skew_offset`). docs/experiments.md also turns RT push/pull off for the isolated CPUs; the
//!   twin has no RT load balancing (each worker is pinned and alone on its CPU, so there is
//!   nothing to push or pull and the IPIs it would send do not exist in the model), so that
//!   switch has nothing to act on.
//!
//! Both command lines limit idle to C1 (`intel_idle.max_cstate=1`): an assumption (E) about a
//! real-time setup of the era, which kept deep C-state exits (C1E: 10 µs) out of the wake-up
//! path; docs/experiments.md does not say. Background: the default kernel sources; the per-CPU
//! user-space wakeups (`user_hrtimers`) are left out because the cpuset confines user tasks
//! other than the workers to CPUs 0–3, and the twin places per-CPU sources on every CPU.
//!
//! Assumed (docs/experiments.md: "CONFIG_HZ=1000 is assumed"): HZ=1000, high-resolution timers,
//! `CONFIG_NO_HZ` (dyntick-idle), `CONFIG_MAXSMP` with one leaf `rcu_node` for up to 64 CPUs
//! (the fan-out of that era before the leaf fan-out limit), the -rt tree's `skew_tick` patch.

use crate::sim::{Sim, SimError};
use crate::sweep::parallel_map;
use ticklab_cmdline::CpuSet;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::server_2012_64;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

pub use ticklab_schema::experiment::e2::{
    BUDGET_US, ConfigSummary, CpuJitter, GROUPS, GroupSummary, MAXSMP_RCU_FANOUT, Outcome, Results,
    WARMUP_NS, cmdline, config_name, summary,
};

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
        name: format!("e2 {}", config_name(skew)),
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

/// Runs (a) and (b) ([`run`]) with fliers above `flier_us`: the whole experiment as
/// [`Results`]. `flier_us` must be finite and not negative.
pub fn results(
    run_cfg: Run,
    flier_us: f64,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Results, SimError> {
    debug_assert!(
        flier_us.is_finite() && flier_us >= 0.0,
        "flier_us {flier_us}"
    );
    let flier_ns = (flier_us * 1e3).round() as u64;
    Ok(Results {
        seed: run_cfg.seed,
        duration_ns: run_cfg.duration_ns,
        flier_us,
        outcomes: run(run_cfg, flier_ns, threads, progress)?,
    })
}
