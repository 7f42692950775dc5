//! The E2 report: frame-scheduler jitter on the 64-CPU server, without and with `skew_tick=1`.
//!
//! Layout of [`e2_report`]:
//!
//! ```text
//! E2 — frame-scheduler jitter on a 64-CPU 2012 server (...), MAXSMP rcu leaf fan-out <n>
//! twin: <s> simulated s per configuration after <s> s warm-up, seed <seed>; jitter budget <us> us
//!
//! (a) no skew, nohz on — cmdline "<cmdline>"
//! <frame_table of each group>                       (see [`frame_table`])
//!
//! (b) skew_tick=1, periodic tick on the isolated CPUs — cmdline "<cmdline>"
//! <frame_table of each group>
//!
//! Per-group summary (us):
//! config  group |      max      avg    sigma    p99.9 |    fliers overruns
//! no-skew A     | ...                               (one line per configuration and group)
//!
//! Tick-time shared state (twin):
//!   no-skew <lock_lines of the report>              (see [`lock_lines`])
//! ```
//!
//! [`json`] is the `--json` form; [`events_line`] is the twin's speed, which the CLI prints on
//! stderr so that stdout stays byte-identical for a seed.

use crate::cpu::lock_lines;
use crate::frames::frame_table;
use std::fmt::Write;
use ticklab_schema::experiment::e2::{
    BUDGET_US, MAXSMP_RCU_FANOUT, Outcome, Results, WARMUP_NS, cmdline, config_name, summary,
};
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E2 tables as plain text (see the module documentation for the layout).
pub fn e2_report(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "E2 — frame-scheduler jitter on a 64-CPU 2012 server (4 × Sandy Bridge-EP 8C/16T), \
         3.0-rt, HZ=1000 (assumed), MAXSMP rcu leaf fan-out {MAXSMP_RCU_FANOUT}"
    );
    let _ = writeln!(
        s,
        "twin: {} simulated s per configuration after {} s warm-up, seed {}; jitter budget {} us\n",
        r.duration_ns as f64 / 1e9,
        WARMUP_NS as f64 / 1e9,
        r.seed,
        BUDGET_US
    );
    for o in &r.outcomes {
        frame_tables(&mut s, o);
    }
    group_summaries(&mut s, &r.outcomes);
    s.push_str("\nTick-time shared state (twin):\n");
    for o in &r.outcomes {
        for line in lock_lines(&o.report) {
            let _ = writeln!(s, "  {:<7} {}", config_name(o.skew), line);
        }
    }
    s
}

/// The `--json` document: `schema_version`, `experiment: "e2"`, `seed`, `duration_ns`,
/// `flier_us`, and `configurations` (one [`Outcome::summary`] each); every object's keys in
/// alphabetical order.
pub fn json(r: &Results) -> serde_json::Result<serde_json::Value> {
    let configurations: Vec<_> = r.outcomes.iter().map(Outcome::summary).collect();
    Ok(serde_json::json!({
        "schema_version": REPORT_SCHEMA_VERSION,
        "experiment": "e2",
        "seed": r.seed,
        "duration_ns": r.duration_ns,
        "flier_us": r.flier_us,
        "configurations": serde_json::to_value(configurations)?,
    }))
}

/// Events each configuration simulated and the wall time of the whole run, e.g.
/// `simulated events: no-skew 11.0 M, skew 13.0 M; 0.6 s wall for both configurations on 2
/// threads`.
pub fn events_line(r: &Results, wall_s: f64, threads: usize) -> String {
    let events: Vec<String> = r
        .outcomes
        .iter()
        .map(|o| format!("{} {:.1} M", config_name(o.skew), o.events as f64 / 1e6))
        .collect();
    format!(
        "simulated events: {}; {wall_s:.1} s wall for both configurations on {threads} threads",
        events.join(", ")
    )
}

fn frame_tables(s: &mut String, o: &Outcome) {
    let _ = writeln!(
        s,
        "({}) {} — cmdline {:?}",
        if o.skew { 'b' } else { 'a' },
        if o.skew {
            "skew_tick=1, periodic tick on the isolated CPUs"
        } else {
            "no skew, nohz on"
        },
        cmdline(o.skew)
    );
    for g in o.groups() {
        s.push_str(&frame_table(g));
    }
    s.push('\n');
}

fn group_summaries(s: &mut String, outcomes: &[Outcome]) {
    s.push_str("Per-group summary (us):\n");
    let _ = writeln!(
        s,
        "{:<7} {:<5} | {:>8} {:>8} {:>8} {:>8} | {:>9} {:>8}",
        "config", "group", "max", "avg", "sigma", "p99.9", "fliers", "overruns"
    );
    for o in outcomes {
        for g in o.groups() {
            let g = summary(g);
            let _ = writeln!(
                s,
                "{:<7} {:<5} | {:>8.2} {:>8.4} {:>8.4} {:>8.2} | {:>9} {:>8}",
                config_name(o.skew),
                g.group,
                g.max_us,
                g.avg_us,
                g.sigma_us,
                g.p999_us,
                g.fliers,
                g.overruns
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::twin_report;
    use ticklab_schema::report::{FrameGroupReport, FrameRow, WorkloadResult};

    fn group(name: &str, hz: f64, cpus: std::ops::Range<u32>, jitter_us: f64) -> WorkloadResult {
        let rows = cpus
            .map(|cpu| FrameRow {
                cpu,
                frames: (hz * 2.0) as u64,
                min_us: jitter_us / 4.0,
                max_us: jitter_us * 2.0 + f64::from(cpu) / 100.0,
                max_frame: 100 + u64::from(cpu),
                avg_us: jitter_us,
                sigma_us: jitter_us / 3.0,
                overruns: u64::from(jitter_us > 30.0),
                last_overrun: if jitter_us > 30.0 { 1_500 } else { 0 },
                fliers: if jitter_us > 5.0 {
                    12 + u64::from(cpu)
                } else {
                    0
                },
                first_fliers: if jitter_us > 5.0 { vec![3, 9] } else { vec![] },
                last_flier: (jitter_us > 5.0).then_some(1_900),
            })
            .collect();
        WorkloadResult::Frames(FrameGroupReport {
            group: name.into(),
            frequency_hz: hz,
            loop_units: 50_000,
            flier_threshold_us: 10.0,
            rows,
            p50_us: jitter_us,
            p99_us: jitter_us * 1.8,
            p999_us: jitter_us * 1.9,
            policy: None,
        })
    }

    fn outcome(skew: bool) -> Outcome {
        let mut report = twin_report(false);
        let jitter = if skew { 4.0 } else { 17.0 };
        report.workloads = vec![
            group("A", 960.0, 4..6, jitter),
            group("B", 666.0, 6..8, jitter * 2.0),
        ];
        Outcome {
            skew,
            report,
            events: if skew { 13_012_345 } else { 10_987_654 },
        }
    }

    fn results() -> Results {
        Results {
            seed: 1,
            duration_ns: 2_000_000_000,
            flier_us: 10.0,
            outcomes: vec![outcome(false), outcome(true)],
        }
    }

    #[test]
    fn e2_report_snapshot() {
        insta::assert_snapshot!(e2_report(&results()));
    }

    #[test]
    fn events_line_names_both_configurations() {
        assert_eq!(
            events_line(&results(), 0.64, 2),
            "simulated events: no-skew 11.0 M, skew 13.0 M; 0.6 s wall for both configurations \
             on 2 threads"
        );
    }

    #[test]
    fn json_lists_one_summary_per_configuration() {
        let v = json(&results()).unwrap();
        assert_eq!(v["experiment"], "e2");
        assert_eq!(v["flier_us"], 10.0);
        let c = v["configurations"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[1]["skew"], true);
        assert_eq!(c[0]["cpus"].as_array().unwrap().len(), 4);
        assert_eq!(c[0]["groups"][1]["group"], "B");
    }
}
