//! `ticklab experiment NAME`: a published experiment reproduced by the twin
//! (`ticklab_twin::experiments`), rendered by `ticklab-report` as tables or JSON.

use crate::args::{DurationArg, Experiment, parse_duration_arg};
use crate::error::input_error;
use crate::progress::with_progress;
use clap::Args;
use std::time::Instant;
use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::{e1, e2, e3};

/// `ticklab experiment` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExperimentArgs {
    /// Which experiment.
    #[arg(value_enum, ignore_case = true)]
    pub(crate) name: Experiment,
    /// Measured simulated time per point (default: 30s for e1, 1h for e2).
    #[arg(long, value_parser = parse_duration_arg)]
    pub(crate) duration: Option<DurationArg>,
    /// E2: frames with more jitter than this are fliers (µs).
    #[arg(long = "flier-us", default_value_t = 10.0, value_parser = parse_flier_us)]
    pub(crate) flier_us: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON (`schema_version`, the rows or configurations, band checks).
    #[arg(long)]
    pub(crate) json: bool,
    /// E3: context switches per configuration (the published benchmark ran 2 000 000).
    #[arg(long, default_value_t = ticklab_schema::experiment::e3::SWITCHES, value_parser = clap::value_parser!(u64).range(2..))]
    pub(crate) switches: u64,
}

impl ExperimentArgs {
    /// `ticklab experiment e1` with every default: what `ticklab` alone runs.
    pub(crate) fn e1_defaults() -> ExperimentArgs {
        ExperimentArgs {
            name: Experiment::E1,
            duration: None,
            flier_us: 10.0,
            seed: 1,
            json: false,
            switches: ticklab_schema::experiment::e3::SWITCHES,
        }
    }

    fn run(&self, warmup_ns: u64) -> Run {
        let duration = self.duration.unwrap_or(self.name.default_duration());
        Run {
            duration_ns: duration.ns(),
            warmup_ns,
            seed: self.seed,
        }
    }
}

/// `--flier-us`: a finite, non-negative number of microseconds.
fn parse_flier_us(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(us) if us.is_finite() && us >= 0.0 => Ok(us),
        _ => Err(format!(
            "{s}: expected a non-negative number of microseconds"
        )),
    }
}

/// Runs `ticklab experiment NAME`.
pub(crate) fn experiment(a: &ExperimentArgs) -> anyhow::Result<()> {
    match a.name {
        Experiment::E1 => experiment_e1(a),
        Experiment::E2 => experiment_e2(a),
        Experiment::E3 => experiment_e3(a),
    }
}

fn experiment_e3(a: &ExperimentArgs) -> anyhow::Result<()> {
    let results = e3::results(a.switches);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e3::json(&results)?)?
        );
    } else {
        print!("{}", ticklab_report::e3_report(&results));
    }
    Ok(())
}

fn experiment_e1(a: &ExperimentArgs) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let points = (e1::Mode::ALL.len() * e1::LOADS.len()) as u64;
    let results = with_progress(points, "points", |progress| {
        e1::results(a.run(e1::WARMUP_NS), threads, progress)
    })
    .map_err(|e| input_error(e.to_string()))?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e1::json(&results)?)?
        );
    } else {
        print!("{}", ticklab_report::e1_report(&results));
    }
    Ok(())
}

fn experiment_e2(a: &ExperimentArgs) -> anyhow::Result<()> {
    let threads = 2;
    let t0 = Instant::now();
    let results = with_progress(2, "configurations", |progress| {
        e2::results(a.run(e2::WARMUP_NS), a.flier_us, threads, progress)
    })
    .map_err(|e| input_error(e.to_string()))?;
    // The twin's speed goes to stderr: stdout stays byte-identical for a seed.
    let wall_s = t0.elapsed().as_secs_f64();
    eprintln!(
        "ticklab: {}",
        ticklab_report::e2::events_line(&results, wall_s, threads)
    );
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e2::json(&results)?)?
        );
    } else {
        print!("{}", ticklab_report::e2_report(&results));
    }
    Ok(())
}
