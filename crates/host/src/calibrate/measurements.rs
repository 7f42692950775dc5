//! What `host calibrate` measured: the [`Measurements`] of every phase, in one place so
//! that each evidence module (its `measure` fills a part, its `fit` reads it) and the checks
//! read the same data without depending on one another. Only data and the figures derived
//! directly from it ([`non_tick_rate`]).

use crate::harness::LatencySummary;

/// Everything [`super::measure`] collected (`Default`: nothing measured).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measurements {
    /// `uname -n`.
    pub hostname: String,
    /// Kernel release (`6.18.44-...`).
    pub release: String,
    /// HZ inferred by `inspect`.
    pub hz: u32,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// cpuidle `current_driver` (`none` when no driver registered or no cpuidle).
    pub cpuidle_driver: String,
    /// Idle states of CPU 0: (name, exit latency µs, target residency µs, polling).
    pub idle_states: Vec<(String, u64, u64, bool)>,
    /// Whether the kernel lists nohz_full CPUs.
    pub nohz_full: bool,
    /// Number of CPUs measured (0..n).
    pub nr_cpus: u32,
    /// Idle window, s.
    pub idle_s: f64,
    /// Idle LOC/s per CPU.
    pub idle_loc: Vec<f64>,
    /// Busy fraction per CPU during the idle window (other processes).
    pub idle_busy: Vec<f64>,
    /// CPU of the one hog.
    pub hog_cpu: u32,
    /// LOC/s per CPU with the one hog.
    pub hog_loc: Vec<f64>,
    /// getpid ns/call.
    pub syscall_ns: f64,
    /// Same-CPU pipe round trip, ns.
    pub same_cpu_rt_ns: f64,
    /// Cross-CPU pipe round trip, ns (one CPU: none).
    pub cross_cpu_rt_ns: Option<f64>,
    /// Wake-up latency of a 1 kHz frame worker.
    pub wakeup: Option<LatencySummary>,
    /// Wake-up latency of the same worker on the hog's CPU beside one hog (`hogs:1@H+frames:
    /// 1000@H:loop=0`): a CPU that never idles, so no idle-state exit in it.
    pub busy_wakeup: Option<LatencySummary>,
    /// The frame worker's calibrated cost of one work unit, ns (`None`: not measured).
    pub work_unit_ns: Option<f64>,
    /// The kernel's timer costs from its tracepoints (`None`: not recorded, e.g. not root).
    pub kernel_trace: Option<TimerTracepoints>,
    /// Harness warnings (contamination etc.), phase-prefixed.
    pub warnings: Vec<String>,
    /// The micro-benchmarks: clock read, cache-line transfers (`super::micro`).
    pub micro: MicroMeasurements,
    /// The phases other load contaminated (CPU busy beyond what the phase explains, steal):
    /// [`super::calibrate`] refuses to fit from them unless forced.
    pub contaminated: Vec<super::error::ContaminatedPhase>,
    /// Steal per CPU over the whole measure stage, % of it, CPUs `0..nr_cpus` (`None`: a
    /// CPU `/proc/stat` did not list at both ends).
    pub steal_pct: Vec<Option<f64>>,
    /// The measure stage's length, s (what `steal_pct` is a share of).
    pub measured_s: f64,
    /// On a VM guest, the idle-CPU wake-up at several sleep lengths (`super::halt_wake`);
    /// empty elsewhere.
    pub halt_wake: Vec<SleepWake>,
}

/// What `host inspect` and the harness tell about this host without measuring anything: the
/// part of [`Measurements`] a twin of the host needs before any cost is fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    /// HZ inferred by `inspect`.
    pub hz: u32,
    /// Kernel release.
    pub release: String,
    /// The kernel's part of `/proc/cmdline` (init's arguments after `--` removed).
    pub cmdline: String,
    /// cpuidle `current_driver` (`none` without one).
    pub cpuidle_driver: String,
    /// Idle states of CPU 0: (name, exit latency µs, target residency µs, polling).
    pub idle_states: Vec<(String, u64, u64, bool)>,
    /// Whether the kernel lists nohz_full CPUs.
    pub nohz_full: bool,
    /// CPUs 0..n, all placeable.
    pub nr_cpus: u32,
    /// `uname -n`.
    pub hostname: String,
}

/// CPU `c`'s idle wake-ups per second that are not the tick, `t_c = LOC_idle_c − HZ × busy_c`
/// (the tick runs while something else keeps the CPU busy), at least 0: the target of the
/// background-rate fit ([`super::fitting`]) and the background task's wake-ups ([`super::micro`]).
pub(crate) fn non_tick_rate(m: &Measurements, c: usize) -> f64 {
    let loc = m.idle_loc.get(c).copied().unwrap_or(0.0);
    let busy = m.idle_busy.get(c).copied().unwrap_or(0.0);
    (loc - m.hz as f64 * busy).max(0.0)
}

/// Per-batch figures of one micro-benchmark, reduced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchFigure {
    /// Batches timed.
    pub batches: usize,
    /// The fastest batch, ns per operation.
    pub min_ns: f64,
    /// The median batch, ns per operation (the fitted figure).
    pub median_ns: f64,
}

impl BatchFigure {
    /// Reduces per-batch ns per operation; `None` without a finite, positive batch.
    pub fn of(batches: &[f64]) -> Option<BatchFigure> {
        let mut v: Vec<f64> = batches
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median_ns = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        debug_assert!(v[0] <= median_ns, "the minimum is not above the median");
        Some(BatchFigure {
            batches: n,
            min_ns: v[0],
            median_ns,
        })
    }
}

/// One cache-line bounce.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineTransfer {
    /// Initiator and responder CPUs.
    pub cpus: (u32, u32),
    /// Whether the two are hardware threads of one core (the line never leaves the core).
    pub siblings: bool,
    /// ns per one-way transfer.
    pub figure: BatchFigure,
}

/// What the micro-benchmark phases measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MicroMeasurements {
    /// `current_clocksource` during the clock reads (`None`: unreadable).
    pub clocksource: Option<String>,
    /// ns per `clock_gettime(CLOCK_MONOTONIC)`, on CPU 0.
    pub clock_read: Option<BatchFigure>,
    /// Line transfer between two CPUs of one package.
    pub line_local: Option<LineTransfer>,
    /// Line transfer between two packages (`None` on one package).
    pub line_remote: Option<LineTransfer>,
    /// Packages among the measured CPUs (0: topology unreadable).
    pub packages: usize,
    /// Whether the host is a VM guest (the `hypervisor` CPU flag).
    pub vm_guest: bool,
    /// Why a figure was not measured, one line each.
    pub skipped: Vec<String>,
}

/// A median duration and its sample count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// Median, ns (tracing's own cost included).
    pub median_ns: f64,
    /// Intervals the median is taken over.
    pub samples: usize,
}

/// What the two traced phases gave: medians as recorded, before tracing's cost is subtracted.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerTracepoints {
    /// The hog CPU H.
    pub cpu: u32,
    /// The trace clock (`x86-tsc` or `mono`).
    pub clock: String,
    /// Resolution of a timestamp, ns (one TSC count, or 1 µs for the ns clocks' text).
    pub resolution_ns: f64,
    /// The tick callback's name as this kernel traces it.
    pub tick_function: Option<String>,
    /// One recorded event (back-to-back softirq exit → entry).
    pub event: Option<Timed>,
    /// The tick's hrtimer callback on the busy CPU H.
    pub tick_handler: Option<Timed>,
    /// `hrtimer_wakeup` callbacks on H.
    pub hrtimer_callback: Option<Timed>,
    /// Timer-wheel callbacks, every CPU.
    pub wheel_timer: Option<Timed>,
    /// Last hrtimer callback's end → end of the tick interrupt on H.
    pub clockevent_program: Option<Timed>,
    /// Idle exit (`cpu_idle` leaving, need-resched set) → the tick's `hrtimer_start`, every
    /// CPU, frames phase.
    pub tick_restart: Option<Timed>,
    /// Events the ring buffers overwrote (0: none lost).
    pub overruns: u64,
}

/// One rate of the halt wake-up sweep (`halt_wake.rs`) as measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SleepWake {
    /// The frame rate, Hz.
    pub rate_hz: u32,
    /// Frames timed.
    pub samples: u64,
    /// Median wake-up latency, µs.
    pub p50_us: f64,
    /// Whether other load contaminated the run (the harness's check).
    pub contaminated: bool,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A two-CPU host's measurements (HZ 250, no cpuidle driver, one hog on CPU 1).
    pub(crate) fn measured(
        idle_loc: Vec<f64>,
        idle_busy: Vec<f64>,
        hog_loc: Vec<f64>,
    ) -> Measurements {
        Measurements {
            hostname: "h".into(),
            release: "6.18.44-fc".into(),
            hz: 250,
            cmdline: String::new(),
            cpuidle_driver: "none".into(),
            idle_states: Vec::new(),
            nohz_full: false,
            nr_cpus: 2,
            idle_s: 10.0,
            idle_loc,
            idle_busy,
            hog_cpu: 1,
            hog_loc,
            syscall_ns: 200.0,
            same_cpu_rt_ns: 5000.0,
            cross_cpu_rt_ns: Some(20000.0),
            wakeup: None,
            busy_wakeup: None,
            work_unit_ns: Some(6.5),
            kernel_trace: None,
            warnings: Vec::new(),
            micro: Default::default(),
            contaminated: Vec::new(),
            steal_pct: vec![Some(0.0), Some(0.0)],
            measured_s: 60.0,
            halt_wake: Vec::new(),
        }
    }
}
