//! The E3 report: the futex ping-pong in a KVM guest under every idle path, beside the
//! published figures of the 2017 proposal's later revision.
//!
//! Layout of [`e3_report`]:
//!
//! ```text
//! E3 — context switches in a KVM guest (contextswitch, futex), twin: <n> switches per row
//!
//! configuration              | ns/switch  published | exits/switch hlt  tsc  icr  ext | ipi skip | guest busy | host cpu (poll)
//! ...                          (one line per configuration, published "-" when none)
//!
//! Costs (ns):
//!   <name>  <ns>             (one line per cost)
//!
//! Assumptions:
//!   - <sentence>
//!
//! HLT-versus-polling difference against the published rows:
//!   ok   <what>  <value>  target <target>  <band>    (FAIL when outside)
//! <n> of <m> checks inside their bands
//! ```
//!
//! ns per switch has one decimal, exits two, percentages one.
//!
//! [`json`] is the `--json` form: the [`Results`] plus `schema_version` and `experiment`.

use std::fmt::Write;
use ticklab_schema::experiment::e3::Results;
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E3 tables as plain text (see the module documentation for the layout).
pub fn e3_report(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "E3 — context switches in a KVM guest (contextswitch, futex), twin: {} switches per row\n",
        r.switches
    );
    let _ = writeln!(
        s,
        "{:<42} | {:>9} {:>9} | exits/switch {:>4} {:>4} {:>4} {:>4} | {:>8} | {:>10} | {:>8} {:>7} | published cpu",
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
        "(poll)"
    );
    let width = 42 + 3 + 19 + 3 + 32 + 3 + 8 + 3 + 10 + 3 + 16 + 16;
    let _ = writeln!(s, "{}", "-".repeat(width));
    for row in &r.rows {
        let published = row
            .published_ns
            .map_or_else(|| "-".to_string(), |p| format!("{p:.1}"));
        let _ = writeln!(
            s,
            "{:<42} | {:>9.1} {:>9} | {:>16.2} {:>4.2} {:>4.2} {:>4.2} | {:>7.1}% | {:>9.1}% | {:>7.1}% {:>6.1}% | {}",
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
            row.published_cpu.as_deref().unwrap_or("-"),
        );
    }
    s.push_str("\nCosts (ns):\n");
    for c in &r.costs {
        let _ = writeln!(s, "  {:<46} {:>6}", c.name, c.ns);
    }
    s.push_str("\nAssumptions:\n");
    for a in &r.assumptions {
        let _ = writeln!(s, "  - {a}");
    }
    s.push_str("\nHLT-versus-polling difference against the published rows:\n");
    for c in &r.checks {
        let _ = writeln!(
            s,
            "  {:<4} {:<48} {:>8.1}  target {:>8.1}  {}",
            if c.ok { "ok" } else { "FAIL" },
            c.what,
            c.value,
            c.target,
            c.band
        );
    }
    let ok = r.checks.iter().filter(|c| c.ok).count();
    let _ = writeln!(s, "{ok} of {} checks inside their bands", r.checks.len());
    s
}

/// The `--json` document: `schema_version`, `experiment: "e3"`, `switches`, `rows`, `costs`,
/// `checks`, `assumptions`.
pub fn json(r: &Results) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    v["schema_version"] = REPORT_SCHEMA_VERSION.into();
    v["experiment"] = "e3".into();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::experiment::BandCheck;
    use ticklab_schema::experiment::e3::{Config, CostRow, Row, published};

    fn results() -> Results {
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
            published_ns: published(config).map(|p| p.0),
            published_cpu: published(config)
                .and_then(|p| (!p.1.is_empty()).then(|| p.1.to_string())),
        };
        let rows = vec![
            row(Config::Hlt, 3000.0, 1.0),
            row(Config::GuestPoll { ns: 10_000 }, 2000.0, 0.0),
            row(Config::HostPoll { ns: 10_000 }, 2500.0, 1.0),
            row(Config::HaltpollTeo, 2600.0, 1.0),
        ];
        let checks: Vec<BandCheck> = Results::difference_checks(&rows);
        Results {
            switches: 2000,
            rows,
            costs: vec![CostRow {
                name: "vm exit + entry (bare)".into(),
                ns: 544,
            }],
            checks,
            assumptions: vec!["2-vCPU guest.".into()],
        }
    }

    #[test]
    fn e3_report_snapshot() {
        insta::assert_snapshot!(e3_report(&results()));
    }

    #[test]
    fn json_adds_version_and_name() {
        let v = json(&results()).unwrap();
        assert_eq!(v["schema_version"], REPORT_SCHEMA_VERSION);
        assert_eq!(v["experiment"], "e3");
        assert_eq!(v["rows"].as_array().map(Vec::len), Some(4));
    }
}
