//! The report schema shared by the twin and the host lab.
//!
//! A [`Report`] is what one run produced, whether it was simulated or measured: per-CPU
//! counters named like the kernel's (`LOC`, `RES`, `CAL`, `IWI`, ticks, tick-stopped time,
//! cpuidle usage/time/above/below), package energy, kernel messages, timekeeping staleness
//! and the workload tables. It is serialised as versioned JSON; bump
//! [`REPORT_SCHEMA_VERSION`] whenever a field changes meaning or disappears, and list the
//! change in `docs/schema.md`.
//!
//! Everything is typed: a count the producer does not measure or model is `None` ("not
//! modelled" / "not available"), never a measured 0, and no consumer reads a number or a
//! category back out of a message's text.

use serde::{Deserialize, Serialize};

pub use crate::wakeups::{CpuWakeups, KthreadRuns, count_wakeup, modal_cpu};

pub use ticklab_cmdline::{CpuRole, MessageOrigin};

use crate::scenario::TimerKind;

mod frame_table;
pub use frame_table::{
    FIRST_FLIERS, FrameGroupReport, FrameRow, FrameRowStats, HistogramBucket,
    JITTER_BUCKET_EDGES_NS, Percentiles, WakeupRow, WakeupRowStats, jitter_histogram,
    within_extremes,
};

/// Version of the JSON report schema. Adding optional fields keeps the version; renaming or
/// removing one bumps it.
pub const REPORT_SCHEMA_VERSION: u32 = 2;

/// Where a report's numbers come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Simulated by the twin with this seed.
    Twin {
        /// The seed of the run's single RNG.
        seed: u64,
    },
    /// Measured on a real Linux host.
    Host {
        /// `uname -n`.
        hostname: String,
        /// `uname -r`.
        kernel: String,
    },
}

/// One run, simulated or measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// Always [`REPORT_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Twin or host.
    pub source: Source,
    /// Scenario or run label.
    pub label: String,
    /// Machine name (preset name for the twin, hostname-derived for the host).
    pub machine: String,
    /// The kernel command line the run used, as written.
    pub cmdline: String,
    /// CONFIG_HZ.
    pub hz: u32,
    /// Length of the measured window in nanoseconds (warm-up excluded).
    pub duration_ns: u64,
    /// Per-CPU counters, in CPU order.
    pub cpus: Vec<CpuReport>,
    /// Package energy, when known.
    pub energy: Option<EnergyReport>,
    /// Messages the kernel printed (or, for the twin, would have printed).
    pub messages: Vec<KernelMessage>,
    /// How stale jiffies and coarse time got (twin only).
    pub timekeeping: Option<TimekeepingReport>,
    /// hrtimer interrupt statistics summed over CPUs.
    pub hrtimer: Option<HrtimerReport>,
    /// Shared locks the tick takes and how long ticks waited for them (twin only).
    pub locks: Option<LocksReport>,
    /// Background timer sources and how often they expired (twin only).
    pub background: Vec<BackgroundReport>,
    /// Workload-specific results.
    pub workloads: Vec<WorkloadResult>,
    /// Warnings about the measurement itself (contamination, missing counters).
    pub warnings: Vec<String>,
    /// OS noise seen by the busy tasks, per CPU and per source (`host noise`, or the twin
    /// when noise accounting is on); absent when not measured or modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::NoiseReport>,
    /// The PM QoS CPU latency limit (µs) held for the whole run, as a process holding
    /// `/dev/cpu_dma_latency` open sets it (cyclictest holds 0): no idle state whose exit
    /// latency exceeds it is entered. `None` when none was held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_dma_latency_us: Option<u32>,
    /// Measured CPUs whose time the run does not explain (host only): busy beyond what the
    /// workload explains, or stolen by the hypervisor. Every figure of such a CPU may show
    /// that load rather than the workload; the report's warnings say the same in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contamination: Vec<Contamination>,
    /// Where the run's coordinator thread woke (host only): after each of its polls it asks
    /// the kernel which CPU it runs on (`sched_getcpu`), one entry per CPU it woke on, in CPU
    /// order. Empty in twin reports and in host reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coordinator_wakeups: Vec<CpuWakeups>,
    /// The kernel threads that ran in the window (host only), each with its runs and where
    /// ([`KthreadRuns`]), in PID order; threads that did not run are left out. Empty in twin
    /// reports and in host reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kthread_runs: Vec<KthreadRuns>,
}

/// One CPU's contamination in a measured run ([`Report::contamination`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contamination {
    /// The CPU was busier than the workload explains by more than the tolerance (5 % of
    /// the window plus two `/proc/stat` ticks).
    OtherLoad {
        /// The CPU.
        cpu: u32,
        /// Busy share of the window, %.
        busy_pct: f64,
        /// The share the workload explains, %.
        explained_pct: f64,
    },
    /// The hypervisor stole more than [`STEAL_THRESHOLD_PCT`] of the window from the CPU.
    Steal {
        /// The CPU.
        cpu: u32,
        /// Steal share of the window, %.
        steal_pct: f64,
    },
}

/// Steal above this share of the window (%) contaminates a CPU's figures: the same 5 % as
/// other load. A guest on a shared cloud host loses a few percent routinely (this project's
/// Firecracker guest, quiet, 2.5-4 % in a calibration phase), which moves no interrupt count
/// and a cost by as much; above 5 % the hypervisor is a load of its own.
pub const STEAL_THRESHOLD_PCT: f64 = 5.0;

impl Contamination {
    /// The CPU contaminated.
    pub fn cpu(&self) -> u32 {
        match self {
            Contamination::OtherLoad { cpu, .. } | Contamination::Steal { cpu, .. } => *cpu,
        }
    }

    /// The warning's text (`CPU 1 was 99.9 % busy where the workload explains 0.0 %: other
    /// load contaminated the run`).
    pub fn text(&self) -> String {
        match self {
            Contamination::OtherLoad {
                cpu,
                busy_pct,
                explained_pct,
            } => format!(
                "CPU {cpu} was {busy_pct:.1} % busy where the workload explains {explained_pct:.1} %: other load contaminated the run"
            ),
            Contamination::Steal { cpu, steal_pct } => format!(
                "CPU {cpu}: the hypervisor stole {steal_pct:.1} % of the window (steal time)"
            ),
        }
    }
}

impl Report {
    /// A report of this schema version with its header filled and every table empty (no
    /// CPUs, no messages, no workloads, nothing not modelled or measured): the one
    /// constructor the twin, the host lab and tests start from before filling what they have.
    pub fn new(
        source: Source,
        label: impl Into<String>,
        machine: impl Into<String>,
        cmdline: impl Into<String>,
        hz: u32,
        duration_ns: u64,
    ) -> Report {
        Report {
            schema_version: REPORT_SCHEMA_VERSION,
            source,
            label: label.into(),
            machine: machine.into(),
            cmdline: cmdline.into(),
            hz,
            duration_ns,
            cpus: Vec::new(),
            energy: None,
            messages: Vec::new(),
            timekeeping: None,
            hrtimer: None,
            locks: None,
            background: Vec::new(),
            workloads: Vec::new(),
            warnings: Vec::new(),
            noise: None,
            cpu_dma_latency_us: None,
            contamination: Vec::new(),
            coordinator_wakeups: Vec::new(),
            kthread_runs: Vec::new(),
        }
    }

    /// Measured window in seconds.
    pub fn seconds(&self) -> f64 {
        self.duration_ns as f64 / 1e9
    }

    /// Local timer interrupts per second over the whole machine.
    pub fn loc_per_s(&self) -> f64 {
        let total: u64 = self.cpus.iter().map(|c| c.loc).sum();
        total as f64 / self.seconds()
    }
}

/// Per-CPU counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuReport {
    /// Logical CPU number.
    pub cpu: u32,
    /// Role of this CPU in the tick configuration.
    pub role: CpuRole,
    /// Local timer interrupts (x86 `LOC`, arm64 `arch_timer`).
    pub loc: u64,
    /// Reschedule IPIs (`RES`); `None` where not counted (the twin does not model IPIs).
    pub res: Option<u64>,
    /// Function-call IPIs (`CAL`); `None` where not counted (the twin does not model IPIs).
    pub cal: Option<u64>,
    /// irq_work interrupts (`IWI`).
    pub iwi: u64,
    /// Tick handler runs (sched_timer expiries), when known.
    pub ticks: Option<u64>,
    /// Nanoseconds the tick was stopped, when known.
    pub tick_stopped_ns: Option<u64>,
    /// Nanoseconds not idle (tasks, interrupts), when known.
    pub busy_ns: Option<u64>,
    /// cpuidle residency per state.
    pub idle_states: Vec<IdleStateReport>,
    /// Nanoseconds the hypervisor ran something else while this vCPU wanted to run
    /// (`/proc/stat` steal), host only; `None` where not read (the twin, an unreadable
    /// `/proc/stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// Times this CPU went idle in the window (`sched_goidle` of `/proc/schedstat`, host only,
    /// when the kernel's scheduler statistics are on): one per stretch of work it was woken
    /// for. `None` where not read (the twin, statistics off or not built).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_entries: Option<u64>,
}

/// Counters of one cpuidle state on one CPU (sysfs `usage`, `time`, `above`, `below`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdleStateReport {
    /// State name (`POLL`, `C1`, `C6`, ...).
    pub name: String,
    /// Times entered.
    pub usage: u64,
    /// Residency in nanoseconds.
    pub time_ns: u64,
    /// Woke before the target residency.
    pub above: u64,
    /// A deeper state would have fitted.
    pub below: u64,
}

/// Package energy over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnergyReport {
    /// Average package power in watts.
    pub watts: f64,
    /// Joules over the window.
    pub joules: f64,
    /// Fraction of time every core of the package was idle at once.
    pub package_idle_fraction: f64,
    /// Breakdown by component (name, joules), twin only.
    pub breakdown: Vec<(String, f64)>,
    /// True when the figure comes from a model, false when from RAPL.
    pub modelled: bool,
}

/// A message the kernel printed or would print.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelMessage {
    /// Simulated or boot time in nanoseconds (0 for boot messages).
    pub at_ns: u64,
    /// Whether the kernel prints it, or it is ticklab's own remark.
    pub origin: MessageOrigin,
    /// The text, without any origin prefix.
    pub text: String,
}

impl KernelMessage {
    /// A message the kernel prints (or would print).
    pub fn kernel(at_ns: u64, text: impl Into<String>) -> Self {
        KernelMessage {
            at_ns,
            origin: MessageOrigin::Kernel,
            text: text.into(),
        }
    }

    /// A remark of ticklab's own about the run.
    pub fn ticklab(at_ns: u64, text: impl Into<String>) -> Self {
        KernelMessage {
            at_ns,
            origin: MessageOrigin::Ticklab,
            text: text.into(),
        }
    }
}

/// Contention on the shared state every tick touches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LocksReport {
    /// Each modelled lock (or family of locks, summed).
    pub locks: Vec<LockReport>,
    /// Nanoseconds all CPUs' ticks spent waiting for shared locks and lines, summed.
    pub tick_wait_ns: u64,
    /// Longest such wait in one tick, in nanoseconds.
    pub max_tick_wait_ns: u64,
}

impl LocksReport {
    /// Tick lock waits in microseconds per second of the window, machine-wide.
    pub fn tick_wait_us_per_s(&self, seconds: f64) -> f64 {
        self.tick_wait_ns as f64 / 1e3 / seconds.max(1e-9)
    }
}

/// Which shared lock a [`LockReport`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LockName {
    /// The write side of `xtime_lock` (kernels before 3.8).
    XtimeLock,
    /// The write side of `jiffies_lock` plus the timekeeper seqcount (3.8 on).
    JiffiesLock,
    /// The leaf `rcu_node` locks, summed over the leaves.
    RcuNodeLeaves {
        /// Number of leaf locks.
        leaves: u32,
        /// CPUs per leaf (`rcu_fanout_leaf`).
        fanout: u32,
    },
    /// The cpupri vector locks (`cpupri_set`, kernels before 3.1).
    CpupriVectors,
    /// `nohz_cpu_mask` and `nohz.idle_cpus_mask` (entering and leaving nohz, 3.0 era).
    NohzMasks,
    /// `nohz.first_pick_cpu` / `second_pick_cpu` (the tick's idle-balance trigger, 3.0 era).
    NohzPicks,
    /// `calc_load_tasks` and `calc_load_tasks_idle` (the `LOAD_FREQ` load fold).
    CalcLoad,
}

impl std::fmt::Display for LockName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockName::XtimeLock => f.write_str("xtime_lock (write side)"),
            LockName::JiffiesLock => f.write_str("jiffies_lock + timekeeper seqcount (write side)"),
            LockName::RcuNodeLeaves { leaves, fanout } => {
                write!(f, "rcu_node leaves ({leaves} of fan-out {fanout})")
            }
            LockName::CpupriVectors => f.write_str("cpupri vector locks"),
            LockName::NohzMasks => f.write_str("nohz_cpu_mask + nohz.idle_cpus_mask"),
            LockName::NohzPicks => f.write_str("nohz first/second pick cpu"),
            LockName::CalcLoad => f.write_str("calc_load_tasks (+ _idle)"),
        }
    }
}

/// Acquisition statistics of one lock over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockReport {
    /// Which lock.
    pub lock: LockName,
    /// Times taken.
    pub acquisitions: u64,
    /// Times a taker had to wait.
    pub contended: u64,
    /// Nanoseconds waited in all.
    pub wait_ns: u64,
}

/// A modelled background timer source (scenario `[[kernel.sources]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackgroundReport {
    /// The source's name in the scenario.
    pub name: String,
    /// How it is armed.
    pub kind: TimerKind,
    /// Expiries in the window.
    pub expiries: u64,
}

/// What giving up the timekeeping duty cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimekeepingReport {
    /// Longest interval without a jiffies update, in nanoseconds.
    pub max_jiffies_gap_ns: u64,
    /// Largest number of jiffies added by one update.
    pub max_jiffies_catch_up: u64,
    /// Worst staleness of jiffies seen by a reader (interrupt entry), in nanoseconds.
    pub max_reader_staleness_ns: u64,
    /// Time-weighted mean staleness of coarse time, in nanoseconds.
    pub mean_coarse_staleness_ns: f64,
    /// Number of duty hand-overs.
    pub duty_handovers: u64,
}

/// hrtimer interrupt statistics (as in /proc/timer_list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HrtimerReport {
    /// `.nr_events` summed.
    pub nr_events: u64,
    /// `.nr_retries` summed.
    pub nr_retries: u64,
    /// `.nr_hangs` summed.
    pub nr_hangs: u64,
    /// Largest `.max_hang_time` in nanoseconds.
    pub max_hang_time_ns: u64,
    /// Longest single interrupt in nanoseconds.
    pub max_irq_ns: u64,
}

/// Results of one workload group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadResult {
    /// CPU hogs: nothing beyond the per-CPU counters.
    Hogs {
        /// CPUs that ran a hog.
        cpus: Vec<u32>,
    },
    /// A frame-scheduler group.
    Frames(FrameGroupReport),
    /// Ping-pong between two tasks.
    PingPong(PingPongReport),
    /// A syscall loop.
    Syscall(SyscallReport),
    /// A bulk-synchronous job.
    Bsp(crate::bsp::BspReport),
}

/// Ping-pong result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingPongReport {
    /// `futex` or `pipe`.
    pub method: crate::workload::PingPongMethod,
    /// CPUs of the two sides.
    pub cpus: (u32, u32),
    /// Round trips done.
    pub round_trips: u64,
    /// Nanoseconds per context switch (half a round trip).
    pub ns_per_switch: f64,
    /// Nanoseconds per round trip.
    pub ns_per_round_trip: f64,
}

/// What `ticklab sim --json` prints for a ping-pong workload, which runs in the guest
/// ping-pong model rather than the event loop: the model's own figures, no per-CPU counters.
///
/// The fields are in alphabetical order, the order this JSON has always had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuestPingPongRun {
    /// The kernel command line, as written.
    pub cmdline: String,
    /// VM exits per context switch, by exit reason (`hlt`, `msr_tsc_deadline`, ...): in the
    /// model's order for tables, written as a JSON object with its keys sorted.
    #[serde(with = "exits_by_name")]
    #[schemars(with = "std::collections::BTreeMap<String, f64>")]
    pub exits_per_switch: Vec<(String, f64)>,
    /// Guest CPU busy, % of one vCPU (two vCPUs: up to 200).
    pub guest_busy_pct: f64,
    /// Host CPU used by the vCPU threads, % of one CPU.
    pub host_cpu_pct: f64,
    /// Host CPU spent halt-polling, % of one CPU.
    pub host_poll_pct: f64,
    /// Machine name.
    pub machine: String,
    /// Nanoseconds per one-way context switch.
    pub ns_per_switch: f64,
    /// Always [`REPORT_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Context switches run (two per round trip).
    pub switches: u64,
    /// The workload's label.
    pub workload: String,
}

/// [`GuestPingPongRun::exits_per_switch`] as a JSON object with sorted keys.
mod exits_by_name {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub(super) fn serialize<S: Serializer>(v: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(|(k, x)| (k.as_str(), *x))
            .collect::<BTreeMap<_, _>>()
            .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, f64)>, D::Error> {
        Ok(BTreeMap::<String, f64>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

/// Syscall loop result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyscallReport {
    /// Which syscall (`getpid`).
    pub syscall: String,
    /// CPU it ran on, if pinned.
    pub cpu: Option<u32>,
    /// Calls made.
    pub calls: u64,
    /// Nanoseconds per call.
    pub ns_per_call: f64,
    /// Where the time of a call went, as the twin measured it (twin only; absent in host
    /// reports and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<SyscallBreakdown>,
}

/// The twin's account of a syscall loop: per call, in ns, parts that add up to `ns_per_call`
/// (`elapsed_ns / calls`), and the counts behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyscallBreakdown {
    /// CPU the loop ran on (placed by the scheduler when not pinned).
    pub ran_on: u32,
    /// It was pinned.
    pub pinned: bool,
    /// The last call returned inside the run (otherwise the figures cover the calls done).
    pub finished: bool,
    /// First call to last return, ns.
    pub elapsed_ns: u64,
    /// Entry, body and exit of the null syscall.
    pub entry_exit_ns: f64,
    /// RCU extended-quiescent-state exit and entry (nohz_full CPUs).
    pub rcu_eqs_ns: f64,
    /// vtime's per-transition part (nohz_full CPUs).
    pub vtime_ns: f64,
    /// The static-key / per-CPU flag test of context tracking (other CPUs).
    pub static_key_ns: f64,
    /// vtime accounting passes of pending time, spread over the calls.
    pub vtime_flush_ns: f64,
    /// Interrupts that landed in the loop, spread over the calls.
    pub interrupts_ns: f64,
    /// Other tasks that ran while the loop was runnable, spread over the calls.
    pub preempted_ns: f64,
    /// Interrupts that landed in the loop.
    pub interrupts: u64,
    /// Of those, the CPU's own ticks.
    pub ticks: u64,
    /// vtime accounting passes.
    pub vtime_flushes: u64,
}

impl SyscallBreakdown {
    /// The per-call parts added up: `ns_per_call` of a finished loop.
    pub fn per_call_sum(&self) -> f64 {
        self.entry_exit_ns
            + self.rcu_eqs_ns
            + self.vtime_ns
            + self.static_key_ns
            + self.vtime_flush_ns
            + self.interrupts_ns
            + self.preempted_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_histogram_buckets_by_lower_edge() {
        // (ns, frames) -> bucket lower edge in µs
        let h = jitter_histogram([
            (1, 3),
            (99, 1),
            (100, 2),
            (4_999, 5),
            (5_000, 7),
            (u64::MAX, 1),
        ]);
        assert_eq!(h.len(), JITTER_BUCKET_EDGES_NS.len());
        let count = |from_us: f64| h.iter().find(|b| b.from_us == from_us).map(|b| b.frames);
        assert_eq!(count(0.0), Some(4));
        assert_eq!(count(0.1), Some(2));
        assert_eq!(count(2.0), Some(5));
        assert_eq!(count(5.0), Some(7));
        assert_eq!(count(10_000.0), Some(1));
        assert_eq!(h.iter().map(|b| b.frames).sum::<u64>(), 19);
    }

    #[test]
    fn frame_row_stats_stay_exact_far_from_zero() {
        // Jitters near 10^15 ns that differ by 2: a running f64 sum of squares would lose the
        // spread entirely; sums of distances to the first jitter keep it exact.
        let mut s = FrameRowStats::default();
        for (k, j) in [1_000_000_000_000_000i64, 1_000_000_000_000_002]
            .into_iter()
            .enumerate()
        {
            s.record(k as u64, j, false, i64::MAX);
        }
        assert_eq!(s.mean_ns(), 1_000_000_000_000_001.0);
        assert_eq!(s.sigma_ns(), 1.0);
        let mut neg = FrameRowStats::default();
        for (k, j) in [-30i64, 10, 20].into_iter().enumerate() {
            neg.record(k as u64, j, false, i64::MAX);
        }
        assert_eq!(neg.mean_ns(), 0.0);
        assert!((neg.sigma_ns() - (1400.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn frame_row_stats_boundaries() {
        let mut s = FrameRowStats::default();
        assert_eq!(s.row(4).frames, 0);
        assert_eq!(s.row(4).min_us, 0.0);
        // (frame, jitter ns, overrun)
        let frames = [
            (0, 5_000, false),
            (1, 10_000, false),
            (2, 10_001, true),
            (3, -20, false),
        ];
        for (k, j, o) in frames {
            s.record(k, j, o, 10_000);
        }
        let r = s.row(4);
        assert_eq!(
            (r.frames, r.max_frame, r.overruns, r.last_overrun),
            (4, 2, 1, 2)
        );
        assert_eq!((s.min_ns, s.max_ns), (-20, 10_001));
        // Exactly at the threshold is not a flier; one above is.
        assert_eq!(
            (r.fliers, r.first_fliers.clone(), r.last_flier),
            (1, vec![2], Some(2))
        );
        assert!((s.mean_ns() - 6245.25).abs() < 1e-9);
        for k in 10..20 {
            s.record(k, 50_000, false, 10_000);
        }
        let r = s.row(4);
        assert_eq!(r.first_fliers, vec![2, 10, 11, 12, 13]);
        assert_eq!(r.last_flier, Some(19));
        assert_eq!(r.fliers, 11);
    }

    #[test]
    fn coordinator_wakeups_count_by_cpu_and_pick_the_commonest() {
        // (CPUs the wake-ups ran on) -> (rows as (cpu, wakeups), modal CPU)
        type Case<'a> = (&'a [u32], &'a [(u32, u64)], Option<u32>);
        let cases: &[Case] = &[
            (&[], &[], None),
            (&[2], &[(2, 1)], Some(2)),
            (&[3, 0, 3, 3, 0], &[(0, 2), (3, 3)], Some(3)),
            // A tie goes to the lowest CPU number.
            (&[1, 0, 1, 0], &[(0, 2), (1, 2)], Some(0)),
            (&[5, 1, 3], &[(1, 1), (3, 1), (5, 1)], Some(1)),
        ];
        for (seen, rows, modal) in cases {
            let mut got = Vec::new();
            for &cpu in *seen {
                count_wakeup(&mut got, cpu);
            }
            let want: Vec<CpuWakeups> = rows
                .iter()
                .map(|&(cpu, wakeups)| CpuWakeups { cpu, wakeups })
                .collect();
            assert_eq!(got, want, "{seen:?}");
            assert_eq!(modal_cpu(&got), *modal, "{seen:?}");
        }
    }

    #[test]
    fn coordinator_wakeups_round_trip_and_old_reports_read_without_them() {
        let mut r = Report::new(
            Source::Host {
                hostname: "h".into(),
                kernel: "6.1".into(),
            },
            "idle",
            "h",
            "",
            250,
            5,
        );
        r.coordinator_wakeups = vec![
            CpuWakeups {
                cpu: 2,
                wakeups: 49,
            },
            CpuWakeups { cpu: 3, wakeups: 1 },
        ];
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.contains(
                r#""coordinator_wakeups":[{"cpu":2,"wakeups":49},{"cpu":3,"wakeups":1}]"#
            ),
            "{text}"
        );
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        // A report written before the field existed (and every twin report) has no key.
        r.coordinator_wakeups.clear();
        let old = serde_json::to_string(&r).unwrap();
        assert!(!old.contains("coordinator_wakeups"), "{old}");
        let read: Report = serde_json::from_str(&old).unwrap();
        assert!(read.coordinator_wakeups.is_empty());
        assert_eq!(modal_cpu(&read.coordinator_wakeups), None);
    }

    #[test]
    fn kthread_runs_round_trip_and_old_reports_read_without_them() {
        let mut r = Report::new(
            Source::Host {
                hostname: "h".into(),
                kernel: "6.1".into(),
            },
            "idle",
            "h",
            "",
            1000,
            5,
        );
        r.kthread_runs = vec![
            KthreadRuns {
                comm: "rcu_sched".into(),
                cpu: 0,
                bound: false,
                runs: 8,
                run_ns: Some(80_000),
            },
            KthreadRuns {
                comm: "kworker/0:1".into(),
                cpu: 0,
                bound: true,
                runs: 6,
                run_ns: None,
            },
        ];
        assert_eq!(r.kthread_runs[0].ns_per_run(), Some(10_000));
        assert_eq!(r.kthread_runs[1].ns_per_run(), None);
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.contains(r#"{"comm":"kworker/0:1","cpu":0,"bound":true,"runs":6}"#),
            "{text}"
        );
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        r.kthread_runs.clear();
        let old = serde_json::to_string(&r).unwrap();
        assert!(!old.contains("kthread_runs"), "{old}");
        let read: Report = serde_json::from_str(&old).unwrap();
        assert!(read.kthread_runs.is_empty());
    }
}
