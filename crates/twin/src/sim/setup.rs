//! Building a [`Sim`] from a [`Scenario`]: resolve the command line, lay out CPUs, arm the
//! ticks and background sources, place the workload.

use super::observe::{Event, NoTimeline, Observer};
use super::stats::WindowStats;
use super::{
    Cpu, NO_FRAME, NSLOTS, Running, SLOT_TASK, Sim, SourceRt, TimerFn, TimerMigrationState,
};
use crate::engine::rng::{Stream, delivery_streams, streams};
use crate::engine::{CPU_BITS, EventQueue, MAX_EVENT_TIME, NEVER, TournamentTree};
use crate::hw::clockevents::ClockEventDevice;
use crate::hw::energy::EnergyMeter;
use crate::hw::lock::{ContendedLock, SeqLock, TransferCost};
use crate::hw::spinlock::Spinlock;
use crate::kernel::context_tracking::ContextTracking;
use crate::kernel::cpuidle::{IdleStateParams, default_governor, governor_by_name};
use crate::kernel::cpupri::CpuPri;
use crate::kernel::hrtimer::{ClockBase, HrtimerCpuBase};
use crate::kernel::idle::NoDriverTick;
use crate::kernel::loadavg::LoadAvg;
use crate::kernel::nohz_balance::NohzBalance;
use crate::kernel::rcu::RcuState;
use crate::kernel::sched::RunQueue;
use crate::kernel::sched::SchedClass;
use crate::kernel::sched::{busy_tick_max_deferment, has_remote_tick};
use crate::kernel::tick::{NohzMode, TickSched, skew_offset};
use crate::kernel::timekeeping::{Timekeeping, initial_jiffies};
use crate::kernel::timer_wheel::{TimerWheel, WheelTimerId};
use crate::workloads::bsp::BspJob;
use crate::workloads::default_hog_cpus;
use crate::workloads::frames::{DEFAULT_FLIER_NS, FrameGroup, FrameStats, FrameWorker};
use crate::workloads::syscall::{LoopCosts, SyscallLoop, syscall_cpu};
use ticklab_cmdline::{CmdlineError, NohzBuild, ResolvedKernel, TickConfig};
use ticklab_schema::experiment::e2::{Mechanism, Mechanisms};
use ticklab_schema::frames::FrameClock;
use ticklab_schema::report::KernelMessage;
use ticklab_schema::scenario::{KernelError, Placement, Scenario, TimerKind};
use ticklab_schema::workload::{Barrier, TaskGroup};

/// Why a scenario cannot be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The kernel command line did not parse.
    #[error("{0}")]
    Cmdline(CmdlineError),
    /// The scenario is inconsistent (names what and what was expected).
    #[error("scenario: {0}")]
    Config(String),
    /// The twin does not model this yet (says what).
    #[error("not modelled by the twin yet: {0}")]
    Unsupported(String),
    /// A kernel parameter that parsed but whose value the twin refuses (names the
    /// parameter): an error of the command line, not of the rest of the scenario.
    #[error("kernel command line: {0}")]
    KernelParam(String),
    /// The run is above the compute limit and was not confirmed
    /// ([`RunOptions::check_compute`](crate::RunOptions::check_compute)).
    #[error("{0}")]
    ComputeLimit(ticklab_schema::validate::ValidationError),
    /// The guest ping-pong model refused the scenario (says what it does not model).
    #[error("{0}")]
    GuestModel(String),
}

impl From<CmdlineError> for SimError {
    fn from(e: CmdlineError) -> Self {
        SimError::Cmdline(e)
    }
}

impl From<KernelError> for SimError {
    fn from(e: KernelError) -> Self {
        match e {
            KernelError::Version(v) => SimError::Config(v),
            KernelError::Cmdline(c) => SimError::Cmdline(c),
        }
    }
}

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

/// The timer-migration state of a boot: on while dyntick idle is active (`nohz=off` or a
/// periodic build never enables `timers_migration_enabled`).
fn timer_migration_state(
    cfg: &TickConfig,
    version: (u32, u32),
    nohz_idle: bool,
    nr: u32,
) -> TimerMigrationState {
    TimerMigrationState {
        enabled: nohz_idle,
        version,
        timer_housekeeping: (0..nr)
            .map(|c| cfg.timer_housekeeping.contains(c))
            .collect(),
        in_domains: (0..nr).map(|c| !cfg.isolated_domain.contains(c)).collect(),
    }
}

/// Gives every frame worker whose CPU is not a timer-housekeeping CPU a sleeper timer on
/// each timer-housekeeping CPU, where `kernel::timer_migration` may queue its sleeps.
fn remote_frame_timers(tm: &TimerMigrationState, workers: &mut [FrameWorker], cpus: &mut [Cpu]) {
    if !tm.enabled {
        return;
    }
    for (w, worker) in workers.iter_mut().enumerate() {
        if tm.timer_housekeeping[worker.cpu as usize] {
            continue;
        }
        worker.remote_timers = (0..cpus.len())
            .map(|h| {
                (h != worker.cpu as usize && tm.timer_housekeeping[h]).then(|| {
                    cpus[h]
                        .hrt
                        .init(ClockBase::Monotonic, TimerFn::FrameWake(w as u32))
                })
            })
            .collect();
    }
}

/// Timers of `kind` the background sources may need on one CPU: one per source, or for a
/// source whose timer follows its task one per CPU (every instance may end up on one CPU).
fn background_timers_per_cpu(scenario: &Scenario, kind: TimerKind) -> usize {
    let nr = scenario.machine.topology.nr_cpus() as usize;
    scenario
        .background
        .iter()
        .filter(|b| b.kind == kind)
        .map(|b| if b.follows_task { nr } else { 1 })
        .sum()
}

/// Wheel timers of the background sources on one CPU.
fn wheel_background(scenario: &Scenario) -> usize {
    background_timers_per_cpu(scenario, TimerKind::Wheel)
}
/// Room for wheel timers per CPU (plus the remote ticks a housekeeping CPU runs, see
/// [`arm_remote_ticks`]).
const WHEEL_CAPACITY: usize = 16;

/// Wheel timers a CPU needs: the usual room plus its share of the remote ticks (4.17 on, one
/// per nohz_full CPU spread over the housekeeping CPUs).
fn wheel_capacity(cfg: &TickConfig, version: (u32, u32), nr: u32) -> usize {
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

impl Sim {
    /// Builds the machine at boot for `scenario`, with no listener beyond the statistics.
    pub fn new(scenario: &Scenario) -> Result<Sim, SimError> {
        Sim::with_observer(scenario, NoTimeline)
    }
}

impl<O: Observer> Sim<O> {
    /// Builds the machine at boot for `scenario`, reporting the loop's events to `observer`.
    ///
    /// The steps, in the order that keeps the seeded streams' draws stable: check the size,
    /// resolve the kernel, lay out the CPUs with their ticks, arm the background sources,
    /// place the workload, then boot (program the devices, enter the idle loop).
    pub fn with_observer(scenario: &Scenario, observer: O) -> Result<Sim<O>, SimError> {
        let m = &scenario.machine;
        let k = &scenario.kernel;
        // The one validation layer (ticklab_schema::validate): nothing below meets a value
        // out of range, whoever built the scenario.
        scenario
            .validate()
            .map_err(|e| SimError::Config(e.to_string()))?;
        let nr = check_size(scenario)?;
        let Kernel {
            cfg,
            version,
            messages,
        } = resolve_kernel(scenario, nr)?;
        let tick_nsec = k.tick_nsec();
        let states = idle_states(scenario, &cfg);
        let nohz_idle = cfg.nohz_idle && k.nohz != NohzBuild::Periodic;
        let housekeeping: Vec<bool> = (0..nr).map(|c| cfg.housekeeping.contains(c)).collect();
        let any_nohz_full = !cfg.nohz_full.is_empty();
        let (rngs, mut global) = streams(scenario.run.seed, nr as usize);
        let wheel_room = wheel_capacity(&cfg, version, nr) + wheel_background(scenario);
        let mut cpus = lay_out_cpus(scenario, &cfg, nohz_idle, &housekeeping, rngs, wheel_room)?;
        let tk = Timekeeping::new(
            k.hz,
            tick_nsec,
            cfg.timekeeping_cpu,
            m.clocksource.max_idle_ns,
        );
        let mut sources = arm_background(scenario, &cfg, &housekeeping, &mut cpus, &mut global)?;
        if has_remote_tick(version) {
            sources.extend(arm_remote_ticks(scenario, &cfg, &mut cpus));
        }
        let ct = ContextTracking::new(&m.costs, version, any_nohz_full);
        let Workload {
            hog_cpus,
            frame_groups,
            mut workers,
            syscall,
            bsp,
        } = place_workload(scenario, &cfg, &housekeeping, &ct, &mut cpus)?;
        let timer_migration = timer_migration_state(&cfg, version, nohz_idle, nr);
        remote_frame_timers(&timer_migration, &mut workers, &mut cpus);
        let warmup = scenario.run.warmup_ns;

        let fanout = k.rcu_leaf_fanout();
        let leaves = nr.div_ceil(fanout) as usize;
        let nr_states = states.len();
        let nr_sources = sources.len();
        let spin = k.spinlock.unwrap_or(Spinlock::for_version(version));
        let mut sim = Sim {
            scenario_name: scenario.name.clone(),
            machine_name: m.name.clone(),
            cmdline: k.cmdline.clone(),
            seed: scenario.run.seed,
            hz: k.hz,
            tick_nsec,
            costs: m.costs.clone(),
            states,
            auto_demotion: m.power.auto_demotion.clone(),
            power_limit_w: m.power.power_limit_w,
            nohz: NohzMode::new(nohz_idle, any_nohz_full, cfg.aggressive)
                .governor_decides_tick(version >= (4, 17)),
            idle_mode: cfg.idle,
            cpuidle_off: cfg.cpuidle_off || m.cpuidle_driver == "none",
            latency_req_ns: k
                .cpu_dma_latency_us
                .map_or(u64::MAX, |us| u64::from(us) * 1_000),
            cpu_dma_latency_us: k.cpu_dma_latency_us,
            no_driver_tick: NoDriverTick::for_kernel(version, k.sublevel()),
            now: 0,
            window_start: warmup,
            end: warmup + scenario.run.duration_ns,
            queue: TournamentTree::new(nr as usize),
            cpus,
            tk,
            // No meter where the machine has no power model: "not modelled", not 0 W.
            energy: m.power.is_modelled().then(|| EnergyMeter::new(m)),
            sources,
            messages,
            hang_reported: false,
            events: 0,
            hog_cpus,
            window_open: false,
            xtime: SeqLock::with_spinlock(spin, nr as usize),
            rcu_leaves: vec![ContendedLock::with_spinlock(spin, nr as usize); leaves],
            rcu_fanout: fanout,
            xtime_lock_era: version < (3, 8),
            transfer: TransferCost::new(
                m.costs.cacheline_local_ns,
                m.costs.cacheline_remote_ns,
                m.topology.sockets,
            ),
            frame_groups,
            workers,
            flier_ns: DEFAULT_FLIER_NS,
            mech: default_mechanisms(version),
            rcu: RcuState::new(nr as usize),
            cpupri: CpuPri::new(nr as usize, spin),
            nohz_balance: NohzBalance::new(nr as usize),
            loadavg: LoadAvg::new(nr as usize, k.hz, initial_jiffies(k.hz)),
            stats: WindowStats::new(nr as usize, nr_states, nr_sources, leaves, warmup),
            observer,
            ct,
            timer_migration,
            busy_tick_max_deferment: busy_tick_max_deferment(version, k.hz, tick_nsec),
            syscall,
            noise: None,
            is_guest: m.kvm_host.is_some() || m.cpuidle_driver == "haltpoll",
        };
        sim.boot();
        if let Some(b) = bsp {
            // A BSP job is read through the noise listener: its ranks' detours move the
            // barrier. Every busy CPU is measured, as with `set_noise`.
            let measured: Vec<(bool, Running)> = sim
                .cpus
                .iter()
                .map(|c| (c.hogs > 0 || c.syscall_runnable, c.running))
                .collect();
            let mut n = sim.noise_stats(measured.into_iter());
            n.bsp = Some(BspJob::new(
                &b.cpus,
                nr as usize,
                b.work_ns,
                b.iterations,
                b.barrier,
                n.nr_parts(),
            ));
            if sim.window_open {
                // No warm-up: the window opened at boot, before this listener existed.
                n.reset(sim.window_start);
            }
            sim.noise = Some(Box::new(n));
        }
        Ok(sim)
    }

    /// Boot: program every device for its first timer, then idle CPUs enter the idle loop; the
    /// window opens at once without warm-up.
    fn boot(&mut self) {
        for c in 0..self.cpus.len() {
            let next = self.cpus[c].hrt.program_first();
            let fire = self.cpus[c].dev.program(next, 0, true).unwrap_or(NEVER);
            let jitter = self.costs.timer_delivery_jitter_ns;
            self.cpus[c].arm_device(fire, jitter);
            if self.cpus[c].running == Running::Idle {
                self.enter_idle(c, 0);
            } else {
                // Every CPU starts in the idle task; a placed task runs from boot.
                let to = self.cpus[c].running;
                self.emit(0, Event::TaskSwitched { cpu: c as u32, to });
            }
            let t = self.cpus[c].next_slot();
            self.queue.set(c, t);
        }
        if self.window_start == 0 {
            self.open_window(0);
        }
    }
}

/// The shared-line mechanisms a kernel of `version` has (docs/model.md "E2 mechanisms"):
/// all of them before 3.8 (one `xtime_lock`, the 3.0 cpupri locks, nohz masks and pick slots);
/// from 3.8 only those whose shape survived: the lockless jiffies check before the lock, RCU
/// grace periods on the leaf lock, the timekeeping seqcount read in every tick.
fn default_mechanisms(version: (u32, u32)) -> Mechanisms {
    if version < (3, 8) {
        Mechanisms::all()
    } else {
        Mechanisms::NONE
            .with(Mechanism::JiffiesRace)
            .with(Mechanism::RcuGracePeriod)
            .with(Mechanism::SeqlockRead)
    }
}

/// The machine's size and the run's length fit the engine: returns the number of CPUs.
fn check_size(scenario: &Scenario) -> Result<u32, SimError> {
    let nr = scenario.machine.topology.nr_cpus();
    if nr == 0 || nr > 1 << CPU_BITS {
        return Err(SimError::Config(format!(
            "machine has {nr} CPUs: expected 1..={}",
            1u32 << CPU_BITS
        )));
    }
    // The event queue packs times below MAX_EVENT_TIME (about 52 days) with CPU numbers;
    // the furthest event is a little past the end of the run.
    let span = scenario
        .run
        .warmup_ns
        .checked_add(scenario.run.duration_ns)
        .filter(|end| *end < MAX_EVENT_TIME / 2);
    if span.is_none() {
        return Err(SimError::Config(format!(
            "warm-up {} ns + duration {} ns: expected at most {} s in all",
            scenario.run.warmup_ns,
            scenario.run.duration_ns,
            MAX_EVENT_TIME / 2 / 1_000_000_000
        )));
    }
    Ok(nr)
}

/// The kernel as resolved at boot.
struct Kernel {
    /// The tick configuration the command line and build give.
    cfg: TickConfig,
    /// `(major, minor)`.
    version: (u32, u32),
    /// Boot messages.
    messages: Vec<KernelMessage>,
}

/// Parses the command line and resolves it against the kernel build: the tick
/// configuration, the kernel version and the boot messages.
fn resolve_kernel(scenario: &Scenario, nr: u32) -> Result<Kernel, SimError> {
    let k = &scenario.kernel;
    let ResolvedKernel {
        cmdline: cmd,
        config: cfg,
        messages: boot_msgs,
    } = k.resolve(nr)?;
    let version = k.build()?.version;
    let mut messages: Vec<KernelMessage> = boot_msgs
        .into_iter()
        .map(|m| KernelMessage {
            at_ns: 0,
            origin: m.origin,
            text: m.text,
        })
        .collect();
    if !cmd.unknown.is_empty() {
        // Unknown parameters are kept and listed, never fatal (they may matter to a kernel
        // the twin does not model).
        messages.push(KernelMessage::ticklab(
            0,
            format!(
                "parameters kept but not modelled: {}",
                cmd.unknown.join(" ")
            ),
        ));
        for (raw, known) in cmd.near_misses() {
            messages.push(KernelMessage::ticklab(
                0,
                format!("unknown parameter `{raw}`: did you mean `{known}`?"),
            ));
        }
    }
    if !cfg.highres && k.nohz != NohzBuild::Periodic {
        messages.push(KernelMessage::ticklab(
            0,
            "highres=off is modelled with high-resolution hrtimer expiry",
        ));
    }
    Ok(Kernel {
        cfg,
        version,
        messages,
    })
}

/// The machine's idle states as cpuidle sees them (`intel_idle.max_cstate` disables deeper ones).
fn idle_states(scenario: &Scenario, cfg: &TickConfig) -> Vec<IdleStateParams> {
    scenario
        .machine
        .idle_states
        .iter()
        .enumerate()
        .map(|(i, s)| IdleStateParams {
            name: s.name.clone().into(),
            exit_latency_ns: s.exit_latency_ns,
            target_residency_ns: s.target_residency_ns,
            polling: s.polling,
            disabled: cfg
                .intel_idle_max_cstate
                .is_some_and(|max| i > max as usize),
        })
        .collect()
}

/// One CPU per topology slot: its governor, clock event device, timer wheel and the tick's
/// hrtimer armed on the jiffy grid plus its skew offset.
fn lay_out_cpus(
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
            residencies: [0; 16],
            residency_idx: 0,
            rng,
            delivery,
            free_at: 0,
            waking: false,
            socket: m.topology.socket_of(c as u32),
            xtime_seen: 0,
            frame: NO_FRAME,
            frame_runnable: false,
            bg_remaining: 0,
            syscall_runnable: false,
            last_sched_tick: 0,
            user_tasks: !cfg.isolated_domain.contains(c as u32),
            follow_hrtimers: Vec::new(),
            follow_wheel_timers: Vec::new(),
            ipi_waking: false,
        });
    }
    Ok(cpus)
}

/// Arms each background source on the CPUs its placement names (hrtimer or timer wheel),
/// drawing its first expiry from the CPU's stream.
fn arm_background(
    scenario: &Scenario,
    cfg: &TickConfig,
    housekeeping: &[bool],
    cpus: &mut [Cpu],
    global: &mut Stream,
) -> Result<Vec<SourceRt>, SimError> {
    let k = &scenario.kernel;
    let nr = scenario.machine.topology.nr_cpus();
    let tick_nsec = k.tick_nsec();
    let mut sources = Vec::with_capacity(scenario.background.len());
    for (s, src) in scenario.background.iter().enumerate() {
        let mean_ns = match (src.period_ns, src.rate_hz) {
            (Some(_), None) => 0.0,
            (None, Some(r)) if r > 0.0 => 1e9 / r,
            _ => {
                return Err(SimError::Config(format!(
                    "background source {:?}: expected exactly one of period_ns or a positive rate_hz",
                    src.name
                )));
            }
        };
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
        if src.follows_task {
            if !src.wakes_task {
                return Err(SimError::Config(format!(
                    "background source {:?}: follows_task needs wakes_task (the timer follows the task it wakes)",
                    src.name
                )));
            }
            // Every CPU a user task may run on gets one idle timer per instance, so an
            // instance can move anywhere without allocating while the run goes on.
            let instances = on.len();
            for cpu in cpus.iter_mut() {
                if !cpu.user_tasks {
                    continue;
                }
                for _ in 0..instances {
                    match src.kind {
                        TimerKind::Hrtimer => {
                            let id = cpu
                                .hrt
                                .init(ClockBase::Monotonic, TimerFn::Background(s as u16));
                            cpu.follow_hrtimers.push((s as u16, id));
                        }
                        TimerKind::Wheel => {
                            let id = WheelTimerId(cpu.wheel_fns.len() as u32);
                            cpu.wheel_fns.push(s as u16);
                            cpu.follow_wheel_timers.push((s as u16, id));
                        }
                    }
                }
            }
        }
        for c in on {
            let cpu = &mut cpus[c as usize];
            let first = match period_ns {
                Some(p) => 1 + cpu.rng.below(p),
                None => cpu.rng.exp_ns(mean_ns),
            };
            match src.kind {
                TimerKind::Hrtimer => {
                    let id = if src.follows_task {
                        cpu.free_follow_hrtimer(s as u16)
                            .expect("one spare timer per instance on every CPU")
                    } else {
                        cpu.hrt
                            .init(ClockBase::Monotonic, TimerFn::Background(s as u16))
                    };
                    cpu.hrt.start(id, first, src.slack_ns);
                }
                TimerKind::Wheel => {
                    let id = if src.follows_task {
                        cpu.free_follow_wheel_timer(s as u16)
                            .expect("one spare timer per instance on every CPU")
                    } else {
                        let id = WheelTimerId(cpu.wheel_fns.len() as u32);
                        cpu.wheel_fns.push(s as u16);
                        id
                    };
                    let j = initial_jiffies(k.hz) + first.div_ceil(tick_nsec).max(1);
                    cpu.wheel.add(id, j, src.deferrable);
                }
            }
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
        });
    }
    Ok(sources)
}

/// The remote scheduler tick (4.17 on, docs/kernel-behaviour.md §4.5): for every nohz_full
/// CPU a delayed work item on an unbound workqueue runs once a second (HZ jiffies) on a
/// housekeeping CPU. Modelled as one wheel timer per nohz_full CPU, on the housekeeping CPUs in
/// turn, all first due one second after boot (they are queued when the CPUs come up); each
/// expiry costs one wheel callback (`Costs::wheel_timer_ns`), which stands for the work item
/// and the remote tick it runs. Returns the source, or nothing without nohz_full CPUs.
fn arm_remote_ticks(scenario: &Scenario, cfg: &TickConfig, cpus: &mut [Cpu]) -> Option<SourceRt> {
    if cfg.nohz_full.is_empty() {
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
    })
}

/// The workload as placed at boot.
struct Workload {
    hog_cpus: Vec<u32>,
    frame_groups: Vec<FrameGroup>,
    workers: Vec<FrameWorker>,
    syscall: Option<SyscallLoop>,
    bsp: Option<BspPlaced>,
}

/// A BSP job's ranks, placed as busy tasks (`crate::workloads::bsp`).
struct BspPlaced {
    cpus: Vec<u32>,
    work_ns: u64,
    iterations: Option<u64>,
    barrier: Barrier,
}

/// Places hogs, frame workers and the syscall loop (the twin models those so far).
fn place_workload(
    scenario: &Scenario,
    cfg: &TickConfig,
    housekeeping: &[bool],
    ct: &ContextTracking,
    cpus: &mut [Cpu],
) -> Result<Workload, SimError> {
    let m = &scenario.machine;
    let warmup = scenario.run.warmup_ns;
    let mut hog_cpus = Vec::new();
    let mut frame_groups: Vec<FrameGroup> = Vec::new();
    let mut workers: Vec<FrameWorker> = Vec::new();
    let mut syscall: Option<SyscallLoop> = None;
    let mut bsp: Option<BspPlaced> = None;
    let mut bsp_cpus: Vec<u32> = Vec::new();
    for g in &scenario.workload.groups {
        match g {
            TaskGroup::Syscall { cpu: pinned, calls } => {
                if syscall.is_some() {
                    return Err(SimError::Unsupported(
                        "more than one syscall loop (the twin runs one)".into(),
                    ));
                }
                let c = syscall_cpu(*pinned, &m.topology, housekeeping, &cfg.isolated_domain)
                    .ok_or_else(|| {
                        SimError::Config(
                            "syscall loop: every CPU is in isolcpus=, none to place it on".into(),
                        )
                    })?;
                let Some(cpu) = cpus.get_mut(c as usize) else {
                    return Err(SimError::Config(format!(
                        "syscall loop pinned to CPU {c}: expected a CPU below {}",
                        m.topology.nr_cpus()
                    )));
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
                let l = SyscallLoop::new(c, pinned.is_some(), *calls, costs, 0);
                cpu.slots[SLOT_TASK] = l.undisturbed_end();
                syscall = Some(l);
            }
            TaskGroup::Hogs {
                count,
                cpus: explicit,
            } => {
                let placed = match explicit {
                    Some(set) => set.iter().collect(),
                    None => default_hog_cpus(*count, &m.topology, housekeeping),
                };
                hog_cpus.extend(placed);
            }
            TaskGroup::Frames {
                name,
                frequency_hz,
                loop_units,
                cpus: on,
            } => {
                if !(frequency_hz.is_finite() && *frequency_hz > 0.0) {
                    return Err(SimError::Config(format!(
                        "frame group {name}: frequency {frequency_hz} Hz, expected > 0"
                    )));
                }
                // Frame 0 starts when the measured window opens (a whole second after
                // boot with the default warm-up, i.e. on the jiffy grid).
                let mut group = FrameGroup::new(
                    name.clone(),
                    *frequency_hz,
                    *loop_units,
                    m.costs.work_unit_ns,
                    warmup,
                    FrameClock::new(*frequency_hz).frames_in(scenario.run.duration_ns),
                );
                for c in on.iter() {
                    let cpu = &mut cpus[c as usize];
                    if cpu.frame != NO_FRAME {
                        return Err(SimError::Config(format!(
                            "CPU {c} has two frame workers (group {name}): one per CPU"
                        )));
                    }
                    let w = workers.len();
                    let timer = cpu
                        .hrt
                        .init(ClockBase::Monotonic, TimerFn::FrameWake(w as u32));
                    if group.n_frames > 0 {
                        cpu.hrt.start(timer, group.start(0), 0);
                    }
                    cpu.frame = w as u32;
                    group.workers.push(w);
                    workers.push(FrameWorker {
                        group: frame_groups.len(),
                        cpu: c,
                        timer,
                        remote_timers: Vec::new(),
                        k: 0,
                        start: group.start(0),
                        rem: group.first_remainder(),
                        running: 0,
                        stats: FrameStats::default(),
                        wake: Default::default(),
                        histograms: None,
                    });
                }
                frame_groups.push(group);
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
                if bsp.is_some() {
                    return Err(SimError::Unsupported(
                        "more than one bsp job (the twin runs one)".into(),
                    ));
                }
                let placed: Vec<u32> = on.iter().collect();
                bsp_cpus.extend(&placed);
                bsp = Some(BspPlaced {
                    cpus: placed,
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
    for &c in &bsp_cpus {
        let cpu = &cpus[c as usize];
        if cpu.running != Running::Idle || cpu.frame != NO_FRAME || hog_cpus.contains(&c) {
            return Err(SimError::Unsupported(format!(
                "a bsp rank on CPU {c} beside another task (the twin runs one rank alone per CPU)"
            )));
        }
    }
    for &c in &hog_cpus {
        let cpu = &mut cpus[c as usize];
        if cpu.running == Running::Syscall {
            return Err(SimError::Unsupported(format!(
                "a hog on CPU {c} beside the syscall loop (the twin runs the loop alone)"
            )));
        }
        cpu.hogs += 1;
        cpu.rq.enqueue(SchedClass::Fair);
        cpu.running = Running::Hog;
    }
    // A spinning rank is a busy user task to the scheduler and the tick, as a hog is.
    for &c in &bsp_cpus {
        let cpu = &mut cpus[c as usize];
        cpu.hogs += 1;
        cpu.rq.enqueue(SchedClass::Fair);
        cpu.running = Running::Hog;
    }
    Ok(Workload {
        hog_cpus,
        frame_groups,
        workers,
        syscall,
        bsp,
    })
}
