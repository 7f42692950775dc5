//! The E4 report: ns per getpid() call on three servers in four kernel configurations, and
//! where the time of a call went as the twin measured it.
//!
//! Layout of [`e4_report`]:
//!
//! ```text
//! E4 — what NO_HZ_FULL costs a system call: getpid() × <calls>, HZ=<hz>, twin (seed <seed>)
//! published outcome: not given (docs/experiments.md E4); nothing is fitted to it
//!
//! machine kernel case                      |  unpinned  cpu  vs 1 |    pinned  cpu  vs 1
//! ----------------------------------------------------------------------------------------
//! intel   5.15   1 NO_HZ_IDLE              | <ns>        <cpu> <%>  | ...   (one line per case)
//!
//! Per call (ns), as measured in the twin:
//! machine kernel case pin | cpu  entry/exit  rcu_eqs  vtime  key  vtime flush  irqs  preempt |  total | irqs ticks
//! ...                                                          (one line per row)
//! ```
//!
//! ns have one decimal, changes one decimal with a sign (`—` for case 1 itself), breakdown
//! parts three decimals. [`json`] is the `--json` form: the [`Results`] plus `schema_version`
//! and `experiment`.

use std::fmt::Write;
use ticklab_schema::experiment::e4::{Case, Results, Row, Server};
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E4 tables as plain text (see the module documentation for the layout).
pub fn e4_report(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "E4 — what NO_HZ_FULL costs a system call: getpid() × {}, HZ={}, twin (seed {})",
        r.calls, r.hz, r.seed
    );
    s.push_str(
        "published outcome: not given (docs/experiments.md E4); nothing is fitted to it\n\n",
    );
    main_table(&mut s, r);
    breakdown_table(&mut s, r);
    s
}

/// The `--json` document: `schema_version`, `experiment: "e4"`, `seed`, `calls`, `hz`, `rows`
/// (each with `machine`, `kernel`, `case`, `pinned`, `ns_per_call`, `change_pct`,
/// `breakdown`).
pub fn json(r: &Results) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    v["schema_version"] = REPORT_SCHEMA_VERSION.into();
    v["experiment"] = "e4".into();
    Ok(v)
}

fn case_label(case: u32) -> &'static str {
    match case {
        1 => "1 NO_HZ_IDLE",
        2 => "2 NO_HZ_FULL built in",
        3 => "3 nohz_full active",
        _ => "4 as 3, housekeeping CPU",
    }
}

fn cell(row: Option<&Row>) -> String {
    match row {
        None => format!("{:>10} {:>4} {:>6}", "", "", ""),
        Some(r) => {
            let change = if r.case == 1 {
                "—".to_string()
            } else {
                format!("{:+.1}%", r.change_pct)
            };
            format!(
                "{:>10.1} {:>4} {:>6}",
                r.ns_per_call, r.breakdown.ran_on, change
            )
        }
    }
}

fn main_table(s: &mut String, r: &Results) {
    let header = format!(
        "{:<7} {:<6} {:<25} | {:>10} {:>4} {:>6} | {:>10} {:>4} {:>6}",
        "machine", "kernel", "case", "unpinned", "cpu", "vs 1", "pinned", "cpu", "vs 1"
    );
    let _ = writeln!(s, "{header}\n{}", "-".repeat(header.chars().count()));
    let mut keys: Vec<(Server, &str)> = Vec::new();
    for row in &r.rows {
        if !keys.contains(&(row.machine, row.kernel.as_str())) {
            keys.push((row.machine, row.kernel.as_str()));
        }
    }
    for (server, kernel) in keys {
        for case in Case::ALL {
            let find = |pinned: bool| {
                r.rows.iter().find(|x| {
                    x.machine == server
                        && x.kernel == kernel
                        && x.case == case.number()
                        && x.pinned.is_some() == pinned
                })
            };
            let (u, p) = (find(false), find(true));
            if u.is_none() && p.is_none() {
                continue;
            }
            let _ = writeln!(
                s,
                "{:<7} {:<6} {:<25} | {} | {}",
                server.name(),
                kernel,
                case_label(case.number()),
                cell(u),
                cell(p)
            );
        }
    }
}

fn breakdown_table(s: &mut String, r: &Results) {
    s.push_str("\nPer call (ns), as measured in the twin:\n");
    let _ = writeln!(
        s,
        "{:<7} {:<6} {:>4} {:>3} | {:>4} {:>10} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} | {:>7} | {:>5} {:>5}",
        "machine",
        "kernel",
        "case",
        "pin",
        "cpu",
        "entry/exit",
        "rcu_eqs",
        "vtime",
        "key",
        "flush",
        "irqs",
        "preempt",
        "total",
        "irqs",
        "ticks"
    );
    for row in &r.rows {
        let b = &row.breakdown;
        let _ = writeln!(
            s,
            "{:<7} {:<6} {:>4} {:>3} | {:>4} {:>10.3} {:>7.3} {:>7.3} {:>6.3} {:>7.3} {:>7.3} {:>7.3} | {:>7.1} | {:>5} {:>5}",
            row.machine.name(),
            row.kernel,
            row.case,
            if row.pinned.is_some() { "yes" } else { "no" },
            b.ran_on,
            b.entry_exit_ns,
            b.rcu_eqs_ns,
            b.vtime_ns,
            b.static_key_ns,
            b.vtime_flush_ns,
            b.interrupts_ns,
            b.preempted_ns,
            row.ns_per_call,
            b.interrupts,
            b.ticks
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::report::SyscallBreakdown;

    fn row(machine: Server, case: u32, pinned: Option<u32>, ns: f64, change: f64) -> Row {
        Row {
            machine,
            kernel: "5.15".into(),
            case,
            pinned,
            ns_per_call: ns,
            change_pct: change,
            breakdown: SyscallBreakdown {
                ran_on: pinned.unwrap_or(0),
                pinned: pinned.is_some(),
                finished: true,
                elapsed_ns: (ns * 100.0) as u64,
                entry_exit_ns: 400.0,
                rcu_eqs_ns: ns - 400.0,
                vtime_ns: 0.0,
                static_key_ns: 0.0,
                vtime_flush_ns: 0.0,
                interrupts_ns: 0.0,
                preempted_ns: 0.0,
                interrupts: 3,
                ticks: 2,
                vtime_flushes: 0,
            },
        }
    }

    /// Intel rows of cases 1, 3 and 4 (shared with the figure tests).
    pub(crate) fn results() -> Results {
        Results {
            seed: 1,
            calls: 100,
            hz: 250,
            rows: vec![
                row(Server::Intel, 1, None, 400.0, 0.0),
                row(Server::Intel, 1, Some(4), 400.0, 0.0),
                row(Server::Intel, 3, None, 400.0, 0.0),
                row(Server::Intel, 3, Some(4), 466.0, 16.5),
                row(Server::Intel, 4, Some(20), 400.0, 0.0),
            ],
        }
    }

    #[test]
    fn e4_report_snapshot() {
        let r = results();
        insta::assert_snapshot!(e4_report(&r));
        let j = json(&r).unwrap();
        assert_eq!(j["experiment"], "e4");
        assert_eq!(j["rows"][3]["machine"], "intel");
        assert_eq!(j["rows"][3]["pinned"], 4);
        assert_eq!(j["rows"][3]["ns_per_call"], 466.0);
        assert!(j["rows"][0]["pinned"].is_null());
    }
}
