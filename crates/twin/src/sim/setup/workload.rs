//! The workload placed at boot: the syscall loop, hogs, frame workers and a BSP job's ranks,
//! each checked against what the twin runs on one CPU; frame workers' sleeper timers on the
//! timer-housekeeping CPUs where `kernel::timer_migration` may queue them.

use super::super::{Cpu, Index32, NO_FRAME, Running, SLOT_TASK, TimerFn, TimerMigrationState};
use crate::error::{ConfigError, SimError};
use crate::kernel::context_tracking::ContextTracking;
use crate::kernel::hrtimer::ClockBase;
use crate::kernel::sched::SchedClass;
use crate::workloads::default_hog_cpus;
use crate::workloads::frames::{FrameGroup, FrameStats, FrameWorker};
use crate::workloads::syscall::{LoopCosts, SyscallLoop, syscall_cpu};
use ticklab_cmdline::{CpuSet, TickConfig};
use ticklab_schema::frames::FrameClock;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::{Barrier, TaskGroup};

/// The workload as placed at boot.
pub(super) struct Workload {
    pub(super) hog_cpus: Vec<u32>,
    pub(super) frame_groups: Vec<FrameGroup>,
    pub(super) workers: Vec<FrameWorker>,
    pub(super) syscall: Option<SyscallLoop>,
    pub(super) bsp: Option<BspPlaced>,
}

/// A BSP job's ranks, placed as busy tasks (`crate::workloads::bsp`).
pub(super) struct BspPlaced {
    pub(super) cpus: Vec<u32>,
    pub(super) work_ns: u64,
    pub(super) iterations: Option<u64>,
    pub(super) barrier: Barrier,
}

/// Places the syscall loop, hogs, frame workers and a BSP job's ranks (the twin models those
/// so far): each group in scenario order, then the busy tasks on their CPUs.
pub(super) fn place_workload(
    scenario: &Scenario,
    cfg: &TickConfig,
    housekeeping: &[bool],
    ct: &ContextTracking,
    cpus: &mut [Cpu],
) -> Result<Workload, SimError> {
    let m = &scenario.machine;
    let mut w = Workload {
        hog_cpus: Vec::new(),
        frame_groups: Vec::new(),
        workers: Vec::new(),
        syscall: None,
        bsp: None,
    };
    for g in &scenario.workload.groups {
        match g {
            TaskGroup::Syscall { cpu: pinned, calls } => {
                if w.syscall.is_some() {
                    return Err(SimError::Unsupported(
                        "more than one syscall loop (the twin runs one)".into(),
                    ));
                }
                let l = place_syscall(scenario, cfg, housekeeping, ct, *pinned, *calls, cpus)?;
                w.syscall = Some(l);
            }
            TaskGroup::Hogs {
                count,
                cpus: explicit,
            } => {
                let placed = match explicit {
                    Some(set) => set.iter().collect(),
                    None => default_hog_cpus(*count, &m.topology, housekeeping),
                };
                w.hog_cpus.extend(placed);
            }
            TaskGroup::Frames {
                name,
                frequency_hz,
                loop_units,
                cpus: on,
            } => {
                let group = place_frames(
                    scenario,
                    FramesSpec {
                        name,
                        frequency_hz: *frequency_hz,
                        loop_units: *loop_units,
                        on,
                    },
                    w.frame_groups.len(),
                    &mut w.workers,
                    cpus,
                )?;
                w.frame_groups.push(group);
            }
            TaskGroup::Bsp {
                cpus: on,
                work_ns,
                iterations,
                barrier,
                ..
            } => {
                if *barrier == Barrier::Futex {
                    return Err(SimError::Unsupported(
                        "bsp barrier=futex (the twin models the spinning barrier, barrier=spin)"
                            .into(),
                    ));
                }
                if w.bsp.is_some() {
                    return Err(SimError::Unsupported(
                        "more than one bsp job (the twin runs one)".into(),
                    ));
                }
                w.bsp = Some(BspPlaced {
                    cpus: on.iter().collect(),
                    work_ns: *work_ns,
                    iterations: *iterations,
                    barrier: *barrier,
                });
            }
            other => {
                return Err(SimError::Unsupported(format!(
                    "workload {} (the twin models idle, hogs, frames, syscall and bsp so far)",
                    other.label()
                )));
            }
        }
    }
    run_busy_tasks(&w, cpus)?;
    Ok(w)
}

/// Places the syscall loop (pinned, or on the CPU [`syscall_cpu`] picks), alone on its CPU.
fn place_syscall(
    scenario: &Scenario,
    cfg: &TickConfig,
    housekeeping: &[bool],
    ct: &ContextTracking,
    pinned: Option<u32>,
    calls: u64,
    cpus: &mut [Cpu],
) -> Result<SyscallLoop, SimError> {
    let m = &scenario.machine;
    let c = syscall_cpu(pinned, &m.topology, housekeeping, &cfg.isolated_domain)
        .ok_or_else(|| SimError::from(ConfigError::SyscallAllIsolated))?;
    let Some(cpu) = cpus.get_mut(c as usize) else {
        return Err(ConfigError::SyscallCpu {
            cpu: c,
            nr_cpus: m.topology.nr_cpus(),
        }
        .into());
    };
    if cpu.running != Running::Idle || cpu.frame != NO_FRAME {
        return Err(SimError::Unsupported(format!(
            "syscall loop on CPU {c} beside another task (the twin runs it alone)"
        )));
    }
    cpu.running = Running::Syscall;
    cpu.syscall_runnable = true;
    cpu.rq.enqueue(SchedClass::Fair);
    let nohz_full = cpu.nohz_full;
    let costs = LoopCosts {
        syscall_ns: m.costs.syscall_ns,
        transition: ct.transition(nohz_full),
        flush_cost_ns: ct.flush_ns(nohz_full),
        tick_nsec: scenario.kernel.tick_nsec(),
    };
    let l = SyscallLoop::new(c, pinned.is_some(), calls, costs, 0);
    cpu.slots[SLOT_TASK] = l.undisturbed_end();
    Ok(l)
}

/// A frame group as the scenario gives it.
struct FramesSpec<'a> {
    name: &'a str,
    frequency_hz: f64,
    loop_units: u64,
    on: &'a CpuSet,
}

/// Places a frame group (the `group`-th): one worker per CPU, each sleeping on an hrtimer
/// armed for frame 0, which starts when the measured window opens (a whole second after
/// boot with the default warm-up, i.e. on the jiffy grid).
fn place_frames(
    scenario: &Scenario,
    spec: FramesSpec<'_>,
    group: usize,
    workers: &mut Vec<FrameWorker>,
    cpus: &mut [Cpu],
) -> Result<FrameGroup, SimError> {
    let FramesSpec {
        name,
        frequency_hz,
        loop_units,
        on,
    } = spec;
    if !(frequency_hz.is_finite() && frequency_hz > 0.0) {
        return Err(ConfigError::FrameFrequency {
            group: name.to_owned(),
            frequency_hz,
        }
        .into());
    }
    let mut g = FrameGroup::new(
        name.to_owned(),
        frequency_hz,
        loop_units,
        scenario.machine.costs.work_unit_ns,
        scenario.run.warmup_ns,
        FrameClock::new(frequency_hz).frames_in(scenario.run.duration_ns),
    );
    for c in on.iter() {
        let cpu = &mut cpus[c as usize];
        if cpu.frame != NO_FRAME {
            return Err(ConfigError::TwoFrameWorkers {
                cpu: c,
                group: name.to_owned(),
            }
            .into());
        }
        let w = workers.len();
        let timer = cpu
            .hrt
            .init(ClockBase::Monotonic, TimerFn::FrameWake(Index32::new(w)));
        if g.n_frames > 0 {
            cpu.hrt.start(timer, g.start(0), 0);
        }
        cpu.frame = w as u32;
        g.workers.push(w);
        workers.push(FrameWorker {
            group,
            cpu: c,
            timer,
            remote_timers: Vec::new(),
            k: 0,
            start: g.start(0),
            rem: g.first_remainder(),
            running: 0,
            stats: FrameStats::default(),
            wake: Default::default(),
            histograms: None,
        });
    }
    Ok(g)
}

/// Puts the hogs and the BSP ranks on their CPUs as busy fair tasks (a spinning rank is a
/// busy user task to the scheduler and the tick, as a hog is), refusing a rank beside
/// another task and a hog beside the syscall loop.
fn run_busy_tasks(w: &Workload, cpus: &mut [Cpu]) -> Result<(), SimError> {
    let bsp_cpus: &[u32] = w.bsp.as_ref().map_or(&[], |b| &b.cpus);
    for &c in bsp_cpus {
        let cpu = &cpus[c as usize];
        if cpu.running != Running::Idle || cpu.frame != NO_FRAME || w.hog_cpus.contains(&c) {
            return Err(SimError::Unsupported(format!(
                "a bsp rank on CPU {c} beside another task (the twin runs one rank alone per CPU)"
            )));
        }
    }
    for &c in &w.hog_cpus {
        if cpus[c as usize].running == Running::Syscall {
            return Err(SimError::Unsupported(format!(
                "a hog on CPU {c} beside the syscall loop (the twin runs the loop alone)"
            )));
        }
        run_hog(&mut cpus[c as usize]);
    }
    for &c in bsp_cpus {
        run_hog(&mut cpus[c as usize]);
    }
    Ok(())
}

/// One more busy fair task running on `cpu`.
fn run_hog(cpu: &mut Cpu) {
    cpu.hogs += 1;
    cpu.rq.enqueue(SchedClass::Fair);
    cpu.running = Running::Hog;
}

/// Gives every frame worker whose CPU is not a timer-housekeeping CPU a sleeper timer on
/// each timer-housekeeping CPU, where `kernel::timer_migration` may queue its sleeps.
pub(super) fn remote_frame_timers(
    tm: &TimerMigrationState,
    workers: &mut [FrameWorker],
    cpus: &mut [Cpu],
) {
    for (w, worker) in workers.iter_mut().enumerate() {
        worker.remote_timers = tm.spare_timers(
            worker.cpu as usize,
            cpus,
            TimerFn::FrameWake(Index32::new(w)),
        );
    }
}
