//! `host calibrate`: a bounded measurement of this host, fitted into a twin scenario.
//!
//! [`measure`] runs the phases inside one time budget (60 s by default; every phase gets
//! a fixed share of it, so a 20 s budget runs the same phases shorter). [`fit`] turns the
//! [`Measurements`] into a [`Scenario`] that `ticklab sim --scenario FILE` loads, and
//! [`Calibration::file_text`] writes it with a comment header holding what the scenario has
//! no field for (wake-up latency, raw round trips, the fit log).
//!
//! Map of the code, in the order a calibration runs:
//!
//! * [`phases`] — the measurement phases and their shares of the budget;
//! * [`fitting`] — costs, the tick build and the background sources fitted to the
//!   measurements, with the twin in the loop;
//! * [`wakeup_fit`] — interrupt entry/exit, timer-delivery spread and the idle exit latency,
//!   bisected with the twin until its frame worker wakes as late as the host's;
//! * [`fit_quality`] — the work unit's cost, and every phase re-run in the fitted twin beside
//!   its measurement (measured, twin, ratio, a miss above 20 % flagged);
//! * [`ledger`] — which costs were fitted and how; the rest are presets;
//! * [`sensitivity`] — each preset doubled and halved in the twin: which of them a checked
//!   figure depends on (needed, but not measured here);
//! * [`scenario_file`] — the scenario file: a `#` header, then the TOML;
//! * [`timer_tracepoints`] — the tick, hrtimer, timer-wheel and clock-event costs timed by the
//!   kernel's tracepoints on the hog CPU (root and tracefs);
//! * [`micro`] — micro-benchmarks (a clock read, a cache line bounced between cores) and the
//!   background task's run time from the idle phase;
//! * [`kvm`] — on a KVM guest, its host's wake-up of a blocked vCPU, learnt from the futex
//!   ping-pong at `guest_halt_poll_ns=0` only (measured after the phases, fitted into
//!   `[machine.kvm_host]` before the fit-quality checks).

use std::time::Duration;

use ticklab_schema::report::Report;
use ticklab_schema::scenario::Scenario;

use crate::harness::{HarnessError, LatencySummary, Stop};

pub mod fit_quality;
pub mod fitting;
pub mod kvm;
pub mod ledger;
pub mod micro;
pub mod phases;
pub mod scenario_file;
pub mod sensitivity;
pub mod timer_tracepoints;
pub mod wakeup_fit;

pub use fit_quality::FitCheck;
pub use fitting::{FIT_ROUNDS, fit, infer_nohz, major_minor};
pub use phases::{HostFacts, host_facts, measure};

/// The harness coordinator's polling period during timed workloads (hogs, frames).
pub const HARNESS_POLL_NS: u64 = crate::harness::run::COORDINATOR_POLL_NS;

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The budget is too short or otherwise unusable.
    #[error("{0}")]
    Input(String),
    /// This host lacks something calibration needs (not Linux, no LOC row, no HZ).
    #[error("cannot calibrate this host: {0}")]
    Unsupported(String),
    /// A harness phase failed.
    #[error("{phase}: {source}")]
    Harness {
        /// Which phase.
        phase: String,
        /// The harness error.
        #[source]
        source: HarnessError,
    },
    /// The twin refused a fitting run.
    #[error("twin: {0}")]
    Twin(String),
    /// A stop request (Ctrl-C) ended calibration.
    #[error("interrupted")]
    Interrupted,
}

/// Everything [`measure`] collected.
#[derive(Debug, Clone, PartialEq)]
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
    pub kernel_trace: Option<timer_tracepoints::TimerTracepoints>,
    /// Harness warnings (contamination etc.), phase-prefixed.
    pub warnings: Vec<String>,
    /// The micro-benchmarks: clock read, cache-line transfers ([`micro`]).
    pub micro: micro::MicroMeasurements,
}

/// A fitted scenario with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The scenario (workload idle).
    pub scenario: Scenario,
    /// The measurements it was fitted to.
    pub measurements: Measurements,
    /// Fit log and caveats, one line each (written as `#` comments).
    pub notes: Vec<String>,
    /// Each phase re-run in the fitted twin beside its measurement ([`fit_quality`]).
    pub fit_quality: Vec<FitCheck>,
    /// Which costs were fitted and how ([`ledger`]).
    pub ledger: ledger::CostLedger,
    /// Each preset cost doubled and halved in the twin: whether a checked figure depends on
    /// it ([`sensitivity`]), in [`ledger::cost_names`] order.
    pub sensitivity: Vec<sensitivity::CostSensitivity>,
}

/// Runs one twin simulation (the CLI passes `ticklab_twin::simulate`; the host crate does not
/// depend on the twin).
pub type Simulator<'a> = &'a dyn Fn(&Scenario) -> Result<Report, String>;

/// Per-CPU LOC/s of a report.
pub fn loc_per_s(r: &Report) -> Vec<f64> {
    let s = r.seconds().max(1e-9);
    r.cpus.iter().map(|c| c.loc as f64 / s).collect()
}

/// [`measure`], on a KVM guest [`kvm::measure_guest`], then the fit
/// ([`fitting::fit_with_kvm`]: the guest's host wake-up goes into the scenario before the
/// fit-quality checks run).
pub fn calibrate(
    budget: Duration,
    stop: &Stop,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let m = measure(budget, stop, progress)?;
    let guest = kvm::measure_guest(kvm::CALIBRATE_ROUND_TRIPS, stop, progress)?;
    let mut c = fitting::fit_with_kvm(&m, guest.measured(), sim, progress)?;
    if let kvm::GuestKvm::Skipped(why) = guest {
        c.notes.push(why);
    }
    Ok(c)
}
