//! E1's figures: local timer interrupts per second and package watts against the load, for
//! `nohz_full` and `nohz_full_aggressive`, the twin's rows (solid) beside the published ones
//! (dashed, same colour), from the typed [`Results`].
//!
//! x is the number of hogs (0 = idle); a load missing from the run is left out of the twin's
//! lines, the published lines always show the RFC's five loads
//! ([`ticklab_schema::experiment::e1::PUBLISHED`]).

use super::{Axis, Chart, Figure, PlotError, Point, Series, Stroke};
use ticklab_schema::experiment::e1::{LOADS, Mode, Results, published};

/// Which quantity a figure plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantity {
    IrqPerS,
    Watts,
}

fn chart(r: &Results, q: Quantity) -> Chart {
    let mut series = Vec::new();
    for (color, mode) in Mode::ALL.into_iter().enumerate() {
        let twin = LOADS
            .iter()
            .filter_map(|&hogs| {
                let row = r.row(mode, hogs)?;
                Some(Point {
                    x: f64::from(hogs),
                    y: match q {
                        Quantity::IrqPerS => row.irq_per_s,
                        Quantity::Watts => row.watts,
                    },
                    spread: None,
                })
            })
            .collect();
        let publ = LOADS
            .iter()
            .map(|&hogs| {
                let (irq, watts) = published(mode, hogs);
                Point {
                    x: f64::from(hogs),
                    y: match q {
                        Quantity::IrqPerS => irq,
                        Quantity::Watts => watts,
                    },
                    spread: None,
                }
            })
            .collect();
        series.push(Series {
            label: format!("{} (twin)", mode.name()),
            color,
            stroke: Stroke::Solid,
            points: twin,
        });
        series.push(Series {
            label: format!("{} (published)", mode.name()),
            color,
            stroke: Stroke::Dashed,
            points: publ,
        });
    }
    let (title, y_label) = match q {
        Quantity::IrqPerS => (
            "E1: local timer interrupts against load (XPS 13, HZ=1000)",
            "local timer irq/s (all CPUs)",
        ),
        Quantity::Watts => (
            "E1: package power against load (XPS 13, HZ=1000)",
            "package power (W)",
        ),
    };
    Chart {
        title: title.into(),
        x_label: "hogs (0 = idle)".into(),
        y_label: y_label.into(),
        x_axis: Axis::Linear,
        y_axis: Axis::Linear,
        y_max: None,
        x_categories: Vec::new(),
        series,
    }
}

/// The two E1 figures: `e1-irq` (irq/s) and `e1-watts`.
pub fn figures(r: &Results) -> Result<Vec<Figure>, PlotError> {
    Ok(vec![
        Figure::draw("e1-irq", &chart(r, Quantity::IrqPerS))?,
        Figure::draw("e1-watts", &chart(r, Quantity::Watts))?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e1_figures_snapshot() {
        let figs = figures(&crate::e1::tests::results()).unwrap();
        assert_eq!(figs.len(), 2);
        for f in &figs {
            assert!(f.svg.starts_with("<svg"), "{}", f.id);
            // Four legend entries: both modes, twin and published.
            for label in ["nohz_full (twin)", "aggressive (published)"] {
                assert!(f.svg.contains(label), "{}: {label}", f.id);
            }
            insta::assert_snapshot!(f.id.clone(), f.svg);
        }
    }
}
