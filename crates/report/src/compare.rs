//! Several runs side by side.
//!
//! [`compare_table`] prints one row per run. The columns follow what the runs did: the
//! question a frame workload asks is its jitter, not its interrupt rate, so the workload's own
//! columns come first and the machine's counters after them.
//!
//! | column | content | when |
//! |---|---|---|
//! | run | the label given by the caller | always |
//! | cmdline | the run's kernel command line | when some label differs from it |
//! | workload | [`workload_label`] of the run | always |
//! | jitter max / p99.9 / avg us | frame jitter: the largest of any worker, the group 99.9th percentile, the mean over all frames | a frame workload |
//! | wake p50 / p99 / max us | wake-up latency (programmed start to running) | a frame workload with wake-up latencies |
//! | lock wait max us | the longest wait of a worker CPU for a shared lock or line | a frame workload with lock waits (twin) |
//! | ns/switch | a ping-pong's nanoseconds per context switch | a ping-pong workload |
//! | ns/call | a syscall loop's nanoseconds per call | a syscall workload |
//! | noise us/s, max detour us, bsp excess % | noise per second of runtime on the noisiest busy CPU, the longest single detour, a bsp job's mean excess | a noise report (`--noise`, or a bsp job) |
//! | LOC/s | local timer interrupts per second, whole machine | always |
//! | ticks/s | tick handler runs per second, whole machine (`-` unless every CPU reports them) | always |
//! | stopped % | tick-stopped share of the window, mean over CPUs | always |
//! | W | average package power | always |
//! | pkg idle % | share of the window with every core idle | always |
//! | max jiffies gap | longest interval without a jiffies update | always |
//! | hangs | hrtimer interrupt hangs (`nr_hangs`) | always |
//!
//! With several frame groups in one run, each frame column holds the worst group (largest
//! maximum, percentile and mean). Every numeric column has one precision, chosen from its
//! largest magnitude ([`column_decimals`]); missing values print as `-`.

use crate::cpu::{loc_per_s, mean_stopped_percent, ticks_per_s};
use crate::format::{MISSING, column_decimals, duration, fixed, new_table, right_align_from};
use ticklab_schema::experiment::e2::summary;
use ticklab_schema::report::{FrameGroupReport, Report, WorkloadResult};

/// A short description of what ran, derived from the workload results: `idle` when there
/// are none, else the groups joined by ` + ` (`hogs x2`, `frames A 960Hz x20`,
/// `pingpong futex 0<->1`, `syscall getpid`).
pub fn workload_label(r: &Report) -> String {
    if r.workloads.is_empty() {
        return "idle".to_string();
    }
    let parts: Vec<String> = r
        .workloads
        .iter()
        .map(|w| match w {
            WorkloadResult::Hogs { cpus } => format!("hogs x{}", cpus.len()),
            WorkloadResult::Frames(g) => format!(
                "frames {} {}Hz x{}",
                g.group,
                trim_float(g.frequency_hz),
                g.rows.len()
            ),
            WorkloadResult::PingPong(p) => {
                format!("pingpong {} {}<->{}", p.method, p.cpus.0, p.cpus.1)
            }
            WorkloadResult::Syscall(s) => format!("syscall {}", s.syscall),
            WorkloadResult::Bsp(b) => format!(
                "bsp x{} {}",
                b.ranks,
                ticklab_schema::units::format_duration(b.work_ns)
            ),
        })
        .collect();
    parts.join(" + ")
}

/// One numeric column: its header and one value per run (`None` prints `-`).
struct Column {
    header: &'static str,
    values: Vec<Option<f64>>,
}

impl Column {
    fn new(
        header: &'static str,
        rows: &[(String, &Report)],
        f: impl Fn(&Report) -> Option<f64>,
    ) -> Self {
        Column {
            header,
            values: rows.iter().map(|(_, r)| f(r)).collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.values.iter().all(Option::is_none)
    }
}

/// The frame groups of a run.
fn frame_groups(r: &Report) -> impl Iterator<Item = &FrameGroupReport> {
    r.workloads.iter().filter_map(|w| match w {
        WorkloadResult::Frames(g) => Some(g),
        _ => None,
    })
}

/// The largest of `f` over the run's frame groups, `None` without frames.
fn worst_group(r: &Report, f: impl Fn(&FrameGroupReport) -> Option<f64>) -> Option<f64> {
    frame_groups(r)
        .filter(|g| g.rows.iter().any(|row| row.frames > 0))
        .filter_map(f)
        .reduce(f64::max)
}

/// The workload's own columns (see the module docs), those no run fills left out.
fn workload_columns(rows: &[(String, &Report)]) -> Vec<Column> {
    let cols = vec![
        Column::new("jitter max us", rows, |r| {
            worst_group(r, |g| Some(summary(g).max_us))
        }),
        Column::new("jitter p99.9 us", rows, |r| {
            worst_group(r, |g| Some(g.p999_us))
        }),
        Column::new("jitter avg us", rows, |r| {
            worst_group(r, |g| Some(summary(g).avg_us))
        }),
        Column::new("wake p50 us", rows, |r| {
            worst_group(r, |g| g.wakeup.map(|p| p.p50_us))
        }),
        Column::new("wake p99 us", rows, |r| {
            worst_group(r, |g| g.wakeup.map(|p| p.p99_us))
        }),
        Column::new("wake max us", rows, |r| {
            worst_group(r, |g| {
                g.rows
                    .iter()
                    .filter_map(|row| row.wakeup.as_ref().map(|w| w.max_us))
                    .reduce(f64::max)
            })
        }),
        Column::new("lock wait max us", rows, |r| {
            worst_group(r, |g| {
                g.rows
                    .iter()
                    .filter_map(|row| row.max_lock_wait_us)
                    .reduce(f64::max)
            })
        }),
        Column::new("ns/switch", rows, |r| {
            r.workloads.iter().find_map(|w| match w {
                WorkloadResult::PingPong(p) => Some(p.ns_per_switch),
                _ => None,
            })
        }),
        Column::new("ns/call", rows, |r| {
            r.workloads.iter().find_map(|w| match w {
                WorkloadResult::Syscall(s) => Some(s.ns_per_call),
                _ => None,
            })
        }),
    ];
    let mut cols: Vec<Column> = cols.into_iter().filter(|c| !c.is_empty()).collect();
    if rows.iter().any(|(_, r)| r.noise.is_some()) {
        cols.push(Column::new("noise us/s", rows, |r| {
            r.noise.as_ref().and_then(|n| {
                n.cpus
                    .iter()
                    .filter(|c| c.runtime_ns > 0)
                    .map(|c| c.noise_ns as f64 * 1e6 / c.runtime_ns as f64)
                    .reduce(f64::max)
            })
        }));
        cols.push(Column::new("max detour us", rows, |r| {
            r.noise
                .as_ref()
                .and_then(|n| n.cpus.iter().map(|c| c.max_detour_ns).max())
                .map(|d| d as f64 / 1e3)
        }));
        cols.push(Column::new("bsp excess %", rows, |r| {
            r.workloads.iter().find_map(|w| match w {
                WorkloadResult::Bsp(b) => Some(b.excess_pct),
                _ => None,
            })
        }));
    }
    cols
}

/// The machine's counters, every run.
fn machine_columns(rows: &[(String, &Report)]) -> Vec<Column> {
    vec![
        Column::new("LOC/s", rows, loc_per_s),
        Column::new("ticks/s", rows, ticks_per_s),
        Column::new("stopped %", rows, mean_stopped_percent),
        Column::new("W", rows, |r| r.energy.as_ref().map(|e| e.watts)),
        Column::new("pkg idle %", rows, |r| {
            r.energy.as_ref().map(|e| e.package_idle_fraction * 100.0)
        }),
    ]
}

/// `960` for 960.0, `666.5` for 666.5 (at most 3 decimals, trailing zeros dropped).
fn trim_float(v: f64) -> String {
    let s = fixed(v, 3);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Renders several runs side by side, one row per `(label, report)`, in the given order
/// (columns: see the module docs).
pub fn compare_table(rows: &[(String, &Report)]) -> String {
    let with_cmdline = rows.iter().any(|(label, r)| *label != r.cmdline);
    let mut numeric = workload_columns(rows);
    numeric.extend(machine_columns(rows));
    let decimals: Vec<usize> = numeric
        .iter()
        .map(|c| column_decimals(c.values.iter().flatten().copied()))
        .collect();
    let mut header = vec!["run".to_string()];
    if with_cmdline {
        header.push("cmdline".into());
    }
    header.push("workload".into());
    let text_columns = header.len();
    header.extend(numeric.iter().map(|c| c.header.to_string()));
    header.extend(["max jiffies gap", "hangs"].map(String::from));
    let mut t = new_table(header);
    for (i, (label, r)) in rows.iter().enumerate() {
        let mut row = vec![label.clone()];
        if with_cmdline {
            row.push(r.cmdline.clone());
        }
        row.push(workload_label(r));
        for (c, &d) in numeric.iter().zip(&decimals) {
            row.push(c.values[i].map_or_else(|| MISSING.to_string(), |v| fixed(v, d)));
        }
        row.push(
            r.timekeeping
                .as_ref()
                .map_or_else(|| MISSING.to_string(), |tk| duration(tk.max_jiffies_gap_ns)),
        );
        row.push(
            r.hrtimer
                .as_ref()
                .map_or_else(|| MISSING.to_string(), |h| h.nr_hangs.to_string()),
        );
        t.add_row(row);
    }
    right_align_from(&mut t, text_columns);
    let mut s = t.to_string();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{host_report, twin_report};
    use ticklab_schema::report::{FrameGroupReport, PingPongReport, SyscallReport};

    #[test]
    fn e1_style_snapshot() {
        let plain = twin_report(false);
        let mut aggressive = twin_report(true);
        aggressive.workloads = vec![WorkloadResult::Hogs { cpus: vec![1, 2] }];
        let host = host_report();
        let rows = vec![
            ("nohz_full".to_string(), &plain),
            ("aggressive, 2 hogs".to_string(), &aggressive),
            ("host".to_string(), &host),
        ];
        insta::assert_snapshot!(compare_table(&rows));
    }

    #[test]
    fn workload_labels() {
        let mut r = host_report();
        assert_eq!(workload_label(&r), "idle");
        r.workloads = vec![
            WorkloadResult::Frames(FrameGroupReport {
                jitter_histogram: None,
                group: "B".into(),
                frequency_hz: 666.0,
                loop_units: 72_072,
                flier_threshold_us: 10.0,
                rows: vec![],
                p50_us: 0.0,
                p99_us: 0.0,
                p999_us: 0.0,
                policy: None,
                wakeup: None,
                histograms: Vec::new(),
            }),
            WorkloadResult::PingPong(PingPongReport {
                method: ticklab_schema::workload::PingPongMethod::Futex,
                cpus: (0, 1),
                round_trips: 1,
                ns_per_switch: 1.0,
                ns_per_round_trip: 2.0,
            }),
            WorkloadResult::Syscall(SyscallReport {
                syscall: "getpid".into(),
                cpu: Some(4),
                calls: 1,
                ns_per_call: 1.0,
                breakdown: None,
            }),
        ];
        assert_eq!(
            workload_label(&r),
            "frames B 666Hz x0 + pingpong futex 0<->1 + syscall getpid"
        );
        assert_eq!(trim_float(666.5), "666.5");
        assert_eq!(trim_float(960.0), "960");
    }

    #[test]
    fn row_values_come_from_each_report() {
        let plain = twin_report(false);
        let host = host_report();
        let out = compare_table(&[("a".to_string(), &plain), ("b".to_string(), &host)]);
        let row = |label: &str| -> Vec<String> {
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("| {label} ")))
                .unwrap();
            line.split('|').map(|c| c.trim().to_string()).collect()
        };
        let a = row("a");
        assert_eq!(a[4], fixed(plain.loc_per_s(), 0));
        assert_eq!(a[7], "0.502");
        assert_eq!(a[8], "41.00");
        assert_eq!(a[9], "1.000 ms");
        assert_eq!(a[10], "0");
        let b = row("b");
        assert_eq!(b[5], "-"); // no tick counters on the host
        assert_eq!(b[7], "-");
        assert_eq!(b[10], "-");
    }

    #[test]
    fn frame_runs_get_jitter_wakeup_and_lock_columns_and_no_repeated_cmdline() {
        let results = crate::e2::tests::results();
        let rows: Vec<(String, &Report)> = results
            .outcomes
            .iter()
            .map(|o| (o.report.cmdline.clone(), &o.report))
            .collect();
        let out = compare_table(&rows);
        let header: Vec<&str> = out
            .lines()
            .nth(1)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(
            &header[1..11],
            [
                "run",
                "workload",
                "jitter max us",
                "jitter p99.9 us",
                "jitter avg us",
                "wake p50 us",
                "wake p99 us",
                "wake max us",
                "lock wait max us",
                "LOC/s"
            ],
            "{out}"
        );
        assert!(!header.contains(&"cmdline"), "{out}");
        assert!(!header.contains(&"ns/switch"), "{out}");
        // The worst group of the first run: group B, jitter 34 us, max 2 x 34 + cpu 7 / 100.
        let first: Vec<&str> = out
            .lines()
            .nth(3)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(first[3], "68.07", "{out}");
        assert_eq!(first[4], "64.60", "{out}");
        insta::assert_snapshot!(out);
    }

    #[test]
    fn pingpong_and_syscall_runs_get_their_ns() {
        let mut a = twin_report(false);
        a.workloads = vec![WorkloadResult::PingPong(PingPongReport {
            method: ticklab_schema::workload::PingPongMethod::Futex,
            cpus: (0, 1),
            round_trips: 10,
            ns_per_switch: 1234.5,
            ns_per_round_trip: 2469.0,
        })];
        let mut b = twin_report(false);
        b.workloads = vec![WorkloadResult::Syscall(SyscallReport {
            syscall: "getpid".into(),
            cpu: Some(1),
            calls: 100,
            ns_per_call: 466.0,
            breakdown: None,
        })];
        let out = compare_table(&[("a".into(), &a), ("b".into(), &b)]);
        let header: Vec<&str> = out
            .lines()
            .nth(1)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(&header[4..6], ["ns/switch", "ns/call"], "{out}");
        assert!(!header.contains(&"jitter max us"), "{out}");
        let row_a: Vec<&str> = out
            .lines()
            .nth(3)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(&row_a[4..6], ["1234", "-"], "{out}");
    }
}
