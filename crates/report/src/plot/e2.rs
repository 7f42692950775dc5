//! E2's figures: the jitter distribution of each frame group, one line per configuration
//! ((a)–(d)), from the typed [`Results`] (each group's `jitter_histogram`).
//!
//! One figure per group (`e2-A`, `e2-B`, `e2-C`), in one of two [`Style`]s:
//!
//! * [`Style::Exceedance`] (the default): the share of the group's frames whose jitter
//!   reached at least x µs (1 − CDF), at the upper edge of every bucket of
//!   [`JITTER_BUCKET_EDGES_NS`], on log axes, so that the one frame in a million in the tail
//!   shows beside the body and two configurations compare at any quantile. A share of 0 (no
//!   frame that far out) cannot sit on a log axis: it is drawn on the axis floor, half a frame
//!   of the largest group below the smallest share there is;
//! * [`Style::Bars`]: cyclictest-style, frames per bucket as a bar outline (each bucket a flat
//!   step from its lower to its upper edge), empty buckets on the same floor.
//!
//! The open last bucket ends at twice its lower edge.

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::experiment::e2::{GROUPS, Results, config_name};
use ticklab_schema::report::{HistogramBucket, JITTER_BUCKET_EDGES_NS};

/// How the distribution is drawn (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// Share of frames at or above x (1 − CDF), log y.
    #[default]
    Exceedance,
    /// Frames per bucket, cyclictest-style bars.
    Bars,
}

/// x of bucket `i`: its upper edge in µs (twice the lower edge for the open last one).
fn bucket_x(i: usize) -> f64 {
    match JITTER_BUCKET_EDGES_NS.get(i + 1) {
        Some(&e) => e as f64 / 1e3,
        None => 2.0 * JITTER_BUCKET_EDGES_NS[i] as f64 / 1e3,
    }
}

/// Lower edge of bucket `i` in µs on a log axis (the first bucket starts at 0: drawn from
/// half its upper edge).
fn bucket_low(i: usize) -> f64 {
    if i == 0 {
        bucket_x(0) / 2.0
    } else {
        JITTER_BUCKET_EDGES_NS[i] as f64 / 1e3
    }
}

/// Share of frames at or above the upper edge of each bucket but the open last one.
pub fn exceedance(h: &[HistogramBucket]) -> Vec<(f64, f64)> {
    let total: u64 = h.iter().map(|b| b.frames).sum();
    let mut above = total;
    let mut out = Vec::new();
    for (i, b) in h.iter().enumerate().take(h.len().saturating_sub(1)) {
        above -= b.frames;
        out.push((bucket_x(i), above as f64 / total.max(1) as f64));
    }
    debug_assert!(
        out.windows(2).all(|w| w[0].1 >= w[1].1),
        "1 - CDF never rises"
    );
    out
}

/// The E2 figures, one per frame group the run has, in [`GROUPS`] order, as exceedance
/// curves.
pub fn figures(r: &Results) -> Result<Vec<Figure>, PlotError> {
    figures_as(r, Style::Exceedance)
}

/// The E2 figures in the given style.
pub fn figures_as(r: &Results, style: Style) -> Result<Vec<Figure>, PlotError> {
    let mut out = Vec::new();
    for (name, hz, _, first, last) in GROUPS {
        let hists: Vec<(usize, String, &Vec<HistogramBucket>)> = r
            .outcomes
            .iter()
            .enumerate()
            .filter_map(|(color, o)| {
                let g = o.groups().into_iter().find(|g| g.group == name)?;
                let h = g.jitter_histogram.as_ref()?;
                let label = format!("{} {}", config_name(o.config), o.config.describe());
                Some((color, label, h))
            })
            .collect();
        if hists.is_empty() {
            continue;
        }
        let largest = hists
            .iter()
            .map(|(_, _, h)| h.iter().map(|b| b.frames).sum::<u64>())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let point = |x: f64, y: f64| Point { x, y, spread: None };
        let series: Vec<Series> = hists
            .iter()
            .map(|(color, label, h)| {
                let points = match style {
                    Style::Exceedance => {
                        let floor = 0.5 / largest;
                        exceedance(h)
                            .into_iter()
                            .map(|(x, share)| point(x, if share > 0.0 { share } else { floor }))
                            .collect()
                    }
                    Style::Bars => h
                        .iter()
                        .enumerate()
                        .flat_map(|(i, b)| {
                            let y = if b.frames > 0 { b.frames as f64 } else { 0.5 };
                            [point(bucket_low(i), y), point(bucket_x(i), y)]
                        })
                        .collect(),
                };
                Series {
                    label: label.clone(),
                    color: *color,
                    stroke: Stroke::Solid,
                    points,
                }
            })
            .collect();
        let (what, y_label) = match style {
            Style::Exceedance => (
                "share of frames with at least x of jitter",
                "share of frames ≥ x (1 − CDF; floor: none)",
            ),
            Style::Bars => (
                "frames per jitter bucket",
                "frames (all workers; floor: none)",
            ),
        };
        let chart = Chart {
            title: format!(
                "E2 server-2012-64, 3.0-rt HZ=1000, group {name} ({hz} Hz, CPUs {first}-{last}): {what}"
            ),
            x_label: "frame jitter x (µs)".into(),
            y_label: y_label.into(),
            x_axis: Axis::Log10,
            y_axis: Axis::Log10,
            y_max: None,
            x_categories: Vec::new(),
            series,
        };
        out.push(Figure::draw(format!("e2-{name}"), &chart)?);
    }
    if out.is_empty() {
        return Err(PlotError(
            "E2: the results carry no jitter histogram (written by an older build?)".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::report::{WorkloadResult, jitter_histogram};

    /// The E2 test results with a jitter histogram in every group: a body around 2-5 µs and
    /// a tail that is longer without skew (shared with the HTML tests).
    pub(crate) fn results_with_histograms() -> ticklab_schema::experiment::e2::Results {
        let mut r = crate::e2::tests::results();
        for (k, o) in r.outcomes.iter_mut().enumerate() {
            for w in &mut o.report.workloads {
                if let WorkloadResult::Frames(g) = w {
                    let tail = if k == 0 { 40_000 } else { 9_000 };
                    g.jitter_histogram = Some(jitter_histogram([
                        (800, 10),
                        (1_500, 3_000),
                        (2_500, 100_000),
                        (4_000, 20_000),
                        (7_000, 400),
                        (tail / 2, 30),
                        (tail, 3),
                    ]));
                }
            }
        }
        r
    }

    #[test]
    fn e2_figures_snapshot() {
        assert!(
            figures(&crate::e2::tests::results()).is_err(),
            "no histogram, no figure"
        );
        let r = results_with_histograms();
        let figs = figures(&r).unwrap();
        let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["e2-A", "e2-B"]);
        assert!(figs[0].svg.contains("(a) no skew"));
        insta::assert_snapshot!(figs[0].svg.clone());
    }

    #[test]
    fn exceedance_falls_from_one_through_every_bucket() {
        let r = results_with_histograms();
        let g = r.outcomes[0].groups()[0].jitter_histogram.clone().unwrap();
        let e = exceedance(&g);
        assert_eq!(
            e.len(),
            JITTER_BUCKET_EDGES_NS.len() - 1,
            "every bucket but the open one"
        );
        let total: u64 = g.iter().map(|b| b.frames).sum();
        // Above 1 µs: all but the 10 frames at 0.8 µs.
        let at_1us = e.iter().find(|p| p.0 == 1.0).unwrap().1;
        assert_eq!(at_1us, (total - 10) as f64 / total as f64);
        assert_eq!(e.last().unwrap().1, 0.0);
        let bars = figures_as(&r, Style::Bars).unwrap();
        assert!(bars[0].svg.contains("frames per jitter bucket"));
    }

    #[test]
    fn bucket_edges_on_x() {
        assert_eq!(bucket_x(0), 0.1);
        assert_eq!(bucket_x(JITTER_BUCKET_EDGES_NS.len() - 1), 20_000.0);
    }
}
