//! E4's figure: ns per getpid() call in each kernel configuration (case 1 to 4), one line
//! per (server, kernel, pinning), from the typed [`Results`]. Every value is the twin's: the
//! evaluation published no outcome (docs/experiments.md E4).

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::experiment::e4::{Case, Results};

/// The E4 figure `e4-cases`.
pub fn figures(r: &Results) -> Result<Vec<Figure>, PlotError> {
    let mut series: Vec<Series> = Vec::new();
    for row in &r.rows {
        let label = format!(
            "{} {} {}",
            row.machine.name(),
            row.kernel,
            if row.pinned.is_some() {
                "pinned"
            } else {
                "unpinned"
            }
        );
        let point = Point {
            x: f64::from(row.case.saturating_sub(1)),
            y: row.ns_per_call,
            spread: None,
        };
        match series.iter_mut().find(|s| s.label == label) {
            Some(s) => s.points.push(point),
            None => {
                let color = series.len();
                series.push(Series {
                    label,
                    color,
                    stroke: if row.pinned.is_some() {
                        Stroke::Solid
                    } else {
                        Stroke::Dashed
                    },
                    points: vec![point],
                });
            }
        }
    }
    let chart = Chart {
        title: format!(
            "E4: getpid() cost per kernel configuration (twin, HZ={})",
            r.hz
        ),
        x_label: "case".into(),
        y_label: "ns per call".into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        y_max: None,
        x_categories: Case::ALL
            .iter()
            .map(|c| {
                match c {
                    Case::NohzIdle => "1 NO_HZ_IDLE",
                    Case::FullBuiltIn => "2 NO_HZ_FULL built in",
                    Case::FullActive => "3 nohz_full= CPU",
                    Case::FullHousekeeping => "4 housekeeping CPU",
                }
                .to_string()
            })
            .collect(),
        series,
    };
    Ok(vec![Figure::draw("e4-cases", &chart)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4_figure_has_one_line_per_machine_and_pinning() {
        let figs = figures(&crate::e4::tests::results()).unwrap();
        assert_eq!(figs[0].id, "e4-cases");
        assert!(figs[0].svg.contains("intel 5.15 pinned"), "{}", figs[0].svg);
    }
}
