//! `ticklab sweep` and `ticklab merge` output: sweep rows and per-point summaries as JSON
//! lines or CSV.
//!
//! JSON lines are one [`SweepRow`] (or [`SweepSummary`]) per line, every field as in
//! `ticklab_sweep`. CSV has one header line and one line per row; its columns are
//!
//! * rows: `run`, `point`, one column per swept key (`hz`, `workload`, `cost.FIELD`, ...),
//!   `seed`, one column per machine-wide metric any row has (`irq_per_s`, `watts`, ...),
//!   then `cpuN_METRIC` for every CPU and per-CPU metric any row has;
//! * summaries: `point`, the swept keys, `seeds` (how many), then `METRIC_mean`, `_min`,
//!   `_max`, `_ci95_low`, `_ci95_high` per machine-wide metric (the per-CPU statistics are in
//!   the JSON lines only).
//!
//! A metric a row does not have is an empty cell. Numbers are rounded to
//! [`CSV_SIGNIFICANT_DIGITS`] significant digits (a twin's figure or a host measurement has
//! no more meaning than that; the binary noise of sums such as `34.91760000000002` goes) and
//! written in Rust's shortest form of the rounded value; the JSON lines keep full precision.
//! Each cell depends only on its own value, computed from the rows' JSON values, so shards
//! merged back give the same bytes as one run. Values are quoted as RFC 4180 says when they hold a comma, a quote
//! or a line break (`hogs:2@1,3`).

use std::fmt::Write;
use ticklab_sweep::{CpuMetric, Metric, SweepRow, SweepSummary};

/// Rows as JSON lines.
pub fn rows_jsonl(rows: &[SweepRow]) -> Result<String, serde_json::Error> {
    jsonl(rows)
}

/// Summaries as JSON lines.
pub fn summaries_jsonl(s: &[SweepSummary]) -> Result<String, serde_json::Error> {
    jsonl(s)
}

fn jsonl<T: serde::Serialize>(items: &[T]) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for i in items {
        out += &serde_json::to_string(i)?;
        out.push('\n');
    }
    Ok(out)
}

/// The swept keys of a sweep, from its first row (every row of a sweep has the same keys).
fn param_names(params: Option<&[ticklab_sweep::SweepParam]>) -> Vec<String> {
    params
        .unwrap_or_default()
        .iter()
        .map(|p| p.key.name())
        .collect()
}

/// Rows as CSV (module docs).
pub fn rows_csv(rows: &[SweepRow]) -> String {
    let keys = param_names(rows.first().map(|r| r.params.as_slice()));
    let metrics: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| rows.iter().any(|r| r.metrics.aggregate.contains_key(m)))
        .collect();
    let nr_cpus = rows.iter().map(|r| r.metrics.cpus.len()).max().unwrap_or(0);
    let cpu_metrics: Vec<CpuMetric> = CpuMetric::ALL
        .into_iter()
        .filter(|m| {
            rows.iter()
                .any(|r| r.metrics.cpus.iter().any(|c| c.values.contains_key(m)))
        })
        .collect();
    let mut header: Vec<String> = vec!["run".into(), "point".into()];
    header.extend(keys.iter().cloned());
    header.push("seed".into());
    header.extend(metrics.iter().map(|m| m.name().to_string()));
    for cpu in 0..nr_cpus {
        header.extend(cpu_metrics.iter().map(|m| format!("cpu{cpu}_{}", m.name())));
    }
    let mut out = csv_line(&header);
    for r in rows {
        let mut cells: Vec<String> = vec![r.run.to_string(), r.point.to_string()];
        cells.extend(r.params.iter().map(|p| p.value.clone()));
        cells.push(r.seed.to_string());
        cells.extend(
            metrics
                .iter()
                .map(|m| num(r.metrics.aggregate.get(m).copied())),
        );
        for cpu in 0..nr_cpus {
            let c = r.metrics.cpus.get(cpu);
            cells.extend(
                cpu_metrics
                    .iter()
                    .map(|m| num(c.and_then(|c| c.values.get(m)).copied())),
            );
        }
        out += &csv_line(&cells);
    }
    out
}

/// Summaries as CSV (module docs).
pub fn summaries_csv(s: &[SweepSummary]) -> String {
    let keys = param_names(s.first().map(|r| r.params.as_slice()));
    let metrics: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| s.iter().any(|r| r.aggregate.contains_key(m)))
        .collect();
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(keys.iter().cloned());
    header.push("seeds".into());
    for m in &metrics {
        for part in ["mean", "min", "max", "ci95_low", "ci95_high"] {
            header.push(format!("{}_{part}", m.name()));
        }
    }
    let mut out = csv_line(&header);
    for p in s {
        let mut cells: Vec<String> = vec![p.point.to_string()];
        cells.extend(p.params.iter().map(|p| p.value.clone()));
        cells.push(p.seeds.len().to_string());
        for m in &metrics {
            let st = p.aggregate.get(m);
            cells.push(num(st.map(|s| s.mean)));
            cells.push(num(st.map(|s| s.min)));
            cells.push(num(st.map(|s| s.max)));
            cells.push(num(st.and_then(|s| s.ci95_low)));
            cells.push(num(st.and_then(|s| s.ci95_high)));
        }
        out += &csv_line(&cells);
    }
    out
}

/// A number in its shortest round-trip form, or an empty cell.
/// Significant digits of a CSV number (module docs).
pub const CSV_SIGNIFICANT_DIGITS: usize = 6;

/// A CSV cell: `v` rounded to [`CSV_SIGNIFICANT_DIGITS`] digits, empty when absent.
fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| {
        if !v.is_finite() {
            return format!("{v}");
        }
        // The decimal rounding in scientific notation, read back: the shortest form of
        // the double nearest to it prints exactly those digits.
        let rounded: f64 = format!("{v:.*e}", CSV_SIGNIFICANT_DIGITS - 1)
            .parse()
            .unwrap_or(v);
        format!("{}", rounded + 0.0)
    })
}

/// One CSV line, cells quoted where RFC 4180 requires it.
fn csv_line(cells: &[String]) -> String {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        if c.contains([',', '"', '\n', '\r']) {
            let _ = write!(line, "\"{}\"", c.replace('"', "\"\""));
        } else {
            line += c;
        }
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::report::CpuRole;
    use ticklab_sweep::{CpuMetrics, Metrics, ParamKey, SWEEP_SCHEMA_VERSION, SweepParam};

    fn row(run: u64, workload: &str, seed: u64, irq: f64, watts: Option<f64>) -> SweepRow {
        let mut m = Metrics::default();
        m.aggregate.insert(Metric::IrqPerS, irq);
        if let Some(w) = watts {
            m.aggregate.insert(Metric::Watts, w);
        }
        let mut values = std::collections::BTreeMap::new();
        values.insert(CpuMetric::IrqPerS, irq / 2.0);
        m.cpus.push(CpuMetrics {
            cpu: 0,
            role: CpuRole::Timekeeping,
            values,
        });
        SweepRow {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep: "00ff".into(),
            run,
            runs: 3,
            point: run / 2,
            params: vec![
                SweepParam {
                    key: ParamKey::Cmdline,
                    value: "nohz_full=all \"x\"".into(),
                    number: None,
                },
                SweepParam {
                    key: ParamKey::Workload,
                    value: workload.into(),
                    number: None,
                },
            ],
            seed,
            setup: None,
            metrics: m,
        }
    }

    fn rows() -> Vec<SweepRow> {
        vec![
            row(0, "hogs:2@1,3", 1, 1036.5, Some(0.5)),
            row(1, "hogs:2@1,3", 2, 1040.25, None),
            row(2, "idle", 1, 98.0, Some(0.25)),
        ]
    }

    #[test]
    fn rows_csv_snapshot() {
        insta::assert_snapshot!(rows_csv(&rows()));
    }

    #[test]
    fn summaries_csv_snapshot() {
        insta::assert_snapshot!(summaries_csv(&SweepSummary::of_rows(&rows())));
    }

    #[test]
    fn jsonl_is_one_row_per_line_and_reads_back() {
        let text = rows_jsonl(&rows()).unwrap_or_default();
        let back: Vec<SweepRow> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(back, rows());
    }

    #[test]
    fn empty_sweep_is_a_header() {
        assert_eq!(rows_csv(&[]), "run,point,seed\n");
        assert_eq!(summaries_csv(&[]), "point,seeds\n");
    }

    #[test]
    fn csv_numbers_keep_six_significant_digits() {
        let cases: &[(f64, &str)] = &[
            (34.91760000000002, "34.9176"),
            (1036.6789, "1036.68"),
            (0.000324123456, "0.000324123"),
            (2.0, "2"),
            (1234567.0, "1234570"),
            (-0.0, "0"),
            (0.1 + 0.2, "0.3"),
        ];
        for (v, want) in cases {
            assert_eq!(num(Some(*v)), *want, "{v}");
        }
        assert_eq!(num(None), "");
    }
}
