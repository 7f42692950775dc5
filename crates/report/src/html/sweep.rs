//! The sweep page ([`sweep_html`]): the grid, one table row per point with each metric's
//! mean and seed range, and one figure per metric against the x parameter; and the defaults
//! `ticklab report` picks for it ([`varying_metrics`], [`default_x`]).

use super::page::{Cell, definitions, figures_with_tables, page, table};
use crate::format::fixed;
use crate::plot::{self, PlotError};
use ticklab_sweep::{Metric, ParamKey, SweepRow, SweepSummary};

/// The metrics a sweep page shows by default: those every point has, and that differ
/// between points (a constant says nothing on a plot).
pub fn varying_metrics(points: &[SweepSummary]) -> Vec<Metric> {
    Metric::ALL
        .into_iter()
        .filter(|m| {
            let means: Vec<f64> = points
                .iter()
                .filter_map(|p| p.aggregate.get(m).map(|s| s.mean))
                .collect();
            means.len() == points.len()
                && means
                    .iter()
                    .any(|&v| (v - means[0]).abs() > 1e-12 * v.abs().max(1.0))
        })
        .collect()
}

/// The x parameter a sweep page plots against by default: the first swept parameter with
/// several values that has a number at every point, else the first with several values.
pub fn default_x(points: &[SweepSummary]) -> Option<ParamKey> {
    let first = points.first()?;
    let values = |k: &ParamKey| {
        let mut v: Vec<&str> = points
            .iter()
            .filter_map(|p| {
                p.params
                    .iter()
                    .find(|q| &q.key == k)
                    .map(|q| q.value.as_str())
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let several: Vec<&ParamKey> = first
        .params
        .iter()
        .map(|p| &p.key)
        .filter(|k| values(k) > 1)
        .collect();
    several
        .iter()
        .find(|k| {
            points
                .iter()
                .all(|p| p.params.iter().any(|q| &q.key == **k && q.number.is_some()))
        })
        .or(several.first())
        .map(|k| (*k).clone())
}

/// The sweep page: the grid, one table row per point (mean and seed range of each metric)
/// and one figure per metric against `x`.
pub fn sweep_html(
    rows: &[SweepRow],
    metrics: &[Metric],
    x: &ParamKey,
) -> Result<String, PlotError> {
    let points = SweepSummary::of_rows(rows);
    let Some(first) = points.first() else {
        return Err(PlotError("the sweep has no rows".into()));
    };
    let keys: Vec<ParamKey> = first.params.iter().map(|p| p.key.clone()).collect();
    let mut seeds: Vec<u64> = rows.iter().map(|r| r.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let scenario = definitions(&[
        ("sweep", first.sweep.clone()),
        (
            "parameters",
            keys.iter()
                .map(ParamKey::name)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "points × seeds",
            format!(
                "{} points, seeds {:?}, {} runs",
                points.len(),
                seeds,
                rows.len()
            ),
        ),
        ("plotted against", x.name()),
    ]);
    let order = point_order(&points, &keys, x);
    let columns = shown_columns(&points, &keys, x);
    let figs = metrics
        .iter()
        .map(|&m| plot::sweep::figure(rows, m, x))
        .collect::<Result<Vec<_>, _>>()?;
    let tables: Vec<String> = metrics
        .iter()
        .map(|&m| metric_table(&order, &columns, m))
        .collect();
    let on = plot::sweep::setup_words(&points);
    let title = if on.is_empty() {
        format!("Sweep {}", first.sweep)
    } else {
        format!("Sweep on {}", on.join(", "))
    };
    Ok(page(
        &title,
        "Every point of the grid over its seeds: each figure, then its numbers — the mean, the \
         smallest and largest seed's value (the error bars) and the 95 % interval of the mean, \
         in the order of the parameter on the x axis.",
        &[
            ("Scenario", scenario),
            (
                "Figures and their numbers",
                figures_with_tables(&figs, &tables),
            ),
        ],
    ))
}

/// The sweep table's rows: in the order of the x parameter (its number, else its first
/// appearance), then of the other parameters' first appearance, the order the figure's lines
/// run.
fn point_order<'a>(
    points: &'a [SweepSummary],
    keys: &[ParamKey],
    x: &ParamKey,
) -> Vec<&'a SweepSummary> {
    let position = |p: &SweepSummary, k: &ParamKey| -> (f64, usize) {
        let q = p.params.iter().find(|q| &q.key == k);
        let first_seen = q.map_or(0, |q| {
            points
                .iter()
                .position(|o| o.params.iter().any(|o| &o.key == k && o.value == q.value))
                .unwrap_or(0)
        });
        (q.and_then(|q| q.number).unwrap_or(0.0), first_seen)
    };
    let mut order: Vec<&SweepSummary> = points.iter().collect();
    let others: Vec<&ParamKey> = keys.iter().filter(|k| *k != x).collect();
    order.sort_by(|a, b| {
        let key = |p: &SweepSummary| -> Vec<(f64, usize)> {
            std::iter::once(position(p, x))
                .chain(others.iter().map(|k| position(p, k)))
                .collect()
        };
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    order
}

/// The sweep table's parameter columns: the x parameter, then those that vary; one-valued
/// ones are said in the titles.
fn shown_columns<'a>(
    points: &[SweepSummary],
    keys: &'a [ParamKey],
    x: &'a ParamKey,
) -> Vec<&'a ParamKey> {
    let Some(first) = points.first() else {
        return vec![x];
    };
    let varies = |k: &ParamKey| {
        fn value<'a>(p: &'a SweepSummary, k: &ParamKey) -> Option<&'a str> {
            p.params
                .iter()
                .find(|q| &q.key == k)
                .map(|q| q.value.as_str())
        }
        points.iter().any(|p| value(p, k) != value(first, k))
    };
    let mut columns: Vec<&ParamKey> = vec![x];
    columns.extend(keys.iter().filter(|k| *k != x && varies(k)));
    columns
}

/// One metric's table: a row per point with its parameter columns, the seed count, the
/// mean, the seeds' range and the 95 % interval of the mean.
fn metric_table(order: &[&SweepSummary], columns: &[&ParamKey], m: Metric) -> String {
    let values: Vec<f64> = order
        .iter()
        .filter_map(|p| p.aggregate.get(&m))
        .flat_map(|s| [s.mean, s.min, s.max])
        .collect();
    let d = crate::format::column_decimals(values);
    let num = |v: f64| fixed(v, d);
    let mut head: Vec<String> = columns.iter().map(|k| k.name()).collect();
    head.extend(
        [
            "seeds",
            &format!("{} (mean)", m.label()),
            "min – max",
            "95 % interval",
        ]
        .map(String::from),
    );
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let body: Vec<Vec<Cell>> = order
        .iter()
        .map(|p| {
            let mut row: Vec<Cell> = columns
                .iter()
                .map(|k| {
                    Cell::Text(p.params.iter().find(|q| &q.key == *k).map_or_else(
                        || "-".into(),
                        |q| plot::sweep::shown_value(&q.value).to_string(),
                    ))
                })
                .collect();
            row.push(Cell::Num(p.seeds.len().to_string()));
            match p.aggregate.get(&m) {
                Some(s) => {
                    row.push(Cell::Num(num(s.mean)));
                    row.push(Cell::Num(if s.n > 1 {
                        format!("{} – {}", num(s.min), num(s.max))
                    } else {
                        "-".into()
                    }));
                    row.push(Cell::Num(match (s.ci95_low, s.ci95_high) {
                        (Some(lo), Some(hi)) => format!("{} – {}", num(lo), num(hi)),
                        _ => "-".into(),
                    }));
                }
                None => row.extend((0..3).map(|_| Cell::Num("-".into()))),
            }
            row
        })
        .collect();
    table(&head, &body)
}
