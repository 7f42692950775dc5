//! Several runs side by side.
//!
//! [`compare_table`] prints one row per run:
//!
//! | column | content | format |
//! |---|---|---|
//! | run | the label given by the caller | text |
//! | cmdline | the run's kernel command line | text |
//! | workload | [`workload_label`] of the run | text |
//! | LOC/s | local timer interrupts per second, whole machine | 1 decimal |
//! | ticks/s | tick handler runs per second, whole machine (`-` unless every CPU reports them) | 1 decimal |
//! | stopped % | tick-stopped share of the window, mean over CPUs | 1 decimal |
//! | W | average package power | 3 decimals |
//! | pkg idle % | share of the window with every core idle | 1 decimal |
//! | max jiffies gap | longest interval without a jiffies update | duration |
//! | hangs | hrtimer interrupt hangs (`nr_hangs`) | integer |
//!
//! When a run has a noise report (`--noise`, or a bsp job), three more columns follow:
//!
//! | column | content | format |
//! |---|---|---|
//! | noise us/s | noise per second of runtime, the noisiest busy CPU | 1 decimal |
//! | max detour us | longest single detour, any busy CPU | 1 decimal |
//! | bsp excess % | a bsp job's mean excess over the noiseless iteration | 3 decimals |
//!
//! Missing values print as `-`.

use crate::cpu::{loc_per_s, mean_stopped_percent, ticks_per_s};
use crate::format::{MISSING, duration, fixed, new_table, opt_fixed, right_align_from};
use ticklab_schema::report::{Report, WorkloadResult};

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

/// The three noise columns of one run (see the module docs).
fn noise_columns(r: &Report) -> [String; 3] {
    let cpus = r.noise.as_ref().map_or(&[][..], |n| &n.cpus[..]);
    let per_s = cpus
        .iter()
        .filter(|c| c.runtime_ns > 0)
        .map(|c| c.noise_ns as f64 * 1e6 / c.runtime_ns as f64)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let detour = cpus.iter().map(|c| c.max_detour_ns).max();
    let bsp = r.workloads.iter().find_map(|w| match w {
        WorkloadResult::Bsp(b) => Some(b.excess_pct),
        _ => None,
    });
    [
        opt_fixed(per_s, 1),
        opt_fixed(detour.map(|d| d as f64 / 1e3), 1),
        opt_fixed(bsp, 3),
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

/// Renders several runs side by side, one row per `(label, report)`, in the given order.
pub fn compare_table(rows: &[(String, &Report)]) -> String {
    let header = [
        "run",
        "cmdline",
        "workload",
        "LOC/s",
        "ticks/s",
        "stopped %",
        "W",
        "pkg idle %",
        "max jiffies gap",
        "hangs",
    ];
    let noise = rows.iter().any(|(_, r)| r.noise.is_some());
    let mut header: Vec<String> = header.iter().map(|s| s.to_string()).collect();
    if noise {
        header.extend(["noise us/s", "max detour us", "bsp excess %"].map(String::from));
    }
    let mut t = new_table(header);
    for (label, r) in rows {
        let mut row = vec![
            label.clone(),
            r.cmdline.clone(),
            workload_label(r),
            opt_fixed(loc_per_s(r), 1),
            opt_fixed(ticks_per_s(r), 1),
            opt_fixed(mean_stopped_percent(r), 1),
            opt_fixed(r.energy.as_ref().map(|e| e.watts), 3),
            opt_fixed(
                r.energy.as_ref().map(|e| e.package_idle_fraction * 100.0),
                1,
            ),
            r.timekeeping
                .as_ref()
                .map_or_else(|| MISSING.to_string(), |tk| duration(tk.max_jiffies_gap_ns)),
            r.hrtimer
                .as_ref()
                .map_or_else(|| MISSING.to_string(), |h| h.nr_hangs.to_string()),
        ];
        if noise {
            row.extend(noise_columns(r));
        }
        t.add_row(row);
    }
    right_align_from(&mut t, 3);
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
        assert_eq!(a[4], fixed(plain.loc_per_s(), 1));
        assert_eq!(a[7], "0.502");
        assert_eq!(a[8], "41.0");
        assert_eq!(a[9], "1.000 ms");
        assert_eq!(a[10], "0");
        let b = row("b");
        assert_eq!(b[5], "-"); // no tick counters on the host
        assert_eq!(b[7], "-");
        assert_eq!(b[10], "-");
    }
}
