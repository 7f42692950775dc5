//! The background sources armed at boot (hrtimer or timer-wheel, periodic or Poisson, on the
//! CPUs their placement names), and the remote scheduler tick of 4.17 on.

use super::super::{Cpu, Index32, Sleeper, SourceRt, TimerFn, TimerMigrationState};
use crate::engine::NEVER;
use crate::engine::rng::Stream;
use crate::error::{ConfigError, SimError};
use crate::kernel::hrtimer::ClockBase;
use crate::kernel::sched::has_remote_tick;
use crate::kernel::timekeeping::initial_jiffies;
use crate::kernel::timer_wheel::WheelTimerId;
use ticklab_cmdline::TickConfig;
use ticklab_schema::scenario::{BackgroundSource, Placement, Scenario, TimerKind};

/// Arms each background source on the CPUs its placement names (hrtimer or timer wheel),
/// drawing its first expiry from the CPU's stream. The tasks of `timer_migrates` sources are
/// pushed onto `sleepers`, each with its home timer (their remote ones come from
/// [`remote_sleeper_timers`]).
pub(super) fn arm_background(
    scenario: &Scenario,
    cfg: &TickConfig,
    housekeeping: &[bool],
    cpus: &mut [Cpu],
    global: &mut Stream,
    sleepers: &mut Vec<Sleeper>,
) -> Result<Vec<SourceRt>, SimError> {
    let nr = scenario.machine.topology.nr_cpus();
    let mut sources = Vec::with_capacity(scenario.background.len());
    for (s, src) in scenario.background.iter().enumerate() {
        let mean_ns = match (src.period_ns, src.rate_hz) {
            (Some(_), None) => 0.0,
            (None, Some(r)) if r > 0.0 => 1e9 / r,
            _ => {
                return Err(ConfigError::BackgroundRate {
                    name: src.name.clone(),
                }
                .into());
            }
        };
        let (on, period_ns) = source_cpus(src, cfg, housekeeping, nr, global);
        if src.relative
            && !(src.wakes_task && src.period_ns.is_some() && src.kind == TimerKind::Hrtimer)
        {
            return Err(ConfigError::BackgroundRelative {
                name: src.name.clone(),
            }
            .into());
        }
        if src.follows_task {
            if !src.wakes_task {
                return Err(ConfigError::BackgroundFollowsTask {
                    name: src.name.clone(),
                }
                .into());
            }
            add_follow_timers(s as u16, src.kind, on.len(), cpus);
        }
        for c in on {
            arm_first(
                scenario,
                s as u16,
                src,
                period_ns,
                mean_ns,
                &mut cpus[c as usize],
                sleepers,
            );
        }
        sources.push(SourceRt {
            name: src.name.clone(),
            kind: src.kind,
            period_ns,
            mean_ns,
            deferrable: src.deferrable,
            slack_ns: src.slack_ns,
            wakes_task: src.wakes_task,
            follows_task: src.follows_task,
            relative: src.relative,
            hard: src.hard,
            task_ns: src
                .task_ns
                .unwrap_or(scenario.machine.costs.background_task_ns),
        });
    }
    Ok(sources)
}

/// The CPUs source `src` is armed on, and its period (the watchdog's comes from
/// `watchdog_thresh=`). A `Housekeeping` source draws its one CPU from the global stream.
fn source_cpus(
    src: &BackgroundSource,
    cfg: &TickConfig,
    housekeeping: &[bool],
    nr: u32,
    global: &mut Stream,
) -> (Vec<u32>, Option<u64>) {
    let mut period_ns = src.period_ns;
    let on: Vec<u32> = match src.placement {
        // A source that wakes a user task lives where user tasks run: not on CPUs that
        // `isolcpus=` takes out of the scheduler domains (and the default affinity).
        Placement::PerCpu if src.wakes_task => (0..nr)
            .filter(|&c| !cfg.isolated_domain.contains(c))
            .collect(),
        Placement::PerCpu => (0..nr).collect(),
        Placement::WatchdogCpus => {
            if cfg.watchdog_thresh_s == 0 {
                Vec::new()
            } else {
                // The sample period is 2/5 of the threshold.
                period_ns = Some(cfg.watchdog_thresh_s as u64 * 2_000_000_000 / 5);
                (0..nr).filter(|&c| housekeeping[c as usize]).collect()
            }
        }
        Placement::Housekeeping => {
            let hk: Vec<u32> = (0..nr).filter(|&c| housekeeping[c as usize]).collect();
            vec![hk[global.below(hk.len() as u64) as usize]]
        }
    };
    let on: Vec<u32> = match &src.cpus {
        Some(only) if src.placement != Placement::Housekeeping => {
            on.into_iter().filter(|&c| only.contains(c)).collect()
        }
        _ => on,
    };
    (on, period_ns)
}

/// A source whose timer follows its task: every CPU a user task may run on gets one idle
/// timer per instance, so an instance can move anywhere without allocating while the run
/// goes on.
fn add_follow_timers(s: u16, kind: TimerKind, instances: usize, cpus: &mut [Cpu]) {
    for cpu in cpus.iter_mut() {
        if !cpu.user_tasks {
            continue;
        }
        for _ in 0..instances {
            match kind {
                TimerKind::Hrtimer => {
                    let id = cpu.hrt.init(ClockBase::Monotonic, TimerFn::Background(s));
                    cpu.follow_hrtimers.push((s, id));
                }
                TimerKind::Wheel => {
                    let id = WheelTimerId(cpu.wheel_fns.len() as u32);
                    cpu.wheel_fns.push(s);
                    cpu.follow_wheel_timers.push((s, id));
                }
            }
        }
    }
}

/// Gives every migrating sleeper whose home is not a timer-housekeeping CPU a timer on each
/// timer-housekeeping CPU, where `kernel::timer_migration` may queue its sleeps (the
/// counterpart of the frame workers' `remote_frame_timers`).
pub(super) fn remote_sleeper_timers(
    tm: &TimerMigrationState,
    sleepers: &mut [Sleeper],
    cpus: &mut [Cpu],
) {
    for (i, sl) in sleepers.iter_mut().enumerate() {
        let spare = tm.spare_timers(sl.home as usize, cpus, TimerFn::Sleeper(Index32::new(i)));
        for (t, s) in sl.timers.iter_mut().zip(spare) {
            *t = t.or(s);
        }
    }
}

/// Arms source `s` on `cpu` for its first expiry: a uniform phase within the period, or an
/// exponential draw for a Poisson source, from the CPU's stream.
fn arm_first(
    scenario: &Scenario,
    s: u16,
    src: &BackgroundSource,
    period_ns: Option<u64>,
    mean_ns: f64,
    cpu: &mut Cpu,
    sleepers: &mut Vec<Sleeper>,
) {
    let k = &scenario.kernel;
    let first = match period_ns {
        Some(p) => 1 + cpu.rng.below(p),
        None => cpu.rng.exp_ns(mean_ns),
    };
    match src.kind {
        TimerKind::Hrtimer => {
            let id = if src.follows_task {
                cpu.free_follow_hrtimer(s)
                    .expect("one spare timer per instance on every CPU")
            } else if src.timer_migrates {
                let id = cpu.hrt.init(
                    ClockBase::Monotonic,
                    TimerFn::Sleeper(Index32::new(sleepers.len())),
                );
                let mut timers = vec![None; scenario.machine.topology.nr_cpus() as usize];
                timers[cpu.id as usize] = Some(id);
                sleepers.push(Sleeper {
                    source: s,
                    home: cpu.id,
                    pending: false,
                    next: NEVER,
                    timers,
                });
                id
            } else {
                cpu.hrt.init(ClockBase::Monotonic, TimerFn::Background(s))
            };
            cpu.hrt.start(id, first, src.slack_ns);
        }
        TimerKind::Wheel => {
            let id = if src.follows_task {
                cpu.free_follow_wheel_timer(s)
                    .expect("one spare timer per instance on every CPU")
            } else {
                let id = WheelTimerId(cpu.wheel_fns.len() as u32);
                cpu.wheel_fns.push(s);
                id
            };
            let j = initial_jiffies(k.hz) + first.div_ceil(k.tick_nsec()).max(1);
            cpu.wheel.add(id, j, src.deferrable);
        }
    }
}

/// The remote scheduler tick (4.17 on, docs/kernel-behaviour.md §4.5): for every nohz_full
/// CPU a delayed work item on an unbound workqueue runs once a second (HZ jiffies) on a
/// housekeeping CPU. Modelled as one wheel timer per nohz_full CPU, on the housekeeping CPUs in
/// turn, all first due one second after boot (they are queued when the CPUs come up); each
/// expiry costs one wheel callback (`Costs::wheel_timer_ns`), which stands for the work item
/// and the remote tick it runs. Returns the source, or nothing before 4.17 or without nohz_full
/// CPUs.
pub(super) fn arm_remote_ticks(
    scenario: &Scenario,
    cfg: &TickConfig,
    version: (u32, u32),
    cpus: &mut [Cpu],
) -> Option<SourceRt> {
    if !has_remote_tick(version) || cfg.nohz_full.is_empty() {
        return None;
    }
    let k = &scenario.kernel;
    let s = scenario.background.len() as u16;
    let hk: Vec<usize> = (0..cpus.len()).filter(|&c| cpus[c].housekeeping).collect();
    if hk.is_empty() {
        // The kernel always keeps one housekeeping CPU; nothing to run the work on otherwise.
        return None;
    }
    let period_ns = k.hz as u64 * k.tick_nsec();
    for i in 0..cfg.nohz_full.len() {
        let cpu = &mut cpus[hk[i % hk.len()]];
        let id = WheelTimerId(cpu.wheel_fns.len() as u32);
        cpu.wheel_fns.push(s);
        cpu.wheel
            .add(id, initial_jiffies(k.hz) + k.hz as u64, false);
    }
    Some(SourceRt {
        name: "sched_tick_remote".into(),
        kind: TimerKind::Wheel,
        period_ns: Some(period_ns),
        mean_ns: 0.0,
        deferrable: false,
        slack_ns: 0,
        wakes_task: false,
        follows_task: false,
        relative: false,
        hard: false,
        task_ns: 0,
    })
}
