//! OpenMetrics: the text exposition of metric families ([`render`]), and a [`Report`] as
//! gauges for the node-exporter textfile collector (`ticklab host run --format openmetrics`,
//! docs/metrics.md). The families are the typed [`ticklab_schema::openmetrics`] ones; the
//! producers (this module for reports, `ticklab_host::probe::irqs_metrics` for `host irqs`)
//! build them, and [`render`] is the one writer of the text.
//!
//! # The text
//!
//! One text that both readers accept (docs/metrics.md):
//!
//! * every family is a **gauge**: a window's rates, ratios and quantiles are values of that
//!   window, not counters that only grow (the raw `/proc/interrupts` counters are
//!   node-exporter's own `node_interrupts_total`). This also avoids the one place where the
//!   two formats disagree, the `_total` suffix of counters;
//! * `# HELP` and `# TYPE` before each family's samples; `# UNIT` (OpenMetrics) when the
//!   name ends in a base unit (`_seconds`, `_ratio`, `_watts`), which the Prometheus text
//!   parser reads as a comment;
//! * base units in the names (seconds, not microseconds; ratios, not per cent); rates end in
//!   `_per_second`;
//! * label values escaped (`\\`, `\"`, `\n`); values rounded to twelve significant digits
//!   and written in the shortest decimal form that reads back as that, or `NaN`, `+Inf`,
//!   `-Inf`;
//! * the text ends with `# EOF`, which OpenMetrics requires and the Prometheus text parser
//!   skips as a comment.

//!
//! # The families of a report
//!
//! Families, all gauges over the run's window, base units in the names; a counter the run
//! did not measure (`None` in the report) writes no sample, never a 0:
//!
//! * `ticklab_run_info{source, label, machine, kernel, cmdline, hz}` = 1;
//!   `ticklab_run_window_seconds`;
//! * per CPU (`cpu`, `role`): `ticklab_local_timer_interrupts_per_second`,
//!   `ticklab_reschedule_ipis_per_second`, `ticklab_function_call_ipis_per_second`,
//!   `ticklab_irq_work_interrupts_per_second`, `ticklab_ticks_per_second`,
//!   `ticklab_tick_stopped_ratio`, `ticklab_cpu_busy_ratio`; per cpuidle state (`cpu`,
//!   `state`): `ticklab_cpuidle_residency_ratio`, `ticklab_cpuidle_entries_per_second`;
//! * `ticklab_package_power_watts`, `ticklab_package_idle_ratio` (when energy is known);
//! * frame groups (`group`): `ticklab_frame_jitter_seconds{percentile}` (50, 99, 99.9; not
//!   `quantile`, which Prometheus keeps for summaries), `ticklab_frame_wakeup_latency_seconds{percentile}`; per worker (`group`, `cpu`):
//!   `ticklab_frame_jitter_max_seconds`, `ticklab_frame_overruns`, `ticklab_frame_fliers`;
//! * `ticklab_pingpong_switch_seconds{method, cpus}`, `ticklab_syscall_call_seconds{syscall,
//!   cpu}`.
//!
//! [`noise_metrics`] adds a noise report's families (`host noise --format openmetrics`): per
//! CPU `ticklab_noise_ratio` (noise ÷ runtime), `ticklab_noise_max_detour_seconds`,
//! `ticklab_noise_detours`; per source (`cpu`, `class`, `source`)
//! `ticklab_noise_source_interference` (the count over the run) and, where the method times
//! sources, `ticklab_noise_source_seconds`.

use std::fmt::Write;
use ticklab_schema::openmetrics::{MetricFamily, Unit};
use ticklab_schema::report::{CpuRole, Report, Source, WorkloadResult};

fn escape_label_value(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn escape_help(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn value(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // Twelve significant digits, then the shortest decimal that reads back as that:
        // `2345.67 / 1e9` is written `0.00000234567`, not `0.0000023456700000000003`.
        // `+ 0.0` turns -0.0 into 0.0.
        let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
        let _ = write!(out, "{}", rounded + 0.0);
    }
}

/// The text exposition of `families` (see the module documentation), families without
/// samples left out, ending with `# EOF`.
pub fn render(families: &[MetricFamily]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples().is_empty()) {
        let _ = write!(out, "# HELP {} ", f.name());
        escape_help(f.help(), &mut out);
        out.push('\n');
        let _ = writeln!(out, "# TYPE {} gauge", f.name());
        if let Some(u) = f.unit() {
            let _ = writeln!(out, "# UNIT {} {}", f.name(), u.name());
        }
        for s in f.samples() {
            out.push_str(f.name());
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (name, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(name);
                    out.push_str("=\"");
                    escape_label_value(v, &mut out);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            value(s.value, &mut out);
            out.push('\n');
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Seconds from microseconds that count whole nanoseconds (jitter quantiles and maxima):
/// rounded to the nanosecond first, so that `3.2` µs is written `0.0000032`, not
/// `0.0000032000000000000003`.
fn ns_us_to_s(us: f64) -> f64 {
    (us * 1e3).round() / 1e9
}

fn role(r: CpuRole) -> &'static str {
    match r {
        CpuRole::Timekeeping => "timekeeping",
        CpuRole::Housekeeping => "housekeeping",
        CpuRole::NohzFull => "nohz_full",
    }
}

/// The noise families of a report with [`Report::noise`] (module docs); none without.
pub fn noise_metrics(r: &Report) -> Vec<MetricFamily> {
    let Some(n) = &r.noise else {
        return Vec::new();
    };
    let mut ratio = MetricFamily::new(
        "ticklab_noise_ratio",
        "Share of the sampler's runtime taken by detours above the threshold.",
        Some(Unit::Ratio),
    );
    let mut max = MetricFamily::new(
        "ticklab_noise_max_detour_seconds",
        "Longest single detour of the sampler on one CPU.",
        Some(Unit::Seconds),
    );
    let mut detours = MetricFamily::new(
        "ticklab_noise_detours",
        "Detours above the threshold on one CPU over the run.",
        None,
    );
    let mut count = MetricFamily::new(
        "ticklab_noise_source_interference",
        "Times one noise source ran on the CPU over the run.",
        None,
    );
    let mut time = MetricFamily::new(
        "ticklab_noise_source_seconds",
        "Time one noise source took from the sampler inside detours.",
        Some(Unit::Seconds),
    );
    for c in &n.cpus {
        let cpu = || vec![("cpu", c.cpu.to_string())];
        if c.runtime_ns > 0 {
            ratio.push(cpu(), c.noise_ns as f64 / c.runtime_ns as f64);
        }
        max.push(cpu(), c.max_detour_ns as f64 / 1e9);
        detours.push(cpu(), c.detours as f64);
        for s in &c.sources {
            let labels = || {
                vec![
                    ("cpu", c.cpu.to_string()),
                    ("class", crate::noise::class_word(s.class).to_lowercase()),
                    ("source", s.name.clone()),
                ]
            };
            count.push(labels(), s.count as f64);
            if let Some(ns) = s.noise_ns {
                time.push(labels(), ns as f64 / 1e9);
            }
        }
    }
    vec![ratio, max, detours, count, time]
}

/// The metric families of one run (see the module documentation), in a fixed order: the
/// run's own, then per CPU, the package's energy, and the workloads'.
pub fn report_metrics(r: &Report) -> Vec<MetricFamily> {
    let mut families = run_families(r);
    families.extend(cpu_families(r));
    families.extend(energy_families(r));
    families.extend(workload_families(r));
    families
}

/// `ticklab_run_info` and `ticklab_run_window_seconds`.
fn run_families(r: &Report) -> Vec<MetricFamily> {
    let secs = r.seconds();
    let (source, kernel) = match &r.source {
        Source::Host { kernel, .. } => ("host", kernel.clone()),
        Source::Twin { .. } => ("twin", String::new()),
    };
    let info = MetricFamily::new(
        "ticklab_run_info",
        "The run the other ticklab_ metrics describe (value always 1).",
        None,
    )
    .with(
        vec![
            ("source", source.into()),
            ("label", r.label.clone()),
            ("machine", r.machine.clone()),
            ("kernel", kernel),
            ("cmdline", r.cmdline.clone()),
            ("hz", r.hz.to_string()),
        ],
        1.0,
    );
    let window = MetricFamily::new(
        "ticklab_run_window_seconds",
        "Length of the measured window.",
        Some(Unit::Seconds),
    )
    .with(Vec::new(), secs);

    vec![info, window]
}

/// The per-CPU interrupt, tick, busy and cpuidle families.
fn cpu_families(r: &Report) -> Vec<MetricFamily> {
    let secs = r.seconds();
    let rate = |n: u64| {
        if secs > 0.0 {
            n as f64 / secs
        } else {
            f64::NAN
        }
    };
    let ratio = |ns: u64| {
        if r.duration_ns > 0 {
            ns as f64 / r.duration_ns as f64
        } else {
            f64::NAN
        }
    };
    let mut loc = MetricFamily::new(
        "ticklab_local_timer_interrupts_per_second",
        "Local timer interrupts (LOC) per second on one CPU.",
        None,
    );
    let mut res = MetricFamily::new(
        "ticklab_reschedule_ipis_per_second",
        "Reschedule IPIs (RES) per second on one CPU.",
        None,
    );
    let mut cal = MetricFamily::new(
        "ticklab_function_call_ipis_per_second",
        "Function-call IPIs (CAL) per second on one CPU.",
        None,
    );
    let mut iwi = MetricFamily::new(
        "ticklab_irq_work_interrupts_per_second",
        "irq_work interrupts (IWI) per second on one CPU.",
        None,
    );
    let mut ticks = MetricFamily::new(
        "ticklab_ticks_per_second",
        "Scheduler tick handler runs per second on one CPU.",
        None,
    );
    let mut stopped = MetricFamily::new(
        "ticklab_tick_stopped_ratio",
        "Fraction of the window the CPU's tick was stopped.",
        Some(Unit::Ratio),
    );
    let mut busy = MetricFamily::new(
        "ticklab_cpu_busy_ratio",
        "Fraction of the window the CPU was not idle.",
        Some(Unit::Ratio),
    );
    let mut residency = MetricFamily::new(
        "ticklab_cpuidle_residency_ratio",
        "Fraction of the window the CPU spent in one cpuidle state.",
        Some(Unit::Ratio),
    );
    let mut entries = MetricFamily::new(
        "ticklab_cpuidle_entries_per_second",
        "Entries into one cpuidle state per second on one CPU.",
        None,
    );
    for c in &r.cpus {
        let l = || vec![("cpu", c.cpu.to_string()), ("role", role(c.role).into())];
        loc.push(l(), rate(c.loc));
        if let Some(n) = c.res {
            res.push(l(), rate(n));
        }
        if let Some(n) = c.cal {
            cal.push(l(), rate(n));
        }
        iwi.push(l(), rate(c.iwi));
        if let Some(n) = c.ticks {
            ticks.push(l(), rate(n));
        }
        if let Some(ns) = c.tick_stopped_ns {
            stopped.push(l(), ratio(ns));
        }
        if let Some(ns) = c.busy_ns {
            busy.push(l(), ratio(ns));
        }
        for s in &c.idle_states {
            let l = || vec![("cpu", c.cpu.to_string()), ("state", s.name.clone())];
            residency.push(l(), ratio(s.time_ns));
            entries.push(l(), rate(s.usage));
        }
    }

    vec![loc, res, cal, iwi, ticks, stopped, busy, residency, entries]
}

/// The package's power and all-idle fraction, when the run knows its energy.
fn energy_families(r: &Report) -> Vec<MetricFamily> {
    let mut watts = MetricFamily::new(
        "ticklab_package_power_watts",
        "Average package power over the window.",
        Some(Unit::Watts),
    );
    let mut pkg_idle = MetricFamily::new(
        "ticklab_package_idle_ratio",
        "Fraction of the window every core of the package was idle at once.",
        Some(Unit::Ratio),
    );
    if let Some(e) = &r.energy {
        watts.push(Vec::new(), e.watts);
        pkg_idle.push(Vec::new(), e.package_idle_fraction);
    }

    vec![watts, pkg_idle]
}

/// The frame, ping-pong, syscall and bulk-synchronous workloads' families.
fn workload_families(r: &Report) -> Vec<MetricFamily> {
    let mut families = frame_families(r);
    families.extend(call_families(r));
    families.extend(bsp_families(r));
    families
}

/// The frame groups' jitter and wake-up percentiles and each worker's worst frame,
/// overruns and fliers.
fn frame_families(r: &Report) -> Vec<MetricFamily> {
    let mut jitter = MetricFamily::new(
        "ticklab_frame_jitter_seconds",
        "Frame jitter percentile of a frame group, all its workers' frames.",
        Some(Unit::Seconds),
    );
    let mut wakeup = MetricFamily::new(
        "ticklab_frame_wakeup_latency_seconds",
        "Frame wake-up latency percentile of a frame group, all its workers' frames.",
        Some(Unit::Seconds),
    );
    let mut jitter_max = MetricFamily::new(
        "ticklab_frame_jitter_max_seconds",
        "Largest frame jitter of one worker.",
        Some(Unit::Seconds),
    );
    let mut overruns = MetricFamily::new(
        "ticklab_frame_overruns",
        "Frames of one worker that ran past the next frame's start, in the window.",
        None,
    );
    let mut fliers = MetricFamily::new(
        "ticklab_frame_fliers",
        "Frames of one worker with more jitter than the flier threshold, in the window.",
        None,
    );
    for w in &r.workloads {
        let WorkloadResult::Frames(g) = w else {
            continue;
        };
        let q = |p: &str| vec![("group", g.group.clone()), ("percentile", p.into())];
        for (p, us) in [("50", g.p50_us), ("99", g.p99_us), ("99.9", g.p999_us)] {
            jitter.push(q(p), ns_us_to_s(us));
        }
        if let Some(w) = g.wakeup {
            for (p, us) in [("50", w.p50_us), ("99", w.p99_us), ("99.9", w.p999_us)] {
                wakeup.push(q(p), ns_us_to_s(us));
            }
        }
        for row in &g.rows {
            let l = || vec![("group", g.group.clone()), ("cpu", row.cpu.to_string())];
            jitter_max.push(l(), ns_us_to_s(row.max_us));
            overruns.push(l(), row.overruns as f64);
            fliers.push(l(), row.fliers as f64);
        }
    }
    vec![jitter, wakeup, jitter_max, overruns, fliers]
}

/// The ping-pong pairs' time per switch and the system-call loops' time per call.
fn call_families(r: &Report) -> Vec<MetricFamily> {
    let mut pingpong = MetricFamily::new(
        "ticklab_pingpong_switch_seconds",
        "Time per context switch of a ping-pong pair (half a round trip).",
        Some(Unit::Seconds),
    );
    let mut syscall = MetricFamily::new(
        "ticklab_syscall_call_seconds",
        "Average time per call of a system-call loop.",
        Some(Unit::Seconds),
    );
    for w in &r.workloads {
        match w {
            WorkloadResult::PingPong(p) => pingpong.push(
                vec![
                    ("method", p.method.to_string()),
                    ("cpus", format!("{},{}", p.cpus.0, p.cpus.1)),
                ],
                p.ns_per_switch / 1e9,
            ),
            WorkloadResult::Syscall(s) => syscall.push(
                vec![
                    ("syscall", s.syscall.clone()),
                    ("cpu", s.cpu.map_or_else(|| "any".into(), |c| c.to_string())),
                ],
                s.ns_per_call / 1e9,
            ),
            _ => {}
        }
    }
    vec![pingpong, syscall]
}

/// The bulk-synchronous jobs' iteration times; a job with no completed iteration has no
/// figure to export.
fn bsp_families(r: &Report) -> Vec<MetricFamily> {
    let mut bsp_iteration = MetricFamily::new(
        "ticklab_bsp_iteration_seconds",
        "Iteration time of a bulk-synchronous job (mean, p99 or max).",
        Some(Unit::Seconds),
    );
    let mut bsp_excess = MetricFamily::new(
        "ticklab_bsp_excess_seconds",
        "Mean excess of a bulk-synchronous job's iteration over the noiseless one.",
        Some(Unit::Seconds),
    );
    for w in &r.workloads {
        let WorkloadResult::Bsp(b) = w else {
            continue;
        };
        if b.iterations == 0 {
            continue;
        }
        let cpus: ticklab_cmdline::CpuSet = b.cpus.iter().copied().collect();
        let labels = |stat: &str| {
            vec![
                ("cpus", cpus.to_string()),
                ("barrier", b.barrier.name().to_string()),
                ("stat", stat.to_string()),
            ]
        };
        bsp_iteration.push(labels("mean"), b.mean_ns / 1e9);
        bsp_iteration.push(labels("p99"), b.p99_ns as f64 / 1e9);
        bsp_iteration.push(labels("max"), b.max_ns as f64 / 1e9);
        bsp_excess.push(
            vec![
                ("cpus", cpus.to_string()),
                ("barrier", b.barrier.name().to_string()),
            ],
            b.excess_mean_ns / 1e9,
        );
    }
    vec![bsp_iteration, bsp_excess]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_run_metrics_snapshot() {
        let report = crate::host_run::tests::report();
        insta::assert_snapshot!(render(&report_metrics(&report)));
    }

    #[test]
    fn unmeasured_counters_write_no_sample() {
        let mut report = crate::host_run::tests::report();
        for c in &mut report.cpus {
            c.res = None;
            c.ticks = None;
        }
        let text = render(&report_metrics(&report));
        assert!(
            !text.contains("ticklab_reschedule_ipis_per_second"),
            "{text}"
        );
        assert!(!text.contains("ticklab_ticks_per_second"), "{text}");
        assert!(text.contains("ticklab_local_timer_interrupts_per_second{cpu=\"0\""));
    }

    #[test]
    fn render_escapes_and_ends_with_eof() {
        let f = MetricFamily::new("ticklab_t_seconds", "A \\ help\nline.", Some(Unit::Seconds))
            .with(vec![("cpu", "0".into()), ("d", "a\"b\\c\nd".into())], 1.5)
            .with(vec![("cpu", "1".into()), ("d", String::new())], -0.0)
            .with(vec![("cpu", "2".into()), ("d", String::new())], f64::NAN)
            .with(
                vec![("cpu", "3".into()), ("d", String::new())],
                2345.67 / 1e9,
            );
        let empty = MetricFamily::new("ticklab_empty", "Nothing.", None);
        let g = MetricFamily::new("ticklab_g_per_second", "Rate.", None)
            .with(Vec::new(), f64::INFINITY);
        let text = render(&[f, empty, g]);
        assert_eq!(
            text,
            "# HELP ticklab_t_seconds A \\\\ help\\nline.\n\
             # TYPE ticklab_t_seconds gauge\n\
             # UNIT ticklab_t_seconds seconds\n\
             ticklab_t_seconds{cpu=\"0\",d=\"a\\\"b\\\\c\\nd\"} 1.5\n\
             ticklab_t_seconds{cpu=\"1\",d=\"\"} 0\n\
             ticklab_t_seconds{cpu=\"2\",d=\"\"} NaN\n\
             ticklab_t_seconds{cpu=\"3\",d=\"\"} 0.00000234567\n\
             # HELP ticklab_g_per_second Rate.\n\
             # TYPE ticklab_g_per_second gauge\n\
             ticklab_g_per_second +Inf\n\
             # EOF\n"
        );
    }

    /// `host irqs --format openmetrics`: the families the host lab builds from one window
    /// of `/proc/interrupts`, in this writer's text.
    #[test]
    fn host_irqs_metrics_snapshot() {
        use std::time::Duration;
        use ticklab_host::probe::irqs::rates;
        use ticklab_host::probe::irqs_metrics::metric_families;
        use ticklab_host::procfs::parse_interrupts;
        let a = parse_interrupts(
            "   CPU0 CPU1\nLOC: 100 200 Local timer interrupts\nRES: 5 6 Rescheduling interrupts\nERR: 1\n",
        )
        .unwrap();
        let b = parse_interrupts(
            "   CPU0 CPU1\nLOC: 350 210 Local timer interrupts\nRES: 5 8 Rescheduling interrupts\nERR: 3\n",
        )
        .unwrap();
        let window = rates(&a, &b, Duration::from_millis(500), true);
        insta::assert_snapshot!(render(&metric_families(&window)));
    }
}
