//! ticklab's shared schema: what to run, and what a run produced.
//!
//! Everything the twin and the host lab must agree on lives here, so that a simulated run and
//! a measured one can be put side by side:
//!
//! * [`Scenario`](scenario::Scenario) = [`Machine`](machine::Machine) +
//!   [`Kernel`](scenario::Kernel) + [`Workload`](workload::Workload) + [`Run`](scenario::Run):
//!   what to run, on what, for how long. The kernel's command line inside it is read by
//!   `ticklab-cmdline`, which this crate builds on.
//! * [`Report`](report::Report) is the versioned result schema both halves write; its changes
//!   are listed in `docs/schema.md`.
//! * [`frames::FrameClock`] says when a frame group's frames start and how many a window
//!   holds, for the twin and the host lab alike.
//! * [`experiment`] defines the published experiments (E1, E2) and the typed results a run
//!   of one produces, for the twin to fill and `ticklab-report` to render.
//! * [`histogram::LatencyHistogram`] is the `cyclictest -h` style latency histogram of a
//!   frame worker, for the twin and the host lab alike; [`hdr::HdrRecorder`] counts values
//!   by an HdrHistogram's buckets at a shift and an increment each, for the twin's per-frame
//!   path.
//! * [`comparison`] sets a measured report beside the twin's prediction, figure by figure
//!   (measured, predicted, ratio, verdict): the one comparison `host run --twin`,
//!   `host calibrate` and `vm compare` share.
//! * [`openmetrics`] holds the typed metric families (gauges, their units and samples) that
//!   `--format openmetrics` writes; `ticklab-report` writes their text.
//! * [`noise`] is the OS-noise report (what the kernel takes from a busy task, per source),
//!   one type for `host noise` and the twin; [`host_noise`] is what a measured run adds
//!   (clock, cross-checks, the longest detours with their sources).
//! * [`lines`] reads input files within memory limits (whole TOML files, JSON lines one line
//!   at a time).
//! * [`bsp`] is the result of a bulk-synchronous job: iteration times, their excess over the
//!   noiseless iteration and the blame for each late one.
//! * [`unseen_check`] is `host calibrate --check-unseen`'s result: loads the calibration did
//!   not run, each figure beside the twin's, and the in-band count.
//! * [`units`] parses the durations and sizes every front end accepts.
//! * [`validate`] is the one check between every input and the model: ranges, finite
//!   numbers, capacities and the cost of a run, each error naming its key.
//!
//! * [`wakeups`] counts where a thread's wake-ups ran, for a report and the scenario
//!   split by it.
//!
//! Read [`scenario`] first, then [`report`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bsp;
pub mod comparison;
pub mod experiment;
pub mod frames;
pub mod hdr;
pub mod histogram;
pub mod host_noise;
pub mod lines;
pub mod machine;
pub mod noise;
pub mod openmetrics;
pub mod report;
pub mod scenario;
pub mod units;
pub mod unseen_check;
pub mod validate;
pub mod versioned;
pub mod wakeups;
pub mod workload;
