//! The E1 report: `nohz_full` against `nohz_full_aggressive` on the laptop, beside the
//! published table.
//!
//! Layout of [`e1_report`]:
//!
//! ```text
//! E1 — nohz_full_aggressive on a Dell XPS 13 7390 (i7-10510U, 8 CPUs), HZ=1000, nohz_full=all
//! twin: <s> simulated s per point after <s> s warm-up, seed <seed>; published: ...
//!
//! load   |   irq/s nf  published | irq/s aggr  published |    W nf   publ. |  W aggr   publ.
//! -------------------------------------------------------------------------------------------
//! idle   | ...                                       (one line per load of `e1::LOADS`)
//!
//! Acceptance bands:   (the verdicts, right under the table they judge)
//!   ok   <what>  <value>  target <target>  <band>    (FAIL instead of ok when outside)
//! <n> of <m> checks inside their bands
//!
//! What aggressive costs (twin):
//! load   |  max jiffies gap   max stale at irq  mean coarse stale    hangs      max irq
//! idle   | ...                                       (one line per aggressive row)
//! (nohz_full for reference: max jiffies gap <ms> ms)
//! hrtimer hang back-off ("hrtimer: interrupt took N ns"): <not reached in any point | N hangs>
//! ```
//!
//! Rates have one decimal, watts three, gaps and staleness one (means two), band values three.
//! A load missing either mode's row is left out of the first table.
//!
//! [`json`] is the `--json` form: the [`Results`] plus `schema_version` and `experiment`, every
//! object's keys in alphabetical order.

use std::fmt::Write;
use ticklab_schema::experiment::e1::{LOADS, Mode, Results, WARMUP_NS, load_label};
use ticklab_schema::report::REPORT_SCHEMA_VERSION;

/// The E1 tables as plain text (see the module documentation for the layout).
pub fn e1_report(r: &Results) -> String {
    let mut s = String::new();
    header(&mut s, r);
    published_table(&mut s, r);
    bands(&mut s, r);
    costs(&mut s, r);
    s
}

/// The `--json` document: `schema_version`, `experiment: "e1"`, `seed`, `duration_ns`, `rows`,
/// `checks`.
pub fn json(r: &Results) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    v["schema_version"] = REPORT_SCHEMA_VERSION.into();
    v["experiment"] = "e1".into();
    Ok(v)
}

fn header(s: &mut String, r: &Results) {
    s.push_str(
        "E1 — nohz_full_aggressive on a Dell XPS 13 7390 (i7-10510U, 8 CPUs), HZ=1000, nohz_full=all\n",
    );
    let _ = writeln!(
        s,
        "twin: {} simulated s per point after {} s warm-up, seed {}; published: the 2023 RFC (5-min averages)\n",
        r.duration_ns as f64 / 1e9,
        WARMUP_NS as f64 / 1e9,
        r.seed
    );
}

fn published_table(s: &mut String, r: &Results) {
    let _ = writeln!(
        s,
        "{:<6} | {:>10} {:>10} | {:>10} {:>10} | {:>7} {:>7} | {:>7} {:>7}",
        "load",
        "irq/s nf",
        "published",
        "irq/s aggr",
        "published",
        "W nf",
        "publ.",
        "W aggr",
        "publ."
    );
    let _ = writeln!(s, "{}", "-".repeat(92));
    for load in LOADS {
        if let (Some(n), Some(g)) = (r.row(Mode::NohzFull, load), r.row(Mode::Aggressive, load)) {
            let _ = writeln!(
                s,
                "{:<6} | {:>10.1} {:>10.1} | {:>10.1} {:>10.1} | {:>7.3} {:>7.3} | {:>7.3} {:>7.3}",
                load_label(load),
                n.irq_per_s,
                n.published_irq_per_s,
                g.irq_per_s,
                g.published_irq_per_s,
                n.watts,
                n.published_watts,
                g.watts,
                g.published_watts
            );
        }
    }
}

fn costs(s: &mut String, r: &Results) {
    s.push_str("\nWhat aggressive costs (twin):\n");
    let _ = writeln!(
        s,
        "{:<6} | {:>16} {:>18} {:>18} {:>8} {:>12}",
        "load", "max jiffies gap", "max stale at irq", "mean coarse stale", "hangs", "max irq"
    );
    for row in r.rows.iter().filter(|row| row.mode == Mode::Aggressive) {
        let _ = writeln!(
            s,
            "{:<6} | {:>13.1} ms {:>15.1} ms {:>15.2} ms {:>8} {:>9.1} us",
            row.load,
            row.max_jiffies_gap_ms,
            row.max_reader_staleness_ms,
            row.mean_coarse_staleness_ms,
            row.hrtimer_hangs,
            row.max_irq_us
        );
    }
    let nf_gap = r
        .rows
        .iter()
        .filter(|row| row.mode == Mode::NohzFull)
        .map(|row| row.max_jiffies_gap_ms)
        .fold(0.0, f64::max);
    let _ = writeln!(
        s,
        "(nohz_full for reference: max jiffies gap {nf_gap:.1} ms)"
    );
    let hangs: u64 = r.rows.iter().map(|row| row.hrtimer_hangs).sum();
    let _ = writeln!(
        s,
        "hrtimer hang back-off (\"hrtimer: interrupt took N ns\"): {}",
        if hangs == 0 {
            "not reached in any point".to_string()
        } else {
            format!("{hangs} hangs")
        }
    );
}

fn bands(s: &mut String, r: &Results) {
    s.push_str("\nAcceptance bands:\n");
    crate::format::band_checks(s, &r.checks, 36, 10, 3);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::experiment::BandCheck;
    use ticklab_schema::experiment::e1::{Row, published};

    fn row(mode: Mode, hogs: u32) -> Row {
        let (irq, watts) = published(mode, hogs);
        let aggressive = mode == Mode::Aggressive && hogs < 8;
        Row {
            mode,
            load: load_label(hogs),
            irq_per_s: irq * 0.97,
            watts: watts * 1.04,
            published_irq_per_s: irq,
            published_watts: watts,
            max_jiffies_gap_ms: if aggressive { 113.6 } else { 1.0 },
            max_reader_staleness_ms: if aggressive { 113.9 } else { 1.0 },
            mean_coarse_staleness_ms: if aggressive { 10.59 } else { 0.5 },
            hrtimer_hangs: u64::from(mode == Mode::Aggressive && hogs == 4),
            max_irq_us: 2.9,
            package_idle_fraction: 0.5,
        }
    }

    /// Every row but `aggressive 2` (to show a load with one mode missing is left out), one
    /// failed band, one hrtimer hang.
    pub(crate) fn results() -> Results {
        let rows: Vec<Row> = Mode::ALL
            .iter()
            .flat_map(|&m| LOADS.iter().map(move |&l| row(m, l)))
            .filter(|r| !(r.mode == Mode::Aggressive && r.load == "2"))
            .collect();
        Results {
            seed: 7,
            duration_ns: 2_500_000_000,
            checks: vec![
                BandCheck::within("irq/s nohz_full idle".into(), 1005.6, 1036.679, 0.10),
                BandCheck::within("W aggressive 1".into(), 3.2, 2.372, 0.30),
                BandCheck {
                    what: "W aggressive / nohz_full, idle".into(),
                    value: 0.585,
                    target: 0.75,
                    band: "<= 0.75".into(),
                    ok: true,
                },
            ],
            rows,
        }
    }

    #[test]
    fn e1_report_snapshot() {
        insta::assert_snapshot!(e1_report(&results()));
    }

    #[test]
    fn json_adds_version_and_name_with_sorted_keys() {
        let v = json(&results()).unwrap();
        assert_eq!(v["schema_version"], REPORT_SCHEMA_VERSION);
        assert_eq!(v["experiment"], "e1");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "checks",
                "duration_ns",
                "experiment",
                "rows",
                "schema_version",
                "seed"
            ]
        );
        assert_eq!(v["rows"].as_array().unwrap().len(), 9);
    }
}
