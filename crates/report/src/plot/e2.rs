//! E2's figures: the jitter distribution of each frame group, one line per configuration
//! ((a)–(d)), from the typed [`Results`] (each group's `jitter_histogram`).
//!
//! One figure per group (`e2-A`, `e2-B`, `e2-C`). x is the upper edge of a bucket of
//! [`JITTER_BUCKET_EDGES_NS`] in µs (log scale: the buckets are 1-2-5 steps), y the frames
//! of all the group's workers that fell in it (log scale, so that the one frame in the tail
//! shows beside the million in the body). Empty buckets cannot sit on a log axis: the line
//! breaks there. The open last bucket is drawn at twice its lower edge.

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::experiment::e2::{GROUPS, Results, config_name};
use ticklab_schema::report::JITTER_BUCKET_EDGES_NS;

/// x of bucket `i`: its upper edge in µs (twice the lower edge for the open last one).
fn bucket_x(i: usize) -> f64 {
    match JITTER_BUCKET_EDGES_NS.get(i + 1) {
        Some(&e) => e as f64 / 1e3,
        None => 2.0 * JITTER_BUCKET_EDGES_NS[i] as f64 / 1e3,
    }
}

/// The E2 figures, one per frame group the run has, in [`GROUPS`] order.
pub fn figures(r: &Results) -> Result<Vec<Figure>, PlotError> {
    let mut out = Vec::new();
    for (name, hz, _, first, last) in GROUPS {
        let series: Vec<Series> = r
            .outcomes
            .iter()
            .enumerate()
            .filter_map(|(color, o)| {
                let g = o.groups().into_iter().find(|g| g.group == name)?;
                let h = g.jitter_histogram.as_ref()?;
                Some(Series {
                    label: format!("{} {}", config_name(o.config), o.config.describe()),
                    color,
                    stroke: Stroke::Solid,
                    points: h
                        .iter()
                        .enumerate()
                        .map(|(i, b)| Point {
                            x: bucket_x(i),
                            y: b.frames as f64,
                            spread: None,
                        })
                        .collect(),
                })
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            title: format!("E2 group {name} ({hz} Hz, CPUs {first}-{last}): frame jitter"),
            x_label: "jitter up to (µs)".into(),
            y_label: "frames (all workers of the group)".into(),
            x_axis: Axis::Log10,
            y_axis: Axis::Log10,
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
    fn bucket_edges_on_x() {
        assert_eq!(bucket_x(0), 0.1);
        assert_eq!(bucket_x(JITTER_BUCKET_EDGES_NS.len() - 1), 20_000.0);
    }
}
