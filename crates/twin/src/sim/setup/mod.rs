//! Building a [`Sim`] from a [`Scenario`]: what the kernel does at boot, step by step.
//!
//! [`Sim::with_observer`] runs the steps in the order that keeps the seeded streams' draws
//! stable, each in the file named for it:
//!
//! * `kernel.rs` — the boot line resolved against the build (`Kernel::resolve` of the
//!   scenario): the tick configuration, the release and the boot messages; the idle states as
//!   cpuidle registers them; the timer-migration state.
//! * `cpus.rs` — one CPU per topology slot: governor, clock event device, hrtimer base and
//!   timer wheel sized for every timer the run may queue, and the tick armed on its phase.
//! * `background.rs` — the background sources armed where their placement names, and the
//!   4.17 remote tick of the nohz_full CPUs.
//! * `workload.rs` — the workload placed: the syscall loop, hogs, frame workers (with their
//!   remote sleeper timers) and a BSP job's ranks.
//! * this file — [`SimError`], the size check, the default shared-line mechanisms, the
//!   assembly of the [`Sim`] and the boot itself (program the devices, enter the idle loop).

mod background;
mod cpus;
mod kernel;
mod workload;

use super::observe::{Event, NoTimeline, Observer};
use super::stats::WindowStats;
use super::{Cpu, Running, Sim, Sleeper, SourceRt, TimerMigrationState};
use crate::engine::rng::streams;
use crate::engine::{CPU_BITS, EventQueue, MAX_EVENT_TIME, NEVER, TournamentTree};
use crate::error::{ConfigError, SimError};
use crate::hw::energy::EnergyMeter;
use crate::hw::lock::{ContendedLock, SeqLock, TransferCost};
use crate::hw::spinlock::Spinlock;
use crate::kernel::context_tracking::ContextTracking;
use crate::kernel::cpupri::CpuPri;
use crate::kernel::idle::NoDriverTick;
use crate::kernel::loadavg::LoadAvg;
use crate::kernel::nohz_balance::NohzBalance;
use crate::kernel::rcu::RcuState;
use crate::kernel::sched::busy_tick_max_deferment;
use crate::kernel::softirq::SoftirqRuns;
use crate::kernel::tick_sched::NohzMode;
use crate::kernel::timekeeping::{Timekeeping, initial_jiffies};
use crate::workloads::bsp::BspJob;
use crate::workloads::frames::DEFAULT_FLIER_NS;
use background::{arm_background, arm_remote_ticks, remote_sleeper_timers};
use cpus::{lay_out_cpus, wheel_background, wheel_capacity};
use kernel::{Kernel, idle_states, resolve_kernel, sched_balance, timer_migration_state};
use ticklab_cmdline::{NohzBuild, TickConfig};
use ticklab_schema::experiment::e2::{Mechanism, Mechanisms};
use ticklab_schema::scenario::Scenario;
use workload::{BspPlaced, Workload, place_workload, remote_frame_timers};

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
    // Over 100 lines because two thirds of it is the `Sim` literal, one field per line; the
    // steps before it are named functions (check_size, resolve_kernel, populate), and the
    // fields are set in one place so that none is left out.
    pub fn with_observer(scenario: &Scenario, observer: O) -> Result<Sim<O>, SimError> {
        let m = &scenario.machine;
        let k = &scenario.kernel;
        // The one validation layer (ticklab_schema::validate): nothing below meets a value
        // out of range, whoever built the scenario.
        scenario.validate().map_err(ConfigError::from)?;
        let nr = check_size(scenario)?;
        let Kernel {
            cfg,
            version,
            messages,
        } = resolve_kernel(scenario, nr)?;
        let tick_nsec = k.tick_nsec();
        let states = idle_states(scenario, &cfg);
        let nohz_idle = cfg.nohz_idle && k.nohz != NohzBuild::Periodic;
        let any_nohz_full = !cfg.nohz_full.is_empty();
        let ct = ContextTracking::new(&m.costs, version, any_nohz_full);
        let CpusAtBoot {
            cpus,
            sources,
            workload,
            sleepers,
            timer_migration,
        } = populate(scenario, &cfg, version, nohz_idle, &ct)?;
        let tk = Timekeeping::new(
            k.hz,
            tick_nsec,
            cfg.timekeeping_cpu,
            m.clocksource.max_idle_ns,
        );
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
            softirq_runs: SoftirqRuns::for_build(k.preempt_rt),
            balance: k
                .preempt_rt
                .then(|| sched_balance(scenario, &cfg, initial_jiffies(k.hz))),
            softirq_thread_ns: m
                .costs
                .softirq_thread_ns
                .unwrap_or(m.costs.background_task_ns),
            now: 0,
            window_start: warmup,
            end: warmup + scenario.run.duration_ns,
            queue: TournamentTree::new(nr as usize),
            prefetch_slabs: Vec::new(),
            cpus,
            tk,
            // No meter where the machine has no power model: "not modelled", not 0 W.
            energy: m.power.is_modelled().then(|| EnergyMeter::new(m)),
            sources,
            messages,
            hang_reported: false,
            events: 0,
            hog_cpus: workload.hog_cpus,
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
            frame_groups: workload.frame_groups,
            workers: workload.workers,
            sleepers,
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
            syscall: workload.syscall,
            noise: None,
            is_guest: m.kvm_host.is_some() || m.cpuidle_driver == "haltpoll",
            halt_wake: m.halt_wake.clone(),
        };
        sim.boot();
        sim.plan_prefetch();
        if let Some(b) = workload.bsp {
            sim.attach_bsp(b);
        }
        Ok(sim)
    }

    /// Attaches a BSP job after boot. A BSP job is read through the noise listener: its
    /// ranks' detours move the barrier. Every busy CPU is measured, as with `set_noise`.
    fn attach_bsp(&mut self, b: BspPlaced) {
        let mut n = self.noise_stats();
        n.bsp = Some(BspJob::new(
            &b.cpus,
            self.cpus.len(),
            b.work_ns,
            b.iterations,
            b.barrier,
            n.nr_parts(),
        ));
        if self.window_open {
            // No warm-up: the window opened at boot, before this listener existed.
            n.reset(self.window_start);
        }
        self.noise = Some(Box::new(n));
    }

    /// Boot: program every device for its first timer, then idle CPUs enter the idle loop; the
    /// window opens at once without warm-up.
    fn boot(&mut self) {
        // Every CPU's first event, before any enters idle: the first sleeps are placed against
        // them.
        for cpu in &mut self.cpus {
            cpu.hrt.program_first();
        }
        self.place_first_sleeps();
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

    /// The migrating sleepers' first sleeps, armed at setup on their home CPUs, go where the
    /// timer-migration rule puts them at boot, as every later sleep goes when the task's run
    /// ends: at boot no CPU has entered idle yet, so every CPU's next event is its first tick.
    fn place_first_sleeps(&mut self) {
        for i in 0..self.sleepers.len() {
            let sl = &self.sleepers[i];
            let home = sl.home as usize;
            let first = sl.timers[home].expect("a sleeper's home timer");
            let expires = self.cpus[home].hrt.soft_expires(first);
            let on = self.sleep_cpu(home, &sl.timers, expires);
            if on != home {
                let moved =
                    sl.timers[on].expect("sleep_cpu picks a CPU the sleeper has a timer on");
                let slack = self.sources[sl.source as usize].slack_ns;
                self.cpus[home].hrt.cancel(first);
                self.cpus[on].hrt.start(moved, expires, slack);
            }
        }
    }
}

/// The CPUs as the boot leaves them, with what runs on them.
struct CpusAtBoot {
    cpus: Vec<Cpu>,
    sources: Vec<SourceRt>,
    workload: Workload,
    sleepers: Vec<Sleeper>,
    timer_migration: TimerMigrationState,
}

/// Lays out the CPUs, arms the background sources (and the remote ticks), places the
/// workload and gives frame workers their remote sleeper timers, in the order that keeps
/// the seeded streams' draws stable.
fn populate(
    scenario: &Scenario,
    cfg: &TickConfig,
    version: (u32, u32),
    nohz_idle: bool,
    ct: &ContextTracking,
) -> Result<CpusAtBoot, SimError> {
    let nr = scenario.machine.topology.nr_cpus();
    let housekeeping: Vec<bool> = (0..nr).map(|c| cfg.housekeeping.contains(c)).collect();
    let (rngs, mut global) = streams(scenario.run.seed, nr as usize);
    let wheel_room = wheel_capacity(cfg, version, nr) + wheel_background(scenario);
    let mut cpus = lay_out_cpus(scenario, cfg, nohz_idle, &housekeeping, rngs, wheel_room)?;
    let mut sleepers = Vec::new();
    let mut sources = arm_background(
        scenario,
        cfg,
        &housekeeping,
        &mut cpus,
        &mut global,
        &mut sleepers,
    )?;
    sources.extend(arm_remote_ticks(scenario, cfg, version, &mut cpus));
    let mut workload = place_workload(scenario, cfg, &housekeeping, ct, &mut cpus)?;
    let timer_migration = timer_migration_state(cfg, version, nohz_idle, nr);
    remote_frame_timers(&timer_migration, &mut workload.workers, &mut cpus);
    remote_sleeper_timers(&timer_migration, &mut sleepers, &mut cpus);
    Ok(CpusAtBoot {
        cpus,
        sources,
        workload,
        sleepers,
        timer_migration,
    })
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
        return Err(ConfigError::MachineSize {
            nr_cpus: nr,
            max: 1u32 << CPU_BITS,
        }
        .into());
    }
    // The event queue packs times below MAX_EVENT_TIME (about 52 days) with CPU numbers;
    // the furthest event is a little past the end of the run.
    let span = scenario
        .run
        .warmup_ns
        .checked_add(scenario.run.duration_ns)
        .filter(|end| *end < MAX_EVENT_TIME / 2);
    if span.is_none() {
        return Err(ConfigError::RunTooLong {
            warmup_ns: scenario.run.warmup_ns,
            duration_ns: scenario.run.duration_ns,
            max_s: MAX_EVENT_TIME / 2 / 1_000_000_000,
        }
        .into());
    }
    Ok(nr)
}
