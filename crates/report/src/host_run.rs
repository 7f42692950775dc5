//! The `ticklab host run` report: what each workload group measured on the real host, then
//! the shared per-CPU table.
//!
//! Layout of [`host_run_report`]:
//!
//! ```text
//! host run: <label> on <machine> (<s> s[, INTERRUPTED by <signal>: partial])
//!
//! hogs on CPUs 1-2                                   (per hog group)
//!
//! <frame_table>                                      (per frame group, then its wake-ups:)
//! wakeup <group>: min <us> us  p50 <us> us  p99 <us> us  max <us> us
//!   cpu <n>: <ns> ns/unit, undisturbed <us> us, <policy>
//!
//! pingpong <method> CPUs <a>,<b> (<mode>): <n> round trips, <ns> ns/round trip, <ns> ns/switch
//!
//! syscall <name> on CPU <n|any>: <n> calls, <ns> ns/call
//!   twin of this host (<preset>, <kernel>, HZ=<hz>, entry/exit <ns> ns as measured here):
//!     housekeeping CPU <n>, as booted:           <ns> ns/call (interrupts <ns>, preempted <ns>)
//!     nohz_full CPU <n>, boot with nohz_full=<n>: <ns> ns/call (context tracking <ns>:
//!       rcu_eqs <ns> + vtime <ns> + flush <ns>; interrupts <ns>)   [when it ran]
//!
//! <cpu_table>
//! ```
//!
//! Microsecond figures in the wake-up lines have three decimals below 100 us and one above.
//! The host lab's own run type lives in `ticklab-host`; the few host-only details this report
//! shows are passed in as [`HostRunExtras`], so this crate needs only the shared schema.

use crate::cpu::cpu_table;
use crate::workloads::workload_section;
use std::fmt::Write;
use ticklab_schema::experiment::e4::{HostPrediction, PredictedLoop};
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
    /// What the twin of this host predicts for the syscall loop, if one ran.
    pub syscall_prediction: Option<HostPrediction>,
}

/// The twin-of-this-host lines under a syscall measurement (see the module docs).
fn prediction(s: &mut String, p: &HostPrediction) {
    let _ = writeln!(
        s,
        "  twin of this host ({}, {}, HZ={}, entry/exit {} ns as measured here):",
        p.machine, p.kernel, p.hz, p.entry_exit_ns
    );
    let hk = &p.housekeeping;
    let _ = writeln!(
        s,
        "    housekeeping CPU {}, as booted: {:.2} ns/call (interrupts {:.3}, preempted {:.3})",
        hk.breakdown.ran_on, hk.ns_per_call, hk.breakdown.interrupts_ns, hk.breakdown.preempted_ns
    );
    match (&p.nohz_full, &p.nohz_full_not_possible) {
        (_, Some(option)) => {
            let _ = writeln!(
                s,
                "    nohz_full: not possible on this kernel: built without {option}"
            );
        }
        (Some(f), None) => nohz_full_line(s, f),
        (None, None) => {
            s.push_str("    nohz_full: none on a one-CPU machine (one CPU stays housekeeping)\n")
        }
    }
}

fn nohz_full_line(s: &mut String, f: &PredictedLoop) {
    let b = &f.breakdown;
    let _ = writeln!(
        s,
        "    nohz_full CPU {}, boot with {}: {:.2} ns/call (context tracking {:.3}: rcu_eqs {:.3} + vtime {:.3} + flush {:.3}; interrupts {:.3})",
        b.ran_on,
        f.cmdline,
        f.ns_per_call,
        b.rcu_eqs_ns + b.vtime_ns + b.vtime_flush_ns,
        b.rcu_eqs_ns,
        b.vtime_ns,
        b.vtime_flush_ns,
        b.interrupts_ns
    );
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
        s += &workload_section(w, Some(&extras.pingpong_mode), r.cpu_dma_latency_us);
        match w {
            WorkloadResult::Frames(_) => {
                if let Some(d) = frame_details.next() {
                    wakeups(&mut s, d);
                }
            }
            WorkloadResult::Syscall(_) => {
                if let Some(p) = &extras.syscall_prediction {
                    prediction(&mut s, p);
                }
            }
            _ => {}
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
pub(crate) mod tests {
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
            jitter_histogram: None,
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
            histograms: Vec::new(),
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
            syscall_prediction: None,
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

    /// A host report with every kind of workload (shared with the OpenMetrics tests).
    pub(crate) fn report() -> Report {
        let mut r = host_report();
        r.workloads = vec![
            WorkloadResult::Hogs { cpus: vec![1] },
            frames(),
            WorkloadResult::PingPong(PingPongReport {
                method: ticklab_schema::workload::PingPongMethod::Pipe,
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
                breakdown: None,
            }),
        ];
        r
    }

    #[test]
    fn host_run_report_snapshot() {
        insta::assert_snapshot!(host_run_report(&report(), &extras(None)));
    }

    #[test]
    fn twin_prediction_lines() {
        use ticklab_schema::report::SyscallBreakdown;
        let b = |cpu, eqs, vtime, irqs| SyscallBreakdown {
            ran_on: cpu,
            pinned: true,
            finished: true,
            elapsed_ns: 1,
            entry_exit_ns: 163.0,
            rcu_eqs_ns: eqs,
            vtime_ns: vtime,
            static_key_ns: 0.0,
            vtime_flush_ns: 0.01,
            interrupts_ns: irqs,
            preempted_ns: 0.05,
            interrupts: 1,
            ticks: 1,
            vtime_flushes: 1,
        };
        let loop_ = |cmdline: &str, ns, bd| PredictedLoop {
            cmdline: cmdline.into(),
            ns_per_call: ns,
            breakdown: bd,
        };
        let mut e = extras(None);
        e.syscall_prediction = Some(HostPrediction {
            machine: "kvm-guest-2".into(),
            kernel: "6.18".into(),
            hz: 250,
            entry_exit_ns: 163,
            housekeeping: loop_("", 163.3, b(0, 0.0, 0.0, 0.25)),
            nohz_full: Some(loop_("nohz_full=1", 229.1, b(1, 42.0, 24.0, 0.02))),
            nohz_full_not_possible: None,
        });
        let text = host_run_report(&report(), &e);
        let lines: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("syscall getpid"))
            .take(4)
            .collect();
        insta::assert_snapshot!(lines.join("\n"));
        e.syscall_prediction
            .as_mut()
            .unwrap()
            .nohz_full_not_possible = Some("CONFIG_NO_HZ_FULL".into());
        let text = host_run_report(&report(), &e);
        assert!(
            text.contains(
                "nohz_full: not possible on this kernel: built without CONFIG_NO_HZ_FULL"
            ),
            "{text}"
        );
        assert!(!text.contains("boot with nohz_full=1"), "{text}");
        e.syscall_prediction
            .as_mut()
            .unwrap()
            .nohz_full_not_possible = None;
        e.syscall_prediction.as_mut().unwrap().nohz_full = None;
        let text = host_run_report(&report(), &e);
        assert!(
            text.contains("nohz_full: none on a one-CPU machine"),
            "{text}"
        );
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
