//! ticklab's renderers: a [`Report`](ticklab_schema::report::Report) as plain terminal text.
//!
//! The twin and the host lab both produce a [`Report`](ticklab_schema::report::Report); this
//! crate turns one or several of them into tables a kernel engineer already knows how to read.
//! Everything here is a pure function of its input: no colours, no terminal probing, no clock,
//! so the output is byte-for-byte reproducible and can be snapshot-tested and diffed.
//!
//! The three central functions:
//!
//! * [`cpu_table`] — one run, one row per CPU (role, `LOC/s`, ticks/s, tick-stopped %, busy %,
//!   cpuidle residency per state) plus totals, then package power, kernel messages,
//!   timekeeping and hrtimer lines, and warnings. Read this one first ([`cpu`]).
//! * [`compare_table`] — several runs side by side, one row per run (the shape of the
//!   nohz_full vs nohz_full_aggressive table of experiments.md E1).
//! * [`frame_table`] — the frame-scheduler jitter table in exactly the column layout of
//!   experiments.md E2 (`Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)`).
//!
//! Number formats are fixed and documented next to each function; the helpers live in
//! [`format`](mod@format).

#![deny(missing_docs)]

pub mod compare;
pub mod cpu;
pub mod format;
pub mod frames;

pub use compare::{compare_table, workload_label};
pub use cpu::cpu_table;
pub use frames::{frame_row, frame_table};
