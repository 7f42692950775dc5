//! The E3 report: the futex ping-pong in a KVM guest under every idle path, beside the
//! published figures of the 2017 proposal's later revision.
//!
//! Layout of [`e3_report`] (the verdicts right under the table, then how they come about):
//!
//! ```text
//! E3 — context switches in a KVM guest (contextswitch, futex), twin: <n> switches per row
//! unit: ns per switch as timectxsw counts them, <k> per round trip (a switch is 1/<k> of a round trip)
//!
//! configuration              | ns/switch  published | exits/switch hlt  tsc  icr  ext | ipi skip | guest busy | host cpu (poll) | host idle | published cpu
//! ...                          (one line per configuration, published "-" when none;
//!                               host idle: the commonest host C-state of blocked vCPUs)
//!
//! HLT-versus-polling difference against the published rows:
//!   ok   <what>  <value>  target <target>  <band>    (FAIL when outside)
//! <n> of <m> checks inside their bands
//!
//! Absolute rows against the published figures (ns/switch):
//!   ok   <label>  <value>  target <published>  ±25 %    (FAIL when outside)
//! <n> of <m> checks inside their bands
//!
//! Other reading of the baseline (host halt_poll_ns=0), shown, not the verdict:
//!   ok   <what>  <value>  target <target>  <band>
//!
//! Critical path of HLT − guest poll, per baseline (ns/switch, the baseline's term less the
//! poll row's):
//!   <baseline label> − <poll row label>
//!     <+ns>  <term> [<its source>]
//!     <total>  in all
//!
//! Other reading of the 2017 poll's placement (before the tick stop), shown, not the verdict:
//!   configuration  | ns/switch published   error | exits/switch hlt  tsc  icr  ext | ipi skip
//!   ...              (one line per guest-poll row under that reading)
//! Absolute rows under this reading against the published figures (ns/switch):
//!   ok   <label>  <value>  target <published>  ±25 %
//! <n> of <m> checks inside their bands
//! HLT-versus-polling difference under this reading against the published rows:
//!   ok   <what>  <value>  target <target>  ±35 %
//! <n> of <m> checks inside their bands
//! Critical path of HLT − guest poll under this reading (ns/switch, ...):
//!   <baseline label> − <poll row label>
//!     <+ns>  <term> [<its source>]
//!     <total>  in all
//!
//! Costs (ns):
//!   <name>  <ns>             (one line per cost)
//!
//! Assumptions:
//!   - <sentence>
//!
//! Critical path per switch, every row (ns/switch, share of the row, source):
//!   <label>: <ns> ns/switch[, published <p> (<+d> %)]
//!     <ns>  <share> %  <term>  [<cost field, value, tag>]   (terms under 0.05 ns left out)
//!     <ns>  in all
//!   ...                      (then the other placement's rows, "(poll before the tick stop)")
//! ```
//!
//! ns per switch has one decimal, exits two, percentages one.
//!
//! [`json`] is the `--json` form: the [`Results`] plus `schema_version` and `experiment`.

use std::fmt::Write;
use ticklab_schema::experiment::e3::{DiffParts, LiveSweep, PlacementReading, Results, Row};
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E3 tables as plain text (see the module documentation for the layout).
pub fn e3_report(r: &Results) -> String {
    let mut s = String::new();
    write_table(&mut s, r);
    write_checks(&mut s, r);
    write_difference_path(&mut s, r);
    write_placement_reading(&mut s, &r.poll_before_tick_stop);
    write_costs(&mut s, r);
    write_row_paths(&mut s, r);
    s
}

/// The title and one line per configuration.
fn write_table(s: &mut String, r: &Results) {
    let _ = writeln!(
        s,
        "E3 — context switches in a KVM guest (contextswitch, futex), twin: {} switches per row",
        r.switches
    );
    let _ = writeln!(
        s,
        "unit: ns per switch as timectxsw counts them, {k} per round trip (a switch is 1/{k} of a round trip)\n",
        k = r.switches_per_round_trip
    );
    let _ = writeln!(
        s,
        "{:<44} | {:>9} {:>9} | exits/switch {:>4} {:>4} {:>4} {:>4} | {:>8} | {:>10} | {:>8} {:>7} | {:<10} | published cpu",
        "configuration",
        "ns/switch",
        "published",
        "hlt",
        "tsc",
        "icr",
        "ext",
        "ipi skip",
        "guest busy",
        "host cpu",
        "(poll)",
        "host idle"
    );
    let width = 44 + 3 + 19 + 3 + 32 + 3 + 8 + 3 + 10 + 3 + 16 + 3 + 10 + 16;
    let _ = writeln!(s, "{}", "-".repeat(width));
    for row in &r.rows {
        let published = row
            .published_ns
            .map_or_else(|| "-".to_string(), |p| format!("{p:.1}"));
        let host_idle = row
            .host_idle
            .as_ref()
            .map_or_else(|| "-".to_string(), |(n, pct)| format!("{n} {pct:.0}%"));
        let _ = writeln!(
            s,
            "{:<44} | {:>9.1} {:>9} | {:>16.2} {:>4.2} {:>4.2} {:>4.2} | {:>7.1}% | {:>9.1}% | {:>7.1}% {:>6.1}% | {:<10} | {}",
            row.label,
            row.ns_per_switch,
            published,
            row.hlt_exits,
            row.tsc_deadline_exits,
            row.icr_exits,
            row.ext_int_exits,
            row.ipi_skipped_pct,
            row.guest_busy_pct,
            row.host_cpu_pct,
            row.host_poll_pct,
            host_idle,
            row.published_cpu.as_deref().unwrap_or("-"),
        );
    }
}

/// The verdicts: the difference, the absolute rows and the other reading of the baseline.
fn write_checks(s: &mut String, r: &Results) {
    s.push_str("\nHLT-versus-polling difference against the published rows:\n");
    crate::format::band_checks(s, &r.checks, 48, 8, 1);
    if !r.absolute.is_empty() {
        s.push_str("\nAbsolute rows against the published figures (ns/switch):\n");
        crate::format::band_checks(s, &r.absolute, 48, 8, 1);
    }
    if !r.other_reading.is_empty() {
        s.push_str(
            "\nOther reading of the baseline (host halt_poll_ns=0), shown, not the verdict:\n",
        );
        crate::format::band_checks(s, &r.other_reading, 48, 8, 1);
    }
}

/// The critical path of HLT − guest poll, per baseline.
fn write_difference_path(s: &mut String, r: &Results) {
    if !r.parts.is_empty() {
        s.push_str(
            "\nCritical path of HLT − guest poll, per baseline (ns/switch, the baseline's term less the poll row's):\n",
        );
        write_diff_parts(s, &r.parts, "  ");
    }
}

/// Each difference's terms under its `baseline − poll` heading, indented by `indent`.
fn write_diff_parts(s: &mut String, parts: &[DiffParts], indent: &str) {
    for d in parts {
        let _ = writeln!(s, "{indent}{} − {}", d.baseline.label(), d.poll.label());
        for p in &d.parts {
            let _ = writeln!(s, "{indent}  {:>+8.1}  {}", p.ns, p.name);
        }
        let _ = writeln!(s, "{indent}  {:>8.1}  in all", d.total());
    }
}

/// The other reading of where the 2017 patch polled (before the tick stop): its guest-poll
/// rows, their absolute and difference checks, and the critical path of the difference.
fn write_placement_reading(s: &mut String, p: &PlacementReading) {
    if p.rows.is_empty() {
        return;
    }
    s.push_str(
        "\nOther reading of the 2017 poll's placement (before the tick stop), shown, not the verdict:\n",
    );
    let _ = writeln!(
        s,
        "  {:<42} | {:>9} {:>9} {:>8} | exits/switch {:>4} {:>4} {:>4} {:>4} | ipi skip",
        "configuration", "ns/switch", "published", "error", "hlt", "tsc", "icr", "ext"
    );
    for row in &p.rows {
        let (published, error) = row.published_ns.map_or_else(
            || ("-".to_string(), "-".to_string()),
            |v| {
                (
                    format!("{v:.1}"),
                    format!("{:+.1} %", 100.0 * (row.ns_per_switch - v) / v),
                )
            },
        );
        let _ = writeln!(
            s,
            "  {:<42} | {:>9.1} {:>9} {:>8} | {:>16.2} {:>4.2} {:>4.2} {:>4.2} | {:>7.1}%",
            row.label,
            row.ns_per_switch,
            published,
            error,
            row.hlt_exits,
            row.tsc_deadline_exits,
            row.icr_exits,
            row.ext_int_exits,
            row.ipi_skipped_pct,
        );
    }
    s.push_str("Absolute rows under this reading against the published figures (ns/switch):\n");
    crate::format::band_checks(s, &p.absolute, 48, 8, 1);
    s.push_str("HLT-versus-polling difference under this reading against the published rows:\n");
    crate::format::band_checks(s, &p.checks, 48, 8, 1);
    if !p.parts.is_empty() {
        s.push_str(
            "Critical path of HLT − guest poll under this reading (ns/switch, the baseline's term less the poll row's):\n",
        );
        write_diff_parts(s, &p.parts, "  ");
    }
}

/// The costs the model used and the assumptions it rests on.
fn write_costs(s: &mut String, r: &Results) {
    s.push_str("\nCosts (ns):\n");
    for c in &r.costs {
        let _ = writeln!(s, "  {:<46} {:>6}", c.name, c.ns);
    }
    s.push_str("\nAssumptions:\n");
    for a in &r.assumptions {
        let _ = writeln!(s, "  - {a}");
    }
}

/// Every row's critical path per switch, with each term's share and source; then the other
/// placement's guest-poll rows, marked.
fn write_row_paths(s: &mut String, r: &Results) {
    let other = &r.poll_before_tick_stop.rows;
    if r.rows.iter().chain(other).any(|row| !row.path.is_empty()) {
        s.push_str(
            "\nCritical path per switch, every row (ns/switch, share of the row, source):\n",
        );
        for row in &r.rows {
            write_row_path(s, row, "");
        }
        for row in other {
            write_row_path(s, row, " (other reading: poll before the tick stop)");
        }
    }
}

/// One row's critical path per switch, its label followed by `mark`.
fn write_row_path(s: &mut String, row: &Row, mark: &str) {
    let published = row.published_ns.map_or_else(String::new, |p| {
        format!(
            ", published {p:.1} ({:+.1} %)",
            100.0 * (row.ns_per_switch - p) / p
        )
    });
    let _ = writeln!(
        s,
        "  {}{mark}: {:.1} ns/switch{published}",
        row.label, row.ns_per_switch
    );
    // Terms under 0.05 ns per switch (a handful of wakes in the whole run) would print as
    // 0.0: they stay in the JSON and in the total.
    for p in row.path.iter().filter(|p| p.ns_per_switch >= 0.05) {
        let _ = writeln!(
            s,
            "    {:>7.1}  {:>5.1} %  {:<58} [{}]",
            p.ns_per_switch, p.share_pct, p.name, p.source
        );
    }
    let total: f64 = row.path.iter().map(|p| p.ns_per_switch).sum();
    let _ = writeln!(s, "    {total:>7.1}  in all");
}

/// The live sweep on this host (`ticklab host haltpoll-sweep`) beside the calibrated twin:
///
/// ```text
/// E3 live — futex ping-pong across CPUs A,B on this guest, guest_halt_poll_ns swept
/// cpuidle driver <d>, governor <g>: <verdict>
///
/// guest_halt_poll_ns | ns/switch measured | twin | error | busy % | idle-state usage
/// ...                   (one line per point; "calibration" instead of an error at 0)
///
/// one CPU (both tasks on A): <ns> ns/switch
/// Twin calibration (guest_halt_poll_ns=0 only):
///   <name> <ns> ns  <how>
/// Parameters before / after:
///   <name> <before> <after>
/// ```
pub fn live_report(l: &LiveSweep) -> String {
    let mut s = String::from(
        "E3 live — futex ping-pong across two CPUs on this guest, guest_halt_poll_ns swept\n",
    );
    let _ = writeln!(
        s,
        "cpuidle driver {}, governor {}: {}\n",
        l.driver, l.governor, l.verdict
    );
    let _ = writeln!(
        s,
        "{:>18} | {:>10} | {:>10} | {:>11} | {:>6} | idle-state usage",
        "guest_halt_poll_ns", "measured", "twin", "error", "busy %"
    );
    let _ = writeln!(s, "{}", "-".repeat(86));
    for p in &l.points {
        let twin = p
            .predicted_ns
            .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
        let err = if p.calibration_point {
            "calibration".to_string()
        } else {
            p.error_pct()
                .map_or_else(|| "-".to_string(), |e| format!("{e:+.1} %"))
        };
        let usage = if p.idle_usage.is_empty() {
            "none in sysfs".to_string()
        } else {
            p.idle_usage
                .iter()
                .map(|(n, u)| format!("{n} {u}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "{:>18} | {:>10.1} | {:>10} | {:>11} | {:>6.1} | {}",
            p.guest_halt_poll_ns, p.ns_per_switch, twin, err, p.busy_pct, usage
        );
    }
    if l.interrupted {
        s.push_str("(interrupted: the points above are those completed)\n");
    }
    let _ = writeln!(
        s,
        "\none CPU (both tasks on the first CPU): {:.1} ns/switch",
        l.same_cpu_ns
    );
    s.push_str("Twin calibration (guest_halt_poll_ns=0 only):\n");
    for (name, ns, how) in &l.calibration {
        let _ = writeln!(s, "  {name:<36} {ns:>8} ns  {how}");
    }
    s.push_str("Parameters before / after the sweep:\n");
    for (name, before) in &l.params_before {
        let after = l
            .params_after
            .iter()
            .find(|(n, _)| n == name)
            .map_or("-", |(_, v)| v.as_str());
        let _ = writeln!(s, "  {name:<40} {before:>10} {after:>10}");
    }
    s
}

/// The `--json` document: `schema_version`, `experiment: "e3"`, `switches`, `rows` (each with
/// its critical `path`), `costs`, `checks`, `other_reading`, `parts`, `absolute`,
/// `poll_before_tick_stop` (the other placement of the 2017 poll: its `rows`, `absolute`,
/// `checks`, `parts`), `assumptions`.
pub fn json(r: &Results) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    v["schema_version"] = REPORT_SCHEMA_VERSION.into();
    v["experiment"] = "e3".into();
    Ok(v)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::experiment::BandCheck;
    use ticklab_schema::experiment::e3::{
        Config, CostRow, DiffPart, DiffParts, PathPart, Row, published,
    };

    /// Every configuration (shared with the figure tests).
    pub(crate) fn results() -> Results {
        let row = |config: Config, ns: f64, hlt: f64| Row {
            config,
            label: config.label(),
            ns_per_switch: ns,
            hlt_exits: hlt,
            tsc_deadline_exits: 2.0 * hlt,
            icr_exits: hlt,
            ext_int_exits: 0.0,
            ipi_skipped_pct: 100.0 * (1.0 - hlt),
            guest_busy_pct: 40.0,
            host_cpu_pct: 180.0,
            host_poll_pct: 0.0,
            host_idle: (hlt > 0.0).then(|| ("C1".to_string(), 100.0)),
            published_ns: published(config).map(|p| p.0),
            published_cpu: published(config)
                .and_then(|p| (!p.1.is_empty()).then(|| p.1.to_string())),
            path: vec![
                PathPart {
                    name: "woken task's half switch".into(),
                    source: "context_switch_ns/2 700 (E)".into(),
                    ns_per_switch: 700.0,
                    share_pct: 100.0 * 700.0 / ns,
                },
                PathPart {
                    name: "the rest".into(),
                    source: "test".into(),
                    ns_per_switch: ns - 700.0,
                    share_pct: 100.0 * (ns - 700.0) / ns,
                },
            ],
        };
        let rows = vec![
            row(Config::Hlt, 3000.0, 1.0),
            row(Config::GuestPoll { ns: 10_000 }, 2000.0, 0.0),
            row(Config::HostPoll { ns: 10_000 }, 2500.0, 1.0),
            row(Config::HaltpollTeo, 2600.0, 1.0),
            row(Config::HltHostPollOff, 5000.0, 1.0),
        ];
        let poll_before_tick_stop = {
            let polls = vec![row(Config::GuestPoll { ns: 10_000 }, 1200.0, 0.0)];
            PlacementReading {
                absolute: Results::absolute_checks(&polls),
                checks: Results::difference_checks_between(&rows[0], &polls),
                parts: vec![DiffParts {
                    baseline: Config::Hlt,
                    poll: Config::GuestPoll { ns: 10_000 },
                    parts: vec![DiffPart {
                        name: "target still entering idle (tick stop) [tick_stop_ns 500 (E)]"
                            .into(),
                        ns: 1800.0,
                    }],
                }],
                rows: polls,
            }
        };
        let checks: Vec<BandCheck> = Results::difference_checks(&rows);
        let other_reading = Results::difference_checks_from(&rows, Config::HltHostPollOff);
        let absolute = Results::absolute_checks(&rows);
        let parts = vec![DiffParts {
            baseline: Config::Hlt,
            poll: Config::GuestPoll { ns: 10_000 },
            parts: vec![
                DiffPart {
                    name: "ICR write exit until the IPI is pending [icr_delivery_ns 428 (D)]"
                        .into(),
                    ns: 213.9,
                },
                DiffPart {
                    name: "guest poller notices NEED_RESCHED [cacheline_local_ns 40 (M)]".into(),
                    ns: -20.0,
                },
            ],
        }];
        Results {
            switches: 2000,
            switches_per_round_trip: 4,
            rows,
            costs: vec![CostRow {
                name: "vm exit + entry (bare)".into(),
                ns: 544,
            }],
            checks,
            other_reading,
            parts,
            absolute,
            poll_before_tick_stop,
            assumptions: vec!["2-vCPU guest.".into()],
        }
    }

    #[test]
    fn e3_report_snapshot() {
        insta::assert_snapshot!(e3_report(&results()));
    }

    #[test]
    fn live_report_snapshot() {
        use ticklab_schema::experiment::e3::LivePoint;
        let point = |ns: u64, measured: f64, twin: f64, cal: bool| LivePoint {
            guest_halt_poll_ns: ns,
            round_trips: 1000,
            ns_per_switch: measured,
            busy_pct: 55.0,
            idle_usage: Vec::new(),
            predicted_ns: Some(twin),
            calibration_point: cal,
        };
        let l = LiveSweep {
            driver: "none".into(),
            governor: "menu".into(),
            verdict: "no haltpoll driver: no effect expected".into(),
            params_before: vec![("haltpoll.guest_halt_poll_ns".into(), "200000".into())],
            params_after: vec![("haltpoll.guest_halt_poll_ns".into(), "200000".into())],
            same_cpu_ns: 1500.0,
            calibration: vec![("host wake of a blocked vcpu".into(), 4000, "CAL".into())],
            points: vec![
                point(0, 9000.0, 9000.0, true),
                point(50_000, 9500.0, 9000.0, false),
            ],
            interrupted: false,
        };
        insta::assert_snapshot!(live_report(&l));
    }

    #[test]
    fn json_adds_version_and_name() {
        let v = json(&results()).unwrap();
        assert_eq!(v["schema_version"], REPORT_SCHEMA_VERSION);
        assert_eq!(v["experiment"], "e3");
        assert_eq!(v["rows"].as_array().map(Vec::len), Some(5));
    }
}
