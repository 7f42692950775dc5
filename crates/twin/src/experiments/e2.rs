//! E2: frame-scheduler jitter on a 64-CPU server of 2012 (kernel 3.0-rt), with and without
//! `skew_tick=1` (docs/experiments.md E2).
//!
//! Three frame groups (960, 666 and 300 Hz; LOOP × FREQ ≈ 48 M units/s each) run one SCHED_FIFO
//! worker per isolated CPU (4–63); CPUs 0–3 do the housekeeping. The twin predicts the jitter
//! from its mechanisms only: wake-up path costs, the tick interrupting the compute, and the
//! contention on the shared locks and lines of the 3.0 era ([`crate::hw::lock`]). Nothing here is fitted to an E2 outcome (none is published).
//!
//! Jitter is counted from the moment the worker starts running its frame; the wake-up latency
//! (programmed start → running) is reported beside it (docs/experiments.md E2).
//!
//! Configurations ([`Config`]):
//! * (a) `nohz=on`, no skew, RT push/pull on: every ticking CPU's tick fires at the same
//!   instant on the jiffy grid. A 3.0 kernel has no full dynticks, so a worker's tick runs
//!   while it computes; before 4.17 the idle loop stops it on every idle entry (the worker
//!   sleeps between frames) and the wake-up restarts it: the nohz enter/exit path of every
//!   frame, with its shared lines.
//! * (b) `skew_tick=1 nohz=off`, push/pull off: every CPU ticks periodically on its own
//!   phase (`skew_offset`).
//! * (c) skew, nohz on, push/pull off; (d) no skew, nohz off, push/pull off.
//!
//! "Push/pull off" was a cpuset switch of that era's RT kernels: the isolated CPUs share no
//! cpupri or overload bookkeeping, so the twin switches [`Mechanism::Cpupri`] off for them
//! (the housekeeping CPUs run no RT task in the model, so nothing else uses it).
//!
//! The 3.0-era shared lines ([`Mechanism`], docs/model.md "E2 mechanisms") are all on; an
//! ablation ([`ablation`]) switches each off in turn.
//!
//! All command lines limit idle to C1 (`intel_idle.max_cstate=1`): an assumption (E) about a
//! real-time setup of the era, which kept deep C-state exits (C1E: 10 µs) out of the wake-up
//! path; docs/experiments.md does not say. Background: the default kernel sources; the per-CPU
//! user-space wakeups (`user_hrtimers`) are left out because the cpuset confines user tasks
//! other than the workers to CPUs 0–3, and the twin places per-CPU sources on every CPU.
//!
//! Assumed (docs/experiments.md: "CONFIG_HZ=1000 is assumed"): HZ=1000, high-resolution timers,
//! `CONFIG_NO_HZ` (dyntick-idle), `CONFIG_MAXSMP` with one leaf `rcu_node` for up to 64 CPUs
//! (the fan-out of that era before the leaf fan-out limit), the -rt tree's `skew_tick` patch.

use crate::sim::{NoTimeline, Observer, Sim, SimError};
use crate::sweep::parallel_map;
use ticklab_cmdline::CpuSet;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::server_2012_64;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

pub use ticklab_schema::experiment::e2::{
    Ablation, BUDGET_US, Config, ConfigSummary, CpuJitter, GROUPS, GroupSummary, MAXSMP_RCU_FANOUT,
    Mechanism, Mechanisms, Outcome, Results, WARMUP_NS, cmdline, config_name, summary,
};

/// The E2 scenario for one configuration ((a)/(b) from a `bool`: skew or not).
pub fn scenario(config: impl Into<Config>, run: Run) -> Scenario {
    let config = config.into();
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
        name: format!("e2 {}", config_name(config)),
        machine: server_2012_64(),
        kernel: Kernel {
            version: "3.0".into(),
            hz: 1000,
            nohz: NohzBuild::Idle,
            high_res: true,
            cmdline: config.cmdline().into(),
            rcu_fanout_leaf: Some(MAXSMP_RCU_FANOUT),
            skew_tick_backport: true,
            // 3.0: x86 ticket spinlocks (Spinlock::for_version).
            spinlock: None,
            cpu_dma_latency_us: None,
            preempt_rt: false,
        },
        workload: Workload { groups },
        background: default_background()
            .into_iter()
            .filter(|b| b.name != "user_hrtimers")
            .collect(),
        run,
    }
}

/// The mechanisms of a configuration with `ablated` switched off: all of them, without
/// cpupri when push/pull is off.
pub fn mechanisms(config: Config, ablated: Option<Mechanism>) -> Mechanisms {
    let mut m = Mechanisms::all();
    if !config.push_pull() {
        m = m.without(Mechanism::Cpupri);
    }
    match ablated {
        Some(x) => m.without(x),
        None => m,
    }
}

/// Runs one configuration with the flier threshold `flier_ns` (every mechanism on).
pub fn run_one(config: impl Into<Config>, run: Run, flier_ns: u64) -> Result<Outcome, SimError> {
    run_point(config.into(), None, run, flier_ns)
}

/// Runs one configuration with `ablated` switched off.
pub fn run_point(
    config: Config,
    ablated: Option<Mechanism>,
    run: Run,
    flier_ns: u64,
) -> Result<Outcome, SimError> {
    let t0 = std::time::Instant::now();
    let mut sim = sim(config, run, flier_ns)?;
    sim.set_mechanisms(mechanisms(config, ablated));
    sim.run(|_| {});
    let wall_s = t0.elapsed().as_secs_f64();
    Ok(Outcome {
        config,
        ablated,
        events: sim.events(),
        report: sim.report(),
        wall_s,
    })
}

/// The simulation of a configuration as the experiment runs it: frame fliers above
/// `flier_ns`, every mechanism of the configuration on, and no power integration (E2
/// reports frame tables, not watts).
pub fn sim(config: impl Into<Config>, run: Run, flier_ns: u64) -> Result<Sim, SimError> {
    sim_with(config, run, flier_ns, NoTimeline)
}

/// [`sim`] with an extra listener (a timeline export).
pub fn sim_with<O: Observer>(
    config: impl Into<Config>,
    run: Run,
    flier_ns: u64,
    observer: O,
) -> Result<Sim<O>, SimError> {
    let config = config.into();
    let mut sim = Sim::with_observer(&scenario(config, run), observer)?;
    sim.set_flier_threshold_ns(flier_ns);
    sim.set_mechanisms(mechanisms(config, None));
    sim.without_energy();
    Ok(sim)
}

/// Runs `configs` on up to `threads` threads; `progress(done)` after each.
pub fn run(
    configs: &[Config],
    run: Run,
    flier_ns: u64,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Vec<Outcome>, SimError> {
    parallel_map(
        configs,
        threads,
        |&c| run_point(c, None, run, flier_ns),
        &progress,
    )
    .into_iter()
    .collect()
}

/// Runs the four configurations ([`run`]) with fliers above `flier_us`: the whole experiment
/// as [`Results`]. `flier_us` must be finite and not negative.
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
        outcomes: run(&Config::ALL, run_cfg, flier_ns, threads, progress)?,
    })
}

/// The points of an ablation: each configuration in full, then with each mechanism off.
pub fn ablation_points() -> Vec<(Config, Option<Mechanism>)> {
    Config::ALL
        .iter()
        .flat_map(|&c| {
            std::iter::once((c, None)).chain(Mechanism::ALL.iter().map(move |&m| (c, Some(m))))
        })
        .collect()
}

/// Runs the ablation ([`ablation_points`]) on up to `threads` threads.
pub fn ablation(
    run_cfg: Run,
    flier_us: f64,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Ablation, SimError> {
    let flier_ns = (flier_us * 1e3).round() as u64;
    let points = parallel_map(
        &ablation_points(),
        threads,
        |&(c, m)| run_point(c, m, run_cfg, flier_ns),
        &progress,
    )
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    Ok(Ablation {
        seed: run_cfg.seed,
        duration_ns: run_cfg.duration_ns,
        flier_us,
        points,
    })
}
