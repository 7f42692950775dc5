//! What each workload group of a run measured, one section per group: the part of a report
//! the twin's `ticklab sim` and the host's `ticklab host run` print alike.
//!
//! Layout of [`workload_section`] (one per group, in workload order):
//!
//! ```text
//! hogs on CPUs 1-2                  (a cpulist; `4 hogs on CPUs 0-1 (2 each on 0-1)` when shared)
//!
//! <frame_table>                      (frames: the jitter table, the wake-up table, and with
//! <wakeup_table>                      --histogram both histograms in cyclictest -h layout,
//!                                     wake-up first, after the cpu_dma_latency line)
//! <frame_histograms>
//!
//! pingpong <method> CPUs <a>,<b>[ (<mode>)]: <n> round trips, <ns> ns/round trip, <ns> ns/switch
//!
//! syscall <name> on CPU <n|any>: <n> calls, <ns> ns/call
//!   twin: entry/exit <ns> + context tracking <ns> + interrupts <ns> + preempted <ns> ns/call
//!   (<n> interrupts, <n> of them ticks; ran on CPU <n>[, pinned])      (twin breakdown only)
//!
//! bsp <n> ranks (<barrier> barrier), work <dur>: <n> iterations      (crate::noise_table::bsp_lines)
//! ```
//!
//! [`sim_report`] is `ticklab sim`'s text: a title line, the sections, the noise table when the
//! report has one (`--noise`, crate::noise_table::noise_table), then the per-CPU table.

use crate::cpu::cpu_table;
use crate::frames::{frame_table, wakeup_table};
use crate::histogram::frame_histograms;
use std::fmt::Write;
use ticklab_schema::report::{PingPongReport, Report, SyscallReport, WorkloadResult};

/// One group's section (no leading blank line). `pingpong_mode` is the host's side-B mode
/// (`processes` / `threads`), `None` in the twin; `cpu_dma_latency_us` the PM QoS limit held
/// during the run ([`Report::cpu_dma_latency_us`]), named in the histograms' header.
pub fn workload_section(
    w: &WorkloadResult,
    pingpong_mode: Option<&str>,
    cpu_dma_latency_us: Option<u32>,
) -> String {
    let mut s = String::new();
    match w {
        WorkloadResult::Hogs { cpus } => {
            let _ = writeln!(s, "{}", hogs_line(cpus));
        }
        WorkloadResult::Frames(g) => {
            s += &frame_table(g);
            s += &wakeup_table(g);
            s += &frame_histograms(g, cpu_dma_latency_us);
        }
        WorkloadResult::PingPong(p) => s += &pingpong_line(p, pingpong_mode),
        WorkloadResult::Syscall(c) => s += &syscall_lines(c),
        WorkloadResult::Bsp(b) => s += &crate::noise_table::bsp_lines(b),
    }
    s
}

/// `hogs on CPUs 0-3`: where a hog group ran, as a cpulist (the kernel's own notation, and a
/// line that stays short on a large machine), one entry per hog in `cpus`. Where some CPU
/// runs more than one hog (the host lab wraps a group larger than its CPUs), the line says
/// how many hogs and which CPUs share: `4 hogs on CPUs 0-2 (2 each on 0-1)`.
fn hogs_line(cpus: &[u32]) -> String {
    use ticklab_cmdline::CpuSet;
    let mut per_cpu = std::collections::BTreeMap::<u32, u32>::new();
    for &c in cpus {
        *per_cpu.entry(c).or_default() += 1;
    }
    let all: CpuSet = per_cpu.keys().copied().collect();
    let mut shared: Vec<u32> = per_cpu.values().copied().filter(|&n| n > 1).collect();
    if shared.is_empty() {
        return format!("hogs on CPUs {}", all.to_cpulist());
    }
    shared.sort_unstable_by(|a, b| b.cmp(a));
    shared.dedup();
    let parts: Vec<String> = shared
        .iter()
        .map(|&n| {
            let on: CpuSet = per_cpu
                .iter()
                .filter(|&(_, &k)| k == n)
                .map(|(&c, _)| c)
                .collect();
            format!("{n} each on {}", on.to_cpulist())
        })
        .collect();
    format!(
        "{} hogs on CPUs {} ({})",
        cpus.len(),
        all.to_cpulist(),
        parts.join("; ")
    )
}

/// `ticklab sim` of a ping-pong workload, which runs in the guest ping-pong model: `title`,
/// then the model's figures and its VM exits per switch in the model's order.
pub fn guest_pingpong_text(title: &str, r: &ticklab_schema::report::GuestPingPongRun) -> String {
    let exits: Vec<String> = r
        .exits_per_switch
        .iter()
        .map(|(n, v)| format!("{n} {v:.2}"))
        .collect();
    format!(
        "{title} (E3 guest model)\n{} switches: {:.1} ns/switch; guest busy {:.1} %, host CPU {:.1} % (host polling {:.1} %)\nVM exits per switch: {}\n",
        r.switches,
        r.ns_per_switch,
        r.guest_busy_pct,
        r.host_cpu_pct,
        r.host_poll_pct,
        exits.join(", ")
    )
}

fn pingpong_line(p: &PingPongReport, mode: Option<&str>) -> String {
    format!(
        "pingpong {} CPUs {},{}{}: {} round trips, {:.1} ns/round trip, {:.1} ns/switch\n",
        p.method,
        p.cpus.0,
        p.cpus.1,
        mode.map_or(String::new(), |m| format!(" ({m})")),
        p.round_trips,
        p.ns_per_round_trip,
        p.ns_per_switch
    )
}

fn syscall_lines(c: &SyscallReport) -> String {
    let mut s = format!(
        "syscall {} on CPU {}: {} calls, {:.2} ns/call\n",
        c.syscall,
        c.cpu.map_or("any".to_string(), |c| c.to_string()),
        c.calls,
        c.ns_per_call
    );
    if let Some(b) = &c.breakdown {
        let _ = writeln!(
            s,
            "  twin: entry/exit {:.3} + context tracking {:.3} + interrupts {:.3} + preempted {:.3} ns/call",
            b.entry_exit_ns,
            b.rcu_eqs_ns + b.vtime_ns + b.static_key_ns + b.vtime_flush_ns,
            b.interrupts_ns,
            b.preempted_ns
        );
        let _ = writeln!(
            s,
            "  ({} interrupts, {} of them ticks; ran on CPU {}{}{})",
            b.interrupts,
            b.ticks,
            b.ran_on,
            if b.pinned { ", pinned" } else { "" },
            if b.finished {
                ""
            } else {
                "; the run ended before the last call"
            }
        );
    }
    s
}

/// `ticklab sim`'s text: `title`, every workload group's section, then the per-CPU table.
pub fn sim_report(title: &str, r: &Report) -> String {
    let mut s = format!("{title}\n");
    for w in &r.workloads {
        s.push('\n');
        s += &workload_section(w, None, r.cpu_dma_latency_us);
    }
    if let Some(n) = &r.noise {
        s.push('\n');
        s += &crate::noise_table::noise_table(n);
    }
    s.push('\n');
    s += &cpu_table(r);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::twin_report;
    use ticklab_schema::histogram::CpuHistograms;
    use ticklab_schema::report::WakeupRow;
    use ticklab_schema::report::{FrameGroupReport, FrameRow, SyscallBreakdown};

    #[test]
    fn hog_cpus_print_as_a_cpulist() {
        // (the group's CPUs, the line): one CPU, a run, runs and singles, out of order, a
        // whole large machine, CPUs shared by several hogs.
        let table: [(Vec<u32>, &str); 7] = [
            (vec![1], "hogs on CPUs 1\n"),
            (vec![0, 1, 2, 3], "hogs on CPUs 0-3\n"),
            (vec![1, 2, 5, 7, 8], "hogs on CPUs 1-2,5,7-8\n"),
            (vec![3, 1, 2], "hogs on CPUs 1-3\n"),
            ((0..4096).collect(), "hogs on CPUs 0-4095\n"),
            // A host group larger than its CPUs wraps: the sharing is said, not hidden.
            (vec![0, 1, 0, 1], "4 hogs on CPUs 0-1 (2 each on 0-1)\n"),
            (
                vec![0, 1, 2, 0, 1, 0],
                "6 hogs on CPUs 0-2 (3 each on 0; 2 each on 1)\n",
            ),
        ];
        for (cpus, want) in table {
            let w = WorkloadResult::Hogs { cpus: cpus.clone() };
            assert_eq!(workload_section(&w, None, None), want, "{cpus:?}");
        }
    }

    /// A guest's twin report (no power model) with a frame group that kept 12-bucket
    /// histograms, a ping-pong and a syscall loop.
    fn guest_report() -> Report {
        let mut r = twin_report(false);
        r.energy = None;
        r.machine = "kvm-guest-2".into();
        let mut h = CpuHistograms::new(1, 12);
        for k in 0..1000u64 {
            // Jitter 0-3 µs, wake-up 6-9 µs, one wake-up of 14.2 µs (an overflow).
            let wake = if k == 417 {
                14_200
            } else {
                6_000 + (k as i64 * 37) % 3_500
            };
            h.record(k, (k as i64 * 13) % 3_100, wake);
        }
        let row = FrameRow {
            cpu: 1,
            frames: 1000,
            min_us: 0.0,
            max_us: 3.095,
            max_frame: 1001,
            avg_us: 1.5,
            sigma_us: 0.9,
            overruns: 0,
            last_overrun: 0,
            fliers: 0,
            first_fliers: Vec::new(),
            last_flier: None,
            wakeup: Some(WakeupRow {
                min_us: 6.0,
                max_us: 14.2,
                max_frame: 417,
                avg_us: 7.75,
                sigma_us: 1.0,
                overruns: 0,
                last_overrun: 0,
                fliers: 1,
                first_fliers: vec![417],
                last_flier: Some(417),
            }),
            max_lock_wait_us: Some(0.0),
        };
        r.workloads = vec![
            WorkloadResult::Frames(FrameGroupReport {
                group: "A".into(),
                frequency_hz: 1000.0,
                loop_units: 50_000,
                flier_threshold_us: 10.0,
                rows: vec![row],
                p50_us: 1.5,
                p99_us: 3.0,
                p999_us: 3.09,
                policy: None,
                wakeup: Some(ticklab_schema::report::Percentiles {
                    p50_us: 7.7,
                    p99_us: 9.4,
                    p999_us: 9.5,
                }),
                histograms: vec![h],
                jitter_histogram: None,
            }),
            WorkloadResult::PingPong(PingPongReport {
                method: ticklab_schema::workload::PingPongMethod::Futex,
                cpus: (0, 1),
                round_trips: 5000,
                ns_per_switch: 4_200.5,
                ns_per_round_trip: 8_401.0,
            }),
            WorkloadResult::Syscall(SyscallReport {
                syscall: "getpid".into(),
                cpu: Some(0),
                calls: 1_000_000,
                ns_per_call: 163.42,
                breakdown: Some(SyscallBreakdown {
                    ran_on: 0,
                    pinned: true,
                    finished: true,
                    elapsed_ns: 163_420_000,
                    entry_exit_ns: 163.0,
                    rcu_eqs_ns: 0.0,
                    vtime_ns: 0.0,
                    static_key_ns: 0.3,
                    vtime_flush_ns: 0.0,
                    interrupts_ns: 0.1,
                    preempted_ns: 0.02,
                    interrupts: 41,
                    ticks: 40,
                    vtime_flushes: 0,
                }),
            }),
        ];
        r
    }

    #[test]
    fn sim_text_shows_every_workload_and_no_power_model() {
        insta::assert_snapshot!(sim_report("sim — kvm-guest-2 — HZ=250", &guest_report()));
    }

    #[test]
    fn sim_text_of_a_machine_with_a_power_model_shows_watts() {
        let text = sim_report("sim", &twin_report(false));
        assert!(
            text.contains(" W, ") && !text.contains("not modelled"),
            "{text}"
        );
    }

    #[test]
    fn the_histogram_maximum_is_the_frame_tables() {
        let text = sim_report("sim", &guest_report());
        // The wake-up table's Max (two decimals) and the histogram's exact line agree.
        assert!(text.contains("1   6.0000 14.20 (417)"), "{text}");
        assert!(
            text.contains("# Max Latencies (exact us): 14.200\n"),
            "{text}"
        );
        assert!(text.contains("# Histogram Overflows: 00001\n# Histogram Overflow at cycle number:\n# Thread 0: 00417\n"), "{text}");
    }
}
