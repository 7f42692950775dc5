//! The trace's vocabulary: the slice kinds and the names of the instants and counters, which
//! the writer and the checker share.

/// Name of the idle task's slices (`swapper/N` in the kernel, `<idle>` in tracefs).
pub const IDLE_TASK: &str = "idle";
/// Instant: the periodic tick stopped.
pub const TICK_STOP: &str = "tick_stop";
/// Instant: the tick restarted.
pub const TICK_RESTART: &str = "tick_restart";
/// Instant: the jiffies duty (`tick_do_timer_cpu`) changed hands.
pub const DUTY_MOVED: &str = "jiffies duty moved";
/// Counter: time since jiffies was last advanced (µs).
pub const STALENESS: &str = "jiffies staleness (us)";
/// Counter: package power, averaged over the sampling interval (W).
pub const PACKAGE_POWER: &str = "package power (W)";

/// Default byte limit of one run's records (about 256 MiB of JSON).
pub const DEFAULT_LIMIT_BYTES: usize = 256 << 20;

/// What a slice on a CPU track is; written as its category (`cat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The task running on the CPU (the idle task included): always open, tiles the window.
    Task,
    /// An idle state (C-state) of the idle task.
    IdleState,
    /// An interrupt handler.
    Irq,
    /// A softirq.
    Softirq,
    /// An hrtimer callback.
    Hrtimer,
    /// A wait for a lock or a shared line.
    LockWait,
}

/// Every kind, outermost first: a slice may contain only slices of later kinds.
pub const KINDS: [Kind; 6] = [
    Kind::Task,
    Kind::IdleState,
    Kind::Irq,
    Kind::Softirq,
    Kind::Hrtimer,
    Kind::LockWait,
];

impl Kind {
    /// The `cat` field.
    pub fn category(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::IdleState => "idle_state",
            Kind::Irq => "irq",
            Kind::Softirq => "softirq",
            Kind::Hrtimer => "hrtimer",
            Kind::LockWait => "lock",
        }
    }
}
