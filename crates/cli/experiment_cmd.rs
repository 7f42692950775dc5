//! `ticklab experiment NAME`: a published experiment reproduced by the twin
//! (`ticklab_twin::experiments`), rendered by `ticklab-report` as tables or JSON.

use crate::args::{DurationArg, Experiment, parse_duration_arg};
use crate::error::{input_error, library_error, library_error_naming};
use crate::progress::with_progress;
use crate::trace_out::{TraceArgs, limit_per_run, save};
use clap::Args;
use std::time::Instant;
use ticklab_schema::scenario::Run;
use ticklab_twin::RunOptions;
use ticklab_twin::experiments::{e1, e2, e3, e4};

/// `ticklab experiment` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExperimentArgs {
    /// Which experiment.
    #[arg(value_enum, ignore_case = true)]
    pub(crate) name: Experiment,
    /// Measured simulated time per point (default: 30s for e1, 1h for e2; e4 runs each point
    /// until its loop is done and takes no --duration).
    #[arg(short = 'D', short_alias = 'd', long, value_parser = parse_duration_arg)]
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
    /// E2: run each configuration with each modelled mechanism switched off in turn and print
    /// the ablation table (default duration 60 s per point).
    #[arg(long)]
    pub(crate) ablate: bool,
    /// E3: context switches per configuration, counted as the benchmark counts them (four per
    /// round trip; the published run had 2 000 000).
    #[arg(long, default_value_t = ticklab_schema::experiment::e3::SWITCHES, value_parser = clap::value_parser!(u64).range(2..=ticklab_schema::validate::MAX_WORKLOAD_COUNT))]
    pub(crate) switches: u64,
    /// Print the per-CPU tables too (E2: a frame table and a wake-up table per group and
    /// configuration, 240 rows each). On by default only on machines of at most 8 CPUs; E2's
    /// has 64.
    #[arg(long)]
    pub(crate) per_cpu: bool,
    /// Run even when the estimated compute of all points is above the limit
    /// (docs/validation.md).
    #[arg(long)]
    pub(crate) yes: bool,
    /// e1, e2, e4: each point is run once more with the timeline export, one process per point.
    #[command(flatten)]
    pub(crate) trace: TraceArgs,
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
            ablate: false,
            per_cpu: false,
            switches: ticklab_schema::experiment::e3::SWITCHES,
            yes: false,
            trace: TraceArgs {
                trace: None,
                trace_window: None,
            },
        }
    }

    fn run(&self, warmup_ns: u64) -> Run {
        let duration_ns = match (self.duration, self.ablate) {
            (Some(d), _) => d.ns(),
            (None, true) => ABLATION_DURATION_NS,
            (None, false) => self.name.default_duration().ns(),
        };
        Run {
            duration_ns,
            warmup_ns,
            seed: self.seed,
        }
    }
}

/// Default measured time of one ablation point: 60 s.
const ABLATION_DURATION_NS: u64 = 60_000_000_000;

/// `--flier-us`: a finite, non-negative number of microseconds.
fn parse_flier_us(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(us) if us.is_finite() && us >= 0.0 => Ok(us),
        _ => Err(format!(
            "{s}: expected a non-negative number of microseconds"
        )),
    }
}

/// Refuses an experiment whose points together would simulate more events than the compute
/// limit (a long `--duration`, a large `--switches`), unless `--yes`: the twin's one check
/// ([`RunOptions::check_compute`]) over every point (docs/validation.md).
fn check_compute(a: &ExperimentArgs) -> anyhow::Result<()> {
    let options = RunOptions {
        allow_large: a.yes,
        ..RunOptions::default()
    };
    let checked = match a.name {
        Experiment::E1 => {
            let points: Vec<_> = e1::Mode::ALL
                .iter()
                .flat_map(|&m| e1::LOADS.iter().map(move |&l| (m, l)))
                .map(|(m, l)| e1::scenario(m, l, a.run(e1::WARMUP_NS)))
                .collect();
            options.check_compute(&points)
        }
        Experiment::E2 => {
            let configs: Vec<_> = e2::Config::ALL
                .iter()
                .map(|&c| e2::scenario(c, a.run(e2::WARMUP_NS)))
                .collect();
            if a.ablate {
                // Every ablation point is one of the configurations with a mechanism off.
                let per_config: f64 = configs.iter().map(|s| s.estimated_events()).sum();
                let points = e2::ablation_points().len();
                options.check_events(
                    per_config * points as f64 / configs.len() as f64,
                    &format!("{points} ablation points"),
                )
            } else {
                options.check_compute(&configs)
            }
        }
        Experiment::E3 => options.check_events(
            ticklab_twin::guest::estimated_events(a.switches)
                * ticklab_schema::experiment::e3::CONFIGS.len() as f64,
            "every configuration",
        ),
        // Each point runs a fixed loop of calls.
        Experiment::E4 => Ok(()),
    };
    let flag = if a.name == Experiment::E3 {
        "--switches"
    } else {
        "--duration"
    };
    checked.map_err(|e| library_error_naming(flag, e))
}

/// Runs `ticklab experiment NAME`.
pub(crate) fn experiment(a: &ExperimentArgs) -> anyhow::Result<()> {
    check_compute(a)?;
    if let Some(path) = &a.trace.trace {
        if a.ablate || a.name == Experiment::E3 {
            return Err(input_error(
                "--trace: e1, e2 and e4 export timelines (e3 is a guest model without one, and \
                 an ablation has no trace); drop --trace"
                    .to_string(),
            ));
        }
        experiment_results(a)?;
        return trace_points(a, path);
    }
    experiment_results(a)
}

/// The experiment's tables or JSON.
fn experiment_results(a: &ExperimentArgs) -> anyhow::Result<()> {
    match a.name {
        Experiment::E2 if a.ablate => experiment_e2_ablation(a),
        other if a.ablate => Err(input_error(format!(
            "--ablate: expected experiment e2 ({} has no ablation)",
            other.name()
        ))),
        Experiment::E1 => experiment_e1(a),
        Experiment::E2 => experiment_e2(a),
        Experiment::E3 => experiment_e3(a),
        Experiment::E4 => experiment_e4(a),
    }
}

fn experiment_e3(a: &ExperimentArgs) -> anyhow::Result<()> {
    if a.duration.is_some() {
        return Err(input_error(
            "--duration: e3 counts context switches, not simulated time; use --switches"
                .to_string(),
        ));
    }
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

fn experiment_e4(a: &ExperimentArgs) -> anyhow::Result<()> {
    if a.duration.is_some() {
        return Err(input_error(format!(
            "--duration: e4 runs each point until its {} calls are done; drop --duration",
            e4::CALLS
        )));
    }
    let results = e4_results(a)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e4::json(&results)?)?
        );
    } else {
        print!("{}", ticklab_report::e4_report(&results));
    }
    Ok(())
}

fn experiment_e1(a: &ExperimentArgs) -> anyhow::Result<()> {
    let results = e1_results(a)?;
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
    let t0 = Instant::now();
    let results = e2_results(a)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e2::json(&results)?)?
        );
    } else {
        let per_cpu = a.per_cpu
            || results
                .outcomes
                .iter()
                .all(|o| o.report.cpus.len() <= ticklab_report::PER_CPU_DEFAULT_MAX_CPUS);
        print!("{}", ticklab_report::e2_report(&results, per_cpu));
    }
    // The twin's speed goes to stderr (after the output, so that a closed stdout ends
    // quietly): stdout stays byte-identical for a seed.
    let wall_s = t0.elapsed().as_secs_f64();
    eprintln!(
        "ticklab: {}",
        ticklab_report::e2::events_line(&results.outcomes, wall_s, E2_THREADS)
    );
    Ok(())
}

fn experiment_e2_ablation(a: &ExperimentArgs) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t0 = Instant::now();
    let points = e2::ablation_points().len() as u64;
    let ablation = with_progress(points, "points", |progress| {
        e2::ablation(a.run(e2::WARMUP_NS), a.flier_us, threads, progress)
    })
    .map_err(library_error)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ticklab_report::e2::ablation_json(&ablation)?)?
        );
    } else {
        print!("{}", ticklab_report::ablation_report(&ablation));
    }
    let wall_s = t0.elapsed().as_secs_f64();
    eprintln!(
        "ticklab: {}",
        ticklab_report::e2::events_line(&ablation.points, wall_s, threads)
    );
    Ok(())
}

/// `--trace`: every point of e1, e2 or e4 run again with the timeline listener (same
/// scenario, seed and setup, so the same report), one process per point in the order of the
/// experiment's table.
fn trace_points(a: &ExperimentArgs, path: &std::path::Path) -> anyhow::Result<()> {
    use ticklab_twin::timeline::{listener, trace_run, trace_sim};
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let window = a.trace.window();
    let runs = match a.name {
        Experiment::E1 => {
            let run = a.run(e1::WARMUP_NS);
            let points: Vec<(u32, e1::Mode, u32)> = (1..)
                .zip(
                    e1::Mode::ALL
                        .iter()
                        .flat_map(|&m| e1::LOADS.iter().map(move |&l| (m, l))),
                )
                .map(|(pid, (m, l))| (pid, m, l))
                .collect();
            let limit = limit_per_run(points.len());
            with_progress(points.len() as u64, "traced points", |progress| {
                let one = |&(pid, mode, hogs): &(u32, e1::Mode, u32)| {
                    trace_run(&e1::scenario(mode, hogs, run), pid, window, limit, |_| {})
                        .map(|(_, w)| w)
                };
                ticklab_twin::sweep::parallel_map(&points, threads, one, &progress)
            })
        }
        Experiment::E2 => {
            let run = a.run(e2::WARMUP_NS);
            let flier_ns = (a.flier_us * 1e3).round() as u64;
            let configs: Vec<(u32, e2::Config)> = (1..).zip(e2::Config::ALL).collect();
            let limit = limit_per_run(configs.len());
            with_progress(configs.len() as u64, "traced configurations", |progress| {
                let one = |&(pid, c): &(u32, e2::Config)| {
                    let l = listener(&e2::scenario(c, run), pid, window, limit);
                    e2::sim_with(c, run, flier_ns, l).map(|sim| trace_sim(sim, |_| {}).1)
                };
                ticklab_twin::sweep::parallel_map(&configs, threads, one, &progress)
            })
        }
        Experiment::E4 => {
            let points: Vec<(u32, e4::Point)> = (1..).zip(e4::points()).collect();
            let limit = limit_per_run(points.len());
            with_progress(points.len() as u64, "traced points", |progress| {
                let one = |&(pid, p): &(u32, e4::Point)| {
                    trace_run(&e4::scenario(p, a.seed), pid, window, limit, |_| {}).map(|(_, w)| w)
                };
                ticklab_twin::sweep::parallel_map(&points, threads, one, &progress)
            })
        }
        Experiment::E3 => {
            return Err(input_error(
                "--trace: e3 is a guest model without a timeline".to_string(),
            ));
        }
    };
    let runs: Vec<_> = runs
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(library_error)?;
    save(
        path,
        runs,
        &format!("ticklab experiment {} (twin)", a.name.name()),
    )
}

/// Threads for E2's four configurations.
const E2_THREADS: usize = 2;

/// E1's typed results for `a` (progress on stderr); shared with `plot` and `report`.
pub(crate) fn e1_results(a: &ExperimentArgs) -> anyhow::Result<e1::Results> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let points = (e1::Mode::ALL.len() * e1::LOADS.len()) as u64;
    with_progress(points, "points", |progress| {
        e1::results(a.run(e1::WARMUP_NS), threads, progress)
    })
    .map_err(library_error)
}

/// E2's typed results for `a` (progress on stderr); shared with `plot` and `report`.
pub(crate) fn e2_results(a: &ExperimentArgs) -> anyhow::Result<e2::Results> {
    with_progress(e2::Config::ALL.len() as u64, "configurations", |progress| {
        e2::results(a.run(e2::WARMUP_NS), a.flier_us, E2_THREADS, progress)
    })
    .map_err(library_error)
}

/// E4's typed results for `a` (progress on stderr); shared with `plot` and `report`.
pub(crate) fn e4_results(a: &ExperimentArgs) -> anyhow::Result<e4::Results> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    with_progress(e4::POINTS as u64, "points", |progress| {
        e4::results(a.seed, threads, progress)
    })
    .map_err(library_error)
}
