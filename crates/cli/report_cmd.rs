//! `ticklab plot` and `ticklab report --html`: figures and pages from typed results — an
//! experiment run here (`e1` … `e4`, through `experiment_cmd`) or a sweep's JSON lines read
//! back into `SweepRow`s — drawn by `ticklab_report::plot` and `ticklab_report::html`.
//!
//! Everything is rendered in memory first and written once at the end: bad input exits with
//! code 2 and leaves no partial file.

use crate::args::{DurationArg, Experiment, parse_duration_arg};
use crate::error::input_error;
use crate::experiment_cmd::{ExperimentArgs, e1_results, e2_results, e4_results};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use ticklab_report::plot::{self, Figure};
use ticklab_sweep::{Metric, ParamKey, SweepRow, SweepSummary};
use ticklab_twin::experiments::e3;

/// What `plot` and `report` read: an experiment to run, or a sweep file.
#[derive(Debug, Args)]
pub(crate) struct SourceArgs {
    /// `e1`, `e2`, `e3` or `e4` (the experiment is run here by the twin), or a sweep output
    /// file: the JSON lines `ticklab sweep` writes (`-` reads standard input; write `./e1`
    /// for a file named e1).
    #[arg(value_name = "EXPERIMENT|SWEEP.jsonl")]
    pub(crate) source: String,
    /// Sweep: a metric to plot on y (`irq_per_s`, `watts`, …; repeatable). Default for
    /// `report`: every metric that differs between points; `plot` needs exactly one.
    #[arg(long)]
    pub(crate) metric: Vec<String>,
    /// Sweep: the swept parameter on x (`workload`, `hz`, `cmdline`, `cost.FIELD`, …).
    /// Default: the first swept parameter with several values, a numeric one first.
    #[arg(long)]
    pub(crate) x: Option<String>,
    /// Experiments: measured simulated time per point (default: the experiment's own, 30s
    /// for e1 and 1h for e2; e3 and e4 take none).
    #[arg(short = 'D', short_alias = 'd', long, value_parser = parse_duration_arg)]
    pub(crate) duration: Option<DurationArg>,
    /// Experiments: the seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// `ticklab plot` arguments.
#[derive(Debug, Args)]
pub(crate) struct PlotArgs {
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// Where to write: a directory for an experiment's figures (one `<id>.svg` each, e.g.
    /// `e1-irq.svg`), a file for a sweep's one figure (default: standard output).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    /// E2: frames per jitter bucket as cyclictest-style bars instead of the exceedance
    /// curves (share of frames at or above each jitter, 1 − CDF).
    #[arg(long)]
    pub(crate) bars: bool,
}

/// `ticklab report` arguments.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// Write one self-contained HTML page here (inline CSS and SVG, nothing fetched).
    #[arg(long, value_name = "OUT")]
    pub(crate) html: PathBuf,
}

/// What was read or run.
enum Source {
    E1(ticklab_schema::experiment::e1::Results),
    E2(ticklab_schema::experiment::e2::Results),
    /// Boxed: E3's results carry a second reading of the guest-poll rows and outweigh the rest.
    E3(Box<ticklab_schema::experiment::e3::Results>),
    E4(ticklab_schema::experiment::e4::Results),
    Sweep(Vec<SweepRow>),
}

impl SourceArgs {
    /// The experiment named, or `None` for a sweep file.
    fn experiment(&self) -> Option<Experiment> {
        if self.source.contains('/') || self.source == "-" {
            None
        } else {
            Experiment::from_str(&self.source, true).ok()
        }
    }

    fn load(&self) -> anyhow::Result<Source> {
        let Some(name) = self.experiment() else {
            if self.duration.is_some() {
                return Err(input_error(format!(
                    "--duration: {} is a sweep file; the duration is one of its parameters",
                    self.source
                )));
            }
            return read_sweep(&self.source).map(Source::Sweep);
        };
        if !self.metric.is_empty() || self.x.is_some() {
            return Err(input_error(format!(
                "--metric/--x: {} is an experiment with its own figures; they choose what a \
                 sweep file plots",
                name.name()
            )));
        }
        let mut a = ExperimentArgs::e1_defaults();
        a.name = name;
        a.duration = self.duration;
        a.seed = self.seed;
        Ok(match name {
            Experiment::E1 => Source::E1(e1_results(&a)?),
            Experiment::E2 => Source::E2(e2_results(&a)?),
            Experiment::E3 | Experiment::E4 if self.duration.is_some() => {
                return Err(input_error(format!(
                    "--duration: {} counts calls or switches, not simulated time; drop \
                     --duration",
                    name.name()
                )));
            }
            Experiment::E3 => Source::E3(Box::new(e3::results(a.switches))),
            Experiment::E4 => Source::E4(e4_results(&a)?),
        })
    }

    /// The metrics and the x parameter of a sweep figure or page.
    fn sweep_axes(&self, rows: &[SweepRow]) -> anyhow::Result<(Vec<Metric>, ParamKey)> {
        let points = SweepSummary::of_rows(rows);
        let metrics = if self.metric.is_empty() {
            ticklab_report::html::varying_metrics(&points)
        } else {
            self.metric
                .iter()
                .map(|m| {
                    Metric::from_name(m).ok_or_else(|| {
                        let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                        input_error(format!(
                            "--metric {m}: expected one of {}",
                            names.join(", ")
                        ))
                    })
                })
                .collect::<anyhow::Result<_>>()?
        };
        let x = match &self.x {
            Some(x) => ParamKey::parse(x).map_err(|e| input_error(format!("--x: {e}")))?,
            None => ticklab_report::html::default_x(&points).ok_or_else(|| {
                input_error(format!(
                    "{}: no swept parameter has several values; name one with --x",
                    self.source
                ))
            })?,
        };
        Ok((metrics, x))
    }
}

/// Reads a sweep's JSON lines (`-` = standard input) into typed rows; a line that is not a
/// row is an input error naming the file and the line.
fn read_sweep(path: &str) -> anyhow::Result<Vec<SweepRow>> {
    let rows = crate::sweep_cmd::read_rows_from(
        Path::new(path),
        " (expected e1, e2, e3, e4 or a sweep's JSON lines)",
    )?;
    if rows.is_empty() {
        return Err(input_error(format!("{path}: no sweep rows")));
    }
    Ok(rows)
}

fn write(flag: &str, path: &Path, text: &str) -> anyhow::Result<()> {
    crate::output::write_file(flag, path, text.as_bytes())
}

/// Runs `ticklab plot`.
pub(crate) fn plot(a: &PlotArgs) -> anyhow::Result<()> {
    if let (Some(name), None) = (a.source.experiment(), &a.output) {
        return Err(input_error(format!(
            "-o: expected a directory for the figures of {} (one <id>.svg each)",
            name.name()
        )));
    }
    let source = a.source.load()?;
    let figures: Vec<Figure> = match &source {
        Source::E1(r) => plot::e1::figures(r)?,
        Source::E2(r) if a.bars => plot::e2::figures_as(r, plot::e2::Style::Bars)?,
        Source::E2(r) => plot::e2::figures(r)?,
        Source::E3(r) => plot::e3::figures(r)?,
        Source::E4(r) => plot::e4::figures(r)?,
        Source::Sweep(rows) => {
            let (metrics, x) = a.source.sweep_axes(rows)?;
            let [metric] = metrics[..] else {
                return Err(input_error(format!(
                    "--metric: plot draws one metric of a sweep, {} given or chosen; name one \
                     (or use `ticklab report --html` for all)",
                    metrics.len()
                )));
            };
            let figure =
                plot::sweep::figure(rows, metric, &x).map_err(|e| input_error(e.to_string()))?;
            return match &a.output {
                Some(path) => write("-o", path, &figure.svg),
                None => crate::output::emit(&figure.svg),
            };
        }
    };
    let Some(dir) = &a.output else {
        // Refused before running (above); kept so that no path writes to nowhere.
        return Err(input_error(
            "-o: expected a directory for the figures".to_string(),
        ));
    };
    std::fs::create_dir_all(dir).map_err(|e| input_error(format!("-o {}: {e}", dir.display())))?;
    for f in &figures {
        let path = dir.join(format!("{}.svg", f.id));
        write("-o", &path, &f.svg)?;
        eprintln!("ticklab: wrote {}", path.display());
    }
    Ok(())
}

/// Runs `ticklab report --html`.
pub(crate) fn report(a: &ReportArgs) -> anyhow::Result<()> {
    use ticklab_report::html;
    crate::output::check_target("--html", &a.html)?;
    let page = match a.source.load()? {
        Source::E1(r) => html::e1_html(&r)?,
        Source::E2(r) => html::e2_html(&r)?,
        Source::E3(r) => html::e3_html(&r)?,
        Source::E4(r) => html::e4_html(&r)?,
        Source::Sweep(rows) => {
            let (metrics, x) = a.source.sweep_axes(&rows)?;
            html::sweep_html(&rows, &metrics, &x).map_err(|e| input_error(e.to_string()))?
        }
    };
    write("--html", &a.html, &page)?;
    if !crate::output::is_stdout(&a.html) {
        eprintln!("ticklab: wrote {}", a.html.display());
    }
    Ok(())
}
