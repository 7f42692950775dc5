//! `ticklab plot`: any metric of a sweep against any swept parameter, from the typed
//! [`SweepRow`]s of a sweep's output.
//!
//! The rows are folded per point over their seeds ([`SweepSummary::of_rows`]). Each point
//! is placed at its value of the x parameter — its number where every point has one (HZ,
//! hogs, a cost in ns, a duration), else as a category in the order the points first
//! appear (command lines, machines) — at the mean over its seeds, with an error bar from
//! the smallest to the largest seed's value (none with one seed). Points that share the
//! values of every other swept parameter form one line, in the order they first appear,
//! labelled with the values of the parameters that differ between lines only
//! (`cmdline=nohz_full=all`; a parameter with one value is said once, in the subtitle).
//!
//! The title names the metric and what the sweep ran on (machine preset, kernel and HZ, from
//! the rows' [`SweepSetup`]; `machine varies` when the
//! machine is swept), not the sweep's hash. A fraction (0..1) is drawn in percent on an
//! axis from 0 to at most 100.

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_sweep::{Metric, ParamKey, SweepRow, SweepSetup, SweepSummary};

/// What the sweep ran on, for titles: the machine preset, `kernel <version>` and `HZ=<hz>`,
/// each said once when every point shares it and as `<what> varies` when not (swept); empty
/// for rows written before they carried their setup.
pub fn setup_words(points: &[SweepSummary]) -> Vec<String> {
    let setups: Vec<&SweepSetup> = points.iter().filter_map(|p| p.setup.as_ref()).collect();
    let Some(s0) = setups.first() else {
        return Vec::new();
    };
    let common = |f: &dyn Fn(&SweepSetup) -> String, what: &str| {
        if setups.iter().all(|s| f(s) == f(s0)) {
            f(s0)
        } else {
            format!("{what} varies")
        }
    };
    vec![
        common(&|s| s.machine.clone(), "machine"),
        common(&|s| format!("kernel {}", s.kernel), "kernel"),
        common(&|s| format!("HZ={}", s.hz), "HZ"),
    ]
}

/// A parameter's value as a legend or title shows it (`""` for an empty command line).
pub fn shown_value(value: &str) -> &str {
    if value.is_empty() { "\"\"" } else { value }
}

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
    let varies = |key: &ParamKey| varies(&points, key);
    let fixed: Vec<String> = first
        .params
        .iter()
        .filter(|q| &q.key != x && !varies(&q.key))
        .map(|q| format!("{}={}", q.key.name(), shown_value(&q.value)))
        .collect();
    let (series, categories) = series(&points, metric, x, numeric);
    let on: Vec<String> = setup_words(&points).into_iter().chain(fixed).collect();
    let chart = Chart {
        title: if on.is_empty() {
            format!("{} against {}", metric.label(), x.name())
        } else {
            format!(
                "{} against {} — {}",
                metric.label(),
                x.name(),
                on.join(", ")
            )
        },
        x_label: match x {
            ParamKey::Workload if numeric => "workload: hogs (0 = idle)".into(),
            _ => x.name(),
        },
        y_label: if metric.is_fraction() {
            metric.label().replace("fraction", "%")
        } else {
            metric.label().into()
        },
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        y_max: metric.is_fraction().then_some(100.0),
        x_categories: if numeric { Vec::new() } else { categories },
        series,
    };
    Figure::draw(format!("sweep-{}-{}", metric.name(), x.name()), &chart)
}

/// Whether two points give `key` different values.
fn varies(points: &[SweepSummary], key: &ParamKey) -> bool {
    let mut values = points
        .iter()
        .filter_map(|p| p.params.iter().find(|q| &q.key == key));
    let first = values.next().map(|q| q.value.clone());
    values.any(|q| Some(&q.value) != first.as_ref())
}

/// The figure's lines: one per combination of the other varying parameters, each point the
/// mean over seeds with the seeds' range as its spread (fractions in percent); and, when `x`
/// is not numeric, its values in order of appearance (the category axis).
fn series(
    points: &[SweepSummary],
    metric: Metric,
    x: &ParamKey,
    numeric: bool,
) -> (Vec<Series>, Vec<String>) {
    let x_param = |p: &SweepSummary| p.params.iter().find(|q| &q.key == x).cloned();
    let varies = |key: &ParamKey| varies(points, key);
    let scale = if metric.is_fraction() { 100.0 } else { 1.0 };
    let mut categories: Vec<String> = Vec::new();
    let mut lines: Vec<(String, Vec<Point>)> = Vec::new();
    for p in points {
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
            .filter(|q| &q.key != x && varies(&q.key))
            .map(|q| format!("{}={}", q.key.name(), shown_value(&q.value)))
            .collect();
        let label = if label.is_empty() {
            metric.label().to_string()
        } else {
            label.join(" ")
        };
        let Some(stats) = p.aggregate.get(&metric) else {
            continue;
        };
        let point = Point {
            x: x_value,
            y: stats.mean * scale,
            spread: (stats.n > 1).then_some((stats.min * scale, stats.max * scale)),
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
    (series, categories)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_sweep::{Metrics, SWEEP_SCHEMA_VERSION, SweepParam};

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
                        setup: None,
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

    /// The SVG's parts the figure rules are about, read back from the text.
    pub(crate) struct Parsed {
        /// Canvas width and height.
        pub(crate) canvas: (f64, f64),
        /// The plot area: the extent of the grid lines (x0, y0, x1, y1).
        pub(crate) plot: (f64, f64, f64, f64),
        /// Text elements: (x, y, text).
        pub(crate) texts: Vec<(f64, f64, String)>,
    }

    impl Parsed {
        pub(crate) fn of(svg: &str) -> Parsed {
            let attr = |tag: &str, name: &str| -> f64 {
                let at = tag
                    .find(&format!(" {name}=\""))
                    .unwrap_or_else(|| panic!("{name} in {tag}"));
                let rest = &tag[at + name.len() + 3..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            };
            let svg_tag = &svg[..svg.find('>').unwrap()];
            let canvas = (attr(svg_tag, "width"), attr(svg_tag, "height"));
            let mut plot = (
                f64::INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
            );
            for tag in svg.split('<').filter(|t| t.starts_with("line ")) {
                if tag.contains("#EEEEEE") || tag.contains("#D7D7D7") {
                    for (x, y) in [("x1", "y1"), ("x2", "y2")] {
                        let (x, y) = (attr(tag, x), attr(tag, y));
                        plot = (plot.0.min(x), plot.1.min(y), plot.2.max(x), plot.3.max(y));
                    }
                }
            }
            let mut texts = Vec::new();
            for part in svg.split("<text ").skip(1) {
                let tag = format!(" {}", &part[..part.find('>').unwrap()]);
                let tag = tag.as_str();
                let body = part[part.find('>').unwrap() + 1..part.find("</text>").unwrap()].trim();
                texts.push((attr(tag, "x"), attr(tag, "y"), body.to_string()));
            }
            Parsed {
                canvas,
                plot,
                texts,
            }
        }

        /// The plot area's share of the canvas.
        pub(crate) fn plot_share(&self) -> f64 {
            let (x0, y0, x1, y1) = self.plot;
            (x1 - x0) * (y1 - y0) / (self.canvas.0 * self.canvas.1)
        }

        /// Texts under the plot area and its axis labels: the legend.
        pub(crate) fn legend(&self) -> Vec<&str> {
            self.texts
                .iter()
                .filter(|t| t.1 > f64::from(crate::plot::SIZE.1))
                .map(|t| t.2.as_str())
                .collect()
        }

        /// The numbers of the y axis's tick labels (texts left of the plot area).
        pub(crate) fn y_ticks(&self) -> Vec<f64> {
            self.texts
                .iter()
                .filter(|t| t.0 < self.plot.0 && t.1 <= self.plot.3 + 5.0)
                .filter_map(|t| t.2.parse().ok())
                .collect()
        }
    }

    /// A test point: its params as (key, value, number), a metric and its value.
    type TestPoint<'a> = (Vec<(ParamKey, &'a str, Option<f64>)>, Metric, f64);

    /// One row per (point, seed): `params` as (key, value, number), the metric's value.
    fn sweep_rows(points: &[TestPoint<'_>], seeds: u64) -> Vec<SweepRow> {
        let mut out = Vec::new();
        for (point, (params, metric, v)) in points.iter().enumerate() {
            for seed in 1..=seeds {
                let mut m = Metrics::default();
                m.aggregate.insert(*metric, v * (1.0 + seed as f64 * 1e-3));
                out.push(SweepRow {
                    schema_version: SWEEP_SCHEMA_VERSION,
                    sweep: "0123abcd".into(),
                    run: out.len() as u64,
                    runs: points.len() as u64 * seeds,
                    point: point as u64,
                    params: params
                        .iter()
                        .map(|(key, value, number)| SweepParam {
                            key: key.clone(),
                            value: (*value).into(),
                            number: *number,
                        })
                        .collect(),
                    seed,
                    setup: Some(ticklab_sweep::SweepSetup {
                        machine: "xps13-7390".into(),
                        kernel: "6.3".into(),
                        hz: 1000,
                    }),
                    metrics: m,
                });
            }
        }
        out
    }

    /// HZ on x, three command lines of one workload; two of them give the same numbers.
    fn hz_rows(metric: Metric, values: [[f64; 3]; 3]) -> Vec<SweepRow> {
        let cmdlines = ["nohz_full=1", "nohz_full=1 rcu_nocbs=1", "skew_tick=1"];
        let mut points = Vec::new();
        for (c, cmdline) in cmdlines.iter().enumerate() {
            for (h, (hz, name)) in [(100.0, "100"), (250.0, "250"), (1000.0, "1000")]
                .iter()
                .enumerate()
            {
                points.push((
                    vec![
                        (ParamKey::Cmdline, *cmdline, None),
                        (ParamKey::Hz, *name, Some(*hz)),
                        (ParamKey::Workload, "idle", Some(0.0)),
                    ],
                    metric,
                    values[c][h],
                ));
            }
        }
        sweep_rows(&points, 2)
    }

    #[test]
    fn plot_area_fills_the_canvas() {
        let rows = hz_rows(
            Metric::IrqPerS,
            [
                [100.0, 250.0, 1000.0],
                [90.0, 200.0, 900.0],
                [5.0, 5.0, 5.0],
            ],
        );
        let f = figure(&rows, Metric::IrqPerS, &ParamKey::Hz).unwrap();
        let p = Parsed::of(&f.svg);
        assert!(
            p.plot_share() > 0.6,
            "plot area {:?} of {:?}",
            p.plot,
            p.canvas
        );
        // The legend sits under the plot area, not over it.
        assert!(p.plot.3 < f64::from(crate::plot::SIZE.1), "{:?}", p.plot);
        let f = figure(&self::rows(), Metric::IrqPerS, &ParamKey::Workload).unwrap();
        assert!(Parsed::of(&f.svg).plot_share() > 0.6);
    }

    #[test]
    fn legends_name_only_what_varies_and_titles_the_setup() {
        let rows = hz_rows(
            Metric::IrqPerS,
            [
                [100.0, 250.0, 1000.0],
                [90.0, 200.0, 900.0],
                [5.0, 5.0, 5.0],
            ],
        );
        let f = figure(&rows, Metric::IrqPerS, &ParamKey::Hz).unwrap();
        let p = Parsed::of(&f.svg);
        assert_eq!(
            p.legend(),
            [
                "cmdline=nohz_full=1",
                "cmdline=nohz_full=1 rcu_nocbs=1",
                "cmdline=skew_tick=1"
            ]
        );
        assert_eq!(
            f.title,
            "local timer irq/s against hz — xps13-7390, kernel 6.3, HZ=1000, workload=idle"
        );
        assert!(!f.svg.contains("0123abcd"), "no sweep hash in the figure");
    }

    #[test]
    fn fractions_are_percent_on_an_axis_bounded_by_the_data_and_100() {
        let rows = hz_rows(
            Metric::TickStoppedFraction,
            [[0.95, 0.97, 0.999], [0.5, 0.6, 0.7], [0.2, 0.25, 0.3]],
        );
        let f = figure(&rows, Metric::TickStoppedFraction, &ParamKey::Hz).unwrap();
        let ticks = Parsed::of(&f.svg).y_ticks();
        let top = ticks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!((90.0..=100.0).contains(&top), "{ticks:?}");
        assert!(
            f.svg.contains("tick stopped (% of CPU time)"),
            "the axis says percent"
        );
        // Small fractions: the axis ends near the data, not at 100.
        let rows = hz_rows(
            Metric::TickStoppedFraction,
            [
                [0.001, 0.002, 0.003],
                [0.001, 0.001, 0.001],
                [0.0005, 0.0007, 0.0009],
            ],
        );
        let f = figure(&rows, Metric::TickStoppedFraction, &ParamKey::Hz).unwrap();
        let ticks = Parsed::of(&f.svg).y_ticks();
        let top = ticks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(top <= 0.4, "{ticks:?}");
    }

    #[test]
    fn coinciding_series_get_their_own_dashes_and_a_note() {
        let rows = hz_rows(
            Metric::IrqPerS,
            [
                [100.0, 250.0, 1000.0],
                [100.0, 250.0, 1000.0],
                [5.0, 5.0, 5.0],
            ],
        );
        let f = figure(&rows, Metric::IrqPerS, &ParamKey::Hz).unwrap();
        let legend = Parsed::of(&f.svg).legend().join("\n");
        assert!(
            legend.contains(
                "2 series coincide: cmdline=nohz_full=1; cmdline=nohz_full=1 rcu_nocbs=1"
            ),
            "{legend}"
        );
        // The second of the pair is dashed: drawn as many short lines, not one polyline.
        let orange = f.svg.matches("stroke=\"#D55E00\"").count();
        assert!(orange > 10, "{orange} orange strokes");
        insta::assert_snapshot!(f.svg);
    }
}
