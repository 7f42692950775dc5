//! The `ticklab host run` report: what each workload group measured on the real host, then
//! the shared per-CPU table.
//!
//! Layout of [`host_run_report`]:
//!
//! ```text
//! host run: <label> on <machine> (<s> s[, INTERRUPTED by <signal>: partial])
//!
//! hogs on CPUs [1, 2]                                (per hog group)
//!
//! <frame_table>                                      (per frame group, then its wake-ups:)
//! wakeup <group>: min <us> us  p50 <us> us  p99 <us> us  max <us> us
//!   cpu <n>: <ns> ns/unit, undisturbed <us> us, <policy>
//!
//! pingpong <method> CPUs <a>,<b> (<mode>): <n> round trips, <ns> ns/round trip, <ns> ns/switch
//!
//! syscall <name> on CPU <n|any>: <n> calls, <ns> ns/call
//!
//! <cpu_table>
//! ```
//!
//! Microsecond figures in the wake-up lines have three decimals below 100 us and one above.
//! The host lab's own run type lives in `ticklab-host`; the few host-only details this report
//! shows are passed in as [`HostRunExtras`], so this crate needs only the shared schema.

use crate::cpu::cpu_table;
use crate::frames::frame_table;
use std::fmt::Write;
use ticklab_schema::report::{Report, WorkloadResult};

/// What a host run knows beyond the shared [`Report`] and this report shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostRunExtras {
    /// `Some("SIGINT")` etc. when the run was stopped early; the report is then partial.
    pub interrupted: Option<String>,
    /// Ping-pong side B: `processes` or `threads`.
    pub pingpong_mode: String,
    /// Wake-up details of the frame groups, in workload order.
    pub frame_groups: Vec<FrameGroupWakeups>,
}

/// Wake-up latency of one frame group and the calibration of its workers.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameGroupWakeups {
    /// Group name.
    pub group: String,
    /// Wake-up latency (wake − frame start) over all workers.
    pub wakeup: WakeupLatency,
    /// One line per worker.
    pub workers: Vec<FrameWorker>,
}

/// A latency distribution, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WakeupLatency {
    /// Smallest value.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest value.
    pub max_us: f64,
}

/// One frame worker's calibration and scheduling policy.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameWorker {
    /// CPU.
    pub cpu: u32,
    /// Calibrated minimum cost of one work unit, ns.
    pub ns_per_unit: f64,
    /// Undisturbed frame duration, µs.
    pub undisturbed_us: f64,
    /// Scheduling policy the worker got.
    pub policy: String,
}

/// The plain-text report of a host run (see the module documentation for the layout).
pub fn host_run_report(r: &Report, extras: &HostRunExtras) -> String {
    let mut s = format!(
        "host run: {} on {} ({:.3} s{})\n",
        r.label,
        r.machine,
        r.seconds(),
        match &extras.interrupted {
            Some(why) => format!(", INTERRUPTED by {why}: partial"),
            None => String::new(),
        }
    );
    let mut frame_details = extras.frame_groups.iter();
    for w in &r.workloads {
        s.push('\n');
        match w {
            WorkloadResult::Hogs { cpus } => {
                let _ = writeln!(s, "hogs on CPUs {cpus:?}");
            }
            WorkloadResult::Frames(g) => {
                s.push_str(&frame_table(g));
                s.push_str(&crate::frames::wakeup_table(g));
                if let Some(d) = frame_details.next() {
                    wakeups(&mut s, d);
                }
            }
            WorkloadResult::PingPong(p) => {
                let _ = writeln!(
                    s,
                    "pingpong {} CPUs {},{} ({}): {} round trips, {:.1} ns/round trip, {:.1} ns/switch",
                    p.method,
                    p.cpus.0,
                    p.cpus.1,
                    extras.pingpong_mode,
                    p.round_trips,
                    p.ns_per_round_trip,
                    p.ns_per_switch
                );
            }
            WorkloadResult::Syscall(c) => {
                let _ = writeln!(
                    s,
                    "syscall {} on CPU {}: {} calls, {:.2} ns/call",
                    c.syscall,
                    c.cpu.map_or("any".to_string(), |c| c.to_string()),
                    c.calls,
                    c.ns_per_call
                );
            }
        }
    }
    s.push('\n');
    s.push_str(&cpu_table(r));
    s
}

fn wakeups(s: &mut String, d: &FrameGroupWakeups) {
    let _ = writeln!(
        s,
        "wakeup {}: min {} us  p50 {} us  p99 {} us  max {} us",
        d.group,
        us(d.wakeup.min_us),
        us(d.wakeup.p50_us),
        us(d.wakeup.p99_us),
        us(d.wakeup.max_us)
    );
    for wk in &d.workers {
        let _ = writeln!(
            s,
            "  cpu {}: {:.3} ns/unit, undisturbed {} us, {}",
            wk.cpu,
            wk.ns_per_unit,
            us(wk.undisturbed_us),
            wk.policy
        );
    }
}

/// Microseconds: three decimals below 100, one from 100 on.
fn us(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::host_report;
    use ticklab_schema::report::{FrameGroupReport, FrameRow, PingPongReport, SyscallReport};

    fn frames() -> WorkloadResult {
        let row = |cpu: u32, max_us: f64| FrameRow {
            cpu,
            frames: 1_000,
            min_us: 1.25,
            max_us,
            max_frame: 417,
            avg_us: 3.5,
            sigma_us: 1.75,
            overruns: 0,
            last_overrun: 0,
            fliers: u64::from(max_us > 10.0),
            first_fliers: if max_us > 10.0 { vec![417] } else { vec![] },
            last_flier: (max_us > 10.0).then_some(417),
            wakeup: None,
            max_lock_wait_us: None,
        };
        WorkloadResult::Frames(FrameGroupReport {
            group: "frames1".into(),
            frequency_hz: 1000.0,
            loop_units: 20_000,
            flier_threshold_us: 10.0,
            rows: vec![row(2, 8.5), row(3, 142.25)],
            p50_us: 3.2,
            p99_us: 7.9,
            p999_us: 120.0,
            policy: Some("SCHED_FIFO 50".into()),
            wakeup: None,
        })
    }

    fn extras(interrupted: Option<&str>) -> HostRunExtras {
        let worker = |cpu, ns_per_unit| FrameWorker {
            cpu,
            ns_per_unit,
            undisturbed_us: 20_000.0 * ns_per_unit / 1e3,
            policy: "SCHED_FIFO 50".into(),
        };
        HostRunExtras {
            interrupted: interrupted.map(str::to_string),
            pingpong_mode: "processes".into(),
            frame_groups: vec![FrameGroupWakeups {
                group: "frames1".into(),
                wakeup: WakeupLatency {
                    min_us: 0.812,
                    p50_us: 1.5,
                    p99_us: 12.25,
                    max_us: 250.5,
                },
                workers: vec![worker(2, 0.3125), worker(3, 8.0)],
            }],
        }
    }

    fn report() -> Report {
        let mut r = host_report();
        r.workloads = vec![
            WorkloadResult::Hogs { cpus: vec![1] },
            frames(),
            WorkloadResult::PingPong(PingPongReport {
                method: "pipe".into(),
                cpus: (0, 1),
                round_trips: 1_000_000,
                ns_per_switch: 2_345.67,
                ns_per_round_trip: 9_382.68,
            }),
            WorkloadResult::Syscall(SyscallReport {
                syscall: "getpid".into(),
                cpu: None,
                calls: 10_000_000,
                ns_per_call: 163.049,
            }),
        ];
        r
    }

    #[test]
    fn host_run_report_snapshot() {
        insta::assert_snapshot!(host_run_report(&report(), &extras(None)));
    }

    #[test]
    fn an_interrupted_run_says_so_in_its_first_line() {
        let text = host_run_report(&report(), &extras(Some("SIGINT")));
        let first = text.lines().next().unwrap();
        assert!(
            first.ends_with(", INTERRUPTED by SIGINT: partial)"),
            "{first}"
        );
    }
}
