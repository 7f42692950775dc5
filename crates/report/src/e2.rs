//! The E2 report: frame-scheduler jitter on the 64-CPU server in the four configurations
//! (a)–(d), and the ablation table.
//!
//! Layout of [`e2_report`]: the answer first (the summary and its verdicts), then the
//! details.
//!
//! ```text
//! E2 — frame-scheduler jitter on a 64-CPU 2012 server (...), MAXSMP rcu leaf fan-out <n>
//! twin: <s> simulated s per configuration after <s> s warm-up, seed <seed>; jitter budget <us> us
//! jitter counts from the worker's start; wake-up latency (programmed start -> running) apart
//!
//! (a) <description> — cmdline "<cmdline>"           (one line per configuration)
//!
//! Per-group summary (us):
//! config group | max avg sigma p99.9 | budget | fliers overruns | wake max wake avg wake p99.9 | lock wait
//! (a)    A     | ...                                 (one line per configuration and group)
//!
//! Verdicts (largest jitter of any group against the <us> us budget):
//!   FAIL (a) worst group B: max 68.07 us, over the budget
//!   ...
//!   (b) against (a): worst max 68.07 -> 16.07 us (-76.4 %)   (each later configuration)
//!
//! Shared locks and lines (twin):
//!   (a)    <lock_lines of the report>                 (see [`lock_lines`])
//!
//! Per-CPU frame tables: (with `per_cpu`; else one line naming `--per-cpu`)
//! (a) <description>
//! <frame_table of each group, then its wakeup_table>  (see [`frame_table`], [`wakeup_table`])
//! ```
//!
//! [`ablation_report`] prints, per configuration and group, the full model and the model with
//! each mechanism switched off: max / p99.9 / avg jitter, the wake-up latency and the longest
//! lock wait. [`json`] and [`ablation_json`] are the `--json` forms; [`events_line`] is the
//! twin's speed, which the CLI prints on stderr so that stdout stays byte-identical for a seed.

use crate::cpu::lock_lines;
use crate::format::column_decimals;
use crate::frames::{frame_table, wakeup_table};
use std::fmt::Write;
use ticklab_schema::experiment::e2::{
    Ablation, BUDGET_US, GroupSummary, MAXSMP_RCU_FANOUT, Outcome, Results, WARMUP_NS, config_name,
    summary,
};
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E2 tables as plain text (see the module documentation for the layout); the per-CPU
/// frame tables (20 rows per group and configuration) only when `per_cpu` is set.
pub fn e2_report(r: &Results, per_cpu: bool) -> String {
    let mut s = String::new();
    header(&mut s, r.duration_ns, r.seed);
    for o in &r.outcomes {
        let _ = writeln!(
            s,
            "{} {} — cmdline {:?}",
            config_name(o.config),
            o.config.describe(),
            o.config.cmdline()
        );
    }
    s.push('\n');
    group_summaries(&mut s, &r.outcomes);
    verdicts(&mut s, &r.outcomes);
    s.push_str("\nShared locks and lines (twin):\n");
    for o in &r.outcomes {
        for line in lock_lines(&o.report) {
            let _ = writeln!(s, "  {:<6} {}", config_name(o.config), line);
        }
    }
    if per_cpu {
        s.push_str("\nPer-CPU frame tables:\n");
        for o in &r.outcomes {
            frame_tables(&mut s, o);
        }
    } else {
        s.push_str("\nPer-CPU frame tables: --per-cpu\n");
    }
    s
}

/// The largest jitter of any of the outcome's groups and that group's name.
fn worst_group(o: &Outcome) -> Option<(String, f64)> {
    o.groups()
        .into_iter()
        .map(|g| {
            let g = summary(g);
            (g.group, g.max_us)
        })
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}

/// One verdict per configuration (its worst group against [`BUDGET_US`]), then each later
/// configuration's worst maximum against the first's.
fn verdicts(s: &mut String, outcomes: &[Outcome]) {
    let _ = writeln!(
        s,
        "\nVerdicts (largest jitter of any group against the {BUDGET_US} us budget):"
    );
    for o in outcomes {
        if let Some((group, max)) = worst_group(o) {
            let ok = max <= BUDGET_US;
            let _ = writeln!(
                s,
                "  {:<4} {} worst group {group}: max {max:.2} us, {} the budget",
                if ok { "ok" } else { "FAIL" },
                config_name(o.config),
                if ok { "within" } else { "over" }
            );
        }
    }
    let Some((first, base)) = outcomes.first().and_then(|o| Some((o, worst_group(o)?.1))) else {
        return;
    };
    for o in &outcomes[1..] {
        if let Some((_, max)) = worst_group(o) {
            let change = if base > 0.0 {
                format!(" ({:+.1} %)", (max - base) / base * 100.0)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  {} against {}: worst max {base:.2} -> {max:.2} us{change}",
                config_name(o.config),
                config_name(first.config)
            );
        }
    }
}

fn header(s: &mut String, duration_ns: u64, seed: u64) {
    let _ = writeln!(
        s,
        "E2 — frame-scheduler jitter on a 64-CPU 2012 server (4 × Sandy Bridge-EP 8C/16T), \
         3.0-rt, HZ=1000 (assumed), MAXSMP rcu leaf fan-out {MAXSMP_RCU_FANOUT}"
    );
    let _ = writeln!(
        s,
        "twin: {} simulated s per configuration after {} s warm-up, seed {}; jitter budget {} us",
        duration_ns as f64 / 1e9,
        WARMUP_NS as f64 / 1e9,
        seed,
        BUDGET_US
    );
    s.push_str(
        "jitter counts from the worker's start; wake-up latency (programmed start -> running) \
         apart\n\n",
    );
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

/// The ablation table: per configuration and group, the full model (`-`) and each mechanism
/// switched off, with max / p99.9 / avg jitter, the wake-up latency and the longest lock wait
/// (µs).
pub fn ablation_report(a: &Ablation) -> String {
    let mut s = String::new();
    header(&mut s, a.duration_ns, a.seed);
    s.push_str(
        "Ablation: each mechanism switched off in turn (docs/model.md \"E2 mechanisms\"), us\n",
    );
    let _ = writeln!(
        s,
        "{:<6} {:<16} {:<5} | {:>8} {:>8} {:>8} | {:>9} {:>9} | {:>9}",
        "config",
        "switched off",
        "group",
        "max",
        "p99.9",
        "avg",
        "wake max",
        "wake avg",
        "lock wait"
    );
    for o in &a.points {
        let off = o.ablated.map_or("-", |m| m.name());
        for g in o.groups() {
            let g = summary(g);
            let _ = writeln!(
                s,
                "{:<6} {:<16} {:<5} | {:>8.2} {:>8.2} {:>8.4} | {:>9.2} {:>9.4} | {:>9.2}",
                config_name(o.config),
                off,
                g.group,
                g.max_us,
                g.p999_us,
                g.avg_us,
                g.wakeup_max_us,
                g.wakeup_avg_us,
                g.max_lock_wait_us
            );
        }
    }
    s
}

/// The ablation's `--json` form: `schema_version`, `experiment: "e2-ablation"`, `seed`,
/// `duration_ns`, `flier_us`, and `points`: per point `config`, `switched_off` (a mechanism
/// name or null) and the group summaries.
pub fn ablation_json(a: &Ablation) -> serde_json::Result<serde_json::Value> {
    let points = a
        .points
        .iter()
        .map(|o| {
            let groups: Vec<_> = o.groups().iter().map(|g| summary(g)).collect();
            Ok(serde_json::json!({
                "config": o.config,
                "switched_off": o.ablated.map(|m| m.name()),
                "groups": serde_json::to_value(groups)?,
            }))
        })
        .collect::<serde_json::Result<Vec<serde_json::Value>>>()?;
    Ok(serde_json::json!({
        "schema_version": REPORT_SCHEMA_VERSION,
        "experiment": "e2-ablation",
        "seed": a.seed,
        "duration_ns": a.duration_ns,
        "flier_us": a.flier_us,
        "points": points,
    }))
}

/// Events each run simulated, its speed (simulated seconds per second of its thread's wall
/// time, warm-up included) and the wall time of the whole run, e.g.
/// `simulated events: (a) 11.0 M 62x, (b) 13.0 M 75x; 0.6 s wall for 2 runs on 2 threads`.
pub fn events_line(outcomes: &[Outcome], wall_s: f64, threads: usize) -> String {
    let events: Vec<String> = outcomes
        .iter()
        .map(|o| {
            let off = o
                .ablated
                .map_or(String::new(), |m| format!(" -{}", m.name()));
            let sim_s = (o.report.duration_ns + WARMUP_NS) as f64 / 1e9;
            let speed = if o.wall_s > 0.0 {
                format!(" {:.0}x", sim_s / o.wall_s)
            } else {
                String::new()
            };
            format!(
                "{}{off} {:.1} M{speed}",
                config_name(o.config),
                o.events as f64 / 1e6
            )
        })
        .collect();
    format!(
        "simulated events: {}; {wall_s:.1} s wall for {} runs on {threads} threads",
        events.join(", "),
        outcomes.len()
    )
}

fn frame_tables(s: &mut String, o: &Outcome) {
    let _ = writeln!(s, "{} {}", config_name(o.config), o.config.describe());
    for g in o.groups() {
        s.push_str(&frame_table(g));
        s.push_str(&wakeup_table(g));
    }
    s.push('\n');
}

fn group_summaries(s: &mut String, outcomes: &[Outcome]) {
    s.push_str("Per-group summary (us):\n");
    let _ = writeln!(
        s,
        "{:<6} {:<5} | {:>8} {:>8} {:>8} {:>8} | {:<6} | {:>9} {:>8} | {:>9} {:>9} {:>10} | {:>9}",
        "config",
        "group",
        "max",
        "avg",
        "sigma",
        "p99.9",
        "budget",
        "fliers",
        "overruns",
        "wake max",
        "wake avg",
        "wake p99.9",
        "lock wait"
    );
    let rows: Vec<(String, GroupSummary)> = outcomes
        .iter()
        .flat_map(|o| {
            o.groups()
                .into_iter()
                .map(|g| (config_name(o.config), summary(g)))
        })
        .collect();
    // One precision per column, from its largest value.
    let d = |f: fn(&GroupSummary) -> f64| column_decimals(rows.iter().map(|(_, g)| f(g)));
    let (dmax, davg, dsigma, dp999) = (
        d(|g| g.max_us),
        d(|g| g.avg_us),
        d(|g| g.sigma_us),
        d(|g| g.p999_us),
    );
    let (dwmax, dwavg, dwp999, dlock) = (
        d(|g| g.wakeup_max_us),
        d(|g| g.wakeup_avg_us),
        d(|g| g.wakeup_p999_us),
        d(|g| g.max_lock_wait_us),
    );
    for (config, g) in &rows {
        let _ = writeln!(
            s,
            "{:<6} {:<5} | {:>8.dmax$} {:>8.davg$} {:>8.dsigma$} {:>8.dp999$} | {:<6} | {:>9} {:>8} \
             | {:>9.dwmax$} {:>9.dwavg$} {:>10.dwp999$} | {:>9.dlock$}",
            config,
            g.group,
            g.max_us,
            g.avg_us,
            g.sigma_us,
            g.p999_us,
            if g.max_us <= BUDGET_US { "ok" } else { "FAIL" },
            g.fliers,
            g.overruns,
            g.wakeup_max_us,
            g.wakeup_avg_us,
            g.wakeup_p999_us,
            g.max_lock_wait_us
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::tests::twin_report;
    use ticklab_schema::experiment::e2::{Config, Mechanism};
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
                wakeup: Some(ticklab_schema::report::WakeupRow {
                    min_us: 3.1,
                    max_us: jitter_us + f64::from(cpu),
                    max_frame: 7,
                    avg_us: 3.5,
                    sigma_us: 0.25,
                    overruns: 0,
                    last_overrun: 0,
                    fliers: 0,
                    first_fliers: vec![],
                    last_flier: None,
                }),
                max_lock_wait_us: Some(jitter_us / 2.0),
            })
            .collect();
        WorkloadResult::Frames(FrameGroupReport {
            jitter_histogram: None,
            group: name.into(),
            frequency_hz: hz,
            loop_units: 50_000,
            flier_threshold_us: 10.0,
            rows,
            p50_us: jitter_us,
            p99_us: jitter_us * 1.8,
            p999_us: jitter_us * 1.9,
            policy: None,
            wakeup: Some(ticklab_schema::report::Percentiles {
                p50_us: 3.4,
                p99_us: 4.5,
                p999_us: jitter_us,
            }),
            histograms: Vec::new(),
        })
    }

    fn outcome(skew: bool) -> Outcome {
        let mut report = twin_report(false);
        let jitter = if skew { 4.0 } else { 17.0 };
        let config = Config::from(skew);
        report.workloads = vec![
            group("A", 960.0, 4..6, jitter),
            group("B", 666.0, 6..8, jitter * 2.0),
        ];
        Outcome {
            config,
            ablated: None,
            report,
            events: if skew { 13_012_345 } else { 10_987_654 },
            wall_s: 0.0,
        }
    }

    /// Two configurations, two groups each (shared with the figure tests).
    pub(crate) fn results() -> Results {
        Results {
            seed: 1,
            duration_ns: 2_000_000_000,
            flier_us: 10.0,
            outcomes: vec![outcome(false), outcome(true)],
        }
    }

    #[test]
    fn e2_report_snapshot() {
        insta::assert_snapshot!(e2_report(&results(), false));
    }

    #[test]
    fn e2_report_starts_with_the_summary_and_keeps_per_cpu_tables_for_the_flag() {
        let short = e2_report(&results(), false);
        let long = e2_report(&results(), true);
        let at =
            |text: &str, what: &str| text.find(what).unwrap_or_else(|| panic!("{what}: {text}"));
        assert!(at(&short, "Per-group summary") < at(&short, "Verdicts"));
        assert!(at(&short, "Verdicts") < at(&short, "Shared locks"));
        assert!(!short.contains("Cpu Frames"), "{short}");
        assert!(long.contains("Cpu Frames"), "{long}");
        assert!(long.starts_with(&short[..at(&short, "Per-CPU frame tables")]));
        assert!(at(&long, "Shared locks") < at(&long, "Per-CPU frame tables:\n"));
        assert!(long.len() > short.len());
    }

    #[test]
    fn verdicts_name_the_worst_group_against_the_budget() {
        let text = e2_report(&results(), false);
        assert!(
            text.contains("  FAIL (a) worst group B: max 68.07 us, over the budget"),
            "{text}"
        );
        assert!(
            text.contains("  ok   (b) worst group B: max 16.07 us, within the budget"),
            "{text}"
        );
        assert!(
            text.contains("  (b) against (a): worst max 68.07 -> 16.07 us (-76.4 %)"),
            "{text}"
        );
    }

    #[test]
    fn events_line_names_both_configurations() {
        assert_eq!(
            events_line(&results().outcomes, 0.64, 2),
            "simulated events: (a) 11.0 M, (b) 13.0 M; 0.6 s wall for 2 runs on 2 threads"
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

    #[test]
    fn ablation_lists_each_point_and_group() {
        let mut off = outcome(false);
        off.ablated = Some(Mechanism::RcuGracePeriod);
        let a = Ablation {
            seed: 1,
            duration_ns: 60_000_000_000,
            flier_us: 10.0,
            points: vec![outcome(false), off],
        };
        let text = ablation_report(&a);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("(a)")).collect();
        assert_eq!(rows.len(), 4, "{text}");
        assert!(
            rows[0].starts_with("(a)    -                A "),
            "{}",
            rows[0]
        );
        assert!(
            rows[2].starts_with("(a)    rcu-gp           A "),
            "{}",
            rows[2]
        );
        let v = ablation_json(&a).unwrap();
        assert_eq!(v["experiment"], "e2-ablation");
        assert_eq!(v["points"][0]["switched_off"], serde_json::Value::Null);
        assert_eq!(v["points"][1]["switched_off"], "rcu-gp");
        assert_eq!(v["points"][1]["config"], "a");
        assert_eq!(v["points"][1]["groups"][1]["group"], "B");
    }
}
