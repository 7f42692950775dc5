//! ticklab's twin: a deterministic discrete-event model of the Linux kernel's tick machinery.
//!
//! Given a [`Scenario`](ticklab_schema::scenario::Scenario) (machine, kernel build and command
//! line, workload, run length and seed), [`run`] (the one entry, [`entry`]) predicts the per-CPU timer interrupts,
//! tick activity, idle residency, package power and the cost of giving up timekeeping, as a
//! [`Report`](ticklab_schema::report::Report) in the schema the host lab also writes. Same
//! scenario and seed, byte-identical report.
//!
//! Map of the code (read in this order):
//! * [`entry`] — the one way in: [`run`] picks the engine (the event loop, or the guest
//!   ping-pong model of [`guest`]), applies the compute limit ([`RunOptions`]) and builds
//!   the report; [`simulate`] is the event loop alone.
//! * [`engine`] — virtual time, the per-CPU event queue ([`engine::TournamentTree`]), the
//!   seeded RNG with per-CPU streams.
//! * [`kernel`] — one module per kernel concept, each owning its state and its rules (fields
//!   private, invariants `debug_assert!`ed, table tests beside them): `kernel::hrtimer` (bases,
//!   expiry order, the re-arm/retry/hang rule), [`kernel::tick_sched`] (tick-sched: stop/restart on
//!   the saved phase, `tick_nohz_next_event`, the idle-stop gate and `nohz_full_aggressive` in
//!   one place), [`kernel::timekeeping`] (jiffies and the duty hand-over),
//!   [`kernel::timer_wheel`], [`kernel::cpuidle`] (states and governors), `kernel::sched` (the
//!   SCHED tick dependency), `kernel::context_tracking`.
//! * [`hw`] — the clock event device, the package energy meter, contended locks and lines.
//! * [`sim`] — the machine: CPUs wired to the kernel modules, split like the kernel's own
//!   files (`irq`, `hrtimer_interrupt`, `tick_sched`, `idle`, `softirq`, `sched`), the
//!   observation seam ([`sim::Observer`]) with the window statistics as its listener, and the
//!   report. Start at `sim/mod.rs`.
//! * [`determinism`] — a listener hashing every event per window, and the check that names
//!   the first window and event where two runs of one scenario differ.
//! * [`workloads`] — hog placement and frame workers; [`experiments`] — the published
//!   experiments as scenarios; [`sweep`] — running many scenarios in parallel.

#![deny(missing_docs)]
// Unsafe code is denied everywhere but in one audited function: the cache prefetch hint of
// `engine::prefetch` (an intrinsic that cannot fault, but is `unsafe` to call).
#![deny(unsafe_code)]

pub mod determinism;
pub mod engine;
pub mod entry;
pub mod error;
pub mod experiments;
pub mod guest;
pub mod hw;
pub mod kernel;
pub mod sim;
pub mod sweep;
pub mod timeline;
pub mod workloads;

pub use entry::{Engine, RunOptions, run};
pub use sim::{ConfigError, Sim, SimError, simulate};
