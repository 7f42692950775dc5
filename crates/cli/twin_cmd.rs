//! `ticklab sim | compare`: one configuration, or several command lines side by side, in the
//! twin. The scenario comes from a file and/or flags ([`build_scenario`]); the tables come
//! from `ticklab-report`.

use crate::args::{
    DurationArg, HISTOGRAM_HELP, MachineParser, NohzArg, check_histogram_workload,
    histogram_parser, hz_help, hz_parser, parse_duration_arg,
};
use crate::error::{input_error, library_error, library_error_naming};
use crate::progress::{Progress, with_progress};
use crate::trace_out::{TraceArgs, limit_per_run, save};
use clap::Args;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{self, Machine};
use ticklab_schema::report::Report;
use ticklab_schema::scenario::{Kernel, KernelError, Run, Scenario, default_background};
use ticklab_schema::workload::Workload;
use ticklab_twin::{Engine, RunOptions};

/// What to simulate: a scenario file, or a machine preset plus flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct ScenarioArgs {
    /// Scenario file (TOML; `-` reads standard input); flags given as well override its values.
    #[arg(long)]
    scenario: Option<String>,
    /// Machine preset (default xps13-7390); a scenario file names its own.
    #[arg(long, value_parser = MachineParser, conflicts_with = "scenario")]
    machine: Option<Machine>,
    #[arg(long, value_parser = hz_parser(), help = hz_help())]
    hz: Option<u32>,
    /// Tick build option.
    #[arg(long, value_enum)]
    nohz: Option<NohzArg>,
    /// Kernel version MAJOR.MINOR (selects era switches).
    #[arg(long = "kernel-version")]
    kernel_version: Option<String>,
    /// Workload spec (`idle`, `hogs:2`, `hogs:4@4-7`).
    #[arg(long)]
    workload: Option<String>,
    /// Measured simulated time (`10s`, `500ms`, `1h30m`); `-d` as rtla spells it.
    #[arg(short = 'D', short_alias = 'd', long, value_parser = parse_duration_arg)]
    duration: Option<DurationArg>,
    /// Simulated warm-up before the window (`1s`; `0s` for none).
    #[arg(long, value_parser = crate::args::parse_warmup_arg)]
    warmup: Option<DurationArg>,
    /// Seed of the run's RNG.
    #[arg(long)]
    seed: Option<u64>,
    /// Hold a PM QoS CPU latency limit of US microseconds for the run (default 0), as a
    /// process holding /dev/cpu_dma_latency open does (cyclictest holds 0): the cpuidle
    /// governor then picks no idle state slower to leave than that.
    #[arg(
        long = "cpu-dma-latency",
        visible_alias = "pm-qos",
        value_name = "US",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0"
    )]
    cpu_dma_latency: Option<u32>,
    /// Run even when the estimated compute (CPUs × simulated time × event rate) is above the
    /// limit (docs/validation.md).
    #[arg(long)]
    yes: bool,
}

/// `ticklab sim` arguments.
#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Kernel command line, in the kernel's syntax. A line that starts with `-` is attached
    /// with `=`: `--cmdline=-foo`.
    #[arg(long)]
    cmdline: Option<String>,
    /// Print the versioned JSON report.
    #[arg(long)]
    json: bool,
    #[arg(long, value_name = "MAX_US", num_args = 0..=1,
          default_missing_value = "1000", value_parser = histogram_parser(), help = HISTOGRAM_HELP)]
    histogram: Option<u32>,
    #[arg(long, help = NOISE_HELP)]
    noise: bool,
    #[command(flatten)]
    trace: TraceArgs,
}

/// The help of `--noise` (`sim`, `compare`).
const NOISE_HELP: &str = "Predict the OS noise each busy CPU (hog, syscall loop) sees: time stolen per kernel source, detours, longest detour and a 1 us histogram, as the report's noise section (docs/noise.md); a bsp workload has it always";

/// `ticklab compare` arguments.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// A kernel command line; give several to compare them side by side. A line that starts
    /// with `-` is attached with `=`: `--cmdline=-foo`.
    #[arg(long, required = true)]
    cmdline: Vec<String>,
    /// Print the reports as a JSON array.
    #[arg(long)]
    json: bool,
    #[arg(long, help = NOISE_HELP)]
    noise: bool,
    #[command(flatten)]
    trace: TraceArgs,
}

/// The scenario of `--machine` (or the default laptop) before any other flag: 6.10,
/// HZ=1000, `CONFIG_NO_HZ_FULL`, no workload, 10 s after 1 s of warm-up, seed 1.
fn preset_scenario(machine: Machine) -> Scenario {
    Scenario {
        name: "sim".into(),
        machine,
        kernel: Kernel::new("6.10", 1000, NohzBuild::Full, ""),
        workload: Workload::default(),
        background: default_background(),
        run: Run {
            duration_ns: 10_000_000_000,
            warmup_ns: 1_000_000_000,
            seed: 1,
        },
    }
}

/// Builds the scenario from a file and/or flags; `cmdline` overrides the kernel's. Every
/// error names the flag or file it comes from.
pub(crate) fn build_scenario(a: &ScenarioArgs, cmdline: Option<&str>) -> anyhow::Result<Scenario> {
    let mut s = match &a.scenario {
        Some(path) => Scenario::load(path).map_err(|e| input_error(e.to_string()))?,
        None => preset_scenario(a.machine.clone().unwrap_or_else(machine::xps13_7390)),
    };
    s.kernel.hz = a.hz.unwrap_or(s.kernel.hz);
    s.kernel.nohz = a.nohz.map_or(s.kernel.nohz, NohzBuild::from);
    if let Some(v) = &a.kernel_version {
        s.kernel.version = v.clone();
        s.kernel
            .version_tuple()
            .map_err(|e| input_error(format!("--kernel-version: {e}")))?;
    }
    if let Some(c) = cmdline {
        s.kernel.cmdline = c.to_string();
    }
    let nr = s.machine.topology.nr_cpus();
    if let Some(w) = &a.workload {
        s.workload = Workload::parse(w, nr).map_err(|e| input_error(format!("--workload: {e}")))?;
    }
    s.run.duration_ns = a.duration.map_or(s.run.duration_ns, DurationArg::ns);
    s.run.warmup_ns = a.warmup.map_or(s.run.warmup_ns, DurationArg::ns);
    s.run.seed = a.seed.unwrap_or(s.run.seed);
    if let Some(us) = a.cpu_dma_latency {
        s.kernel.cpu_dma_latency_us = Some(us);
    }
    // Resolve the command line now, as the scenario's kernel release reads it (its cpulist
    // grammar), so a typo is an input error naming its origin before any work starts.
    let parsed = s.kernel.resolve(nr).map_err(|e| match e {
        KernelError::Version(v) => input_error(v.to_string()),
        KernelError::Cmdline(c) => input_error(format!("{}: {c}", cmdline_origin(a, cmdline))),
    })?;
    // An unknown parameter stays non-fatal, as in the kernel; a near miss is worth a warning.
    // Once per command: `compare` builds a scenario per `--cmdline`, and the same typo in two
    // of them is one mistake.
    for (raw, known) in parsed.near_misses() {
        warn_once(format!(
            "ticklab: warning: {}: unknown parameter `{raw}` (kept, not modelled): did you mean `{known}`?",
            cmdline_origin(a, cmdline)
        ));
    }
    // The flags may have changed what the file held: the one validation layer again. The
    // cost of the run is checked where it runs (`RunOptions::check_compute`), over all the
    // command's runs.
    s.validate()
        .map_err(|e| input_error(format!("{}: {e}", scenario_origin(a))))?;
    Ok(s)
}

impl ScenarioArgs {
    /// The twin's run options these flags ask for: `--yes` lifts the compute limit.
    pub(crate) fn run_options(&self) -> RunOptions<'static> {
        RunOptions {
            allow_large: self.yes,
            ..RunOptions::default()
        }
    }
}

/// Where the scenario came from, for errors: the file, or the flags.
fn scenario_origin(a: &ScenarioArgs) -> String {
    match &a.scenario {
        Some(path) => format!("scenario {path}"),
        None => "scenario (flags)".into(),
    }
}

/// Prints `line` on stderr unless this process has printed it already: a warning is said once
/// per command however many scenarios repeat its cause.
fn warn_once(line: String) {
    static SAID: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.contains(&line) {
        eprintln!("{line}");
        said.insert(line);
    }
}

/// Where the kernel command line came from, for errors: `--cmdline` or the scenario file.
fn cmdline_origin(a: &ScenarioArgs, cmdline: Option<&str>) -> String {
    match (cmdline, &a.scenario) {
        (Some(_), _) => "--cmdline".into(),
        (None, Some(path)) => format!("scenario {path}, kernel.cmdline"),
        (None, None) => "kernel command line".into(),
    }
}

/// A twin error through the exit-code policy ([`library_error`]), naming `--cmdline` when the
/// command line the twin refused came from that flag.
fn sim_error(e: ticklab_twin::SimError, cmdline_origin: &str) -> anyhow::Error {
    use ticklab_twin::SimError;
    match e {
        SimError::Cmdline(_) | SimError::KernelParam(_) => library_error_naming(cmdline_origin, e),
        _ => library_error(e),
    }
}

/// Runs `s` in the twin with a progress line (the noise report kept when
/// `options.noise`); `origin` names where the command line came from in errors.
fn simulate_with_progress(
    s: &Scenario,
    options: RunOptions<'_>,
    origin: &str,
) -> anyhow::Result<Report> {
    let total_ms = (s.run.warmup_ns + s.run.duration_ns) / 1_000_000;
    let mut p = Progress::new(total_ms, "simulated ms");
    let mut progress = |ns: u64| p.set(ns / 1_000_000);
    let options = RunOptions {
        histogram: options.histogram,
        allow_large: options.allow_large,
        progress: Some(&mut progress),
        engine: options.engine,
        noise: options.noise,
    };
    let r = ticklab_twin::run(s, options).map_err(|e| sim_error(e, origin))?;
    p.finish();
    Ok(r)
}

/// One traced run of `s` as process `pid` (`--trace`), the noise report kept when `noise`.
fn trace_one(
    s: &Scenario,
    pid: u32,
    t: &TraceArgs,
    runs: usize,
    noise: bool,
    progress: impl FnMut(u64),
) -> Result<(Report, ticklab_trace::TraceWriter), ticklab_twin::SimError> {
    let listener = ticklab_twin::timeline::listener(s, pid, t.window(), limit_per_run(runs));
    let mut sim = ticklab_twin::Sim::with_observer(s, listener)?;
    if noise {
        sim.set_noise();
    }
    Ok(ticklab_twin::timeline::trace_sim(sim, progress))
}

/// [`simulate_with_progress`] with the timeline export (`--trace`): same report.
fn trace_with_progress(
    s: &Scenario,
    t: &TraceArgs,
    noise: bool,
    path: &std::path::Path,
) -> anyhow::Result<Report> {
    let total_ms = (s.run.warmup_ns + s.run.duration_ns) / 1_000_000;
    let mut p = Progress::new(total_ms, "simulated ms");
    let (r, w) = trace_one(s, 1, t, 1, noise, |ns| p.set(ns / 1_000_000)).map_err(library_error)?;
    p.finish();
    save(path, vec![w], "ticklab sim (twin)")?;
    Ok(r)
}

/// Runs `ticklab sim`.
pub(crate) fn sim(a: &SimArgs) -> anyhow::Result<()> {
    let s = build_scenario(&a.scenario, a.cmdline.as_deref())?;
    check_histogram_workload(a.histogram, &s.workload).map_err(input_error)?;
    let origin = cmdline_origin(&a.scenario, a.cmdline.as_deref());
    let options = RunOptions {
        histogram: a.histogram,
        noise: a.noise,
        ..a.scenario.run_options()
    };
    if Engine::of(&s) == Engine::GuestPingPong {
        if a.trace.trace.is_some() {
            return Err(input_error(
                "--trace: a ping-pong workload runs the E3 guest model, which has no timeline; \
                 drop --trace",
            ));
        }
        return sim_pingpong(&s, &options, a.json);
    }
    let r = match &a.trace.trace {
        Some(path) => {
            options
                .check_compute([&s])
                .map_err(|e| sim_error(e, &origin))?;
            trace_with_progress(&s, &a.trace, a.noise, path)?
        }
        None => simulate_with_progress(&s, options, &origin)?,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        let title = format!(
            "{} — {} — HZ={} — cmdline: {:?} — workload: {}",
            s.name,
            s.machine.description,
            s.kernel.hz,
            s.kernel.cmdline,
            s.workload.label()
        );
        print!("{}", ticklab_report::sim_report(&title, &r));
    }
    Ok(())
}

/// `ticklab sim` with a ping-pong workload: the guest ping-pong model's own figures
/// (`ticklab_twin::entry::pingpong_run`).
fn sim_pingpong(s: &Scenario, options: &RunOptions<'_>, json: bool) -> anyhow::Result<()> {
    let r = ticklab_twin::entry::pingpong_run(s, options).map_err(library_error)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    let title = format!(
        "{} — {} — HZ={} — cmdline: {:?} — workload: {}",
        s.name,
        s.machine.description,
        s.kernel.hz,
        s.kernel.cmdline,
        s.workload.label()
    );
    print!("{}", ticklab_report::guest_pingpong_text(&title, &r));
    Ok(())
}

/// Runs `ticklab compare`: one scenario per `--cmdline`, simulated in parallel.
pub(crate) fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    let mut scenarios = Vec::new();
    for c in &a.cmdline {
        let mut s = build_scenario(&a.scenario, Some(c))?;
        s.name = if c.is_empty() {
            "(empty)".into()
        } else {
            c.clone()
        };
        scenarios.push(s);
    }
    // The limit is on the command's work: every configuration together.
    a.scenario
        .run_options()
        .check_compute(&scenarios)
        .map_err(library_error)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let reports: Vec<Report> = match &a.trace.trace {
        Some(path) => {
            // One process per configuration, in --cmdline order.
            let n = scenarios.len();
            let indexed: Vec<(u32, &Scenario)> = (1..).zip(&scenarios).collect();
            let results = with_progress(n as u64, "configurations", |progress| {
                let run =
                    |(pid, s): &(u32, &Scenario)| trace_one(s, *pid, &a.trace, n, a.noise, |_| {});
                ticklab_twin::sweep::parallel_map(&indexed, threads, run, &progress)
            });
            let (reports, runs): (Vec<Report>, Vec<_>) = results
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(library_error)?
                .into_iter()
                .unzip();
            save(path, runs, "ticklab compare (twin)")?;
            reports
        }
        None => {
            let results = with_progress(scenarios.len() as u64, "configurations", |progress| {
                // Per-CPU tables side by side: the event loop, whatever the workload.
                let simulate = |s: &Scenario| {
                    let options = RunOptions {
                        engine: Some(Engine::EventLoop),
                        noise: a.noise,
                        ..RunOptions::unlimited()
                    };
                    ticklab_twin::run(s, options)
                };
                ticklab_twin::sweep::parallel_map(&scenarios, threads, simulate, &progress)
            });
            results
                .into_iter()
                .zip(&a.cmdline)
                .map(|(r, c)| r.map_err(|e| sim_error(e, &format!("--cmdline {c:?}"))))
                .collect::<Result<_, _>>()?
        }
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        let rows: Vec<(String, &Report)> = scenarios
            .iter()
            .map(|s| s.name.clone())
            .zip(&reports)
            .collect();
        print!("{}", ticklab_report::compare_table(&rows));
    }
    Ok(())
}
