//! ticklab's host lab: the real Linux machine ticklab runs on, seen in the twin's terms.
//!
//! * [`procfs`] — pure parsers for `/proc/timer_list`, `/proc/interrupts`, `/proc/stat` and the
//!   cpuidle sysfs tree, tested against captured fixtures. Start here.
//! * [`probe`] — reads the live files (with "not available: why" instead of failures) and
//!   builds the `host inspect`, `host irqs` and `host why` views.
//! * [`harness`] — runs the twin's workload specs on real pinned threads (`host run`).
//! * [`calibrate`] — fits the twin's costs to this host and writes a scenario file.
//! * [`comparison`] — a measured report beside the twin's prediction, figure by figure, and
//!   the bands they are judged in: the one comparison `host run --twin`, `host calibrate` and
//!   `vm compare` share.
//! * [`audit`] — is a set of CPUs isolated the way the kernel needs it (`host audit`).
//! * [`noise`] — OS noise seen by a busy pinned sampler, per CPU and per source (`host noise`).

#![deny(missing_docs)]

pub mod audit;
pub mod calibrate;
pub mod comparison;
pub mod harness;
pub mod noise;
pub mod probe;
pub mod procfs;
