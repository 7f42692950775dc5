//! `host why`: why did each CPU take timer interrupts, and how long was its tick stopped?
//!
//! **With tracing** (root and tracefs): a private instance (`probe/tracefs.rs`) records
//! `irq_vectors:local_timer_entry/exit` (x86), `timer:hrtimer_expire_entry`,
//! `timer:tick_stop`, `power:cpu_idle` and `sched:sched_switch` for the window, on the
//! `mono` trace clock. [`attribute`] then walks each CPU's events in order:
//!
//! * every local timer interrupt is attributed to the hrtimer callbacks that expired inside
//!   it (between its entry and exit events): to the tick if the tick's callback ran (the name
//!   differs across versions, see
//!   [`is_tick_timer_callback`](crate::procfs::is_tick_timer_callback)), else to the first
//!   other callback, else to "no hrtimer expired";
//! * hrtimer callbacks outside a local timer interrupt (soft hrtimers run from softirq, or
//!   the low-res tick path) are counted separately;
//! * **tick-stopped time** is a state machine started from `.tick_stopped` in a
//!   `/proc/timer_list` read just before tracing: a `tick_stop` event with `success=1` stops
//!   the tick; a switch away from the idle task restarts it (the idle-exit path restarts a
//!   stopped tick on CPUs that are not `nohz_full`); a `tick_stop` with `success=0` (full
//!   dynticks: the tick could not stop because of the printed dependency) marks it running.
//!   `cpu_idle` events give the number of idle entries.
//!
//! **Without tracing** the window is covered by sampling `/proc/timer_list` every
//! [`SAMPLE_PERIOD`] (root only): the stopped fraction is the share of samples with
//! `.tick_stopped: 1` and the hrtimers are the ones seen queued — no per-interrupt
//! attribution. Without root only the `/proc/interrupts` counts remain. The report says
//! which method was used and what is missing.
//!
//! Files: this one holds the options, the report and the errors; `attribute.rs` the pure
//! attribution of a trace ([`attribute`], [`gap_stopped_ns`], [`tick_period_from_trace`]);
//! `observe.rs` the live observation ([`observe`]: tracing, or the sampling fallback);
//! `screen.rs` the report as text (`Display`); `chrome_trace.rs` the timeline export
//! (`--trace`).

use serde::Serialize;
use std::time::Duration;

mod attribute;
pub mod chrome_trace;
mod observe;
mod screen;

pub use attribute::{attribute, gap_stopped_ns, tick_period_from_trace};
pub use observe::observe;

/// Events recorded by the tracing method.
pub const EVENTS: [&str; 6] = [
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "timer:hrtimer_expire_entry",
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
    /// Also record [`chrome_trace::TIMELINE_EVENTS`] and convert the window (this part of
    /// it) into a timeline ([`WhyReport::timeline`]; tracing method only).
    pub timeline: Option<ticklab_schema::trace::TraceWindow>,
}

/// Why [`observe`] could not produce a report. The caller matches on the variant: a CPU that is
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
    Trace(#[from] crate::probe::TraceError),
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
    /// Per CPU.
    pub cpus: Vec<CpuWhy>,
    /// The timeline asked for with [`WhyOptions::timeline`] (not part of the JSON report).
    #[serde(skip)]
    pub timeline: Option<ticklab_schema::trace::TraceWriter>,
}

/// One CPU's attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuWhy {
    /// CPU number.
    pub cpu: u32,
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
