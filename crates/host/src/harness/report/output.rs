//! What a run hands back: the host-only details beside the shared report ([`HostRun`],
//! [`RunDetails`]), what each spawned thread returns (`Output`), and the run's warnings with
//! their topics. Both the assembly (`report.rs`) and each group's result (`groups.rs`) build
//! on these; they depend on neither.

use serde::{Deserialize, Serialize};
use ticklab_schema::report::Report;

use super::super::error::HarnessError;
use super::super::frames::FrameWorkerOutput;
use super::super::pingpong::PingPongOutput;
use super::super::stats::LatencySummary;
use super::super::syscall::SyscallOutput;

/// Host-only details of a frame worker that the shared report has no field for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameWorkerDetails {
    /// CPU.
    pub cpu: u32,
    /// Calibrated minimum cost of one work unit, ns.
    pub ns_per_unit: f64,
    /// Undisturbed frame duration (LOOP × ns_per_unit), µs.
    pub undisturbed_us: f64,
    /// Scheduling policy this worker got.
    pub policy: String,
    /// Frames whose jitter came out below zero (work ran faster than calibrated).
    pub negative_jitter_frames: u64,
    /// Wake-up latency of this worker.
    pub wakeup: LatencySummary,
    /// Frames whose work was still running at the end of the window (or at a stop) and was
    /// cut there; they are not in the frame table.
    #[serde(default)]
    pub frames_cut: u64,
    /// Frames due in the window that this worker never started (it was behind, or stopped).
    #[serde(default)]
    pub frames_not_started: u64,
}

/// Host-only details of a frame group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameGroupDetails {
    /// Group name.
    pub group: String,
    /// Wake-up latency (wake − frame start) over all workers.
    pub wakeup: LatencySummary,
    /// Jitter over all workers.
    pub jitter: LatencySummary,
    /// Per worker.
    pub workers: Vec<FrameWorkerDetails>,
}

/// What the shared schema has no field for (yet): interruption, calibration, wake-up latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetails {
    /// `Some("SIGINT")` etc. when the run was stopped early; the report is then partial.
    pub interrupted: Option<String>,
    /// The duration asked for, ns.
    pub requested_duration_ns: u64,
    /// Why the measured window (the report's `duration_ns`) is shorter than the duration asked
    /// for: `interrupted by SIGINT`, or the counted groups that finished their counts first.
    /// `None` when the window covers the whole request.
    #[serde(default)]
    pub short_window: Option<String>,
    /// Whether `mlockall` succeeded (None when not attempted).
    pub memory_locked: Option<bool>,
    /// Ping-pong side B: `processes` or `threads`.
    pub pingpong_mode: String,
    /// Frame groups, in workload order.
    pub frame_groups: Vec<FrameGroupDetails>,
    /// The watchdog of a run with frame workers (`None` without frames).
    #[serde(default)]
    pub watchdog: Option<WatchdogDetails>,
    /// The CPU wake-up latency limit (µs) held on `/dev/cpu_dma_latency` for the whole run
    /// (`--cpu-dma-latency`); `None` when none was.
    #[serde(default)]
    pub cpu_dma_latency_us: Option<u32>,
}

/// What the watchdog of a run with frame workers did (`harness/watchdog.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchdogDetails {
    /// Its SCHED_FIFO priority (one above the workers'), `None` when it ran at SCHED_OTHER.
    pub fifo_priority: Option<i32>,
    /// Frame workers it switched to SCHED_OTHER because they outlived the window (or a stop)
    /// by [`WATCHDOG_GRACE_NS`](super::WATCHDOG_GRACE_NS).
    pub demoted: u64,
}

/// A finished (or interrupted) host run: the shared [`Report`] plus host-only details.
///
/// Serialises as the report's JSON with one extra top-level key, `host_run`, so anything that
/// reads a [`Report`] reads this too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRun {
    /// The shared report.
    #[serde(flatten)]
    pub report: Report,
    /// Host-only details.
    pub host_run: RunDetails,
}

/// Below this window, per-second rates (LOC/s, busy %) rest on a handful of events: the report
/// warns (a short-window warning).
pub const MIN_RATE_WINDOW_NS: u64 = 100_000_000;

/// How the coordinator's window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowEnd {
    /// The requested duration elapsed.
    Elapsed,
    /// Only counted groups ran, and they all finished their counts first.
    CountsDone,
    /// A stop request (signal, [`Stop::request`](super::super::stop::Stop::request)) or a failed spawn ended it.
    Stopped,
}

/// What one spawned thread returns.
pub(crate) enum Output {
    /// A hog ran until the window ended.
    Hog,
    /// A frame worker's table (boxed: it is much larger than the other outputs).
    Frame(Box<Result<FrameWorkerOutput, HarnessError>>),
    /// Side A of a ping-pong pair.
    PingPong(Result<PingPongOutput, HarnessError>),
    /// A syscall loop.
    Syscall(Result<SyscallOutput, HarnessError>),
    /// A rank of a bulk-synchronous job (rank 0 carries the job's report).
    Bsp(Result<super::super::bsp::RankOutput, HarnessError>),
    /// The thread failed before it could run (or panicked).
    Failed(HarnessError),
}

/// What a warning of a host run is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarningTopic {
    /// A stop request ended the run early.
    Interrupted,
    /// Only counted groups ran and they finished before the duration: the window is shorter
    /// than requested, by design (the duration caps counted groups).
    CountsDone,
    /// The window is below [`MIN_RATE_WINDOW_NS`]: per-second rates are unreliable.
    ShortWindow,
    /// A group did less than it was asked (a counted group cut by the window, frames that
    /// ran faster than calibrated).
    Workload,
    /// `mlockall` was refused.
    Memory,
    /// CPU time nobody asked for, or asked-for time missing, on a measured CPU.
    Contamination,
    /// A `/proc` file could not be read: some counters are missing.
    Unreadable,
    /// Energy: no RAPL counter, or what the package idle fraction means.
    Energy,
    /// HZ could not be inferred, or the boot line could not be read for it.
    Hz,
}

/// One warning of a host run: its topic, and the text the report carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Warning {
    /// What it is about.
    pub(crate) topic: WarningTopic,
    /// What the report says.
    pub(crate) text: String,
}

/// The warnings of a run, in report order.
#[derive(Debug, Default)]
pub(super) struct Warnings(pub(super) Vec<Warning>);

impl Warnings {
    pub(super) fn push(&mut self, topic: WarningTopic, text: impl Into<String>) {
        self.0.push(Warning {
            topic,
            text: text.into(),
        });
    }

    pub(super) fn texts(&self) -> Vec<String> {
        self.0.iter().map(|w| w.text.clone()).collect()
    }
}

/// `12.345 ms` below a second, `1.234 s` from one on.
pub(super) fn seconds(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}
