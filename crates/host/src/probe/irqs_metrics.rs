//! `host irqs --format openmetrics`: the window's interrupt rates as gauges for the
//! node-exporter textfile collector (docs/metrics.md).
//!
//! Families, all gauges:
//!
//! * `ticklab_host_irqs_window_seconds` — the time between the two `/proc/interrupts`
//!   reads;
//! * `ticklab_host_interrupts_per_second{cpu, irq, row, description}` — per-CPU rate of each
//!   row (`irq` is the architecture-neutral name, `LOC` also on arm64; `row` the name in the
//!   file);
//! * `ticklab_host_global_interrupts_per_second{irq, row, description}` — rows counted for
//!   the whole machine (`ERR`, `MIS`), with `--all`.
//!
//! The cumulative counters themselves are node-exporter's `node_interrupts_total`; these
//! are what a window adds: a rate per CPU, from the same typed [`IrqRates`] the table shows.
//! `ticklab_report::openmetrics::render` writes them (its snapshot test holds this module's
//! families of a sample window).

use super::irqs::IrqRates;
use ticklab_schema::openmetrics::{MetricFamily, Unit};

/// The families of one window (see the module documentation).
pub fn metric_families(r: &IrqRates) -> Vec<MetricFamily> {
    let window = MetricFamily::new(
        "ticklab_host_irqs_window_seconds",
        "Time between the two reads of /proc/interrupts the rates are taken over.",
        Some(Unit::Seconds),
    )
    .with(Vec::new(), r.elapsed_s);
    let mut per_cpu = MetricFamily::new(
        "ticklab_host_interrupts_per_second",
        "Interrupts per second on one CPU over the window, by /proc/interrupts row.",
        None,
    );
    let mut global = MetricFamily::new(
        "ticklab_host_global_interrupts_per_second",
        "Interrupts per second of a /proc/interrupts row counted for the whole machine.",
        None,
    );
    for row in &r.rows {
        let labels = || {
            vec![
                ("irq", row.name.clone()),
                ("row", row.row.clone()),
                ("description", row.description.clone()),
            ]
        };
        if row.per_cpu.is_empty() {
            global.push(labels(), row.total);
        } else {
            for (cpu, rate) in r.cpus.iter().zip(&row.per_cpu) {
                let mut l = vec![("cpu", cpu.to_string())];
                l.extend(labels());
                per_cpu.push(l, *rate);
            }
        }
    }
    vec![window, per_cpu, global]
}
