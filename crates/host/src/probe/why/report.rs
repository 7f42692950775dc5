//! What `host why` is asked and answers: [`WhyOptions`], [`WhyReport`] with a [`CpuWhy`] per
//! CPU, [`WhyError`], and the constants the observation shares. Data only, so that the
//! attribution and the observation (and `mod.rs`, which re-exports this) do not import each
//! other.

use serde::Serialize;
use std::time::Duration;

/// Events recorded by the tracing method.
pub const EVENTS: [&str; 7] = [
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_start",
    "timer:tick_stop",
    "power:cpu_idle",
    "sched:sched_switch",
];

/// Sampling period of the `/proc/timer_list` fallback.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(20);

/// Label for local timer interrupts in which no hrtimer expired.
pub const NO_HRTIMER: &str = "(no hrtimer expired)";

/// How to observe.
#[derive(Debug, Clone)]
pub struct WhyOptions {
    /// Window length.
    pub window: Duration,
    /// CPUs to report (all online CPUs when `None`).
    pub cpus: Option<Vec<u32>>,
    /// Force the sampling method even when tracing is possible.
    pub no_trace: bool,
    /// Write the raw trace text here (tracing method only).
    pub save_trace: Option<std::path::PathBuf>,
    /// Also record [`super::chrome_trace::TIMELINE_EVENTS`] and convert the window (this part of
    /// it) into a timeline ([`WhyReport::timeline`]; tracing method only).
    pub timeline: Option<ticklab_trace::TraceWindow>,
}

/// Why [`observe`](fn@super::observe) could not produce a report. The caller matches on the variant: a CPU that is
/// not online is the user's input at fault, the rest are the host's.
#[derive(Debug, thiserror::Error)]
pub enum WhyError {
    /// A CPU asked for is not online.
    #[error("CPU {cpu} is not online (online: {online:?})")]
    CpuNotOnline {
        /// The CPU asked for.
        cpu: u32,
        /// The online CPUs (the columns of `/proc/interrupts`).
        online: Vec<u32>,
    },
    /// `/proc/interrupts` could not be read or parsed.
    #[error("{0}")]
    Interrupts(#[from] crate::probe::irqs::IrqsError),
    /// The trace instance could not be stopped or read after the window.
    #[error("{0}")]
    Trace(#[from] crate::probe::tracefs::TraceError),
    /// The raw trace could not be written where `--save-trace` asked.
    #[error("--save-trace {}: {source}", path.display())]
    SaveTrace {
        /// Where it was to be written.
        path: std::path::PathBuf,
        /// The write error.
        #[source]
        source: std::io::Error,
    },
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhyReport {
    /// How the data was gathered.
    pub method: String,
    /// What could not be observed, and caveats.
    pub missing: Vec<String>,
    /// Window length actually observed, seconds.
    pub elapsed_s: f64,
    /// Whether the window was cut short (Ctrl-C).
    pub interrupted: bool,
    /// The workload spec run during the window (`host why --workload`), if any.
    pub workload: Option<String>,
    /// Per CPU.
    pub cpus: Vec<CpuWhy>,
    /// The timeline asked for with [`WhyOptions::timeline`] (not part of the JSON report).
    #[serde(skip)]
    pub timeline: Option<ticklab_trace::TraceWriter>,
}

/// Why a CPU's tick ran or stopped, in one sentence, and what would stop it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conclusion {
    /// The sentence the CPU's block starts with.
    pub sentence: String,
    /// The boot-line change that would stop the tick, when one would.
    pub boot_change: Option<String>,
    /// Another change that would (move a task, disarm a timer), when the kernel named the
    /// reason.
    pub other_change: Option<String>,
}

/// A task that ran on a CPU in the window, from `sched_switch` and the task column of the
/// CPU's events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskShare {
    /// The task's name (`comm`, as the trace prints it).
    pub comm: String,
    /// Its PID.
    pub pid: u32,
    /// Share of the window it was the CPU's current task (0..1).
    pub share: f64,
    /// Times it was switched in during the window.
    pub switches_in: u64,
}

/// The hrtimers of one callback, armed by one task, that expired on a CPU: the task is the one
/// current at the timer's `hrtimer_start` (the line's task column).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmedTimers {
    /// Callback symbol (`hrtimer_wakeup` for a sleeping task's timer).
    pub function: String,
    /// Name of the task that armed them; [`ARMED_BEFORE`] when the `hrtimer_start` came
    /// before the window.
    pub comm: String,
    /// Its PID (0 with [`ARMED_BEFORE`]).
    pub pid: u32,
    /// Expiries on this CPU in the window.
    pub expiries: u64,
    /// Median interval between consecutive expiries, ms (`None` with fewer than two).
    pub median_interval_ms: Option<f64>,
}

/// [`ArmedTimers::comm`] of timers whose `hrtimer_start` is not in the trace.
pub const ARMED_BEFORE: &str = "(armed before the window)";

/// One CPU's attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuWhy {
    /// CPU number.
    pub cpu: u32,
    /// The one-sentence conclusion (tracing method only).
    pub conclusion: Option<Conclusion>,
    /// Local timer interrupts per `/proc/interrupts` over the window.
    pub loc_proc: Option<u64>,
    /// Local timer interrupts seen in the trace.
    pub loc_traced: Option<u64>,
    /// Traced local timer interrupts by cause: `tick`, a callback name, or [`NO_HRTIMER`];
    /// largest first.
    pub interrupts_by_cause: Vec<(String, u64)>,
    /// Tick callbacks run (inside or outside interrupts).
    pub tick_callbacks: Option<u64>,
    /// hrtimer callbacks run outside a local timer interrupt, by name.
    pub outside_irq: Vec<(String, u64)>,
    /// Fraction of the window the tick was stopped (0..1), from the tick-state events; `None`
    /// when the trace lacks the idle task's events on this CPU (see
    /// [`CpuWhy::idle_events_missing`]).
    pub tick_stopped_fraction: Option<f64>,
    /// Fraction of the window not covered by a running tick, from the gaps between
    /// consecutive tick callbacks: every gap longer than 1.5 tick periods counts minus one
    /// period (so does the stretch before the first and after the last tick). Needs only
    /// interrupt-context events; a vCPU the hypervisor did not run also shows as a gap.
    pub tick_gap_fraction: Option<f64>,
    /// The trace has switches into the idle task on this CPU but no idle-task events after
    /// them (no `cpu_idle`, no switch out of idle): those events were not recorded, so the
    /// event-based tick-stopped time cannot be derived.
    pub idle_events_missing: bool,
    /// Successful tick stops.
    pub tick_stops: Option<u64>,
    /// Failed stops by dependency name (`tick_stop success=0`).
    pub stop_failures: Vec<(String, u64)>,
    /// Idle entries (`cpu_idle` with a state).
    pub idle_entries: Option<u64>,
    /// Share of the window a task other than the idle task was current (0..1), from the
    /// task switches and the task column (tracing method only).
    pub busy_fraction: Option<f64>,
    /// The tasks other than the idle task that ran, largest share first.
    pub tasks: Vec<TaskShare>,
    /// Tick callbacks that interrupted the idle task: the tick kept running in idle.
    pub idle_ticks: Option<u64>,
    /// For a CPU that recorded no event in the window (so the trace names no task): the
    /// tasks in state R whose last CPU was this one at the end of the window, (name, TID),
    /// from `/proc/PID/task/TID/stat`.
    pub running_at_end: Vec<(String, u32)>,
    /// hrtimers other than the tick that expired here, by callback and the task that armed
    /// them, most expiries first.
    pub armed_timers: Vec<ArmedTimers>,
    /// Sampling method: hrtimers seen queued, with the number of samples.
    pub queued_hrtimers: Vec<(String, u64)>,
    /// Sampling method: hrtimer interrupts (`.nr_events` delta).
    pub hrtimer_interrupts: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_not_online_is_a_variant_with_the_same_words() {
        let e = WhyError::CpuNotOnline {
            cpu: 7,
            online: vec![0, 1],
        };
        assert_eq!(e.to_string(), "CPU 7 is not online (online: [0, 1])");
    }
}
