//! E3's figure: ns per switch (as `timectxsw` counts them) against the polling threshold,
//! guest polling (the 2017 proposal) and host `halt_poll_ns`, the twin (solid) beside the
//! published figures (dashed), with the HLT baseline as a flat line, from the typed
//! [`Results`].
//!
//! x is the threshold in µs (log scale: 10, 20, 30, 500); the other configurations
//! (`idle=poll`, cpuidle-haltpoll, ...) have no threshold on this axis and stay in the
//! table.

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::experiment::e3::{Config, Results};

/// The E3 figure `e3-threshold`.
pub fn figures(r: &Results) -> Result<Vec<Figure>, PlotError> {
    let xs: Vec<f64> = r
        .rows
        .iter()
        .filter_map(|row| threshold(row.config))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let mut series = vec![
        Series {
            label: "guest poll (twin)".into(),
            color: 0,
            stroke: Stroke::Solid,
            points: poll_points(r, true, false),
        },
        Series {
            label: "guest poll (published)".into(),
            color: 0,
            stroke: Stroke::Dashed,
            points: poll_points(r, true, true),
        },
        Series {
            label: "host halt_poll_ns (twin)".into(),
            color: 1,
            stroke: Stroke::Solid,
            points: poll_points(r, false, false),
        },
        Series {
            label: "host halt_poll_ns (published)".into(),
            color: 1,
            stroke: Stroke::Dashed,
            points: poll_points(r, false, true),
        },
    ];
    series.extend(hlt_baseline(r, lo, hi));
    let chart = Chart {
        title: "E3: futex ping-pong in a KVM guest against the polling threshold".into(),
        x_label: "poll threshold (µs)".into(),
        y_label: "ns per switch (timectxsw: a quarter round trip)".into(),
        x_axis: Axis::Log10,
        y_axis: Axis::Linear,
        y_max: None,
        x_categories: Vec::new(),
        series,
    };
    Ok(vec![Figure::draw("e3-threshold", &chart)?])
}

/// A configuration's polling threshold in µs, `None` for those without one.
fn threshold(c: Config) -> Option<f64> {
    match c {
        Config::GuestPoll { ns } | Config::HostPoll { ns } => Some(ns as f64 / 1e3),
        _ => None,
    }
}

/// The guest-poll (`guest`) or host halt-poll rows as points, the twin's figure or the
/// published one (rows without a published figure left out).
fn poll_points(r: &Results, guest: bool, published: bool) -> Vec<Point> {
    r.rows
        .iter()
        .filter(|row| {
            matches!(
                (guest, row.config),
                (true, Config::GuestPoll { .. }) | (false, Config::HostPoll { .. })
            )
        })
        .filter_map(|row| {
            let y = if published {
                row.published_ns?
            } else {
                row.ns_per_switch
            };
            Some(Point {
                x: threshold(row.config)?,
                y,
                spread: None,
            })
        })
        .collect()
}

/// The HLT row as flat lines across the threshold axis (`lo` to `hi`): the twin's, and the
/// published one when there is one.
fn hlt_baseline(r: &Results, lo: f64, hi: f64) -> Vec<Series> {
    let mut series = Vec::new();
    if let Some(hlt) = r.rows.iter().find(|row| row.config == Config::Hlt) {
        let flat = |y: f64| {
            vec![
                Point {
                    x: lo,
                    y,
                    spread: None,
                },
                Point {
                    x: hi,
                    y,
                    spread: None,
                },
            ]
        };
        series.push(Series {
            label: "HLT baseline (twin)".into(),
            color: 6,
            stroke: Stroke::Solid,
            points: flat(hlt.ns_per_switch),
        });
        if let Some(p) = hlt.published_ns {
            series.push(Series {
                label: "HLT baseline (published)".into(),
                color: 6,
                stroke: Stroke::Dashed,
                points: flat(p),
            });
        }
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e3_figure_snapshot() {
        let figs = figures(&crate::e3::tests::results()).unwrap();
        assert_eq!(figs[0].id, "e3-threshold");
        insta::assert_snapshot!(figs[0].svg.clone());
    }
}
