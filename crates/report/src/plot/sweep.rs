//! `ticklab plot`: any metric of a sweep against any swept parameter, from the typed
//! [`SweepRow`]s of a sweep's output.
//!
//! The rows are folded per point over their seeds ([`SweepSummary::of_rows`]). Each point
//! is placed at its value of the x parameter — its number where every point has one (HZ,
//! hogs, a cost in ns, a duration), else as a category in the order the points first
//! appear (command lines, machines) — at the mean over its seeds, with an error bar from
//! the smallest to the largest seed's value (none with one seed). Points that share the
//! values of every other swept parameter form one line, labelled with those values
//! (`cmdline=nohz_full=all`), in the order they first appear.

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::sweep::{Metric, ParamKey, SweepRow, SweepSummary};

/// The figure of `metric` against `x` (see the module documentation). Errors name what is
/// missing: rows, the parameter (with the swept ones), or any value of the metric.
pub fn figure(rows: &[SweepRow], metric: Metric, x: &ParamKey) -> Result<Figure, PlotError> {
    let points = SweepSummary::of_rows(rows);
    let Some(first) = points.first() else {
        return Err(PlotError("the sweep has no rows".into()));
    };
    if !points.iter().all(|p| p.params.iter().any(|q| &q.key == x)) {
        let swept: Vec<String> = first.params.iter().map(|p| p.key.name()).collect();
        return Err(PlotError(format!(
            "--x {}: not a swept parameter of every point; swept: {}",
            x.name(),
            swept.join(", ")
        )));
    }
    let x_param = |p: &SweepSummary| p.params.iter().find(|q| &q.key == x).cloned();
    let numeric = points
        .iter()
        .all(|p| x_param(p).is_some_and(|q| q.number.is_some()));
    let mut categories: Vec<String> = Vec::new();
    let mut lines: Vec<(String, Vec<Point>)> = Vec::new();
    for p in &points {
        let Some(xp) = x_param(p) else { continue };
        let x_value = match xp.number {
            Some(n) if numeric => n,
            _ => match categories.iter().position(|c| *c == xp.value) {
                Some(i) => i as f64,
                None => {
                    categories.push(xp.value.clone());
                    (categories.len() - 1) as f64
                }
            },
        };
        let label: Vec<String> = p
            .params
            .iter()
            .filter(|q| &q.key != x)
            .map(|q| format!("{}={}", q.key.name(), q.value))
            .collect();
        let label = if label.is_empty() {
            metric.name().to_string()
        } else {
            label.join(" ")
        };
        let Some(stats) = p.aggregate.get(&metric) else {
            continue;
        };
        let point = Point {
            x: x_value,
            y: stats.mean,
            spread: (stats.n > 1).then_some((stats.min, stats.max)),
        };
        match lines.iter_mut().find(|(l, _)| *l == label) {
            Some((_, pts)) => pts.push(point),
            None => lines.push((label, vec![point])),
        }
    }
    let series = lines
        .into_iter()
        .enumerate()
        .map(|(color, (label, mut points))| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                label,
                color,
                stroke: Stroke::Solid,
                points,
            }
        })
        .collect();
    let chart = Chart {
        title: format!(
            "{} against {} (sweep {})",
            metric.label(),
            x.name(),
            first.sweep
        ),
        x_label: match x {
            ParamKey::Workload if numeric => "workload: hogs (0 = idle)".into(),
            _ => x.name(),
        },
        y_label: metric.label().into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        x_categories: if numeric { Vec::new() } else { categories },
        series,
    };
    Figure::draw(format!("sweep-{}-{}", metric.name(), x.name()), &chart)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::sweep::{Metrics, SWEEP_SCHEMA_VERSION, SweepParam};

    /// E1's grid in small: two command lines × idle, hogs:1, hogs:2 × 2 seeds.
    pub(crate) fn rows() -> Vec<SweepRow> {
        let mut out = Vec::new();
        let cmdlines = ["nohz_full=all", "nohz_full=all nohz_full_aggressive"];
        let loads = [("idle", 0.0), ("hogs:1", 1.0), ("hogs:2", 2.0)];
        for (ci, cmdline) in cmdlines.iter().enumerate() {
            for (li, (w, hogs)) in loads.iter().enumerate() {
                for seed in 1..=2u64 {
                    let point = (ci * loads.len() + li) as u64;
                    let base = if ci == 0 { 1040.0 } else { 100.0 + 20.0 * hogs };
                    let mut m = Metrics::default();
                    m.aggregate
                        .insert(Metric::IrqPerS, base + seed as f64 * 4.0);
                    m.aggregate
                        .insert(Metric::Watts, 0.5 + hogs * (1.0 - ci as f64 * 0.3));
                    out.push(SweepRow {
                        schema_version: SWEEP_SCHEMA_VERSION,
                        sweep: "e1-grid".into(),
                        run: out.len() as u64,
                        runs: 12,
                        point,
                        params: vec![
                            SweepParam {
                                key: ParamKey::Cmdline,
                                value: (*cmdline).into(),
                                number: None,
                            },
                            SweepParam {
                                key: ParamKey::Workload,
                                value: (*w).into(),
                                number: Some(*hogs),
                            },
                        ],
                        seed,
                        metrics: m,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn numeric_x_one_line_per_command_line_snapshot() {
        let f = figure(&rows(), Metric::IrqPerS, &ParamKey::Workload).unwrap();
        assert_eq!(f.id, "sweep-irq_per_s-workload");
        assert!(f.svg.contains("cmdline=nohz_full=all nohz_full_aggressive"));
        insta::assert_snapshot!(f.svg);
    }

    #[test]
    fn categorical_x_and_errors() {
        let f = figure(&rows(), Metric::Watts, &ParamKey::Cmdline).unwrap();
        assert!(f.svg.contains("workload=hogs:2"), "one line per load");
        let e = figure(&rows(), Metric::Watts, &ParamKey::Hz).unwrap_err();
        assert_eq!(
            e.0,
            "--x hz: not a swept parameter of every point; swept: cmdline, workload"
        );
        let e = figure(&rows(), Metric::FrameP99Us, &ParamKey::Workload).unwrap_err();
        assert!(e.0.contains("no value to plot"), "{e}");
        assert!(figure(&[], Metric::Watts, &ParamKey::Hz).is_err());
    }
}
