//! Harnesses: the twin's workload specs run for real on pinned threads of this host.
//!
//! [`run_workload`] takes a parsed [`Workload`](ticklab_schema::workload::Workload), a
//! [`RunConfig`] and a [`Stop`], and returns a [`HostRun`]: the shared
//! [`Report`](ticklab_schema::report::Report) (per-CPU interrupts, busy time and idle residency
//! from `/proc` and sysfs around the window, energy where RAPL exists, and one result per
//! group) plus the host-only [`RunDetails`] the schema has no field for.
//!
//! Map of the code, in reading order:
//!
//! * [`plan`] — [`RunConfig`], validation against this host, hog placement;
//! * [`run`] — the orchestrator: spawn, the start gate (`gate`), the window, join;
//! * [`report`] — the threads' outputs and snapshots assembled into a [`HostRun`];
//! * [`frames`] — the frame scheduler (SCHED_FIFO or timer slack, absolute sleeps), with the
//!   frame-table statistics in [`stats`] and the calibrated work unit in [`work`];
//! * [`pingpong`] — futex or pipe ping-pong between two processes (or threads);
//! * [`syscall`] — the raw getpid loop; [`hogs`] — busy threads;
//! * [`sample`] — `/proc` snapshots, contamination and energy;
//! * [`stop`] — Ctrl-C / SIGTERM into a stop flag; [`os`] — the Linux calls; [`duration`] —
//!   `10s`, `500ms`, `2m`.

pub mod duration;
pub mod frames;
pub(crate) mod gate;
pub mod hogs;
pub mod os;
pub mod pingpong;
pub mod plan;
pub mod report;
pub mod run;
pub mod sample;
pub mod stats;
pub mod stop;
pub mod syscall;
pub mod work;

pub use duration::parse_duration;
pub use pingpong::PingPongMode;
pub use plan::{RunConfig, validate};
pub use report::{FrameGroupDetails, FrameWorkerDetails, HostRun, RunDetails};
pub use run::run_workload;
pub use stats::LatencySummary;
pub use stop::{Stop, StopReason};

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The request cannot be run on this host (offline CPU, zero calls, ...): bad input.
    #[error("{0}")]
    Input(String),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A harness thread panicked.
    #[error("harness {0} panicked")]
    Panicked(String),
}

impl HarnessError {
    /// Whether this is the user's input at fault (exit code 2 in the CLI).
    pub fn is_input(&self) -> bool {
        matches!(self, HarnessError::Input(_))
    }
}

/// Shorthand for [`HarnessError::Os`].
pub(crate) fn os_error(what: &str, source: std::io::Error) -> HarnessError {
    HarnessError::Os {
        what: what.to_string(),
        source,
    }
}
