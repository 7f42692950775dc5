//! The observation seam: what the event loop reports as it happens.
//!
//! The loop calls [`Observer::on`] with an [`Event`] at each point a kernel engineer would put
//! a tracepoint (interrupt entry/exit, tick stopped/restarted, idle state entered/left, duty
//! changed, lock waited, frame started/finished, task switched, ...). Listeners are static
//! types, never trait objects: [`Sim`](super::Sim) is generic over its extra listener, so with
//! [`NoTimeline`] every call compiles to nothing, and the window statistics
//! ([`super::stats::WindowStats`]), which the report always needs, are one more listener the
//! loop calls directly. A second listener (a timeline export) plugs in as
//! `Sim<MyTimeline>`, or several as a tuple `(A, B)`. Nothing here allocates.

use crate::engine::Time;
use crate::kernel::timekeeping::Duty;

/// What a CPU is executing outside interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Running {
    /// The idle task (in a C-state, polling, or between states).
    Idle,
    /// A CPU hog (never finishes).
    Hog,
    /// A background task that runs until `task_end`.
    Background,
    /// The CPU's frame worker, computing until `SLOT_TASK`.
    Frame,
    /// The syscall loop, whose last call returns at `SLOT_TASK`.
    Syscall,
}

/// Something that happened in the modelled machine at a time.
///
/// CPUs are numbered as in the scenario; `u8` states index the machine's idle states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// A device interrupt's handler starts (`irq_enter`; one LOC).
    IrqEntry {
        /// The CPU.
        cpu: u32,
    },
    /// The interrupt's handler ends (`irq_exit`) after `irq_ns` in the handler.
    IrqExit {
        /// The CPU.
        cpu: u32,
        /// Time from entry to exit (ns).
        irq_ns: u64,
    },
    /// `hrtimer_interrupt` runs (`.nr_events`).
    HrtimerInterrupt {
        /// The CPU.
        cpu: u32,
    },
    /// The expiry loop found its first timer already due and ran another pass (`.nr_retries`).
    HrtimerRetry {
        /// The CPU.
        cpu: u32,
    },
    /// The expiry loop hit its retry limit and backed off (`.nr_hangs`, `.max_hang_time`).
    HrtimerHang {
        /// The CPU.
        cpu: u32,
        /// How long the interrupt had run (ns).
        hang_ns: u64,
    },
    /// The tick handler ran (`tick_sched_timer`).
    Tick {
        /// The CPU.
        cpu: u32,
    },
    /// The periodic tick stopped.
    TickStopped {
        /// The CPU.
        cpu: u32,
    },
    /// The tick restarted on its saved phase.
    TickRestarted {
        /// The CPU.
        cpu: u32,
    },
    /// The jiffies duty changed hands.
    DutyChanged {
        /// The new holder.
        to: Duty,
    },
    /// The CPU entered an idle state.
    IdleEntered {
        /// The CPU.
        cpu: u32,
        /// The state the governor chose.
        state: u8,
        /// The state the hardware entered (after auto-demotion).
        actual: u8,
        /// `idle=poll`: the CPU spins outside cpuidle (no state usage is counted).
        idle_poll: bool,
    },
    /// The CPU left its idle state (interrupt arrival or POLL timeout).
    IdleLeft {
        /// The CPU.
        cpu: u32,
        /// The state the governor had chosen.
        state: u8,
        /// Time in the state (ns; from the window's start if it began earlier).
        residency_ns: u64,
        /// Residency shorter than the state's target (`above`).
        above: bool,
        /// Residency long enough for the next deeper state (`below`).
        below: bool,
    },
    /// A tick (or jiffies write) waited for shared locks or lines.
    LockWaited {
        /// The CPU.
        cpu: u32,
        /// The wait (ns; may be 0).
        wait_ns: u64,
    },
    /// A path other than the tick (a wake-up, a nohz entry or exit) waited for shared locks
    /// or lines.
    PathWaited {
        /// The CPU.
        cpu: u32,
        /// The longest single wait of the path (ns).
        wait_ns: u64,
    },
    /// A CPU took a shared lock (`lock_acquired` with lockstat's contention flag).
    LockAcquired {
        /// The CPU.
        cpu: u32,
        /// Which lock.
        lock: LockId,
        /// The wait: queueing plus the line transfer (ns).
        wait_ns: u64,
        /// The lock was held when the CPU arrived.
        contended: bool,
    },
    /// A background source's timer expired.
    SourceExpired {
        /// Index of the source in the scenario's background list; one past its end is the
        /// kernel's own remote scheduler tick (4.17 on, with nohz_full CPUs), named
        /// `sched_tick_remote` in the report.
        source: u16,
    },
    /// A task became runnable on a busy nohz_full CPU with a stopped tick: the SCHED tick
    /// dependency kicks it with an irq_work IPI.
    IrqWorkIpi {
        /// The CPU.
        cpu: u32,
    },
    /// The interrupt taken from a running task has finished on `cpu` (its exit path, a
    /// context switch and the nohz_full tick decision included): the task, or the one the
    /// interrupt switched to, runs again from here.
    IrqReturn {
        /// The CPU.
        cpu: u32,
    },
    /// A reschedule IPI's handler runs on `cpu` (a task was woken onto it from another CPU;
    /// one `RES`, not a `LOC`).
    ReschedIpi {
        /// The CPU.
        cpu: u32,
    },
    /// A function-call IPI's handler runs on `cpu`: the idle load balancer's kick (one `CAL`,
    /// not a `LOC`; modelled on PREEMPT_RT only, where its softirq wakes a task).
    CallFunctionIpi {
        /// The CPU.
        cpu: u32,
    },
    /// A frame worker was woken for frame `frame` (or went straight on after an overrun).
    FrameStarted {
        /// The CPU.
        cpu: u32,
        /// Frame number.
        frame: u64,
    },
    /// A frame worker finished frame `frame`.
    FrameFinished {
        /// The CPU.
        cpu: u32,
        /// Frame number.
        frame: u64,
        /// Lateness of the finish against the frame's deadline (ns).
        jitter_ns: u64,
    },
    /// A CPU whose lockless jiffies check passed went through the write side (emitted at its
    /// arrival): `updated` when it advanced jiffies, else it lost the check-then-lock race.
    JiffiesWrite {
        /// The CPU.
        cpu: u32,
        /// Queueing behind earlier writers plus the line transfer (ns).
        wait_ns: u64,
        /// It advanced jiffies.
        updated: bool,
        /// When it left the write section.
        left_at: u64,
    },
    /// `cpu` tried the leaf `rcu_node` lock to notice a new grace period and found it held
    /// (it read the lock word and will try again at its next tick).
    RcuTrylockFailed {
        /// The CPU.
        cpu: u32,
    },
    /// An RCU grace period started (`rcu_start_gp`) on `cpu`.
    RcuGpStarted {
        /// The CPU.
        cpu: u32,
    },
    /// `cpu` folded its load into the global load average (every `LOAD_FREQ`).
    LoadFolded {
        /// The CPU.
        cpu: u32,
    },
    /// The CPU switched to another task.
    TaskSwitched {
        /// The CPU.
        cpu: u32,
        /// What runs now.
        to: Running,
    },
    /// An hrtimer callback starts (`hrtimer_expire_entry`).
    HrtimerExpireEntry {
        /// The CPU.
        cpu: u32,
        /// Whose callback.
        callback: Callback,
    },
    /// The callback returned (`hrtimer_expire_exit`).
    HrtimerExpireExit {
        /// The CPU.
        cpu: u32,
    },
    /// A softirq handler starts (`softirq_entry`).
    SoftirqEntry {
        /// The CPU.
        cpu: u32,
        /// Which softirq.
        vec: SoftirqVec,
    },
    /// The softirq handler ends (`softirq_exit`).
    SoftirqExit {
        /// The CPU.
        cpu: u32,
        /// Which softirq.
        vec: SoftirqVec,
    },
}

/// Whose hrtimer callback runs ([`Event::HrtimerExpireEntry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Callback {
    /// The tick (`tick_sched_timer`).
    Tick,
    /// A background source (index in the scenario's background list).
    Source(u16),
    /// A frame worker's wake-up (`hrtimer_wakeup` of its `clock_nanosleep`).
    FrameWake,
}

/// The softirqs the loop runs (`enum` of `softirq_entry`'s `vec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoftirqVec {
    /// `TIMER_SOFTIRQ`: the timer wheel (the RCU softirq's work is charged inside the tick).
    Timer,
}

impl SoftirqVec {
    /// The name tracefs prints (`action=`).
    pub fn name(self) -> &'static str {
        match self {
            SoftirqVec::Timer => "TIMER",
        }
    }
}

/// The shared locks the tick takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockId {
    /// The timekeeping write side (`xtime_lock` up to 3.7, `jiffies_lock` + the timekeeper
    /// seqcount from 3.8).
    Timekeeping,
    /// A leaf `rcu_node` lock (its index).
    RcuNodeLeaf(u32),
    /// A shared line of the 3.0 era (docs/model.md "E2 mechanisms").
    Line(SharedLine),
}

/// The shared lines of the 3.0 era's tick, idle and RT paths, other than the locks above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedLine {
    /// The cpupri vector locks (`cpupri_set`).
    CpupriVectors,
    /// `nohz_cpu_mask` and `nohz.idle_cpus_mask` (entering/leaving nohz).
    NohzMasks,
    /// `nohz.first_pick_cpu` / `second_pick_cpu` (the tick's load-balance trigger).
    NohzPicks,
    /// `calc_load_tasks` and `calc_load_tasks_idle` (the `LOAD_FREQ` fold).
    CalcLoad,
}

impl SharedLine {
    /// Every line, in report order.
    pub const ALL: [SharedLine; 4] = [
        SharedLine::CpupriVectors,
        SharedLine::NohzMasks,
        SharedLine::NohzPicks,
        SharedLine::CalcLoad,
    ];
}

/// A listener of the event loop. Implementations must not allocate per event.
pub trait Observer {
    /// `ev` happened at `at`.
    #[inline(always)]
    fn on(&mut self, at: Time, ev: Event) {
        let _ = (at, ev);
    }
}

/// No extra listener (the default): every call compiles away.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimeline;

impl Observer for NoTimeline {}

impl<A: Observer, B: Observer> Observer for (A, B) {
    #[inline(always)]
    fn on(&mut self, at: Time, ev: Event) {
        self.0.on(at, ev);
        self.1.on(at, ev);
    }
}
