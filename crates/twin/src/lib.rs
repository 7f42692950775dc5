//! ticklab's twin: a deterministic discrete-event model of the Linux kernel's tick machinery.
//!
//! Given a [`Scenario`](ticklab_schema::scenario::Scenario) (machine, kernel build and command
//! line, workload, run length and seed), [`simulate`](sim::simulate) predicts the per-CPU
//! timer interrupts, tick activity, idle residency, package power and the cost of giving up
//! timekeeping, as a [`Report`](ticklab_schema::report::Report) in the schema the host lab also
//! writes. Same scenario and seed, byte-identical report.
//!
//! Map of the code:
//! * [`engine`] — virtual time, the per-CPU event queue ([`engine::TournamentTree`]), the
//!   seeded RNG with per-CPU streams. Read first.
//! * [`kernel`] — one module per kernel concept: [`kernel::hrtimer`], [`kernel::tick`]
//!   (tick-sched rules, skew, next event), [`kernel::timekeeping`] (jiffies and the duty),
//!   [`kernel::timer_wheel`], [`kernel::cpuidle`] (states and governors), [`kernel::sched`],
//!   [`kernel::context_tracking`].
//! * [`hw`] — the clock event device and the package energy meter.
//! * [`sim`] — the machine: CPUs wired to the kernel modules, the event loop, the report.
//! * [`workloads`] — hog placement; [`experiments`] — the published experiments as scenarios.

#![deny(missing_docs)]

pub mod engine;
pub mod experiments;
pub mod hw;
pub mod kernel;
pub mod sim;
pub mod sweep;
pub mod workloads;

pub use sim::{Sim, SimError, simulate};
