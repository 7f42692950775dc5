//! Harnesses: the twin's workload specs run for real on pinned threads of this host.
//!
//! [`run_workload`] takes a parsed [`Workload`](ticklab_schema::workload::Workload), a
//! [`RunConfig`] and a [`Stop`], and returns a [`HostRun`]: the shared
//! [`Report`](ticklab_schema::report::Report) (per-CPU interrupts, busy time and idle residency
//! from `/proc` and sysfs around the window, energy where RAPL exists, and one result per
//! group) plus the host-only [`RunDetails`] the schema has no field for.
//!
//! Map of the code (files of this folder), in reading order:
//!
//! * `plan.rs` — [`RunConfig`], validation against this host ([`validate`]), hog placement;
//! * [`placement`] — which CPUs threads may be pinned to: online ∩ the cgroup's cpuset, not
//!   the inherited affinity (public: `host inspect` shows it);
//! * `run.rs` — the orchestrator ([`run_workload`]): spawn, the start line (`gate.rs`), the
//!   window, join;
//! * `cacheline.rs`, `clock_read.rs` — `host calibrate`'s micro-benchmarks: a cache line
//!   bounced between two pinned threads, a pinned loop of vDSO clock reads; `topology.rs` —
//!   packages and core siblings from sysfs, to pick the two CPUs;
//! * `report.rs` — the threads' outputs and the snapshots assembled into a [`HostRun`];
//! * `frames.rs` — the frame scheduler (SCHED_FIFO or timer slack, absolute sleeps), with the
//!   frame-table statistics in `stats.rs` and the calibrated work unit in `work.rs`;
//! * `pingpong.rs` — futex or pipe ping-pong between two processes (or threads);
//! * `syscall.rs` — the raw getpid loop; `hogs.rs` — busy threads; `bsp.rs` — the
//!   bulk-synchronous job's ranks and their spinning or futex barrier; `bsp_blame.rs` — the
//!   trace of the ranks' CPUs that names what delayed each late iteration;
//! * `sample.rs` — `/proc` snapshots, contamination and energy; `kthreads.rs` — the kernel
//!   threads' runs in the window, read from `/proc/PID/` before and after it;
//! * [`haltpoll_sweep`] — E3's live part: the futex ping-pong at several
//!   `guest_halt_poll_ns` values, with the cpuidle driver/governor check;
//! * [`pm_qos`] — `/dev/cpu_dma_latency` held for the run (`--cpu-dma-latency`);
//! * [`sysfs_params`] — cpuidle / halt-polling parameters set for a run and always restored
//!   (restore record under `/run` for a killed run);
//! * [`stop`] — Ctrl-C / SIGTERM into a stop flag; `watchdog.rs` — the thread above the
//!   SCHED_FIFO frame workers that takes the signals and demotes a worker outliving its
//!   window; [`os`] — the Linux calls (public: the CPU lists). Run lengths are parsed by the one duration parser of `ticklab-schema`.
//!
//! Only what the CLI and the other crates use is public (re-exported here, plus [`os`],
//! [`placement`] and [`stop`]); the workers, the gate and the assembly are crate-private.

pub(crate) mod bsp;
pub(crate) mod bsp_blame;
pub(crate) mod cacheline;
pub(crate) mod clock_read;
pub(crate) mod error;
pub(crate) mod frames;
pub(crate) mod gate;
pub mod haltpoll_sweep;
pub(crate) mod hogs;
mod kthreads;
pub mod os;
pub(crate) mod pingpong;
pub mod placement;
pub(crate) mod plan;
pub mod pm_qos;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod sample;
pub(crate) mod stats;
pub mod stop;
pub(crate) mod syscall;
pub mod sysfs_params;
pub(crate) mod topology;
pub(crate) mod watchdog;
pub(crate) mod work;

pub use error::HarnessError;
pub(crate) use error::os_error;
pub use pingpong::PingPongMode;
pub use plan::{MAX_FRAME_HZ, RunConfig, validate};
pub use report::{
    FrameGroupDetails, FrameWorkerDetails, HostRun, MIN_RATE_WINDOW_NS, RunDetails, WatchdogDetails,
};
pub use run::{
    COORDINATOR_POLL_COUNTED_NS, COORDINATOR_POLL_NS, coordinator_poll_ns, run_workload,
};
pub use sample::{LiveRow, LiveSample, live_rows};
pub use stats::LatencySummary;
pub use stop::{Stop, StopReason};
pub use watchdog::WATCHDOG_GRACE_NS;
