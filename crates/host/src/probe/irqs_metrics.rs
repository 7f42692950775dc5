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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::irqs::rates;
    use crate::procfs::parse_interrupts;
    use std::time::Duration;
    use ticklab_schema::openmetrics::render;

    fn window() -> IrqRates {
        let a = parse_interrupts(
            "   CPU0 CPU1\nLOC: 100 200 Local timer interrupts\nRES: 5 6 Rescheduling interrupts\nERR: 1\n",
        )
        .unwrap();
        let b = parse_interrupts(
            "   CPU0 CPU1\nLOC: 350 210 Local timer interrupts\nRES: 5 8 Rescheduling interrupts\nERR: 3\n",
        )
        .unwrap();
        rates(&a, &b, Duration::from_millis(500), true)
    }

    #[test]
    fn openmetrics_snapshot() {
        insta::assert_snapshot!(render(&metric_families(&window())));
    }
}
