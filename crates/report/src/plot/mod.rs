//! Figures as SVG: line charts drawn with `plotters`' SVG backend only.
//!
//! A [`Chart`] is plain data — title, axis labels, [`Series`] of [`Point`]s with an optional
//! spread (the error bar) — and [`svg`] draws it. The figures of the experiments and sweeps
//! build charts from their typed results: [`e1`] (irq/s and watts against load, twin beside
//! published), [`e2`] (the jitter distribution of each frame group, one line per
//! configuration), [`e3`] (ns per switch against the polling threshold), [`e4`] (ns per
//! call per kernel configuration) and [`sweep`](mod@sweep) (any metric against any swept parameter).
//!
//! No font is read: plotters' SVG backend writes text as `<text>` elements with a generic
//! `sans-serif` family and the viewer lays it out, so there is no system font or C library
//! behind a figure, and the same chart gives the same bytes on every machine (snapshot
//! tests hold that).
//!
//! Rules of the drawing:
//!
//! * a linear value axis starts at 0 when every value is positive (rates and watts read
//!   against zero), otherwise it spans the values; both ends get 5 % of room;
//! * a [`Axis::Log10`] axis plots `log10(v)` and labels its ticks with `v`; values that are
//!   not positive cannot be shown there and break the line where they fall;
//! * categorical x values (command lines, machines) sit at 0, 1, 2, … and their ticks carry
//!   the category names;
//! * non-finite values are left out; a chart with nothing left is an error
//!   ([`PlotError`]), never an empty picture;
//! * the legend goes under the plot, never over it: the plot area keeps the same share of
//!   the canvas whatever the legend holds, and the canvas grows by the legend's lines;
//! * series colours come from a fixed colour-blind-safe palette (Okabe and Ito), in series
//!   order, and every series has its own marker shape (circle, square, triangle, cross);
//!   [`Stroke::Dashed`] marks published figures;
//! * series that coincide (same points, within half a percent of the axes) would hide one
//!   another: each gets its own dash pattern, and the legend ends with a note
//!   `n series coincide: ...` naming them ([`coinciding`]);
//! * [`Chart::y_max`] bounds the value axis (100 for a percentage): the axis runs to the
//!   data with 5 % of room, never past the bound.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt;

pub mod e1;
pub mod e2;
pub mod e3;
pub mod e4;
pub mod sweep;

/// Width and height of every figure without its legend, pixels (the legend's lines add
/// [`LEGEND_LINE_PX`] each to the height).
pub const SIZE: (u32, u32) = (760, 440);

/// Height of one legend line, pixels.
pub const LEGEND_LINE_PX: u32 = 18;

/// One plotted point, with its spread (low, high) when several seeds gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Position on the x axis (the category index for categorical x).
    pub x: f64,
    /// Value.
    pub y: f64,
    /// Error bar: lowest and highest value (or an interval) around `y`.
    pub spread: Option<(f64, f64)>,
}

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line (what the twin or the sweep computed).
    Solid,
    /// A dashed line (published figures).
    Dashed,
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Index into the palette (series of one configuration share a colour).
    pub color: usize,
    /// Solid or dashed.
    pub stroke: Stroke,
    /// Points in x order.
    pub points: Vec<Point>,
}

/// Scale of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Linear.
    Linear,
    /// Logarithmic (base 10).
    Log10,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Caption above the plot.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label beside the y axis.
    pub y_label: String,
    /// Scale of x (ignored for categorical x).
    pub x_axis: Axis,
    /// Scale of y.
    pub y_axis: Axis,
    /// Upper bound of the value axis (100 for a percentage), `None` for none.
    pub y_max: Option<f64>,
    /// Names of the categories when x is categorical (points sit at their index); empty
    /// for a numeric x.
    pub x_categories: Vec<String>,
    /// The lines.
    pub series: Vec<Series>,
}

/// A drawn figure: an id (for file names and HTML anchors), a title and the SVG text.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Short id, e.g. `e1-irq` (file name without `.svg`).
    pub id: String,
    /// The chart's title.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

impl Figure {
    /// Draws `chart` as the figure `id`.
    pub fn draw(id: impl Into<String>, chart: &Chart) -> Result<Figure, PlotError> {
        Ok(Figure {
            id: id.into(),
            title: chart.title.clone(),
            svg: svg(chart)?,
        })
    }
}

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

/// The colour of palette entry `i` (Okabe–Ito, without yellow, which is unreadable on
/// white), cycling.
pub fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 7] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
    ];
    PALETTE[i % PALETTE.len()]
}

/// `v` on `axis`: itself, or `log10(v)` (`None` where it cannot be shown).
fn place(v: f64, axis: Axis) -> Option<f64> {
    match axis {
        _ if !v.is_finite() => None,
        Axis::Linear => Some(v),
        Axis::Log10 if v > 0.0 => Some(v.log10()),
        Axis::Log10 => None,
    }
}

/// A tick label: at most three significant digits, no trailing zeros (`1000`, `2.5`,
/// `0.001`, `31.6`).
pub fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return crate::format::fixed(v, 0);
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).max(0) as usize;
    let s = crate::format::fixed(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The segments of a series as placed on the axes: consecutive points that can be shown,
/// broken where one cannot. Each point is `(x, y, spread)`.
type Segment = Vec<(f64, f64, Option<(f64, f64)>)>;

fn segments(s: &Series, x_axis: Axis, y_axis: Axis) -> Vec<Segment> {
    let mut out: Vec<Segment> = vec![Vec::new()];
    for p in &s.points {
        match (place(p.x, x_axis), place(p.y, y_axis)) {
            (Some(x), Some(y)) => {
                let spread = p
                    .spread
                    .and_then(|(lo, hi)| Some((place(lo, y_axis)?, place(hi, y_axis)?)));
                if let Some(seg) = out.last_mut() {
                    seg.push((x, y, spread));
                }
            }
            _ => out.push(Vec::new()),
        }
    }
    out.retain(|seg| !seg.is_empty());
    out
}

/// `lo..hi` with 5 % of room at each end (one unit around a single value); from 0 when
/// `from_zero` and every value is positive.
fn span(values: impl Iterator<Item = f64>, from_zero: bool) -> Option<(f64, f64)> {
    let (mut lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    if from_zero && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        return Some((lo - 1.0, hi + 1.0));
    }
    let pad = 0.05 * (hi - lo);
    Some((
        if from_zero && lo == 0.0 {
            0.0
        } else {
            lo - pad
        },
        hi + pad,
    ))
}

/// Groups of series that coincide: series with the same number of shown points, each within
/// half a percent of the plotted ranges of the other's. Each group is listed once, by series
/// index, in series order; series that coincide with none are in no group.
pub fn coinciding(
    segs: &[Vec<Segment>],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Vec<Vec<usize>> {
    let (dx, dy) = (0.005 * (x1 - x0).abs(), 0.005 * (y1 - y0).abs());
    let same = |a: &[Segment], b: &[Segment]| {
        let (pa, pb): (Vec<_>, Vec<_>) =
            (a.iter().flatten().collect(), b.iter().flatten().collect());
        !pa.is_empty()
            && pa.len() == pb.len()
            && pa
                .iter()
                .zip(&pb)
                .all(|(p, q)| (p.0 - q.0).abs() <= dx && (p.1 - q.1).abs() <= dy)
    };
    let mut group_of: Vec<Option<usize>> = vec![None; segs.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..segs.len() {
        if group_of[i].is_some() {
            continue;
        }
        let members: Vec<usize> = (i..segs.len())
            .filter(|&j| group_of[j].is_none() && (j == i || same(&segs[i], &segs[j])))
            .collect();
        if members.len() > 1 {
            for &j in &members {
                group_of[j] = Some(groups.len());
            }
            groups.push(members);
        }
    }
    groups
}

/// How one series is drawn: its line (dash pattern) and marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Look {
    /// `None` solid, else (dash, gap) in pixels.
    dash: Option<(u32, u32)>,
    /// Marker shape, 0 circle, 1 square, 2 triangle, 3 cross.
    marker: usize,
    /// Hollow marker (published figures).
    hollow: bool,
}

/// Dash patterns of the members of a group of coinciding series, in member order.
const COINCIDE_DASHES: [Option<(u32, u32)>; 4] = [None, Some((10, 5)), Some((3, 4)), Some((16, 4))];

fn looks(chart: &Chart, groups: &[Vec<usize>]) -> Vec<Look> {
    chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let base = match s.stroke {
                Stroke::Solid => None,
                Stroke::Dashed => Some((7, 5)),
            };
            let dash = groups
                .iter()
                .find_map(|g| g.iter().position(|&j| j == i))
                .map_or(base, |k| COINCIDE_DASHES[k % COINCIDE_DASHES.len()]);
            Look {
                dash,
                marker: i % 4,
                hollow: s.stroke == Stroke::Dashed,
            }
        })
        .collect()
}

/// The legend laid out under the plot: each line a list of (series index, x pixel), then
/// the notes (one line each).
struct Legend {
    lines: Vec<Vec<(usize, i32)>>,
    notes: Vec<String>,
}

impl Legend {
    fn new(chart: &Chart, groups: &[Vec<usize>]) -> Legend {
        let width = SIZE.0 as i32 - 24;
        let mut lines: Vec<Vec<(usize, i32)>> = Vec::new();
        let mut x = width;
        for (i, s) in chart.series.iter().enumerate() {
            // About 6.5 px a character at 12 px, 34 px of swatch and 16 of gap.
            let w = 34 + (s.label.chars().count() as f64 * 6.5) as i32 + 16;
            if x + w > width || lines.is_empty() {
                lines.push(Vec::new());
                x = 0;
            }
            if let Some(line) = lines.last_mut() {
                line.push((i, x));
            }
            x += w;
        }
        let notes = groups
            .iter()
            .map(|g| {
                let names: Vec<&str> = g.iter().map(|&i| chart.series[i].label.as_str()).collect();
                format!("{} series coincide: {}", g.len(), names.join("; "))
            })
            .collect();
        Legend { lines, notes }
    }

    /// Height in pixels (with 8 px of margin when not empty).
    fn height(&self) -> u32 {
        let n = (self.lines.len() + self.notes.len()) as u32;
        if n == 0 { 0 } else { n * LEGEND_LINE_PX + 8 }
    }
}

/// Draws `chart` as an SVG document (see the module documentation for the rules).
pub fn svg(chart: &Chart) -> Result<String, PlotError> {
    let categorical = !chart.x_categories.is_empty();
    let x_axis = if categorical {
        Axis::Linear
    } else {
        chart.x_axis
    };
    let segs: Vec<Vec<Segment>> = chart
        .series
        .iter()
        .map(|s| segments(s, x_axis, chart.y_axis))
        .collect();
    let placed = || segs.iter().flatten().flatten();
    let nothing = || PlotError(format!("{}: no value to plot", chart.title));
    let (x0, x1) = if categorical {
        (-0.5, chart.x_categories.len() as f64 - 0.5)
    } else {
        span(placed().map(|p| p.0), false).ok_or_else(nothing)?
    };
    let y_values = placed().flat_map(|&(_, y, s)| {
        [Some(y), s.map(|s| s.0), s.map(|s| s.1)]
            .into_iter()
            .flatten()
    });
    let (y0, mut y1) = span(y_values, chart.y_axis == Axis::Linear).ok_or_else(nothing)?;
    if let Some(max) = chart.y_max.and_then(|m| place(m, chart.y_axis)) {
        y1 = y1.min(max).max(y0 + f64::EPSILON);
    }
    let groups = coinciding(&segs, (x0, x1), (y0, y1));
    let looks = looks(chart, &groups);
    let legend = Legend::new(chart, &groups);
    let whole_x = placed().all(|p| p.0.fract() == 0.0);
    let x_labels = if categorical {
        Some(chart.x_categories.len() + 1)
    } else {
        label_count(x0, x1, x_axis, whole_x)
    };
    let y_labels = label_count(y0, y1, chart.y_axis, false);

    let mut out = String::new();
    {
        let size = (SIZE.0, SIZE.1 + legend.height());
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        let layout = Layout {
            x: (x0, x1),
            y: (y0, y1),
            x_axis,
            x_labels,
            y_labels,
        };
        let err =
            |e: DrawingAreaErrorKind<std::io::Error>| PlotError(format!("{}: {e}", chart.title));
        root.fill(&WHITE).map_err(err)?;
        let (plot, below) = root.split_vertically(SIZE.1);
        draw(&plot, chart, &segs, &looks, &layout).map_err(err)?;
        draw_legend(&below, chart, &looks, &legend).map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// How many tick labels an axis over `lo..hi` asks plotters for: one a decade on a log axis
/// and one a unit where every value is a whole number (hogs, HZ steps), so that the ticks
/// fall on values the points can have; `None` for plotters' default.
fn label_count(lo: f64, hi: f64, axis: Axis, whole: bool) -> Option<usize> {
    let n = (hi - lo).ceil() as usize + 1;
    match axis {
        Axis::Log10 => Some(n.max(2)),
        Axis::Linear if whole && n <= 13 => Some(n.max(2)),
        Axis::Linear => None,
    }
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// What [`svg`] decided before drawing: the plotted ranges, the x scale and the tick label
/// counts.
struct Layout {
    x: (f64, f64),
    y: (f64, f64),
    x_axis: Axis,
    x_labels: Option<usize>,
    y_labels: Option<usize>,
}

fn draw(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart,
    segs: &[Vec<Segment>],
    looks: &[Look],
    layout: &Layout,
) -> DrawResult {
    let ((x0, x1), (y0, y1), x_axis) = (layout.x, layout.y, layout.x_axis);
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let axis_label = |v: f64, axis: Axis| match axis {
        Axis::Linear => tick(v),
        Axis::Log10 => tick(10f64.powf(v)),
    };
    let x_fmt = |v: &f64| {
        if chart.x_categories.is_empty() {
            axis_label(*v, x_axis)
        } else if (v - v.round()).abs() < 1e-9 && *v >= 0.0 {
            chart
                .x_categories
                .get(v.round() as usize)
                .cloned()
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| axis_label(*v, chart.y_axis);
    let mut mesh = c.configure_mesh();
    mesh.x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215));
    if let Some(n) = layout.x_labels {
        mesh.x_labels(n);
    }
    if let Some(n) = layout.y_labels {
        mesh.y_labels(n);
    }
    mesh.draw()?;

    for ((s, segs), &look) in chart.series.iter().zip(segs).zip(looks) {
        let col = color(s.color);
        for seg in segs {
            let line = seg.iter().map(|&(x, y, _)| (x, y));
            match look.dash {
                None => {
                    c.draw_series(LineSeries::new(line, col.stroke_width(2)))?;
                }
                Some((dash, gap)) => {
                    c.draw_series(DashedLineSeries::new(line, dash, gap, col.stroke_width(2)))?;
                }
            }
            let style = if look.hollow {
                col.stroke_width(1)
            } else {
                col.filled()
            };
            let at = seg.iter().map(|&(x, y, _)| (x, y));
            match look.marker {
                1 => c.draw_series(
                    at.map(|p| EmptyElement::at(p) + Rectangle::new([(-3, -3), (3, 3)], style)),
                )?,
                2 => c.draw_series(
                    at.map(|p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 4, style)),
                )?,
                3 => c.draw_series(
                    at.map(|p| EmptyElement::at(p) + Cross::new((0, 0), 3, col.stroke_width(2))),
                )?,
                _ => {
                    c.draw_series(at.map(|p| EmptyElement::at(p) + Circle::new((0, 0), 3, style)))?
                }
            };
            c.draw_series(seg.iter().filter_map(|&(x, y, spread)| {
                spread.map(|(lo, hi)| ErrorBar::new_vertical(x, lo, y, hi, col.stroke_width(1), 8))
            }))?;
        }
    }
    Ok(())
}

/// The legend under the plot: per series a swatch (its line and marker) and its label, then
/// the notes.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart,
    looks: &[Look],
    legend: &Legend,
) -> DrawResult {
    let left = 76;
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    let mut y = 4 + LEGEND_LINE_PX as i32 / 2;
    for line in &legend.lines {
        for &(i, x) in line {
            let (s, look) = (&chart.series[i], looks[i]);
            let col = color(s.color);
            let (a, b) = ((left + x, y), (left + x + 26, y));
            match look.dash {
                None => area.draw(&PathElement::new(vec![a, b], col.stroke_width(2)))?,
                Some((dash, gap)) => {
                    // Dashes of the swatch as separate strokes (the backend draws no pattern).
                    let mut from = a.0;
                    while from < b.0 {
                        let to = (from + dash as i32).min(b.0);
                        area.draw(&PathElement::new(
                            vec![(from, y), (to, y)],
                            col.stroke_width(2),
                        ))?;
                        from = to + gap as i32;
                    }
                }
            }
            let style = if look.hollow {
                col.stroke_width(1)
            } else {
                col.filled()
            };
            let m = (left + x + 13, y);
            match look.marker {
                1 => area.draw(&Rectangle::new(
                    [(m.0 - 3, m.1 - 3), (m.0 + 3, m.1 + 3)],
                    style,
                ))?,
                2 => area.draw(&TriangleMarker::new(m, 4, style))?,
                3 => area.draw(&Cross::new(m, 3, col.stroke_width(2)))?,
                _ => area.draw(&Circle::new(m, 3, style))?,
            }
            area.draw(&Text::new(
                s.label.clone(),
                (left + x + 34, y - 6),
                font.clone(),
            ))?;
        }
        y += LEGEND_LINE_PX as i32;
    }
    for note in &legend.notes {
        area.draw(&Text::new(note.clone(), (left, y - 6), font.clone()))?;
        y += LEGEND_LINE_PX as i32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_counts() {
        assert_eq!(label_count(-0.4, 8.4, Axis::Linear, true), Some(10));
        assert_eq!(label_count(-0.4, 8.4, Axis::Linear, false), None);
        assert_eq!(label_count(-1.2, 4.4, Axis::Log10, false), Some(7));
        assert_eq!(label_count(0.0, 100.0, Axis::Linear, true), None);
    }

    #[test]
    fn tick_labels() {
        let cases = [
            (0.0, "0"),
            (1000.0, "1000"),
            (2.5, "2.5"),
            (0.001, "0.001"),
            (31.622776, "31.6"),
            (-12.5, "-12.5"),
            (100.0, "100"),
        ];
        for (v, want) in cases {
            assert_eq!(tick(v), want, "{v}");
        }
    }

    #[test]
    fn spans_start_at_zero_for_positive_values_and_pad() {
        assert_eq!(span([2.0, 4.0].into_iter(), true), Some((0.0, 4.2)));
        assert_eq!(span([2.0, 4.0].into_iter(), false), Some((1.9, 4.1)));
        assert_eq!(span([3.0].into_iter(), false), Some((2.0, 4.0)));
        assert_eq!(span(std::iter::empty(), true), None);
    }

    #[test]
    fn log_axis_breaks_the_line_at_zero() {
        let p = |x: f64, y: f64| Point { x, y, spread: None };
        let s = Series {
            label: "s".into(),
            color: 0,
            stroke: Stroke::Solid,
            points: vec![p(1.0, 10.0), p(2.0, 0.0), p(3.0, 100.0), p(4.0, f64::NAN)],
        };
        let segs = segments(&s, Axis::Linear, Axis::Log10);
        assert_eq!(segs, vec![vec![(1.0, 1.0, None)], vec![(3.0, 2.0, None)]]);
    }

    #[test]
    fn nothing_to_plot_is_an_error_naming_the_chart() {
        let chart = Chart {
            title: "empty".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: Axis::Linear,
            y_axis: Axis::Log10,
            y_max: None,
            x_categories: Vec::new(),
            series: vec![Series {
                label: "s".into(),
                color: 0,
                stroke: Stroke::Solid,
                points: vec![Point {
                    x: 1.0,
                    y: 0.0,
                    spread: None,
                }],
            }],
        };
        assert_eq!(
            svg(&chart),
            Err(PlotError("empty: no value to plot".into()))
        );
    }

    #[test]
    fn categorical_chart_with_error_bars_snapshot() {
        let chart = Chart {
            title: "irq/s by command line".into(),
            x_label: "cmdline".into(),
            y_label: "local timer irq/s".into(),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            y_max: None,
            x_categories: vec!["nohz_full=all".into(), "nohz_full=all aggr".into()],
            series: vec![Series {
                label: "hogs:1".into(),
                color: 0,
                stroke: Stroke::Solid,
                points: vec![
                    Point {
                        x: 0.0,
                        y: 1040.0,
                        spread: Some((1020.0, 1060.0)),
                    },
                    Point {
                        x: 1.0,
                        y: 110.0,
                        spread: Some((100.0, 118.0)),
                    },
                ],
            }],
        };
        let a = svg(&chart).unwrap();
        assert_eq!(a, svg(&chart).unwrap(), "deterministic");
        insta::assert_snapshot!(a);
    }
}
