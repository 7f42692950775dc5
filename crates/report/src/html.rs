//! `ticklab report --html OUT`: one self-contained HTML page per experiment or sweep.
//!
//! The page is built from the typed results — the same structs the text reports render —
//! never from their text: the scenario, the tables (the twin's numbers beside the published
//! ones where there are published ones), the figures of [`crate::plot`] inlined as `<svg>`
//! elements, and the band checks. Everything is in the one file: inline CSS, no script, no
//! image, font or style sheet fetched from anywhere, so it opens the same offline, attached
//! to a mail or archived with a run. Like every renderer here it is a pure function of its
//! input: the same results give the same bytes.
//!
//! Layout: a title, then `<section>`s — "Scenario" (a definition list), the answer (the
//! acceptance bands or the summary against the budget), then each figure followed by the
//! table it was drawn from, then the details. Numbers follow the text reports' formats
//! ([`crate::format`]).
//!
//! The pages fit a 1400-pixel window: the body is at most 82rem wide, cells never wrap
//! (`white-space: nowrap`), and the sweep page gives every metric its own narrow table under
//! its figure instead of one table with a column per metric; its rows are in the order of
//! the swept parameter the figures plot against.

use crate::format::{fixed, opt_fixed};
use crate::plot::{self, PlotError};
use std::fmt::Write;
use ticklab_schema::experiment::{e1, e2, e3, e4};

mod page;
mod sweep;
pub use page::escape;
use page::{Cell, bands, definitions, figures_with_tables, page, secs, table};
pub use sweep::{default_x, sweep_html, varying_metrics};

/// The E1 page: scenario, the published table beside the twin's, what aggressive costs,
/// the figures and the bands.
pub fn e1_html(r: &e1::Results) -> Result<String, PlotError> {
    let scenario = e1_scenario(r);
    let [irq, watts] = e1_published_tables(r);
    let costs = e1_costs(r);
    Ok(page(
        "E1 — nohz_full_aggressive on a laptop",
        "Local timer interrupts and package power, nohz_full=all with and without the 2023 \
         proposal, idle to 8 hogs: the twin beside the published table.",
        &[
            ("Scenario", scenario),
            ("Acceptance bands", bands(&r.checks, 3)),
            (
                "Twin beside published",
                figures_with_tables(&plot::e1::figures(r)?, &[irq, watts]),
            ),
            ("What aggressive costs (twin)", costs),
        ],
    ))
}

/// The E1 page's scenario: the machine, kernel, configurations, loads and run length.
fn e1_scenario(r: &e1::Results) -> String {
    definitions(&[
        (
            "machine",
            "Dell XPS 13 7390 (i7-10510U, 4 cores / 8 CPUs), machine preset xps13-7390".into(),
        ),
        ("kernel", "CONFIG_NO_HZ_FULL, HZ=1000".into()),
        (
            "configurations",
            e1::Mode::ALL
                .iter()
                .map(|m| format!("{}: {}", m.name(), m.cmdline()))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        (
            "loads",
            e1::LOADS
                .iter()
                .map(|&l| e1::load_label(l))
                .collect::<Vec<_>>()
                .join(", ")
                + " (hogs)",
        ),
        (
            "twin",
            format!(
                "{} per point after {} warm-up, seed {}",
                secs(r.duration_ns),
                secs(e1::WARMUP_NS),
                r.seed
            ),
        ),
        (
            "published",
            "the 2023 nohz_full_aggressive RFC, 5-minute averages (docs/experiments.md E1)".into(),
        ),
    ])
}

/// The twin beside the published table: interrupts per second and package watts, one row
/// per load.
fn e1_published_tables(r: &e1::Results) -> [String; 2] {
    let mut irq = Vec::new();
    let mut watts = Vec::new();
    for load in e1::LOADS {
        if let (Some(n), Some(g)) = (
            r.row(e1::Mode::NohzFull, load),
            r.row(e1::Mode::Aggressive, load),
        ) {
            irq.push(vec![
                Cell::Text(e1::load_label(load)),
                Cell::Num(fixed(n.irq_per_s, 1)),
                Cell::Pub(fixed(n.published_irq_per_s, 1)),
                Cell::Num(fixed(g.irq_per_s, 1)),
                Cell::Pub(fixed(g.published_irq_per_s, 1)),
            ]);
            watts.push(vec![
                Cell::Text(e1::load_label(load)),
                Cell::Num(fixed(n.watts, 3)),
                Cell::Pub(fixed(n.published_watts, 3)),
                Cell::Num(fixed(g.watts, 3)),
                Cell::Pub(fixed(g.published_watts, 3)),
            ]);
        }
    }
    let irq = table(
        &[
            "load",
            "irq/s nohz_full",
            "published",
            "irq/s aggressive",
            "published",
        ],
        &irq,
    );
    let watts = table(
        &[
            "load",
            "W nohz_full",
            "published",
            "W aggressive",
            "published",
        ],
        &watts,
    );
    [irq, watts]
}

/// What the aggressive mode costs timekeeping and hrtimers, one row per load.
fn e1_costs(r: &e1::Results) -> String {
    let costs: Vec<Vec<Cell>> = r
        .rows
        .iter()
        .filter(|row| row.mode == e1::Mode::Aggressive)
        .map(|row| {
            vec![
                Cell::Text(row.load.clone()),
                Cell::Num(fixed(row.max_jiffies_gap_ms, 1)),
                Cell::Num(fixed(row.max_reader_staleness_ms, 1)),
                Cell::Num(fixed(row.mean_coarse_staleness_ms, 2)),
                Cell::Num(row.hrtimer_hangs.to_string()),
                Cell::Num(fixed(row.max_irq_us, 1)),
            ]
        })
        .collect();
    table(
        &[
            "load",
            "max jiffies gap (ms)",
            "max staleness at irq (ms)",
            "mean coarse staleness (ms)",
            "hrtimer hangs",
            "longest irq (µs)",
        ],
        &costs,
    )
}

/// The E2 page: scenario (groups, configurations), the per-group summary of every
/// configuration against the budget, the jitter distributions.
pub fn e2_html(r: &e2::Results) -> Result<String, PlotError> {
    let scenario = e2_scenario(r);
    let summary = e2_summary(r);
    Ok(page(
        "E2 — skew_tick=1 and frame-scheduler jitter on a 64-CPU server",
        "Jitter of three frame groups (960, 666 and 300 Hz) in configurations (a)-(d); jitter \
         counts from the worker's start, wake-up latency apart.",
        &[
            ("Scenario", scenario),
            ("Jitter per group (twin)", summary),
            ("Jitter distributions", e2_distributions(r)?),
        ],
    ))
}

/// The E2 page's scenario: the machine, the run, the budget, the groups and the
/// configurations.
fn e2_scenario(r: &e2::Results) -> String {
    let groups: Vec<Vec<Cell>> = e2::GROUPS
        .iter()
        .map(|&(name, hz, lp, first, last)| {
            vec![
                Cell::Text(name.into()),
                Cell::Num(fixed(hz, 0)),
                Cell::Num(lp.to_string()),
                Cell::Text(format!("{first}-{last}")),
            ]
        })
        .collect();
    let configs: Vec<Vec<Cell>> = r
        .outcomes
        .iter()
        .map(|o| {
            vec![
                Cell::Text(e2::config_name(o.config)),
                Cell::Text(o.config.describe().into()),
                Cell::Text(o.config.cmdline().into()),
            ]
        })
        .collect();
    format!(
        "{}{}{}",
        definitions(&[
            (
                "machine",
                "64-CPU server of 2012 (4 × Sandy Bridge-EP 8C/16T, machine preset \
                 server-2012-64), 3.0-rt, HZ=1000 (assumed), CPUs 0-3 housekeeping"
                    .into()
            ),
            (
                "twin",
                format!(
                    "{} per configuration after {} warm-up, seed {}, fliers above {} µs",
                    secs(r.duration_ns),
                    secs(e2::WARMUP_NS),
                    r.seed,
                    r.flier_us
                )
            ),
            (
                "published",
                format!(
                    "jitter budget {} µs; the user saw it \"nearly doubled\", even with \
                     skew_tick=1 (docs/experiments.md E2)",
                    e2::BUDGET_US
                )
            ),
        ]),
        table(&["group", "Hz", "LOOP", "CPUs"], &groups),
        table(&["config", "what", "kernel command line"], &configs)
    )
}

/// Every configuration's per-group jitter summary against the budget.
fn e2_summary(r: &e2::Results) -> String {
    let mut rows = Vec::new();
    for o in &r.outcomes {
        for g in o.groups() {
            let s = e2::summary(g);
            rows.push(vec![
                Cell::Text(e2::config_name(o.config)),
                Cell::Text(s.group.clone()),
                Cell::Num(fixed(s.max_us, 2)),
                Cell::Num(fixed(s.avg_us, 2)),
                Cell::Num(fixed(s.sigma_us, 2)),
                Cell::Num(fixed(s.p999_us, 2)),
                Cell::Verdict(s.max_us <= e2::BUDGET_US),
                Cell::Num(s.fliers.to_string()),
                Cell::Num(s.overruns.to_string()),
                Cell::Num(fixed(s.wakeup_max_us, 2)),
                Cell::Num(fixed(s.max_lock_wait_us, 2)),
            ]);
        }
    }
    format!(
        "{}<p>The verdict column holds each group's largest jitter against the {} µs budget.</p>\n",
        table(
            &[
                "config",
                "group",
                "max (µs)",
                "avg",
                "sigma",
                "p99.9",
                "≤ budget",
                "fliers",
                "overruns",
                "wake-up max",
                "lock wait max",
            ],
            &rows,
        ),
        e2::BUDGET_US
    )
}

/// Each group's exceedance figure followed by its numbers: per bucket edge, the share of the
/// group's frames at or above it in every configuration (%).
fn e2_distributions(r: &e2::Results) -> Result<String, PlotError> {
    let figs = plot::e2::figures(r)?;
    let mut tables = Vec::new();
    for f in &figs {
        let name = f.id.trim_start_matches("e2-");
        let curves: Vec<(String, Vec<(f64, f64)>)> = r
            .outcomes
            .iter()
            .filter_map(|o| {
                let g = o.groups().into_iter().find(|g| g.group == name)?;
                let h = g.jitter_histogram.as_ref()?;
                Some((e2::config_name(o.config), plot::e2::exceedance(h)))
            })
            .collect();
        let mut head = vec!["jitter ≥ (µs)".to_string()];
        head.extend(curves.iter().map(|(c, _)| format!("{c} frames %")));
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let edges = curves.first().map_or(0, |(_, e)| e.len());
        let rows: Vec<Vec<Cell>> = (0..edges)
            .map(|i| {
                let mut row = vec![Cell::Num(plot::tick(curves[0].1[i].0))];
                row.extend(curves.iter().map(|(_, e)| {
                    let share = e.get(i).map_or(0.0, |p| p.1) * 100.0;
                    Cell::Num(if share == 0.0 {
                        "0".into()
                    } else {
                        format!("{share:.4}")
                    })
                }));
                row
            })
            .collect();
        tables.push(table(&head, &rows));
    }
    Ok(figures_with_tables(&figs, &tables))
}

/// The E3 page: scenario, every configuration beside the published figure, the costs, the
/// assumptions, the figure and the difference checks.
pub fn e3_html(r: &e3::Results) -> Result<String, PlotError> {
    let scenario = definitions(&[
        (
            "benchmark",
            format!(
                "contextswitch (futex ping-pong between two vCPUs of a KVM guest), {} switches \
                 per configuration",
                r.switches
            ),
        ),
        (
            "published",
            "the 2017 guest-polling proposal's later revision (docs/costs.md §3b)".into(),
        ),
    ]);
    let main = e3_rows_table(&r.rows);
    let costs: Vec<Vec<Cell>> = r
        .costs
        .iter()
        .map(|c| vec![Cell::Text(c.name.clone()), Cell::Num(c.ns.to_string())])
        .collect();
    let reading = &r.poll_before_tick_stop;
    let other_placement =
        e3_rows_table(&reading.rows) + &bands(&reading.absolute, 1) + &bands(&reading.checks, 1);
    let mut assumptions = String::from("<ul>\n");
    for a in &r.assumptions {
        let _ = writeln!(assumptions, "<li>{}</li>", escape(a));
    }
    assumptions.push_str("</ul>\n");
    Ok(page(
        "E3 — context switches in a KVM guest, polling before idle",
        "ns per switch under each guest idle path and host halt polling, the twin beside the \
         published figures.",
        &[
            ("Scenario", scenario),
            ("HLT-versus-polling difference", bands(&r.checks, 1)),
            (
                "Twin beside published",
                figures_with_tables(&plot::e3::figures(r)?, &[main]),
            ),
            (
                "Other reading of the 2017 poll's placement (before the tick stop), not the verdict",
                other_placement,
            ),
            (
                "Costs and assumptions",
                table(&["cost", "ns"], &costs) + &assumptions,
            ),
        ],
    ))
}

/// E3 rows beside their published figures, one line each.
fn e3_rows_table(rows: &[e3::Row]) -> String {
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|row| {
            vec![
                Cell::Text(row.label.clone()),
                Cell::Num(fixed(row.ns_per_switch, 1)),
                Cell::Pub(opt_fixed(row.published_ns, 1)),
                Cell::Num(fixed(row.hlt_exits, 2)),
                Cell::Num(fixed(row.ipi_skipped_pct, 1)),
                Cell::Num(fixed(row.host_cpu_pct, 1)),
                Cell::Pub(row.published_cpu.clone().unwrap_or_else(|| "-".into())),
            ]
        })
        .collect();
    table(
        &[
            "configuration",
            "ns/switch",
            "published",
            "HLT exits/switch",
            "IPIs skipped %",
            "host CPU %",
            "published CPU",
        ],
        &cells,
    )
}

/// The E4 page: scenario, ns per call of every point with its change against case 1, the
/// figure.
pub fn e4_html(r: &e4::Results) -> Result<String, PlotError> {
    let scenario = definitions(&[
        (
            "benchmark",
            format!(
                "getpid() × {} per point, HZ={}, seed {}",
                r.calls, r.hz, r.seed
            ),
        ),
        (
            "servers",
            e4::Server::ALL
                .iter()
                .map(|s| format!("{} ({})", s.name(), s.preset()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "published",
            "no outcome given (docs/experiments.md E4): every figure is the twin's prediction"
                .into(),
        ),
    ]);
    let rows: Vec<Vec<Cell>> = r
        .rows
        .iter()
        .map(|row| {
            vec![
                Cell::Text(row.machine.name().into()),
                Cell::Text(row.kernel.clone()),
                Cell::Num(row.case.to_string()),
                Cell::Text(row.pinned.map_or_else(|| "-".into(), |c| c.to_string())),
                Cell::Num(fixed(row.ns_per_call, 1)),
                Cell::Num(if row.case == 1 {
                    "—".into()
                } else {
                    format!("{:+.1} %", row.change_pct)
                }),
                Cell::Num(fixed(row.breakdown.rcu_eqs_ns + row.breakdown.vtime_ns, 3)),
                Cell::Num(fixed(row.breakdown.interrupts_ns, 3)),
            ]
        })
        .collect();
    let main = table(
        &[
            "machine",
            "kernel",
            "case",
            "pinned to",
            "ns/call",
            "vs case 1",
            "context tracking ns",
            "interrupts ns",
        ],
        &rows,
    );
    Ok(page(
        "E4 — what NO_HZ_FULL costs a system call",
        "A getpid() loop on three servers in four kernel configurations, unpinned and pinned.",
        &[
            ("Scenario", scenario),
            ("Twin", figures_with_tables(&plot::e4::figures(r)?, &[main])),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use page::CSS;
    use ticklab_sweep::{Metric, ParamKey, SweepSummary};

    /// The page with every `<svg …>…</svg>` cut to `<svg/>` (the figures have their own
    /// snapshots).
    fn without_svg(html: &str) -> String {
        let mut out = String::new();
        let mut rest = html;
        while let Some(i) = rest.find("<svg") {
            out.push_str(&rest[..i]);
            out.push_str("<svg/>");
            match rest[i..].find("</svg>") {
                Some(j) => rest = &rest[i + j + "</svg>".len()..],
                None => rest = "",
            }
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn escape_table() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }

    #[test]
    fn e1_page_snapshot() {
        let html = e1_html(&crate::e1::tests::results()).unwrap();
        assert_eq!(html.matches("<svg").count(), 2);
        assert_self_contained(&html);
        insta::assert_snapshot!(without_svg(&html));
    }

    #[test]
    fn every_page_is_self_contained() {
        let e2 = e2_html(&crate::plot::e2::tests::results_with_histograms()).unwrap();
        assert_eq!(e2.matches("<svg").count(), 2, "one figure per group");
        assert!(
            e2.contains("<td class=\"fail\">FAIL</td>"),
            "17 µs × 2 is over budget"
        );
        let e3 = e3_html(&crate::e3::tests::results()).unwrap();
        assert!(e3.contains("<h2>Other reading of the 2017 poll&#39;s placement"));
        let e4 = e4_html(&crate::e4::tests::results()).unwrap();
        let rows = crate::plot::sweep::tests::rows();
        let points = SweepSummary::of_rows(&rows);
        let x = default_x(&points).unwrap();
        assert_eq!(x, ParamKey::Workload, "numeric beats categorical");
        let metrics = varying_metrics(&points);
        assert_eq!(metrics, [Metric::IrqPerS, Metric::Watts]);
        let sweep = sweep_html(&rows, &metrics, &x).unwrap();
        for html in [&e2, &e3, &e4, &sweep] {
            assert_self_contained(html);
            assert!(html.matches("<svg").count() >= 1);
        }
        assert!(
            sweep.contains("<td class=\"n\">1046</td><td class=\"n\">1044 – 1048</td>"),
            "{}",
            without_svg(&sweep)
        );
    }

    #[test]
    fn sweep_page_puts_each_table_under_its_figure_in_x_order_without_wrapping() {
        let rows = crate::plot::sweep::tests::rows();
        let html = sweep_html(
            &rows,
            &[Metric::IrqPerS, Metric::Watts],
            &ParamKey::Workload,
        )
        .unwrap();
        assert!(CSS.contains("white-space:nowrap"));
        // figure, table, figure, table.
        let order: Vec<&str> = html
            .match_indices("<figure")
            .chain(html.match_indices("<table"))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_values()
            .collect();
        assert_eq!(
            order[order.len() - 4..],
            ["<figure", "<table", "<figure", "<table"]
        );
        // The irq/s table under the first figure: x (workload) first, rows by its value.
        let t = &html[html.find("<table><thead><tr><th>workload").unwrap()..];
        let t = &t[..t.find("</table>").unwrap()];
        let workloads: Vec<&str> = t
            .split("<tr><td>")
            .skip(1)
            .map(|r| &r[..r.find("</td>").unwrap()])
            .collect();
        assert_eq!(
            workloads,
            ["idle", "idle", "hogs:1", "hogs:1", "hogs:2", "hogs:2"]
        );
        assert!(
            html.contains("<h1>Sweep e1-grid</h1>"),
            "no setup in the rows: the id"
        );
    }

    /// Nothing is fetched: no script, no external reference (the only URL is the SVG
    /// namespace, which names, not loads).
    pub(crate) fn assert_self_contained(html: &str) {
        assert!(!html.contains("<script"), "no script");
        for attr in ["src=", "href=", "url(", "@import"] {
            assert!(!html.contains(attr), "{attr}");
        }
        let urls = html.matches("http").count();
        let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
        assert_eq!(urls, namespaces, "only SVG namespaces name a URL");
    }
}
