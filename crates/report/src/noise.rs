//! `ticklab host noise` (and any report with [`Report::noise`]): per CPU the osnoise summary,
//! then the per-source interference table, the longest detours with their sources, and the
//! cross-checks a measured run carries ([`HostNoiseDetails`]).
//!
//! ```text
//! noise on CPU 1: 10.000 s, threshold 1 us, sources from tracefs events
//! +-----+----------+-----------+-------------+-------------+---------+
//! | CPU | runtime  | noise     | available % | max detour  | detours |
//! ...
//! CPU 1 sources
//! +---------+-------------+-------+--------------+------------+
//! | class   | source      | count | noise        | max        |
//! ...
//! ```
//!
//! Times with [`duration`]'s units; available % with four decimals
//! (a quiet CPU differs from 100 % in the third); counts as integers; a source without time
//! (count deltas) shows `-`.

use std::fmt::Write;

use ticklab_schema::host_noise::{HostNoiseCpu, HostNoiseDetails};
use ticklab_schema::noise::{CpuNoise, NoiseClass, NoiseMethod, NoiseReport};
use ticklab_schema::report::Report;

use crate::format::{MISSING, duration, fixed, new_table, right_align_from};

/// The source table shows this many rows, largest noise first (JSON has them all).
pub const MAX_SOURCE_ROWS: usize = 25;

/// The word for a class in tables (rtla's column names).
pub fn class_word(c: NoiseClass) -> &'static str {
    match c {
        NoiseClass::Irq => "IRQ",
        NoiseClass::Softirq => "softirq",
        NoiseClass::Nmi => "NMI",
        NoiseClass::Thread => "thread",
        NoiseClass::Hardware => "HW",
    }
}

fn method_words(m: NoiseMethod) -> &'static str {
    match m {
        NoiseMethod::Twin => "simulated by the twin",
        NoiseMethod::Tracefs => "sources from tracefs events",
        NoiseMethod::CountDeltas => {
            "sources from /proc/interrupts and /proc/softirqs deltas (counts, no time)"
        }
    }
}

/// The report's noise section (module docs); a report without noise says so in one line.
pub fn noise_report(r: &Report, details: Option<&HostNoiseDetails>) -> String {
    let mut s = String::new();
    let Some(n) = &r.noise else {
        let _ = writeln!(s, "{}: no noise accounting in this report", r.label);
        return s;
    };
    write_header(&mut s, r, n, details);
    write_cpu_table(&mut s, n);
    for c in &n.cpus {
        write_sources(&mut s, c);
        if let Some(d) = details.and_then(|d| d.cpus.iter().find(|x| x.cpu == c.cpu)) {
            write_measured(&mut s, n.method, c, d);
        }
    }
    if let Some(d) = details
        && d.trace_overruns > 0
    {
        let _ = writeln!(s, "trace: {} events lost to overruns", d.trace_overruns);
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The run's line (window, threshold, method) and what a measured run says of its clock.
fn write_header(s: &mut String, r: &Report, n: &NoiseReport, details: Option<&HostNoiseDetails>) {
    let _ = writeln!(
        s,
        "{}: {}, threshold {}, {}",
        r.label,
        duration(r.duration_ns),
        duration(n.threshold_ns),
        method_words(n.method)
    );
    if let Some(d) = details {
        let _ = writeln!(s, "clock: {}; memory {}", d.clock, d.memory);
        if let Some(note) = &d.method_note {
            let _ = writeln!(s, "{note}");
        }
        if d.softirqs_in_threads {
            let _ = writeln!(
                s,
                "PREEMPT_RT kernel: softirqs run in threads and count as those threads' noise \
                 (as osnoise counts them), not as softirqs"
            );
        }
    }
}

/// The osnoise-style summary: one row per CPU.
fn write_cpu_table(s: &mut String, n: &NoiseReport) {
    let mut t = new_table(
        [
            "CPU",
            "runtime",
            "noise",
            "noise/s",
            "available %",
            "max detour",
            "detours",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
    );
    for c in &n.cpus {
        let per_s = if c.runtime_ns > 0 {
            duration((c.noise_ns as f64 * 1e9 / c.runtime_ns as f64).round() as u64)
        } else {
            MISSING.to_string()
        };
        t.add_row(vec![
            c.cpu.to_string(),
            duration(c.runtime_ns),
            duration(c.noise_ns),
            per_s,
            fixed(c.available_pct, 4),
            duration(c.max_detour_ns),
            c.detours.to_string(),
        ]);
    }
    right_align_from(&mut t, 1);
    let _ = writeln!(s, "{t}");
}

/// One CPU's source table, at most [`MAX_SOURCE_ROWS`] rows and a line for the rest.
fn write_sources(s: &mut String, c: &CpuNoise) {
    let _ = writeln!(
        s,
        "\nCPU {} sources (interference counts over the run)",
        c.cpu
    );
    let mut t = new_table(
        ["class", "source", "count", "noise", "max"]
            .iter()
            .map(|h| h.to_string())
            .collect(),
    );
    for src in c.sources.iter().take(MAX_SOURCE_ROWS) {
        t.add_row(vec![
            class_word(src.class).to_string(),
            src.name.clone(),
            src.count.to_string(),
            src.noise_ns.map_or(MISSING.to_string(), duration),
            src.max_ns.map_or(MISSING.to_string(), duration),
        ]);
    }
    right_align_from(&mut t, 2);
    let _ = writeln!(s, "{t}");
    if c.sources.len() > MAX_SOURCE_ROWS {
        let rest = &c.sources[MAX_SOURCE_ROWS..];
        let _ = writeln!(
            s,
            "(and {} more sources, {} runs: --json lists them all)",
            rest.len(),
            rest.iter().map(|x| x.count).sum::<u64>()
        );
    }
}

/// What a measured run adds for one CPU: the sampler, the cross-checks against
/// /proc/interrupts and /proc/stat, and the longest detours with what ran inside them.
fn write_measured(s: &mut String, method: NoiseMethod, c: &CpuNoise, d: &HostNoiseCpu) {
    let _ = writeln!(
        s,
        "sampler: {}, {:.1} ns per loop pass",
        d.policy, d.loop_ns
    );
    if let Some(loc) = d.loc_delta {
        let diff = |n: u64| {
            if loc > 0 {
                format!("{:+.2} %", 100.0 * (n as f64 - loc as f64) / loc as f64)
            } else {
                MISSING.to_string()
            }
        };
        let counted = c
            .sources
            .iter()
            .find(|x| x.class == NoiseClass::Irq && x.name == "local_timer")
            .map_or(0, |x| x.count);
        let _ = writeln!(
            s,
            "cross-check: LOC delta in /proc/interrupts {loc}; local_timer interference \
             over the runtime {counted} ({})",
            diff(counted)
        );
        if let Some(traced) = d.loc_traced {
            let _ = writeln!(
                s,
                "  local_timer_entry traced between the same two /proc/interrupts readings \
                 {traced} ({})",
                diff(traced)
            );
        }
    }
    if let Some(steal) = d.steal_ns {
        let _ = writeln!(
            s,
            "steal (/proc/stat, whole run): {} ({} of the runtime)",
            duration(steal),
            fixed(100.0 * steal as f64 / c.runtime_ns.max(1) as f64, 3) + " %"
        );
    }
    if !d.longest.is_empty() {
        let _ = writeln!(s, "longest detours:");
        for x in &d.longest {
            let inside: Vec<String> = x
                .sources
                .iter()
                .map(|r| format!("{} {}", class_word(r.class), r.name))
                .collect();
            let _ = writeln!(
                s,
                "  {:>12} at {:>10}: {}",
                duration(x.ns),
                duration(x.at_ns),
                if method == NoiseMethod::CountDeltas {
                    "sources unknown (count deltas)".to_string()
                } else if inside.is_empty() {
                    "nothing traced inside (HW)".to_string()
                } else {
                    inside.join(" + ")
                }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::histogram::LatencyHistogram;
    use ticklab_schema::host_noise::{DetourRecord, HostNoiseCpu, SourceRef};
    use ticklab_schema::noise::{CpuNoise, NoiseReport, NoiseSource};
    use ticklab_schema::report::Source;

    fn report() -> (Report, HostNoiseDetails) {
        let mut h = LatencyHistogram::new(1000);
        h.record(0, 2_300);
        h.record(1, 5_100);
        h.record(2, 1_200);
        let src = |class, name: &str, count, noise: Option<u64>, max: Option<u64>| NoiseSource {
            class,
            name: name.into(),
            count,
            noise_ns: noise,
            max_ns: max,
            nested: false,
        };
        let cpu = CpuNoise {
            cpu: 1,
            runtime_ns: 10_000_000_000,
            noise_ns: 8_600,
            available_pct: CpuNoise::available_pct(10_000_000_000, 8_600),
            max_detour_ns: 5_100,
            detours: 3,
            histogram: Some(h),
            sources: vec![
                src(
                    NoiseClass::Irq,
                    "local_timer",
                    2_500,
                    Some(4_000),
                    Some(2_100),
                ),
                src(NoiseClass::Softirq, "TIMER", 240, Some(2_400), Some(1_800)),
                src(
                    NoiseClass::Hardware,
                    "hardware",
                    1,
                    Some(1_200),
                    Some(1_200),
                ),
                src(NoiseClass::Thread, "kworker/1:1", 2, Some(0), Some(900)),
            ],
        };
        let r = Report {
            noise: Some(NoiseReport {
                method: NoiseMethod::Tracefs,
                threshold_ns: 1_000,
                cpus: vec![cpu],
            }),
            warnings: vec!["CPU 0 was 48.0 % busy where the workload explains 0.0 %: other load contaminated the run".into()],
            ..Report::new(
                Source::Host {
                    hostname: "h".into(),
                    kernel: "6.18.44".into(),
                },
                "noise on CPU 1",
                "h",
                "",
                250,
                10_000_000_000,
            )
        };
        let sref = |class, name: &str| SourceRef {
            class,
            name: name.into(),
        };
        let d = HostNoiseDetails {
            clock: "rdtsc, 2445.404 MHz".into(),
            method_note: None,
            softirqs_in_threads: false,
            interrupted: None,
            memory: "locked (mlockall)".into(),
            trace_overruns: 0,
            cpus: vec![HostNoiseCpu {
                cpu: 1,
                policy: "SCHED_OTHER".into(),
                loop_ns: 21.4,
                loc_delta: Some(2_502),
                loc_traced: Some(2_501),
                steal_ns: Some(0),
                longest: vec![
                    DetourRecord {
                        at_ns: 4_000_120,
                        ns: 5_100,
                        sources: vec![
                            sref(NoiseClass::Irq, "local_timer"),
                            sref(NoiseClass::Softirq, "TIMER"),
                        ],
                    },
                    DetourRecord {
                        at_ns: 7_000,
                        ns: 1_200,
                        sources: Vec::new(),
                    },
                ],
            }],
        };
        (r, d)
    }

    #[test]
    fn host_noise_text() {
        let (r, d) = report();
        insta::assert_snapshot!(noise_report(&r, Some(&d)));
    }

    #[test]
    fn a_report_without_noise_says_so() {
        let (mut r, _) = report();
        r.noise = None;
        assert_eq!(
            noise_report(&r, None),
            "noise on CPU 1: no noise accounting in this report\n"
        );
    }
}
