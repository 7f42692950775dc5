//! The simulation: modelled CPUs wired to the kernel-model modules, and the event loop.
//!
//! Which file holds what (read this file first, then follow one interrupt through `irq.rs`):
//! * `mod.rs` — the [`Sim`] and per-CPU `Cpu` types, [`Sim::step`] (dispatch of the earliest
//!   event) and [`Sim::run`].
//! * `setup/` — [`Sim::new`] as named steps, a file each: resolve the kernel (`kernel.rs`),
//!   lay out the CPUs (`cpus.rs`), arm the background sources (`background.rs`), place the
//!   workload (`workload.rs`); the size check, the assembly and the boot in `mod.rs`.
//! * `irq.rs` — the device interrupt: leave the idle state, `irq_enter`, jiffies catch-up,
//!   `hrtimer_interrupt`, the softirq, `irq_exit` and what runs next.
//! * `hrtimer_interrupt.rs` — `hrtimer_interrupt` (the expiry loop; its re-arm/retry/hang
//!   decision is `kernel::hrtimer`'s), the timer callbacks, `hrtimer_reprogram`.
//! * `tick_sched.rs` — `tick_sched_timer` (duty, timekeeping seqlock, jiffies write, RCU
//!   work, its sequence in `kernel::rcu`), tick stop/restart, the nohz_full update at interrupt exit,
//!   `tick_nohz_idle_exit`, the idle-tick gate.
//! * `idle.rs` — the idle loop: governor, tick decision, state entry (auto-demotion, the rule
//!   in `hw::auto_demotion`), wake-up and POLL timeout.
//! * `softirq.rs` — the TIMER softirq (timer wheel expiry).
//! * `sched.rs` — wake-ups, picking the next task, a task's end, the frame workers' cycle.
//! * `observe.rs` — the observation seam: [`Event`]s and the [`Observer`] trait.
//! * `stats.rs` — the window statistics, the listener the report reads (one `reset()`).
//! * `noise.rs` — the OS-noise listener, kept when asked for ([`Sim::set_noise`]) or when a
//!   BSP job runs: what the kernel takes from each busy task, per source.
//! * `report.rs` — the report at the end of a run.
//!
//! Each CPU owns four event slots: its clock event device (`SLOT_DEVICE`), the end of the
//! short task it runs (`SLOT_TASK`), a POLL-state timeout (`SLOT_POLL`) and a reschedule IPI
//! sent to it by another CPU (`SLOT_IPI`). The engine's
//! queue holds each CPU's earliest slot; [`Sim::step`] takes the earliest CPU event, advances
//! the clock and runs the handler, which charges modelled time (interrupt entry, callbacks,
//! jiffies updates, device programming) as it goes. Handlers are atomic: an interrupt's whole
//! path is computed when it is taken, and anything it delays (a running task) is pushed back.
//!
//! What happens on an interrupt, in order: leave the idle state (exit latency) → interrupt
//! entry → jiffies catch-up if this CPU's tick was stopped → the hrtimer expiry loop (tick
//! callback, background callbacks) with the re-arm/retry/hang rule → the TIMER softirq (wheel
//! callbacks) → interrupt exit (nohz_full re-evaluation on a busy CPU) → schedule a woken task
//! or run the idle loop again (governor, tick stop decision, C-state entry).
//!
//! The loop decides nothing the kernel modules own: it asks them (`Timekeeping`,
//! `TickSched`, `NohzMode`, `HrtimerCpuBase`, `RunQueue`), charges the time, and reports what
//! happened as an [`Event`] to the window statistics and to the optional extra listener `O`.
//!
//! Shared state the tick touches ([`crate::hw::lock`]): every tick reads the timekeeping
//! seqlock (spinning while the duty CPU's write section is inside), the duty CPU writes it, and
//! every tick reports to its leaf `rcu_node` lock. Simultaneous ticks therefore queue behind
//! each other; `skew_tick=1` spreads them apart.
//!
//! Frame workers (`crate::workloads::frames`) sleep on a `TimerFn::FrameWake` hrtimer and
//! compute as `SLOT_TASK`; interrupts during the compute push the slot back.
//!
//! A pinned task whose sleep migrates (a background source with `timer_migrates`, one
//! `Sleeper` per task) sleeps on a `TimerFn::Sleeper` hrtimer. It has a spare timer on every
//! timer-housekeeping CPU, and arms one of them when its run ends, where
//! `kernel::timer_migration` places the sleep. Frame workers' sleeps go through the same
//! placement function (`Sim::sleep_cpu`). An expiry away from the task's CPU wakes it there
//! with a reschedule IPI.

mod hrtimer_interrupt;
mod idle;
mod irq;
mod noise;
mod noise_attach;
mod observe;
mod report;
mod sched;
mod sched_rt;
mod setup;
mod softirq;
mod stats;
mod syscall;
mod tick_sched;

use crate::engine::rng::Stream;
use crate::engine::{EventQueue, NEVER, Time, TournamentTree, prefetch};

/// Bytes of `Cpu` records above which the next event's CPU is prefetched
/// ([`Sim::prefetch_next`]) and the hrtimer slabs are packed ([`Sim::pack_hrtimer_slabs`]):
/// the 2 MB L2 cache of this project's machine. Below, the records stay in that cache and the
/// hint only costs: at 512 and 1024 CPUs it ran 15-20 % slower, at 2048 7 % faster, at 4096
/// 1.45× faster. Packing gained 1.2× at 2048 and 4096 CPUs, nothing at 512 and 1024, and
/// cost E1's small machine 5 % (docs/model.md, "Speed of the event loop").
const PREFETCH_ABOVE_BYTES: usize = 2 << 20;
use crate::hw::auto_demotion::ResidencyHistory;
use crate::hw::clockevents::ClockEventDevice;
use crate::hw::energy::EnergyMeter;
use crate::hw::lock::{ContendedLock, SeqLock, TransferCost};
use crate::kernel::context_tracking::ContextTracking;
use crate::kernel::cpuidle::{AnyGovernor, IdleStateParams};
use crate::kernel::cpupri::CpuPri;
use crate::kernel::hrtimer::{ClockBase, HrtimerCpuBase, TimerId};
use crate::kernel::loadavg::LoadAvg;
use crate::kernel::nohz_balance::NohzBalance;
use crate::kernel::rcu::RcuState;
use crate::kernel::sched::{BackgroundRuns, RunQueue, SchedClass};
use crate::kernel::tick_sched::{NohzMode, TickSched};
use crate::kernel::timekeeping::Timekeeping;
use crate::kernel::timer_wheel::{TimerWheel, WheelTimerId};
use crate::workloads::frames::{FrameGroup, FrameWorker};
use crate::workloads::syscall::SyscallLoop;
use ticklab_cmdline::IdleOverride;
use ticklab_schema::experiment::e2::Mechanisms;
use ticklab_schema::machine::{AutoDemotion, Costs};
use ticklab_schema::report::{KernelMessage, Report};
use ticklab_schema::scenario::{Scenario, TimerKind};

pub use crate::error::{ConfigError, SimError};
pub use noise::NOISE_HISTOGRAM_US;
pub use observe::{Callback, Event, LockId, NoTimeline, Observer, Running, SharedLine, SoftirqVec};
use stats::WindowStats;

/// Slot of the clock event device interrupt.
pub(crate) const SLOT_DEVICE: usize = 0;
/// Slot of the end of the short task the CPU runs.
pub(crate) const SLOT_TASK: usize = 1;
/// Slot of a POLL idle-state timeout.
pub(crate) const SLOT_POLL: usize = 2;
/// Slot of a reschedule IPI on its way (a task was woken onto this CPU from another).
pub(crate) const SLOT_IPI: usize = 3;
const NSLOTS: usize = 4;

/// What an hrtimer does when it expires.
///
/// Six bytes (its indices are [`Index32`]s), so that an hrtimer with its two expiries, base
/// and flag is 24 bytes: a CPU's three timers then fit two cache lines wherever its slab
/// starts (docs/model.md, "The fifth round of issue 34").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerFn {
    /// The tick (`sched_timer`).
    Tick,
    /// A background source (index into the scenario's sources).
    Background(u16),
    /// A frame worker's wake-up (`clock_nanosleep` to the frame start; index into the workers).
    FrameWake(Index32),
    /// The sleep of a pinned task whose timer migrates (a `timer_migrates` source's
    /// instance; index into the run's [`Sleeper`]s).
    Sleeper(Index32),
}

/// A 32-bit index stored as two 16-bit halves: aligned to two bytes rather than four, so that
/// [`TimerFn`] needs six bytes, not eight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Index32([u16; 2]);

impl Index32 {
    /// The index `i`.
    pub(crate) fn new(i: usize) -> Index32 {
        let i = u32::try_from(i).expect("an index below 2^32");
        Index32([(i >> 16) as u16, i as u16])
    }

    /// The index.
    #[inline]
    pub(crate) fn get(self) -> usize {
        (u32::from(self.0[0]) << 16 | u32::from(self.0[1])) as usize
    }
}

/// The inputs of [`crate::kernel::timer_migration::TimerMigration`], owned by the run.
#[derive(Debug, Clone)]
pub(crate) struct TimerMigrationState {
    /// `timers_migration_enabled`.
    pub enabled: bool,
    /// Kernel release.
    pub version: (u32, u32),
    /// Per CPU, in `HK_TYPE_TIMER`.
    pub timer_housekeeping: Vec<bool>,
    /// Per CPU, attached to the scheduling domains.
    pub in_domains: Vec<bool>,
}

impl TimerMigrationState {
    /// The rule's view of this state.
    pub(crate) fn rule(&self) -> crate::kernel::timer_migration::TimerMigration<'_> {
        crate::kernel::timer_migration::TimerMigration {
            enabled: self.enabled,
            version: self.version,
            timer_housekeeping: &self.timer_housekeeping,
            in_domains: &self.in_domains,
        }
    }

    /// The spare timers (running `func`) that a task on `home` needs where the rule may queue
    /// its sleeps: per CPU, one on each timer-housekeeping CPU other than `home`, `None`
    /// elsewhere. Empty when migration is off or `home` is itself timer housekeeping (it keeps
    /// its own sleeps). Setup time only: the run then moves a sleep without allocating.
    fn spare_timers(&self, home: usize, cpus: &mut [Cpu], func: TimerFn) -> Vec<Option<TimerId>> {
        if !self.enabled || self.timer_housekeeping[home] {
            return Vec::new();
        }
        cpus.iter_mut()
            .enumerate()
            .map(|(h, cpu)| {
                (h != home && self.timer_housekeeping[h])
                    .then(|| cpu.hrt.init(ClockBase::Monotonic, func))
            })
            .collect()
    }
}

/// `Cpu::frame` of a CPU without a frame worker.
const NO_FRAME: u32 = u32::MAX;

/// A stay in an idle state.
#[derive(Debug, Clone, Copy)]
struct IdleStay {
    requested: u8,
    actual: u8,
    since: Time,
    polling: bool,
}

/// A background source at run time.
#[derive(Debug, Clone)]
struct SourceRt {
    name: String,
    kind: TimerKind,
    period_ns: Option<u64>,
    mean_ns: f64,
    deferrable: bool,
    slack_ns: u64,
    wakes_task: bool,
    /// The woken task may run on another CPU, and its timer goes with it.
    follows_task: bool,
    /// The woken task sleeps its period from the end of its run (`BackgroundSource::relative`).
    relative: bool,
    /// The hrtimer is armed hard: on PREEMPT_RT it still expires in the hard interrupt
    /// (`BackgroundSource::hard`).
    hard: bool,
    /// How long the woken task runs, ns (`BackgroundSource::task_ns`, else the machine's
    /// `costs.background_task_ns`).
    task_ns: u64,
}

/// One task of a `timer_migrates` background source: it stays on `home`, and each of its
/// sleeps is queued where the timer-migration rule places it (`kernel::timer_migration`).
///
/// The task arms its next sleep when its run ends (`pending` until then), so the rule sees the
/// CPUs as they are at that moment, not at the expiry that woke it.
///
/// Invariant: at most one of `timers` is queued, and none while `pending` (the task sleeps
/// once at a time); `timers[home]` is always `Some`.
#[derive(Debug, Clone)]
struct Sleeper {
    /// The background source (index into the scenario's sources).
    source: u16,
    /// The CPU the task is pinned to.
    home: u32,
    /// Woken, not yet back to sleep: its run on `home` ends before it arms `next`.
    pending: bool,
    /// The expiry of the sleep it arms when its run ends (a relative sleep counts from then).
    next: Time,
    /// Per CPU, the timer this task's sleep uses when queued there: its home CPU's, and one on
    /// each timer-housekeeping CPU the rule may pick (set up before the run, so a move
    /// allocates nothing).
    timers: Vec<Option<TimerId>>,
}

/// One modelled CPU.
///
/// Layout: `repr(C)` with the fields nearly every event touches first, so that an event
/// reads and writes a few adjacent cache lines of its CPU. The 64 CPUs of E2 do not fit in L1
/// together, and before this ordering a typical event missed L1 on about nine different lines
/// of its CPU (cachegrind); statistics and rarely used state come last.
#[repr(C, align(64))]
struct Cpu {
    // ---- hot: every event; the first 64 bytes are what `step` reads ----
    slots: [Time; NSLOTS],
    /// When the CPU finished its last handler: interrupts are masked inside a handler, so an
    /// event that falls due earlier is taken at this time (invariant: a CPU's handlers never
    /// overlap, so everything it schedules is in time order).
    free_at: Time,
    idle: Option<IdleStay>,
    running: Running,
    /// Between an interrupt's arrival in a C-state and the end of the exit latency.
    waking: bool,
    /// The frame worker is runnable (woken, not yet finished its frame).
    frame_runnable: bool,
    nohz_full: bool,
    housekeeping: bool,
    timer_softirq: bool,
    /// PREEMPT_RT: this interrupt raised a softirq that runs in the CPU's softirq thread
    /// (woken at the interrupt's exit, `Sim::invoke_softirq_thread`).
    softirq_raised: bool,
    /// Timekeeping write number this CPU last read (a newer one means a line transfer).
    xtime_seen: u64,
    id: u32,
    /// Socket (for cache-line transfer costs).
    socket: u32,
    /// Index of this CPU's frame worker, or `NO_FRAME`.
    frame: u32,
    hogs: u32,
    bg_runnable: u32,
    ts: TickSched,
    rq: RunQueue,
    /// Timer-delivery jitter draws (a stream of their own, see `rng::delivery_streams`),
    /// next to the device: every programming draws once.
    delivery: Stream,
    dev: ClockEventDevice,
    hrt: HrtimerCpuBase<TimerFn>,
    /// When this CPU last ran the scheduler tick (`rq->last_sched_tick`, for the pre-4.17
    /// deferment limit of a busy nohz_full CPU). Every tick writes it, so it sits in the hot
    /// lines (in the cold part it made every tick touch one more line).
    last_sched_tick: Time,
    /// Right after the hrtimer base: the wheel's first line (its memo) shares the base's.
    wheel: TimerWheel,
    gov: AnyGovernor,
    // ---- cold: background sources, auto-demotion ----
    /// Run time left of a background task preempted by the frame worker (0 = none).
    bg_remaining: u64,
    /// The run lengths of the background tasks woken here and not yet started.
    bg_runs: BackgroundRuns,
    /// Recent idle residencies, kept only when the machine auto-demotes.
    residencies: ResidencyHistory,
    rng: Stream,
    wheel_fns: Vec<u16>,
    expired: Vec<WheelTimerId>,
    /// The syscall loop runs here and is runnable (running or preempted).
    syscall_runnable: bool,
    /// User tasks may run here (not taken out of the scheduler domains by `isolcpus=`).
    user_tasks: bool,
    /// Timers of background sources that follow their task, one per instance that may come
    /// here (source, timer): the queued ones are the instances on this CPU now.
    follow_hrtimers: Vec<(u16, TimerId)>,
    /// The same for timer-wheel sources.
    follow_wheel_timers: Vec<(u16, WheelTimerId)>,
    /// Between a reschedule IPI's arrival in a C-state and the end of the exit latency.
    ipi_waking: bool,
    /// The IPI on its way (`SLOT_IPI`) is a function call (the idle load balancer's kick),
    /// not a reschedule.
    ipi_call: bool,
}

impl Cpu {
    #[inline]
    fn next_slot(&self) -> Time {
        self.slots[0]
            .min(self.slots[1])
            .min(self.slots[2])
            .min(self.slots[3])
    }

    /// An idle timer of source `s` that follows its task: where an instance moving here is
    /// armed. `None` when every one is queued (more instances than set up: a bug).
    fn free_follow_hrtimer(&self, s: u16) -> Option<TimerId> {
        self.follow_hrtimers
            .iter()
            .find(|&&(src, id)| src == s && !self.hrt.is_queued(id))
            .map(|&(_, id)| id)
    }

    /// [`Cpu::free_follow_hrtimer`] for timer-wheel sources.
    fn free_follow_wheel_timer(&self, s: u16) -> Option<WheelTimerId> {
        self.follow_wheel_timers
            .iter()
            .find(|&&(src, id)| src == s && !self.wheel.is_pending(id))
            .map(|&(_, id)| id)
    }

    /// Idle for a wake-up's choice of CPU (`idle_cpu()`): the idle task is current (in an
    /// idle state, leaving one, or in an interrupt taken from idle) with nothing runnable and
    /// no wake-up already on its way.
    fn idle_for_wakeup(&self) -> bool {
        self.running == Running::Idle
            && !self.ipi_waking
            && self.slots[SLOT_IPI] == NEVER
            && self.bg_runnable == 0
            && !self.frame_runnable
            && self.hogs == 0
            && !self.syscall_runnable
    }

    /// A background task that will run `run_ns` is queued here (runnable, not started).
    #[inline]
    fn queue_background(&mut self, run_ns: u64) {
        self.bg_runnable += 1;
        self.bg_runs.woken(run_ns);
        self.rq.enqueue(SchedClass::Fair);
        debug_assert!(self.bg_runs.waiting() <= self.bg_runnable);
    }

    #[inline]
    fn busy_until(&mut self, now: Time) {
        self.free_at = self.free_at.max(now);
    }

    /// Arms the device interrupt for a programming that fires at `fire`: it is delivered up to
    /// `jitter_ns` later (`Costs::timer_delivery_jitter_ns`), so CPUs programmed for the same
    /// instant do not reach shared locks in CPU-number order every time.
    #[inline]
    fn arm_device(&mut self, fire: Time, jitter_ns: u64) {
        self.slots[SLOT_DEVICE] = if fire == NEVER || jitter_ns == 0 {
            fire
        } else {
            fire + self.delivery.below(jitter_ns + 1)
        };
    }
}

/// A twin run in progress. Build with [`Sim::new`], drive with [`Sim::run`] or [`Sim::step`].
///
/// `O` is an extra listener of the loop's [`Event`]s (an [`Observer`]); the default
/// [`NoTimeline`] costs nothing.
pub struct Sim<O: Observer = NoTimeline> {
    scenario_name: String,
    machine_name: String,
    cmdline: String,
    seed: u64,
    hz: u32,
    tick_nsec: u64,
    costs: Costs,
    states: Vec<IdleStateParams>,
    auto_demotion: Option<AutoDemotion>,
    power_limit_w: Option<f64>,
    /// The nohz modes and the aggressive proposal: every tick-stop rule that depends on them.
    nohz: NohzMode,
    idle_mode: IdleOverride,
    cpuidle_off: bool,
    /// The PM QoS CPU latency limit the governors are given (`cpuidle_governor_latency_req`),
    /// ns: [`Kernel::cpu_dma_latency_us`](ticklab_schema::scenario::Kernel::cpu_dma_latency_us),
    /// `u64::MAX` when none is held.
    latency_req_ns: u64,
    /// The limit as the scenario gave it, for the report.
    cpu_dma_latency_us: Option<u32>,
    /// The idle loop's tick rule when no cpuidle driver is registered (by kernel version).
    no_driver_tick: crate::kernel::idle::NoDriverTick,
    /// Where a softirq raised by a hard interrupt runs (PREEMPT_RT or not).
    softirq_runs: crate::kernel::softirq::SoftirqRuns,
    /// The load balance's state (each CPU's periodic balance, the idle load balancer), kept
    /// only where its softirq wakes a thread (`softirq_runs` is `Thread`): elsewhere it changes
    /// no counter the twin reports (its function-call IPIs are not modelled).
    balance: Option<crate::kernel::sched_balance::SchedBalance>,
    /// How long a softirq thread runs when woken on an idle CPU.
    softirq_thread_ns: u64,
    now: Time,
    window_start: Time,
    end: Time,
    queue: TournamentTree,
    /// Per CPU, its hrtimer slab's (address, bytes) when the next event's CPU is prefetched
    /// ([`Sim::prefetch_next`]); empty on machines small enough for the caches. Copied out of
    /// the records at setup (the slab never moves) because reading the address from the next
    /// CPU's record would itself be the miss the hint is there to hide.
    prefetch_slabs: Vec<(usize, usize)>,
    cpus: Vec<Cpu>,
    tk: Timekeeping,
    /// The power model; `None` once [`Sim::without_energy`] was called.
    energy: Option<EnergyMeter>,
    sources: Vec<SourceRt>,
    messages: Vec<KernelMessage>,
    hang_reported: bool,
    events: u64,
    hog_cpus: Vec<u32>,
    window_open: bool,
    /// The timekeeping seqlock (`xtime_lock` up to 3.7; timekeeper seqcount from 3.8).
    xtime: SeqLock,
    /// Leaf `rcu_node` locks, `rcu_fanout` CPUs each.
    rcu_leaves: Vec<ContendedLock>,
    rcu_fanout: u32,
    /// The kernel is older than 3.8 (`xtime_lock` era).
    xtime_lock_era: bool,
    transfer: TransferCost,
    frame_groups: Vec<FrameGroup>,
    workers: Vec<FrameWorker>,
    /// The tasks of `timer_migrates` sources.
    sleepers: Vec<Sleeper>,
    flier_ns: u64,
    /// The 3.0-era shared-line mechanisms switched on (docs/model.md "E2 mechanisms").
    mech: Mechanisms,
    /// RCU grace periods (the leaf locks are `rcu_leaves`).
    rcu: RcuState,
    /// The RT priority vectors and overload count.
    cpupri: CpuPri,
    /// The nohz masks and the idle-balance pick slots.
    nohz_balance: NohzBalance,
    /// The load-average fold.
    loadavg: LoadAvg,
    /// The window statistics: the listener the report reads.
    stats: WindowStats,
    /// The extra listener.
    observer: O,
    /// Context tracking: the cost of user/kernel transitions by CPU, for this kernel.
    ct: ContextTracking,
    /// Where unpinned timers armed by a task go (`kernel::timer_migration`).
    timer_migration: TimerMigrationState,
    /// How long a busy nohz_full CPU may defer its tick (1 s before 4.17, `None` after).
    busy_tick_max_deferment: Option<u64>,
    /// The syscall loop, if the workload has one.
    syscall: Option<SyscallLoop>,
    /// The OS-noise listener (and the BSP job it feeds), when kept.
    noise: Option<Box<noise::NoiseStats>>,
    /// The machine is a KVM guest (interrupt delivery includes VM exits).
    is_guest: bool,
    /// On a calibrated VM guest, the exit cost of a halting idle state against the time it
    /// was halted (`[machine.halt_wake]`): used in place of the state's constant exit
    /// latency by [`Sim::idle_wake`](idle). `None`: every state keeps its own.
    halt_wake: Option<ticklab_schema::machine::HaltWake>,
}

impl<O: Observer> Sim<O> {
    /// Simulated time now.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Simulated end time (warm-up + window).
    pub fn end(&self) -> Time {
        self.end
    }

    /// Stops integrating power: the report then has no `energy` section. For experiments
    /// that report no power (E2's frame tables), where the meter's bookkeeping at every
    /// C-state change was about a seventh of the run time.
    pub fn without_energy(&mut self) {
        self.energy = None;
    }

    /// Sets the frame flier threshold (default 10 µs, docs/experiments.md E2).
    pub fn set_flier_threshold_ns(&mut self, ns: u64) {
        self.flier_ns = ns;
    }

    /// Keeps a `cyclictest -h` histogram of `max_us` 1 µs buckets of every frame worker's
    /// jitter and wake-up latency (`--histogram`; the report's frame groups then carry them).
    /// Call before the first [`Sim::step`]: the buckets are allocated here, not per event.
    pub fn set_frame_histogram(&mut self, max_us: u32) {
        for w in &mut self.workers {
            w.histograms = Some(ticklab_schema::histogram::CpuHistograms::new(w.cpu, max_us));
        }
    }

    /// Switches the 3.0-era shared-line mechanisms (docs/model.md "E2 mechanisms"); by
    /// default a kernel before 3.8 has them all, a later one the jiffies race, RCU grace
    /// periods and the seqlock read side. Call before the first [`Sim::step`].
    pub fn set_mechanisms(&mut self, m: Mechanisms) {
        self.mech = m;
    }

    /// The mechanisms switched on.
    pub fn mechanisms(&self) -> Mechanisms {
        self.mech
    }

    /// Current jiffies.
    pub fn jiffies(&self) -> u64 {
        self.tk.jiffies()
    }

    /// The next event `(time, cpu)` without processing it.
    pub fn peek_event(&mut self) -> Option<(Time, usize)> {
        self.queue.peek()
    }

    /// The extra listener (what it has heard so far).
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// The extra listener, giving up the run (after [`Sim::report`]).
    pub fn into_observer(self) -> O {
        self.observer
    }

    #[inline]
    fn sync(&mut self, c: usize) {
        let cpu = &self.cpus[c];
        let t = cpu.next_slot();
        self.queue.set(
            c,
            if t == NEVER {
                NEVER
            } else {
                t.max(cpu.free_at)
            },
        );
    }

    /// Processes one event. Returns false once the run has reached its end.
    #[inline]
    pub fn step(&mut self) -> bool {
        let Some((t, c)) = self.queue.peek() else {
            return false;
        };
        if !self.window_open && t >= self.window_start {
            self.open_window(self.window_start);
        }
        if t > self.end {
            return false;
        }
        debug_assert!(t >= self.now, "time went backwards: {t} < {}", self.now);
        self.now = t;
        self.events += 1;
        if let Some(e) = &mut self.energy {
            e.apply_until(t);
        }
        if !self.prefetch_slabs.is_empty() {
            self.prefetch_next();
        }
        let cpu = &self.cpus[c];
        let due = cpu.next_slot();
        if cpu.slots[SLOT_DEVICE] == due {
            self.device_interrupt(c, t);
        } else if cpu.slots[SLOT_TASK] == due {
            self.task_done(c, t);
        } else if cpu.slots[SLOT_POLL] == due {
            self.poll_timeout(c, t);
        } else {
            self.resched_ipi(c, t);
        }
        self.sync(c);
        true
    }

    /// The default of [`Sim::set_prefetch`]: on when the CPUs' records outgrow
    /// [`PREFETCH_ABOVE_BYTES`], unless `TICKLAB_PREFETCH` is `0` or `1` (for A/B timing of
    /// one binary).
    ///
    /// The slabs are packed by the same measure, whatever `TICKLAB_PREFETCH` says.
    fn plan_prefetch(&mut self) {
        let large = self.cpus.len() * size_of::<Cpu>() > PREFETCH_ABOVE_BYTES;
        if large {
            self.pack_hrtimer_slabs();
        }
        let on = match std::env::var("TICKLAB_PREFETCH").ok().as_deref() {
            Some("1") => true,
            Some("0") => false,
            _ => large,
        };
        self.set_prefetch(on);
    }

    /// Moves every CPU's hrtimer slab to an allocation of exactly its timers, made in CPU
    /// order after all the others: the slabs then lie side by side (80 bytes apart at 4096
    /// CPUs, where each sat among its CPU's other setup allocations, about 5.8 KB apart), so
    /// at thousands of CPUs the timers the ticks read fill fewer cache lines and pages. A
    /// layout only: what the run computes is the same. The default on machines whose CPU
    /// records outgrow 2 MB (the L2 cache), with the prefetch; call before the first
    /// [`Sim::step`] (every timer is registered while the `Sim` is built, and none after, so
    /// the slabs do not move again).
    pub fn pack_hrtimer_slabs(&mut self) {
        let packed: Vec<_> = self.cpus.iter().map(|c| c.hrt.packed()).collect();
        for (cpu, hrt) in self.cpus.iter_mut().zip(packed) {
            cpu.hrt = hrt;
        }
    }

    /// Whether each event starts fetching the state of the CPU whose event probably comes
    /// next into the cache. It pays on thousands of CPUs and costs on a few hundred; what the
    /// run computes is the same either way. Set before the first step.
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch_slabs = if on {
            self.cpus.iter().map(|c| c.hrt.slab_span()).collect()
        } else {
            Vec::new()
        };
    }

    /// Starts bringing the state of the CPU whose event probably comes next (the queue's
    /// runner-up) into the cache while this event is handled: its `Cpu` record and its hrtimer
    /// slab, the two first touches that miss on thousands of CPUs, its statistics' counters
    /// and its `rcu_data` (with the slabs packed, fetching that too gained 3-4 % at 2048 and
    /// 4096 CPUs; before, it cost 3-7 %). A hint: what runs is the same whatever it fetches.
    #[inline]
    fn prefetch_next(&self) {
        if let Some(r) = self.queue.runner_up() {
            let cpu = &self.cpus[r];
            // The lines of `Cpu` every interrupt reads (dispatch and flags, tick state, run
            // queue, device, hrtimer base, the wheel's memo), not the rest of the wheel.
            prefetch::prefetch_bytes(
                cpu as *const Cpu as usize,
                std::mem::offset_of!(Cpu, wheel) + TimerWheel::HOT_BYTES,
            );
            let (addr, len) = self.prefetch_slabs[r];
            prefetch::prefetch_bytes(addr, len);
            self.stats.prefetch_cpu(r);
            self.rcu.prefetch_cpu(r);
        }
    }

    /// Runs to the end, calling `progress(simulated_ns_done)` about every simulated 10 ms.
    pub fn run(&mut self, mut progress: impl FnMut(u64)) {
        let mut next_report = 0;
        while self.step() {
            if self.now >= next_report {
                progress(self.now);
                next_report = self.now + 10_000_000;
            }
        }
        progress(self.end);
    }
}

/// Runs a scenario to completion and returns its report.
pub fn simulate(scenario: &Scenario, progress: impl FnMut(u64)) -> Result<Report, SimError> {
    let mut sim = Sim::new(scenario)?;
    sim.run(progress);
    Ok(sim.report())
}

/// The window's bookkeeping: every event reported to the statistics and listeners, and the
/// window opened.
impl<O: Observer> Sim<O> {
    /// Reports `ev` at `at` to the window statistics and the extra listener.
    #[inline(always)]
    pub(super) fn emit(&mut self, at: Time, ev: Event) {
        self.stats.on(at, ev);
        if let Some(n) = &mut self.noise {
            n.on(at, ev);
        }
        self.observer.on(at, ev);
    }

    /// Opens the measured window at `at`.
    pub(super) fn open_window(&mut self, at: Time) {
        self.window_open = true;
        if let Some(e) = &mut self.energy {
            e.start_window(at);
        }
        self.tk.start_window(at);
        self.stats.reset(at);
        if let Some(n) = &mut self.noise {
            n.reset(at);
        }
        for cpu in &mut self.cpus {
            if let Some(stay) = &mut cpu.idle {
                // Residency before the window is not counted (this also shortens the residency
                // the governor is told about at the next wake-up).
                stay.since = stay.since.max(at);
            }
        }
    }
}

/// What a timeline samples between events (jiffies staleness, energy): read-only views of
/// the loop's state for an exporter that drives [`Sim::step`](super::Sim::step) itself.
impl<O: Observer> Sim<O> {
    /// How far jiffies lags `at` (ns): the time since the jiffy edge jiffies stands for
    /// (the staleness a reader sees, as in the report's timekeeping section).
    pub fn jiffies_staleness_ns(&self, at: Time) -> u64 {
        at.saturating_sub(self.tk.last_jiffies_update())
    }

    /// The jiffies duty now.
    pub fn duty(&self) -> crate::kernel::timekeeping::Duty {
        self.tk.duty()
    }

    /// Energy integrated over the measured window up to `at` (J, before any RAPL limit), or
    /// `None` without a power model or before the window opened. `at` must not be earlier than the last event; the
    /// integrals are exact sums, so reading them changes nothing in the report.
    pub fn energy_j_until(&mut self, at: Time) -> Option<f64> {
        if !self.window_open {
            return None;
        }
        let t = self.energy.as_mut()?.finish(at.max(self.now));
        Some(t.package_j + t.core_active_j + t.core_idle_j + t.wake_j)
    }

    /// The names of the idle states (sysfs `name`), by index.
    pub fn idle_state_names(&self) -> impl Iterator<Item = &str> {
        self.states.iter().map(|s| s.name.as_ref())
    }

    /// The names of the background sources by index, then `sched_tick_remote` (the index one
    /// past the list in [`Event::SourceExpired`]).
    pub fn source_names(&self) -> impl Iterator<Item = &str> {
        self.sources
            .iter()
            .map(|s| s.name.as_str())
            .chain(std::iter::once("sched_tick_remote"))
    }

    /// The extra listener, to feed it what it cannot hear (names, samples between events).
    pub fn observer_mut(&mut self) -> &mut O {
        &mut self.observer
    }

    /// Number of modelled CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index32_round_trips_and_an_hrtimer_takes_24_bytes() {
        for i in [0, 1, 0xffff, 0x1_0000, 0x1234_5678, u32::MAX as usize] {
            assert_eq!(Index32::new(i).get(), i, "{i:#x}");
        }
        assert_eq!(size_of::<TimerFn>(), 6);
        let mut hrt = HrtimerCpuBase::<TimerFn>::new(1);
        hrt.init(ClockBase::Monotonic, TimerFn::Tick);
        assert_eq!(hrt.slab_span().1, 24, "one timer of a slab");
    }
}
