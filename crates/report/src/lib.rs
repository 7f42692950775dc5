//! ticklab's renderers: reports and experiment results as plain terminal text.
//!
//! The twin and the host lab both produce a [`Report`](ticklab_schema::report::Report), and
//! the experiments produce the typed results of
//! [`ticklab_schema::experiment`]; this crate turns them into tables a kernel engineer already
//! knows how to read. Everything here is a pure function of its input: no colours, no terminal
//! probing, no clock, so the output is byte-for-byte reproducible and can be snapshot-tested
//! and diffed. It depends on the typed results only: the shared schema's, the sweep's
//! (`ticklab-sweep`) and the host lab's calibration (`ticklab-host`); never on the twin.
//!
//! The renderers, one module each:
//!
//! * [`cpu_table`] — one run, one row per CPU (role, `LOC/s`, ticks/s, tick-stopped %, busy %,
//!   cpuidle residency per state) plus totals, then package power, kernel messages,
//!   timekeeping and hrtimer lines, and warnings. Read this one first ([`cpu`]).
//! * [`compare_table`] — several runs side by side, one row per run (the shape of the
//!   nohz_full vs nohz_full_aggressive table of docs/experiments.md E1).
//! * [`comparison_tables`] ([`comparison`]) — a measured run beside the twin's prediction
//!   (`host run --twin`, `host calibrate`): measured, predicted, ratio, verdict per figure.
//! * [`unseen_check_table`] ([`unseen_check`]) — `host calibrate --check-unseen`: every
//!   figure of the loads the calibration did not run, beside the twin's, and the in-band count.
//! * [`frame_table`] — the frame-scheduler jitter table in exactly the column layout of
//!   docs/experiments.md E2 (`Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)`).
//! * [`frame_histograms`] ([`histogram`]) — `--histogram`: a frame group's jitter and
//!   wake-up latency histograms in the layout of `cyclictest -h`.
//! * [`e1_report`] ([`e1`]) — `ticklab experiment e1`: the published table beside the
//!   twin's, what aggressive costs, and the acceptance bands; [`e1::json`] is its `--json`.
//! * [`e2_report`] ([`e2`]) — `ticklab experiment e2`: frame tables of both configurations,
//!   per-group summary and the tick-time lock section; [`e2::json`] is its `--json`.
//! * [`e3_report`] ([`e3`]) — `ticklab experiment e3`: the ping-pong in a KVM guest per idle
//!   path beside the published figures, the costs, the assumptions and the difference checks;
//!   [`e3::json`] is its `--json`.
//! * [`bench_table`] ([`bench`](mod@bench)) — `ticklab bench`: the twin's events per second.
//! * [`calibrate`] — `ticklab host calibrate`: the scenario file with its comment header, and
//!   the steal, fit-quality and flagged-preset lines it prints.
//! * [`host_run_report`] ([`host_run`]) — `ticklab host run`: each workload group's
//!   measurements, then the per-CPU table.
//! * [`sim_report`] ([`workloads`]) — `ticklab sim`: every workload group's section (frame
//!   tables, histograms, ping-pong, syscall), then the per-CPU table; the sections are the
//!   ones `host_run_report` prints too.
//! * [`noise_table`](fn@noise_table) ([`noise_table`](mod@noise_table)) — OS noise per busy CPU
//!   and per source (`sim --noise`), and a bulk-synchronous job's iterations with their blame
//!   ([`noise_table::bsp_lines`]).
//! * [`plot`] — figures as SVG (plotters' SVG backend only): E1, E2, and any sweep metric
//!   against any swept parameter.
//! * [`html`] — `ticklab report --html`: one self-contained page per experiment or sweep
//!   (scenario, tables, inline SVG figures, published figures beside the twin's).
//! * [`noise`](mod@noise) — `ticklab host noise`: per CPU the osnoise summary, the
//!   per-source interference table, the longest detours and the cross-checks.
//! * [`openmetrics`] — `ticklab host run --format openmetrics`: a report as gauges for the
//!   node-exporter textfile collector.
//! * [`sweep`](mod@sweep) — `ticklab sweep` and `ticklab merge`: rows and per-point summaries
//!   as JSON lines or CSV.
//!
//! Number formats are fixed and documented next to each function; the helpers live in
//! [`format`](mod@format).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod comparison;
pub mod cpu;
pub mod e1;
pub mod e2;
pub mod e3;
pub mod e4;
pub mod format;
pub mod frames;
pub mod histogram;
pub mod host_run;
pub mod html;
pub mod noise;
pub mod noise_table;
pub mod openmetrics;
pub mod plot;
pub mod sweep;
pub mod unseen_check;
pub mod workloads;

pub use bench::{BenchPoint, bench_table};
pub use compare::{compare_table, workload_label};
pub use comparison::{comparison_tables, comparison_tables_beside};
pub use cpu::cpu_table;
pub use e1::e1_report;

/// Machines with at most this many CPUs get their per-CPU tables without `--per-cpu`: a
/// screen holds them beside the summary.
pub const PER_CPU_DEFAULT_MAX_CPUS: usize = 8;
pub use e2::{ablation_report, e2_report};
pub use e3::e3_report;
pub use e4::e4_report;
pub use frames::{frame_row, frame_table, wakeup_table};
pub use histogram::{cyclictest_layout, frame_histograms};
pub use host_run::{HostRunExtras, host_run_report};
pub use noise_table::{bsp_lines, noise_table};
pub use unseen_check::unseen_check_table;
pub use workloads::{guest_pingpong_text, sim_report, workload_section};
