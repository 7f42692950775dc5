//! One CPU per topology slot, laid out at boot: its governor, clock event device, hrtimer
//! base and timer wheel (sized once for every timer the run may queue on it, so that nothing
//! grows while the run goes on), and the tick armed on the jiffy grid plus its skew offset.

use super::super::{Cpu, NO_FRAME, NSLOTS, Running, TimerFn};
use crate::engine::NEVER;
use crate::engine::rng::{Stream, delivery_streams};
use crate::error::SimError;
use crate::hw::auto_demotion::ResidencyHistory;
use crate::hw::clockevents::ClockEventDevice;
use crate::kernel::cpuidle::{default_governor, governor_by_name};
use crate::kernel::hrtimer::{ClockBase, HrtimerCpuBase};
use crate::kernel::sched::{BackgroundRuns, RunQueue, has_remote_tick};
use crate::kernel::tick_sched::{TickSched, skew_offset};
use crate::kernel::timekeeping::initial_jiffies;
use crate::kernel::timer_wheel::TimerWheel;
use ticklab_cmdline::TickConfig;
use ticklab_schema::scenario::{Scenario, TimerKind};
use ticklab_schema::workload::TaskGroup;

/// Room for hrtimers per CPU besides the background sources: the tick and the workload's
/// timers. The slab grows by one per hrtimer background source ([`hrtimer_capacity`]).
const HRTIMER_CAPACITY: usize = 16;

/// hrtimers a CPU needs: the usual room plus one per hrtimer background source (at most
/// `ticklab_schema::validate::MAX_BACKGROUND_SOURCES`), so that no scenario fills the slab.
fn hrtimer_capacity(scenario: &Scenario) -> usize {
    HRTIMER_CAPACITY
        + background_timers_per_cpu(scenario, TimerKind::Hrtimer)
        + frame_workers(scenario)
}

/// Frame workers of the scenario: each may queue its sleeper on any timer-housekeeping CPU
/// (`remote_frame_timers`), so every CPU has room for one timer per worker.
fn frame_workers(scenario: &Scenario) -> usize {
    scenario
        .workload
        .groups
        .iter()
        .map(|g| match g {
            TaskGroup::Frames { cpus, .. } => cpus.len(),
            _ => 0,
        })
        .sum()
}

/// Timers of `kind` the background sources may need on one CPU: one per source, for a
/// source whose timer follows its task one per CPU (every instance may end up on one CPU),
/// for one whose tasks' sleeps migrate one per task (each may queue its sleep on this CPU).
fn background_timers_per_cpu(scenario: &Scenario, kind: TimerKind) -> usize {
    let nr = scenario.machine.topology.nr_cpus() as usize;
    scenario
        .background
        .iter()
        .filter(|b| b.kind == kind)
        .map(|b| match &b.cpus {
            _ if b.follows_task => nr,
            Some(on) if b.timer_migrates => on.len(),
            _ => 1,
        })
        .sum()
}

/// Wheel timers of the background sources on one CPU.
pub(super) fn wheel_background(scenario: &Scenario) -> usize {
    background_timers_per_cpu(scenario, TimerKind::Wheel)
}
/// Room for wheel timers per CPU (plus the remote ticks a housekeeping CPU runs, see
/// `arm_remote_ticks`).
const WHEEL_CAPACITY: usize = 16;

/// Wheel timers a CPU needs: the usual room plus its share of the remote ticks (4.17 on, one
/// per nohz_full CPU spread over the housekeeping CPUs).
pub(super) fn wheel_capacity(cfg: &TickConfig, version: (u32, u32), nr: u32) -> usize {
    let full = cfg.nohz_full.len();
    let hk = (0..nr)
        .filter(|&c| cfg.housekeeping.contains(c))
        .count()
        .max(1);
    if has_remote_tick(version) {
        WHEEL_CAPACITY + full.div_ceil(hk)
    } else {
        WHEEL_CAPACITY
    }
}

/// One CPU per topology slot: its governor, clock event device, timer wheel and the tick's
/// hrtimer armed on the jiffy grid plus its skew offset.
pub(super) fn lay_out_cpus(
    scenario: &Scenario,
    cfg: &TickConfig,
    nohz_idle: bool,
    housekeeping: &[bool],
    mut rngs: Vec<Stream>,
    wheel_room: usize,
) -> Result<Vec<Cpu>, SimError> {
    let m = &scenario.machine;
    let k = &scenario.kernel;
    let nr = m.topology.nr_cpus();
    let tick_nsec = k.tick_nsec();
    let driver_prefers = (m.cpuidle_driver == "haltpoll").then_some("haltpoll");
    let gov_name = cfg
        .governor
        .clone()
        .unwrap_or_else(|| default_governor(nohz_idle, driver_prefers).to_string());
    let deliveries = delivery_streams(scenario.run.seed, nr as usize);
    let mut cpus = Vec::with_capacity(nr as usize);
    for ((c, rng), delivery) in rngs.drain(..).enumerate().zip(deliveries) {
        let gov = governor_by_name(&gov_name, cfg.haltpoll).ok_or_else(|| {
            SimError::KernelParam(format!(
                "cpuidle.governor={gov_name}: expected menu, teo, ladder or haltpoll"
            ))
        })?;
        let mut hrt = HrtimerCpuBase::new(hrtimer_capacity(scenario));
        let tick_timer = hrt.init(ClockBase::Monotonic, TimerFn::Tick);
        let offset = if cfg.skew_tick {
            skew_offset(tick_nsec, nr, c as u32)
        } else {
            0
        };
        // The first tick after boot: the jiffy grid plus this CPU's phase.
        hrt.start(tick_timer, tick_nsec + offset, 0);
        cpus.push(Cpu {
            id: c as u32,
            slots: [NEVER; NSLOTS],
            dev: ClockEventDevice::new(m.clockevent.min_delta_ns, m.clockevent.max_delta_ns),
            hrt,
            ts: TickSched::new(tick_timer),
            wheel: TimerWheel::with_clk(k.hz, wheel_room, initial_jiffies(k.hz)),
            wheel_fns: Vec::with_capacity(wheel_room),
            expired: Vec::with_capacity(wheel_room),
            gov,
            idle: None,
            rq: RunQueue::default(),
            hogs: 0,
            bg_runnable: 0,
            running: Running::Idle,
            nohz_full: cfg.nohz_full.contains(c as u32),
            housekeeping: housekeeping[c],
            timer_softirq: false,
            softirq_raised: false,
            residencies: ResidencyHistory::new(),
            rng,
            delivery,
            free_at: 0,
            waking: false,
            socket: m.topology.socket_of(c as u32),
            xtime_seen: 0,
            frame: NO_FRAME,
            frame_runnable: false,
            bg_remaining: 0,
            bg_runs: BackgroundRuns::default(),
            syscall_runnable: false,
            last_sched_tick: 0,
            user_tasks: !cfg.isolated_domain.contains(c as u32),
            follow_hrtimers: Vec::new(),
            follow_wheel_timers: Vec::new(),
            ipi_waking: false,
            ipi_call: false,
        });
    }
    Ok(cpus)
}
