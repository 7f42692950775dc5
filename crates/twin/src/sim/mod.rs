//! The simulation: modelled CPUs wired to the kernel-model modules, and the event loop.
//!
//! Each CPU owns three event slots: its clock event device ([`SLOT_DEVICE`]), the end of the
//! short task it runs ([`SLOT_TASK`]) and a POLL-state timeout ([`SLOT_POLL`]). The engine's
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
//! Shared state the tick touches ([`crate::hw::lock`]): every tick reads the timekeeping
//! seqlock (spinning while the duty CPU's write section is inside), the duty CPU writes it, and
//! every tick reports to its leaf `rcu_node` lock. Simultaneous ticks therefore queue behind
//! each other; `skew_tick=1` spreads them apart.
//!
//! Frame workers ([`crate::workloads::frames`]) sleep on a [`TimerFn::FrameWake`] hrtimer and
//! compute as [`SLOT_TASK`]; interrupts during the compute push the slot back.

mod setup;

use crate::engine::rng::Stream;
use crate::engine::{EventQueue, NEVER, Time, TournamentTree};
use crate::hw::clockevents::ClockEventDevice;
use crate::hw::energy::{Activity, EnergyMeter};
use crate::hw::lock::{ContendedLock, SeqLock, TransferCost};
use crate::kernel::cpuidle::{AnyGovernor, Governor, IdleStateParams, Reflect, SelectInput};
use crate::kernel::hrtimer::{HrtimerCpuBase, TimerId, forward};
use crate::kernel::sched::RunQueue;
use crate::kernel::tick::{NextEventInput, TickSched, next_event, restart_expiry};
use crate::kernel::timekeeping::{Duty, Timekeeping};
use crate::kernel::timer_wheel::{TimerWheel, WheelTimerId};
use crate::workloads::frames::{FrameGroup, FrameWorker, group_report};
use ticklab_cmdline::{CmdlineError, IdleOverride};
use ticklab_schema::machine::{AutoDemotion, Costs};
use ticklab_schema::report::{
    BackgroundReport, CpuReport, CpuRole, EnergyReport, HrtimerReport, IdleStateReport,
    KernelMessage, LockName, LockReport, LocksReport, Report, Source, TimekeepingReport,
    WorkloadResult,
};
use ticklab_schema::scenario::{Scenario, TimerKind};

pub use setup::SimError;

/// Slot of the clock event device interrupt.
pub const SLOT_DEVICE: usize = 0;
/// Slot of the end of the short task the CPU runs.
pub const SLOT_TASK: usize = 1;
/// Slot of a POLL idle-state timeout.
pub const SLOT_POLL: usize = 2;
const NSLOTS: usize = 3;

/// hrtimer cap on the hang back-off (100 ms).
const HANG_BACKOFF_CAP_NS: u64 = 100_000_000;
/// Expiry passes per interrupt before the hang rule triggers.
const HRTIMER_MAX_PASSES: u32 = 3;

/// What an hrtimer does when it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerFn {
    /// The tick (`sched_timer`).
    Tick,
    /// A background source (index into the scenario's sources).
    Background(u16),
    /// A frame worker's wake-up (`clock_nanosleep` to the frame start; index into the workers).
    FrameWake(u32),
}

/// `Cpu::frame` of a CPU without a frame worker.
const NO_FRAME: u32 = u32::MAX;

/// What a CPU is executing outside interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Running {
    /// The idle task (in a C-state, polling, or between states).
    Idle,
    /// A CPU hog (never finishes).
    Hog,
    /// A background task that runs until `task_end`.
    Background,
    /// The CPU's frame worker, computing until `SLOT_TASK`.
    Frame,
}

/// A stay in an idle state.
#[derive(Debug, Clone, Copy)]
struct IdleStay {
    requested: u8,
    actual: u8,
    since: Time,
    polling: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct StateCounters {
    usage: u64,
    time_ns: u64,
    above: u64,
    below: u64,
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
    expiries: u64,
}

/// One modelled CPU.
///
/// Layout: `repr(C)` with the fields nearly every event touches first, so that an event
/// reads and writes a few adjacent cache lines of its CPU. The 64 CPUs of E2 do not fit in L1
/// together, and before this ordering a typical event missed L1 on about nine different lines
/// of its CPU (cachegrind); statistics and rarely used state come last.
#[repr(C)]
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
    tick_timer: TimerId,
    busy_since: Time,
    /// Timekeeping write number this CPU last read (a newer one means a line transfer).
    xtime_seen: u64,
    /// Time this CPU's ticks spent waiting for shared locks/lines in the window (ns).
    lock_wait_ns: u64,
    /// Longest such wait in one tick (ns).
    max_lock_wait_ns: u64,
    loc: u64,
    max_irq_ns: u64,
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
    gov: AnyGovernor,
    wheel: TimerWheel,
    // ---- cold: statistics, background sources, auto-demotion ----
    busy_ns: u64,
    iwi: u64,
    /// Run time left of a background task preempted by the frame worker (0 = none).
    bg_remaining: u64,
    cstates: Vec<StateCounters>,
    /// Recent idle residencies, kept only when the machine auto-demotes.
    residencies: [u64; 16],
    residency_idx: usize,
    rng: Stream,
    wheel_fns: Vec<u16>,
    expired: Vec<WheelTimerId>,
}

impl Cpu {
    #[inline]
    fn next_slot(&self) -> Time {
        self.slots[0].min(self.slots[1]).min(self.slots[2])
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
pub struct Sim {
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
    nohz_idle: bool,
    any_nohz_full: bool,
    aggressive: bool,
    idle_mode: IdleOverride,
    cpuidle_off: bool,
    now: Time,
    window_start: Time,
    end: Time,
    queue: TournamentTree,
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
    flier_ns: u64,
}

impl Sim {
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

    /// Sets the frame flier threshold (default 10 µs, experiments.md E2).
    pub fn set_flier_threshold_ns(&mut self, ns: u64) {
        self.flier_ns = ns;
    }

    /// Current jiffies.
    pub fn jiffies(&self) -> u64 {
        self.tk.jiffies
    }

    /// The next event `(time, cpu)` without processing it.
    pub fn peek_event(&mut self) -> Option<(Time, usize)> {
        self.queue.peek()
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
        let cpu = &self.cpus[c];
        let due = cpu.next_slot();
        if cpu.slots[SLOT_DEVICE] == due {
            self.device_interrupt(c, t);
        } else if cpu.slots[SLOT_TASK] == due {
            self.task_done(c, t);
        } else {
            self.poll_timeout(c, t);
        }
        self.sync(c);
        true
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

    fn open_window(&mut self, at: Time) {
        self.window_open = true;
        if let Some(e) = &mut self.energy {
            e.start_window(at);
        }
        self.tk.start_window(at);
        for cpu in &mut self.cpus {
            cpu.loc = 0;
            cpu.iwi = 0;
            cpu.ts.ticks = 0;
            cpu.ts.stopped_ns = 0;
            cpu.ts.idle_calls = 0;
            cpu.ts.idle_sleeps = 0;
            cpu.busy_ns = 0;
            cpu.max_irq_ns = 0;
            cpu.lock_wait_ns = 0;
            cpu.max_lock_wait_ns = 0;
            if cpu.ts.stopped {
                cpu.ts.stopped_since = at;
            }
            if cpu.idle.is_none() {
                cpu.busy_since = at;
            } else if let Some(stay) = &mut cpu.idle {
                // Residency before the window is not counted.
                stay.since = stay.since.max(at);
            }
            cpu.hrt.nr_events = 0;
            cpu.hrt.nr_retries = 0;
            cpu.hrt.nr_hangs = 0;
            cpu.hrt.max_hang_time = 0;
            for s in &mut cpu.cstates {
                *s = StateCounters::default();
            }
        }
        for s in &mut self.sources {
            s.expiries = 0;
        }
        self.xtime.writer.acquisitions = 0;
        self.xtime.writer.contended = 0;
        self.xtime.writer.wait_ns = 0;
        for l in &mut self.rcu_leaves {
            l.acquisitions = 0;
            l.contended = 0;
            l.wait_ns = 0;
        }
    }

    // ----- idle states -------------------------------------------------------------------

    /// Leaves the idle state at `t` (interrupt arrival); returns when the CPU executes again.
    fn idle_wake(&mut self, c: usize, t: Time, poll_timed_out: bool) -> Time {
        let cpu = &mut self.cpus[c];
        let Some(stay) = cpu.idle.take() else {
            return t;
        };
        cpu.slots[SLOT_POLL] = NEVER;
        let residency = t.saturating_sub(stay.since);
        let req = stay.requested as usize;
        let counters = &mut cpu.cstates[req];
        counters.time_ns += residency;
        if residency < self.states[req].target_residency_ns {
            counters.above += 1;
        } else if let Some(deeper) = self.states.get(req + 1)
            && residency >= deeper.target_residency_ns
        {
            counters.below += 1;
        }
        let woken_by_tick = cpu.hrt.is_queued(cpu.tick_timer)
            && cpu.hrt.hard_expires(cpu.tick_timer) <= t
            && !cpu.ts.stopped;
        cpu.gov.reflect(
            &self.states,
            &Reflect {
                state: req,
                residency_ns: residency,
                woken_by_tick,
                poll_timed_out,
            },
        );
        if self.auto_demotion.is_some() {
            cpu.residencies[cpu.residency_idx % cpu.residencies.len()] = residency;
            cpu.residency_idx += 1;
        }
        cpu.busy_since = t;
        // The exit latency is spent leaving the state (its energy is the state's wake energy);
        // the core executes from the end of it.
        let exec = if stay.polling {
            t
        } else {
            t + self.states[stay.actual as usize].exit_latency_ns
        };
        if let Some(e) = &mut self.energy {
            e.set(c, exec, Activity::Executing);
        }
        exec
    }

    /// The hardware's auto-demotion of a requested state.
    fn demote(&self, c: usize, requested: usize) -> usize {
        let Some(d) = &self.auto_demotion else {
            return requested;
        };
        if requested <= d.demote_to {
            return requested;
        }
        let cpu = &self.cpus[c];
        let window = (d.window as usize).min(cpu.residencies.len());
        if cpu.residency_idx < window {
            return requested;
        }
        let sum: u64 = (0..window)
            .map(|k| cpu.residencies[(cpu.residency_idx - 1 - k) % cpu.residencies.len()])
            .sum();
        if sum / window as u64 <= d.min_mean_residency_ns {
            d.demote_to
        } else {
            requested
        }
    }

    fn next_event_input(&self, c: usize) -> NextEventInput {
        let cpu = &self.cpus[c];
        let next_wheel = match cpu.wheel.next_expiry(false) {
            Some(j) => self.tk.jiffy_to_mono(j),
            None => NEVER,
        };
        NextEventInput {
            basemono: self.tk.last_jiffies_update,
            tick_nsec: self.tick_nsec,
            next_wheel,
            needs_tick: cpu.timer_softirq,
            tick_stopped: cpu.ts.stopped,
            is_duty: self.tk.duty == Duty::Cpu(cpu.id),
            duty_held: self.tk.duty != Duty::None,
            was_last_holder: self.tk.last_holder == Some(cpu.id),
            max_deferment: self.tk.max_deferment_ns,
            aggressive: self.aggressive,
        }
    }

    /// The idle-tick gate (`can_stop_idle_tick`).
    fn can_stop_idle_tick(&self, c: usize) -> bool {
        if !self.nohz_idle {
            return false;
        }
        // With nohz_full configured the duty holder keeps ticking, unless aggressive.
        !(self.any_nohz_full && !self.aggressive && self.tk.duty == Duty::Cpu(c as u32))
    }

    /// One iteration of the idle loop at `now`: governor, tick decision, state entry.
    fn enter_idle(&mut self, c: usize, mut now: Time) {
        self.cpus[c].ts.inidle = true;
        self.cpus[c].running = Running::Idle;
        if self.idle_mode == IdleOverride::Poll {
            // idle=poll: restart the tick if stopped and spin; no C-state, no tick stop.
            if self.cpus[c].ts.stopped {
                now = self.tick_restart(c, now);
            }
            self.cpus[c].idle = Some(IdleStay {
                requested: 0,
                actual: 0,
                since: now,
                polling: true,
            });
            self.account_busy(c, now);
            self.cpus[c].busy_until(now);
            return;
        }
        let no_driver = self.cpuidle_off || self.states.len() <= 1;
        let gate = self.can_stop_idle_tick(c);
        // The next-event computation serves both the governor's sleep length and the stop
        // decision; the governor changes nothing it depends on.
        let ne = next_event(&self.next_event_input(c));
        let (state, stop_tick) = if no_driver {
            (self.states.len().saturating_sub(1).min(1), true)
        } else {
            let cpu = &self.cpus[c];
            let stop_target = match ne {
                Some(e) => e,
                None => cpu.hrt.hard_expires(cpu.tick_timer),
            };
            let other = cpu.hrt.next_hard_expiry_except(cpu.tick_timer);
            let delta_next = cpu.dev.next_event.saturating_sub(now);
            // A CPU that may not stop its tick reports the time to its next programmed event.
            let sleep_length = if gate {
                stop_target.min(other).saturating_sub(now)
            } else {
                delta_next
            };
            let input = SelectInput {
                sleep_length_ns: sleep_length,
                delta_next_ns: delta_next,
                tick_stopped: cpu.ts.stopped,
                latency_req_ns: u64::MAX,
                tick_period_ns: self.tick_nsec,
            };
            let states = &self.states;
            let sel = self.cpus[c].gov.select(states, &input);
            (sel.state, sel.stop_tick)
        };
        if gate && (stop_tick || self.cpus[c].ts.stopped) {
            now += self.costs.tick_stop_ns;
            self.cpus[c].ts.idle_calls += 1;
            if let Some(expires) = ne {
                self.cpus[c].ts.idle_sleeps += 1;
                now = self.tick_stop(c, expires, now);
            }
        }
        let polling = self.states[state].polling;
        let actual = if polling {
            state
        } else {
            self.demote(c, state)
        };
        let cpu = &mut self.cpus[c];
        cpu.cstates[state].usage += 1;
        cpu.idle = Some(IdleStay {
            requested: state as u8,
            actual: actual as u8,
            since: now,
            polling,
        });
        if polling {
            let limit = cpu.gov.poll_limit_ns(&self.states, self.tick_nsec);
            cpu.slots[SLOT_POLL] = now + limit.max(1);
        }
        self.account_busy(c, now);
        let act = if polling {
            Activity::Executing
        } else {
            Activity::Idle(actual as u8)
        };
        if let Some(e) = &mut self.energy {
            e.set(c, now, act);
        }
        self.cpus[c].busy_until(now);
    }

    fn account_busy(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        if self.window_open {
            cpu.busy_ns += now.saturating_sub(cpu.busy_since.max(self.window_start));
        }
        cpu.busy_since = now;
    }

    fn poll_timeout(&mut self, c: usize, t: Time) {
        let now = self.idle_wake(c, t, true);
        self.enter_idle(c, now);
    }

    // ----- tick stop / restart -----------------------------------------------------------

    /// Stops (or re-targets) the tick until `expires`; returns the time after the work.
    fn tick_stop(&mut self, c: usize, expires: Time, mut now: Time) -> Time {
        let id = c as u32;
        if self.tk.duty == Duty::Cpu(id) {
            self.tk.set_duty(Duty::None);
            self.tk.last_holder = Some(id);
        } else if self.tk.duty != Duty::None && self.tk.last_holder == Some(id) {
            self.tk.last_holder = None;
        }
        let window = self.window_start;
        let cpu = &mut self.cpus[c];
        let armed = expires == NEVER || cpu.hrt.is_queued(cpu.tick_timer);
        if cpu.ts.stopped && cpu.ts.next_tick == expires && armed {
            return now;
        }
        let pending_tick = cpu.hrt.soft_expires(cpu.tick_timer);
        cpu.ts.mark_stopped(now.max(window), pending_tick);
        if expires == NEVER {
            cpu.hrt.cancel(cpu.tick_timer);
        } else {
            cpu.hrt.start(cpu.tick_timer, expires, 0);
        }
        cpu.ts.next_tick = expires;
        now = self.reprogram(c, now);
        now
    }

    /// Restarts the tick on its saved phase; returns the time after the work.
    fn tick_restart(&mut self, c: usize, mut now: Time) -> Time {
        now = self.catch_up_jiffies(c, now);
        now += self.costs.tick_restart_ns;
        let window = self.window_start;
        let cpu = &mut self.cpus[c];
        let last = cpu.ts.last_tick;
        cpu.ts.mark_running(now, window);
        let e = restart_expiry(last, now, self.tick_nsec);
        cpu.hrt.start(cpu.tick_timer, e, 0);
        self.reprogram(c, now)
    }

    /// Reprograms the device for the first hrtimer if it changed (outside the interrupt).
    fn reprogram(&mut self, c: usize, mut now: Time) -> Time {
        let cpu = &mut self.cpus[c];
        if cpu.hrt.in_hrtirq || cpu.hrt.hang_detected {
            return now;
        }
        let next = cpu.hrt.next_hard_expiry();
        if next == cpu.hrt.expires_next {
            return now;
        }
        cpu.hrt.expires_next = next;
        if next != NEVER {
            now += self.costs.clockevent_program_ns;
        }
        let fire = match cpu.dev.program(next, now, true) {
            Ok(f) => f,
            Err(_) => now + cpu.dev.min_delta_ns,
        };
        cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
        now
    }

    /// Jiffies catch-up on interrupt entry / tick restart of a CPU whose tick was stopped.
    fn catch_up_jiffies(&mut self, c: usize, mut now: Time) -> Time {
        self.tk.observe_reader(now);
        if self.tk.is_due(now) {
            now = self.jiffies_write(c, now);
        }
        now
    }

    /// The jiffies + wall-time write section on `c` (duty tick or idle-exit catch-up): the
    /// timekeeping seqlock's write side, queued behind any writer inside.
    fn jiffies_write(&mut self, c: usize, now: Time) -> Time {
        let n = self.tk.update_jiffies(now);
        let hold = self.costs.jiffies_update_ns + n * self.costs.jiffies_catch_up_per_tick_ns;
        let socket = self.cpus[c].socket;
        let wait = self.xtime.write(now, hold, c as u32, socket, self.transfer);
        self.note_lock_wait(c, wait);
        now + wait + hold
    }

    #[inline]
    fn note_lock_wait(&mut self, c: usize, wait: u64) {
        let cpu = &mut self.cpus[c];
        cpu.lock_wait_ns += wait;
        cpu.max_lock_wait_ns = cpu.max_lock_wait_ns.max(wait);
    }

    // ----- interrupts ------------------------------------------------------------------

    fn device_interrupt(&mut self, c: usize, t: Time) {
        self.cpus[c].slots[SLOT_DEVICE] = NEVER;
        let was_idle = if self.cpus[c].waking {
            // Second half of a wake-up: the exit latency has passed, the handler runs now.
            self.cpus[c].waking = false;
            true
        } else {
            self.cpus[c].dev.fired();
            let idle = self.cpus[c].idle.is_some();
            if idle {
                let exec = self.idle_wake(c, t, false);
                if exec > t {
                    // The CPU spends the exit latency leaving its C-state; the handler (and
                    // everything it does to shared state) happens at `exec`, as its own event.
                    self.cpus[c].waking = true;
                    self.cpus[c].slots[SLOT_DEVICE] = exec;
                    return;
                }
            }
            idle
        };
        let mut now = t;
        let start = now;
        self.cpus[c].loc += 1;
        now += self.costs.irq_entry_exit_ns / 2;
        if !was_idle && self.cpus[c].nohz_full && self.cpus[c].running != Running::Idle {
            now += crate::kernel::context_tracking::transition_overhead(&self.costs, true);
        }
        if self.cpus[c].ts.stopped {
            now = self.catch_up_jiffies(c, now);
        }
        now = self.hrtimer_interrupt(c, now);
        if self.cpus[c].timer_softirq {
            now = self.run_timer_softirq(c, now);
        }
        now += self.costs.irq_entry_exit_ns / 2;
        let irq_ns = now - start;
        self.cpus[c].max_irq_ns = self.cpus[c].max_irq_ns.max(irq_ns);
        self.after_interrupt(c, t, now, was_idle);
    }

    /// The hrtimer expiry loop with the re-arm/retry/hang rule.
    fn hrtimer_interrupt(&mut self, c: usize, mut now: Time) -> Time {
        let entry = now;
        self.cpus[c].hrt.nr_events += 1;
        let mut passes = 0;
        loop {
            self.cpus[c].hrt.in_hrtirq = true;
            self.cpus[c].hrt.expires_next = NEVER;
            while let Some(id) = self.cpus[c].hrt.pop_expired(now) {
                now = self.run_hrtimer(c, id, now);
            }
            let cpu = &mut self.cpus[c];
            cpu.hrt.in_hrtirq = false;
            let next = cpu.hrt.next_hard_expiry();
            cpu.hrt.expires_next = next;
            if next != NEVER {
                now += self.costs.clockevent_program_ns;
            }
            match cpu.dev.program(next, now, false) {
                Ok(fire) => {
                    cpu.hrt.hang_detected = false;
                    cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    return now;
                }
                Err(_) => {
                    passes += 1;
                    cpu.hrt.nr_retries += 1;
                    if passes < HRTIMER_MAX_PASSES {
                        continue;
                    }
                    cpu.hrt.nr_hangs += 1;
                    cpu.hrt.hang_detected = true;
                    let delta = now - entry;
                    cpu.hrt.max_hang_time = cpu.hrt.max_hang_time.max(delta);
                    let backoff = delta.min(HANG_BACKOFF_CAP_NS);
                    let fire = cpu
                        .dev
                        .program(now + backoff, now, true)
                        .unwrap_or(now + backoff);
                    cpu.hrt.expires_next = now + backoff;
                    cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    if !self.hang_reported {
                        self.hang_reported = true;
                        let text = format!("hrtimer: interrupt took {delta} ns");
                        self.messages.push(if self.aggressive {
                            KernelMessage::ticklab(
                                now,
                                format!("{text} (message suppressed by nohz_full_aggressive)"),
                            )
                        } else {
                            KernelMessage::kernel(now, text)
                        });
                    }
                    return now;
                }
            }
        }
    }

    fn run_hrtimer(&mut self, c: usize, id: TimerId, mut now: Time) -> Time {
        let func = self.cpus[c].hrt.func(id);
        match func {
            TimerFn::Tick => now = self.tick_sched_timer(c, id, now),
            TimerFn::FrameWake(w) => {
                now += self.costs.hrtimer_callback_ns;
                let cpu = &mut self.cpus[c];
                debug_assert_eq!(cpu.frame, w);
                if !cpu.frame_runnable {
                    cpu.frame_runnable = true;
                    cpu.rq.nr_fifo += 1;
                }
            }
            TimerFn::Background(s) => {
                now += self.costs.hrtimer_callback_ns;
                let src = &mut self.sources[s as usize];
                src.expiries += 1;
                let (period, mean, slack, wakes) =
                    (src.period_ns, src.mean_ns, src.slack_ns, src.wakes_task);
                let cpu = &mut self.cpus[c];
                let soft = cpu.hrt.soft_expires(id);
                let next = match period {
                    Some(p) => forward(soft, now, p).expires,
                    None => now + cpu.rng.exp_ns(mean),
                };
                cpu.hrt.start(id, next, slack);
                if wakes {
                    self.wake_task(c);
                }
            }
        }
        now
    }

    /// The tick callback.
    fn tick_sched_timer(&mut self, c: usize, id: TimerId, mut now: Time) -> Time {
        let cpu_id = c as u32;
        // Duty: a housekeeping CPU whose tick fires while nobody holds the duty takes it.
        if self.tk.duty == Duty::None && self.cpus[c].housekeeping {
            self.tk.set_duty(Duty::Cpu(cpu_id));
        }
        // (a) ktime_get: read the timekeeping seqlock; spins while the writer is inside.
        let socket = self.cpus[c].socket;
        let mut seen = self.cpus[c].xtime_seen;
        let spin = self
            .xtime
            .read(now, &mut seen, cpu_id, socket, self.transfer);
        self.cpus[c].xtime_seen = seen;
        let mut waited = spin;
        now += self.costs.xtime_read_ns + spin;
        // (b) the duty CPU's jiffies + wall-time write section (one xtime_lock up to 3.7; from
        // 3.8 jiffies_lock, taken by the duty alone, then the timekeeper seqcount: the same
        // section for the readers, whose wait is only the timekeeper part, modelled as all).
        if self.tk.duty == Duty::Cpu(cpu_id) && self.tk.is_due(now) {
            now = self.jiffies_write(c, now);
        }
        // (c) RCU quiescent-state report into the leaf rcu_node (simplification: every tick;
        // the kernel reports once per grace period per CPU, and a busy machine starts grace
        // periods every few ticks).
        let leaf = c / self.rcu_fanout as usize;
        let hold = self.costs.rcu_node_hold_ns;
        let wait = self.rcu_leaves[leaf].acquire(now, hold, cpu_id, socket, self.transfer);
        waited += wait;
        now += wait + hold;
        self.note_lock_wait(c, waited);
        let jiffies = self.tk.jiffies;
        let cpu = &mut self.cpus[c];
        cpu.ts.ticks += 1;
        now += self.costs.tick_handler_ns;
        if cpu.wheel.next_expiry(true).is_some_and(|j| j <= jiffies) {
            cpu.timer_softirq = true;
        }
        if !cpu.ts.stopped {
            let next = forward(cpu.hrt.soft_expires(id), now, self.tick_nsec).expires;
            cpu.hrt.start(id, next, 0);
        }
        now
    }

    /// The TIMER softirq: runs expired wheel timers.
    fn run_timer_softirq(&mut self, c: usize, mut now: Time) -> Time {
        let jiffies = self.tk.jiffies;
        let cpu = &mut self.cpus[c];
        cpu.timer_softirq = false;
        let mut expired = std::mem::take(&mut cpu.expired);
        expired.clear();
        cpu.wheel.advance(jiffies, |id| expired.push(id));
        for &wid in &expired {
            now += self.costs.wheel_timer_ns;
            let s = self.cpus[c].wheel_fns[wid.0 as usize];
            let src = &mut self.sources[s as usize];
            src.expiries += 1;
            let (period, mean, deferrable, wakes) =
                (src.period_ns, src.mean_ns, src.deferrable, src.wakes_task);
            let cpu = &mut self.cpus[c];
            let delay_ns = match period {
                Some(p) => p,
                None => cpu.rng.exp_ns(mean),
            };
            let delay_j = delay_ns.div_ceil(self.tick_nsec).max(1);
            cpu.wheel.add(wid, jiffies + delay_j, deferrable);
            if wakes {
                self.wake_task(c);
            }
        }
        self.cpus[c].expired = expired;
        now
    }

    /// A background task becomes runnable on `c`.
    fn wake_task(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        cpu.bg_runnable += 1;
        cpu.rq.nr_fair += 1;
        // On a busy nohz_full CPU with a stopped tick, the SCHED dependency appears: the
        // 0 -> 1 transition kicks the CPU with irq_work (IWI); the restart happens at exit.
        if cpu.nohz_full
            && cpu.running != Running::Idle
            && !cpu.rq.can_stop_tick()
            && cpu.ts.stopped
        {
            cpu.iwi += 1;
        }
    }

    /// After the interrupt handler: schedule, re-evaluate the tick, or go back to idle.
    fn after_interrupt(&mut self, c: usize, t: Time, mut now: Time, was_idle: bool) {
        if was_idle {
            let cpu = &self.cpus[c];
            if cpu.frame_runnable || cpu.bg_runnable > 0 || cpu.hogs > 0 {
                now = self.idle_exit(c, now);
                self.switch_to_next(c, now);
            } else {
                self.enter_idle(c, now);
            }
            return;
        }
        // Interrupted a running task: it is delayed by the interrupt.
        let irq = now - t;
        let cpu = &mut self.cpus[c];
        if matches!(cpu.running, Running::Background | Running::Frame)
            && cpu.slots[SLOT_TASK] != NEVER
        {
            cpu.slots[SLOT_TASK] += irq;
        }
        if cpu.frame_runnable && cpu.running != Running::Frame {
            // SCHED_FIFO wake-up preemption of whatever runs; a background task resumes later.
            if cpu.running == Running::Background && cpu.slots[SLOT_TASK] != NEVER {
                cpu.bg_remaining = cpu.slots[SLOT_TASK].saturating_sub(now).max(1);
                cpu.slots[SLOT_TASK] = NEVER;
            }
            now += self.costs.context_switch_ns;
            self.switch_to_next(c, now);
        } else if cpu.running == Running::Hog && cpu.bg_runnable > 0 {
            // Wakeup preemption: the short task runs now, the hog waits.
            now += self.costs.context_switch_ns;
            self.switch_to_next(c, now);
        }
        now = self.nohz_full_update(c, now);
        self.cpus[c].busy_until(now);
    }

    /// tick_nohz_idle_exit: leave the idle loop because a task is runnable.
    fn idle_exit(&mut self, c: usize, mut now: Time) -> Time {
        self.cpus[c].ts.inidle = false;
        if self.cpus[c].ts.stopped {
            if self.cpus[c].nohz_full {
                now = self.nohz_full_update(c, now);
            } else {
                now = self.tick_restart(c, now);
            }
        }
        now + self.costs.context_switch_ns
    }

    /// Picks what runs next on `c` at `now`: the frame worker (SCHED_FIFO) first, then a
    /// runnable background task, then a hog.
    fn switch_to_next(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        cpu.busy_until(now);
        if cpu.idle.is_some() {
            return;
        }
        if cpu.frame_runnable {
            let w = &self.workers[cpu.frame as usize];
            cpu.running = Running::Frame;
            cpu.slots[SLOT_TASK] = now + self.frame_groups[w.group].work_ns;
        } else if cpu.bg_runnable > 0 {
            cpu.running = Running::Background;
            let run = if cpu.bg_remaining > 0 {
                std::mem::take(&mut cpu.bg_remaining)
            } else {
                self.costs.background_task_ns
            };
            cpu.slots[SLOT_TASK] = now + run;
        } else if cpu.hogs > 0 {
            cpu.running = Running::Hog;
            cpu.slots[SLOT_TASK] = NEVER;
        }
    }

    /// The full-dynticks evaluation at interrupt exit on a busy nohz_full CPU.
    fn nohz_full_update(&mut self, c: usize, now: Time) -> Time {
        let cpu = &self.cpus[c];
        if !cpu.nohz_full || !self.nohz_idle {
            return now;
        }
        if cpu.rq.can_stop_tick() {
            match next_event(&self.next_event_input(c)) {
                Some(e) => self.tick_stop(c, e, now),
                None => now,
            }
        } else if cpu.ts.stopped {
            self.cpus[c].ts.dep_sched += 1;
            self.tick_restart(c, now)
        } else {
            now
        }
    }

    /// The frame worker on `c` finished its frame at `t`: record it, then start the next frame
    /// at once if its start has passed (overrun), else sleep to it. Returns the time after the
    /// sleep call, or `None` if the worker keeps the CPU.
    fn frame_done(&mut self, c: usize, t: Time) -> Option<Time> {
        let w = self.cpus[c].frame as usize;
        let worker = &mut self.workers[w];
        let g = &mut self.frame_groups[worker.group];
        let k = worker.k;
        debug_assert_eq!(worker.start, g.start(k));
        let jitter = t.saturating_sub(worker.start + g.work_ns);
        let next = k + 1;
        let next_start = g.next_start(k, worker.start, &mut worker.rem);
        worker.start = next_start;
        let overrun = t > next_start;
        if self.window_open {
            worker
                .stats
                .record(k, jitter as i64, overrun, self.flier_ns as i64);
            g.hist.saturating_record(jitter.max(1));
        }
        worker.k = next;
        let more = next < g.n_frames;
        let work_ns = g.work_ns;
        let timer = worker.timer;
        let cpu = &mut self.cpus[c];
        if more && next_start <= t {
            // Overrun: the next frame is already due; the worker goes straight on.
            cpu.slots[SLOT_TASK] = t + work_ns;
            return None;
        }
        cpu.frame_runnable = false;
        cpu.rq.nr_fifo -= 1;
        cpu.slots[SLOT_TASK] = NEVER;
        // clock_nanosleep(TIMER_ABSTIME) to the next start, slack 0 (RT task).
        let mut now = t + self.costs.syscall_ns;
        if more {
            cpu.hrt.start(timer, next_start, 0);
            now = self.reprogram(c, now);
        }
        Some(now)
    }

    /// The short task on `c` finished.
    fn task_done(&mut self, c: usize, t: Time) {
        let mut t = t;
        if self.cpus[c].running == Running::Frame {
            match self.frame_done(c, t) {
                None => {
                    self.cpus[c].busy_until(t);
                    return;
                }
                Some(now) => t = now,
            }
            let now = t + self.costs.context_switch_ns;
            let cpu = &self.cpus[c];
            if cpu.bg_runnable > 0 || cpu.hogs > 0 {
                self.cpus[c].running = Running::Idle;
                self.switch_to_next(c, now);
            } else {
                self.enter_idle(c, now);
            }
            return;
        }
        let cpu = &mut self.cpus[c];
        cpu.slots[SLOT_TASK] = NEVER;
        if cpu.running == Running::Background {
            cpu.bg_runnable -= 1;
            cpu.rq.nr_fair -= 1;
        }
        let now = t + self.costs.context_switch_ns;
        if cpu.bg_runnable > 0 || cpu.hogs > 0 {
            self.switch_to_next(c, now);
            // The SCHED dependency may have cleared; it takes effect at the next interrupt exit.
        } else {
            self.enter_idle(c, now);
        }
    }

    // ----- report --------------------------------------------------------------------------

    /// Builds the report at the end of the run.
    pub fn report(&mut self) -> Report {
        let end = self.end.max(self.now);
        if !self.window_open {
            self.open_window(self.window_start.min(end));
        }
        let duration_ns = end - self.window_start;
        let mut cpus = Vec::with_capacity(self.cpus.len());
        for c in 0..self.cpus.len() {
            let cpu = &self.cpus[c];
            let mut stopped = cpu.ts.stopped_ns;
            if cpu.ts.stopped {
                stopped += end.saturating_sub(cpu.ts.stopped_since.max(self.window_start));
            }
            let mut busy = cpu.busy_ns;
            let mut cstates: Vec<StateCounters> = cpu.cstates.clone();
            match cpu.idle {
                Some(stay) => {
                    cstates[stay.requested as usize].time_ns += end.saturating_sub(stay.since)
                }
                None => busy += end.saturating_sub(cpu.busy_since.max(self.window_start)),
            }
            let role = if !cpu.housekeeping {
                CpuRole::NohzFull
            } else if self.tk.duty == Duty::Cpu(cpu.id) || self.tk.last_holder == Some(cpu.id) {
                CpuRole::Timekeeping
            } else {
                CpuRole::Housekeeping
            };
            cpus.push(CpuReport {
                cpu: cpu.id,
                role,
                loc: cpu.loc,
                res: None,
                cal: None,
                iwi: cpu.iwi,
                ticks: Some(cpu.ts.ticks),
                tick_stopped_ns: Some(stopped),
                busy_ns: Some(busy),
                idle_states: self
                    .states
                    .iter()
                    .zip(&cstates)
                    .map(|(s, k)| IdleStateReport {
                        name: s.name.to_string(),
                        usage: k.usage,
                        time_ns: k.time_ns,
                        above: k.above,
                        below: k.below,
                    })
                    .collect(),
            });
        }
        let secs = duration_ns as f64 * 1e-9;
        let energy = self
            .energy
            .as_mut()
            .map(|meter| energy_report(meter.finish(end), secs, self.power_limit_w));
        let tks = self.tk.stats;
        let timekeeping = TimekeepingReport {
            max_jiffies_gap_ns: tks.max_gap_ns,
            max_jiffies_catch_up: tks.max_catch_up,
            max_reader_staleness_ns: tks.max_reader_staleness_ns,
            mean_coarse_staleness_ns: self.tk.mean_staleness(end),
            duty_handovers: tks.handovers,
        };
        let hrtimer = HrtimerReport {
            nr_events: self.cpus.iter().map(|c| c.hrt.nr_events).sum(),
            nr_retries: self.cpus.iter().map(|c| c.hrt.nr_retries).sum(),
            nr_hangs: self.cpus.iter().map(|c| c.hrt.nr_hangs).sum(),
            max_hang_time_ns: self
                .cpus
                .iter()
                .map(|c| c.hrt.max_hang_time)
                .max()
                .unwrap_or(0),
            max_irq_ns: self.cpus.iter().map(|c| c.max_irq_ns).max().unwrap_or(0),
        };
        let mut workloads = Vec::new();
        if !self.hog_cpus.is_empty() {
            workloads.push(WorkloadResult::Hogs {
                cpus: self.hog_cpus.clone(),
            });
        }
        for g in &self.frame_groups {
            workloads.push(WorkloadResult::Frames(group_report(
                g,
                &self.workers,
                self.flier_ns,
            )));
        }
        let stats = |lock: LockName, l: &ContendedLock| LockReport {
            lock,
            acquisitions: l.acquisitions,
            contended: l.contended,
            wait_ns: l.wait_ns,
        };
        let mut leaves = ContendedLock::new();
        for l in &self.rcu_leaves {
            leaves.acquisitions += l.acquisitions;
            leaves.contended += l.contended;
            leaves.wait_ns += l.wait_ns;
        }
        let locks = LocksReport {
            locks: vec![
                stats(
                    if self.xtime_lock_era {
                        LockName::XtimeLock
                    } else {
                        LockName::JiffiesLock
                    },
                    &self.xtime.writer,
                ),
                stats(
                    LockName::RcuNodeLeaves {
                        leaves: self.rcu_leaves.len() as u32,
                        fanout: self.rcu_fanout,
                    },
                    &leaves,
                ),
            ],
            tick_wait_ns: self.cpus.iter().map(|c| c.lock_wait_ns).sum(),
            max_tick_wait_ns: self
                .cpus
                .iter()
                .map(|c| c.max_lock_wait_ns)
                .max()
                .unwrap_or(0),
        };
        let background = self
            .sources
            .iter()
            .filter(|s| s.expiries > 0)
            .map(|s| BackgroundReport {
                name: s.name.clone(),
                kind: s.kind,
                expiries: s.expiries,
            })
            .collect();
        Report {
            schema_version: ticklab_schema::report::REPORT_SCHEMA_VERSION,
            source: Source::Twin { seed: self.seed },
            label: self.scenario_name.clone(),
            machine: self.machine_name.clone(),
            cmdline: self.cmdline.clone(),
            hz: self.hz,
            duration_ns,
            cpus,
            energy,
            messages: self.messages.clone(),
            timekeeping: Some(timekeeping),
            hrtimer: Some(hrtimer),
            locks: Some(locks),
            background,
            workloads,
            warnings: Vec::new(),
        }
    }
}

/// The report's energy section from the meter's totals over `secs` (RAPL PL1 applied).
fn energy_report(
    totals: crate::hw::energy::EnergyTotals,
    secs: f64,
    power_limit_w: Option<f64>,
) -> EnergyReport {
    let raw_j = totals.package_j + totals.core_active_j + totals.core_idle_j + totals.wake_j;
    let mut breakdown = vec![
        ("package".to_string(), totals.package_j),
        ("cores_active".to_string(), totals.core_active_j),
        ("cores_idle".to_string(), totals.core_idle_j),
        ("wakeups".to_string(), totals.wake_j),
    ];
    let mut joules = raw_j;
    if let Some(pl) = power_limit_w
        && secs > 0.0
        && raw_j / secs > pl
    {
        // RAPL holds the running average at PL1 by lowering the busy cores' frequency.
        let cut = raw_j - pl * secs;
        breakdown.push(("rapl_pl1_cut".to_string(), -cut));
        joules = pl * secs;
    }
    EnergyReport {
        watts: if secs > 0.0 { joules / secs } else { 0.0 },
        joules,
        package_idle_fraction: if totals.measured_ns > 0 {
            totals.package_idle_ns as f64 / totals.measured_ns as f64
        } else {
            0.0
        },
        breakdown,
        modelled: true,
    }
}

/// Runs a scenario to completion and returns its report.
pub fn simulate(scenario: &Scenario, progress: impl FnMut(u64)) -> Result<Report, SimError> {
    let mut sim = Sim::new(scenario)?;
    sim.run(progress);
    Ok(sim.report())
}

impl From<CmdlineError> for SimError {
    fn from(e: CmdlineError) -> Self {
        SimError::Cmdline(e)
    }
}
