//! `ticklab host run` — a workload spec on real pinned threads — and `host calibrate`.
//!
//! `host run` parses the spec and duration (bad input → exit code 2), installs the Ctrl-C /
//! SIGTERM handler, runs [`ticklab_host::harness::run_workload`] and prints the report as JSON
//! or as text ([`ticklab_report::host_run_report`]). An interrupted run (SIGINT or SIGTERM)
//! still prints what it measured, marked as interrupted, and then exits with code 130
//! ([`crate::error::Interrupted`]).

use std::io::Write;

use clap::Args;
use ticklab_host::harness::sysfs_params::{self, ParamGuard, ParamSetting};
use ticklab_host::harness::{
    self, HarnessError, HostRun, PingPongMode, RunConfig, Stop, StopReason,
};
use ticklab_report::host_run::{FrameGroupWakeups, FrameWorker, HostRunExtras, WakeupLatency};
use ticklab_schema::comparison::Row;
use ticklab_schema::experiment::e4::HostPrediction;
use ticklab_schema::report::{Report, Source, WorkloadResult};
use ticklab_schema::scenario::{Scenario, check_hz};
use ticklab_schema::workload::Workload;
use ticklab_twin::experiments::e4;

use crate::args::{
    DurationArg, HISTOGRAM_HELP, MetricsFormat, check_histogram_workload, histogram_parser,
    parse_duration_arg,
};
use crate::error::{input_error, interrupted, library_error};

/// `host run` arguments.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Workload spec, as for `ticklab sim` (e.g. `frames:1000@1:loop=0`, `hogs:2`,
    /// `pingpong:pipe@0,1:n=1000000`, `syscall:getpid@0:n=10000000`,
    /// `bsp:2@0-1:work=100us:iters=20000`; join groups with `+`). A bsp job's late iterations
    /// are blamed on the source that ran in their rank's largest detour, from a trace of the
    /// ranks' CPUs (root and tracefs; without them the source is unknown and a warning says
    /// why: docs/noise.md "The host lab").
    #[arg(long)]
    pub(crate) workload: String,
    /// Frame period in microseconds, as cyclictest's `-i`: an alternative to the frame rate
    /// of the frame groups (`--workload frames@1:loop=0 -i 1000` is `frames:1000@1:loop=0`);
    /// a group that states a rate must state this one.
    #[arg(short = 'i', long, value_name = "US")]
    pub(crate) interval: Option<u32>,
    /// Run length (`500ms`, `10s`, `2m`): the window for idle, hogs and frames; a cap for a
    /// run of counted groups only (ping-pong, syscall), which ends when they finish — the
    /// report then says the window was shorter than asked, and why.
    #[arg(short = 'D', short_alias = 'd', long, default_value = "10s", value_parser = parse_duration_arg)]
    pub(crate) duration: DurationArg,
    /// Print the report as JSON (the shared schema plus a `host_run` object).
    #[arg(long)]
    pub(crate) json: bool,
    /// `openmetrics`: gauges for node-exporter's textfile collector instead of the report.
    #[arg(long, value_enum, default_value_t, conflicts_with = "json")]
    pub(crate) format: MetricsFormat,
    /// Frames with jitter above this many us count as fliers.
    #[arg(long, default_value_t = 10.0, value_name = "US")]
    pub(crate) flier_us: f64,
    /// SCHED_FIFO priority of frame workers (used when permitted).
    #[arg(long, default_value_t = 50, value_name = "PRIO")]
    pub(crate) fifo_priority: i32,
    /// Do not try SCHED_FIFO: frame workers stay SCHED_OTHER with timer slack 1 ns.
    #[arg(long)]
    pub(crate) no_fifo: bool,
    /// Do not mlockall while frame workers run.
    #[arg(long)]
    pub(crate) no_mlock: bool,
    /// Run ping-pong side B as a thread instead of a forked process (`perf bench sched pipe -T`).
    #[arg(long)]
    pub(crate) pingpong_threads: bool,
    /// Set a cpuidle / halt-polling parameter for the run (`haltpoll.guest_halt_poll_ns=0`,
    /// `kvm.halt_poll_ns=…`, `cpuidle.governor=…`; repeatable). Needs root; the old values
    /// are restored at the end, on error and on Ctrl-C (a restore record under /run covers a
    /// killed run: the next run applies it).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub(crate) set: Vec<String>,
    #[arg(long, value_name = "MAX_US", num_args = 0..=1,
          default_missing_value = "1000", value_parser = histogram_parser(), help = HISTOGRAM_HELP)]
    pub(crate) histogram: Option<u32>,
    /// Also run the workload in the twin of this host and print both, figure by figure
    /// (measured, predicted, ratio). SCENARIO: a `host calibrate` file; without one,
    /// ./ticklab-calibration.toml if it exists, else a twin built from `host inspect`.
    #[arg(long, value_name = "SCENARIO", num_args = 0..=1, default_missing_value = "")]
    pub(crate) twin: Option<String>,
    /// Hold /dev/cpu_dma_latency at US microseconds (default 0) for the run, as cyclictest
    /// does: the cpuidle governor then picks no idle state slower to leave than that. Needs
    /// root; the report says it was held.
    #[arg(
        long = "cpu-dma-latency",
        visible_alias = "pm-qos",
        value_name = "US",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0"
    )]
    pub(crate) cpu_dma_latency: Option<u32>,
    /// Refresh a per-CPU table (LOC/s, busy %, steal %) of the last second on stderr once a
    /// second while the run lasts, as `rtla osnoise top` and `turbostat` do (frame after
    /// frame when stderr is not a terminal). Reads /proc/interrupts and /proc/stat each
    /// second: one wake-up per second on some CPU, counted in what it measures.
    #[arg(long)]
    pub(crate) live: bool,
}

/// `host calibrate` arguments.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// Total measurement budget; every phase is scaled to fit it (at least 5s). Default 60s,
    /// 30s with `--check-unseen`.
    #[arg(short = 'D', short_alias = 'd', long, value_parser = parse_duration_arg)]
    pub(crate) duration: Option<DurationArg>,
    /// Write the scenario file here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<std::path::PathBuf>,
    /// Fit even from a phase other load contaminated (CPU busy beyond what the phase
    /// explains, steal); without it such a run writes nothing and exits with code 4.
    #[arg(long)]
    pub(crate) force: bool,
    /// Fit from phases the hypervisor stole from (steal above 5 % of a phase's window) but
    /// still refuse other load: for a guest on a shared host, whose neighbours decide its
    /// steal. The interrupt counts stay the host's; the fitted costs include the stolen time.
    #[arg(long)]
    pub(crate) tolerate_steal: bool,
    /// Then run the loads the calibration did not (idle as a control, two hogs, frames at
    /// 100 Hz and 2 kHz, a futex ping-pong across CPUs, getpid beside a hog, two hogs on one
    /// CPU), each beside the fitted twin as `host run --twin` does, and print one table of
    /// every figure with the in-band count (idle not counted). The scenario file goes to
    /// `--out` only.
    #[arg(long)]
    pub(crate) check_unseen: bool,
    /// With `--check-unseen`: each load's window (at least 2s).
    #[arg(long, default_value = "10s", value_parser = parse_duration_arg, requires = "check_unseen", value_name = "DURATION")]
    pub(crate) load_duration: DurationArg,
    /// With `--check-unseen`: print the check as JSON (every row typed, and the count).
    #[arg(long, requires = "check_unseen")]
    pub(crate) json: bool,
}

fn run_config(args: &RunArgs) -> RunConfig {
    RunConfig {
        duration: args.duration.as_std(),
        flier_threshold_us: args.flier_us,
        fifo_priority: (!args.no_fifo).then_some(args.fifo_priority),
        lock_memory: !args.no_mlock,
        pingpong_mode: if args.pingpong_threads {
            PingPongMode::Threads
        } else {
            PingPongMode::Processes
        },
        histogram_us: args.histogram,
        cpu_dma_latency_us: args.cpu_dma_latency,
    }
}

/// `host run`'s workload, with `--interval` applied to its frame groups (an input error
/// when it has none).
fn run_workload_arg(args: &RunArgs) -> anyhow::Result<Workload> {
    let workload = Workload::parse_with_interval(
        &args.workload,
        harness::os::possible_cpu_count(),
        args.interval,
    )
    .map_err(|e| input_error(e.to_string()))?;
    if let Some(us) = args.interval
        && !workload
            .groups
            .iter()
            .any(|g| matches!(g, ticklab_schema::workload::TaskGroup::Frames { .. }))
    {
        return Err(input_error(format!(
            "--interval {us}: workload {} has no frame group (the interval is a frame period)",
            workload.label()
        )));
    }
    Ok(workload)
}

/// `host run`'s text: the report, the PM QoS hold, and the twin beside it when `--twin` ran.
fn write_text(
    out: &mut impl Write,
    run: &HostRun,
    prediction: Option<HostPrediction>,
    twin: Option<&(Scenario, Vec<String>)>,
    beside: Option<&(Report, Vec<Row>)>,
) -> anyhow::Result<()> {
    let mut extras = extras(run);
    extras.syscall_prediction = prediction;
    let text = ticklab_report::host_run_report(&run.report, &extras);
    write!(out, "{text}")?;
    if let Some(us) = run.host_run.cpu_dma_latency_us {
        writeln!(
            out,
            "PM QoS: {} held at {us} us for the whole run (--cpu-dma-latency)",
            harness::pm_qos::CPU_DMA_LATENCY
        )?;
    }
    if let (Some((scenario, notes)), Some((report, rows))) = (twin, beside) {
        crate::host_twin_cmd::write_twin_header(out, scenario, notes, report)?;
        write!(
            out,
            "{}",
            ticklab_report::comparison_tables_beside(rows, &run.report.contamination)
        )?;
    }
    Ok(())
}

/// Runs `host run`.
pub(crate) fn run(args: &RunArgs) -> anyhow::Result<()> {
    let workload = run_workload_arg(args)?;
    check_histogram_workload(args.histogram, &workload).map_err(input_error)?;
    let config = run_config(args);
    harness::validate(&workload, &config).map_err(harness_error)?;
    let settings = parse_settings(&args.set)?;
    let twin = match &args.twin {
        Some(arg) => Some(crate::host_twin_cmd::twin_scenario(arg)?),
        None => None,
    };
    let stop = Stop::on_signals()?;
    restore_leftover_params()?;
    let mut guard = ParamGuard::apply(&settings).map_err(harness_error)?;
    for (name, old, new) in guard.changes() {
        eprintln!("ticklab: {name}: {old} -> {new} for this run");
    }
    let run = crate::progress::measure(
        crate::progress::Window {
            settle: std::time::Duration::ZERO,
            window: args.duration.as_std(),
            cpus: None,
            after: "reporting",
            live: args.live,
            command: "host run",
        },
        || harness::run_workload(&workload, &config, &stop),
    )
    .map_err(harness_error)?;
    restore_params(&mut guard);
    let prediction = syscall_prediction(&run.report);
    let beside = match &twin {
        Some((scenario, _)) => Some(crate::host_twin_cmd::beside(
            &run.report,
            &workload,
            scenario,
            args.histogram,
        )?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    if args.format == MetricsFormat::Openmetrics {
        let families = ticklab_report::openmetrics::report_metrics(&run.report);
        write!(out, "{}", ticklab_report::openmetrics::render(&families))?;
    } else if args.json {
        let mut v = serde_json::to_value(&run)?;
        if let Some(p) = &prediction {
            v["twin_prediction"] = serde_json::to_value(p)?;
        }
        if let Some((report, rows)) = &beside {
            v["twin"] = serde_json::to_value(report)?;
            v["comparison"] = serde_json::to_value(rows)?;
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        write_text(&mut out, &run, prediction, twin.as_ref(), beside.as_ref())?;
    }
    out.flush()?;
    // Last on stderr, whatever the format: the figures above may show other load.
    for c in &run.report.contamination {
        eprintln!(
            "ticklab: warning: {} (figures of CPU {} are suspect)",
            c.text(),
            c.cpu()
        );
    }
    if let Some(why) = &run.host_run.interrupted {
        return Err(interrupted(why, "the report above is partial"));
    }
    Ok(())
}

/// `host calibrate`'s budget without `-D`.
const CALIBRATE_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);
/// `host calibrate --check-unseen`'s budget without `-D`: the check's loads take another
/// 70 s, so the calibration is the shorter one issue 30 ran.
const CHECK_UNSEEN_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `host calibrate`: measures (progress on stderr), fits with the twin, and writes the
/// scenario file (comment header + TOML) to stdout or `--out`.
pub(crate) fn calibrate(args: &CalibrateArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.out {
        // Before the minute of measuring, not after it.
        crate::output::check_target("--out", path)?;
    }
    let budget = args.duration.map_or(
        if args.check_unseen {
            CHECK_UNSEEN_BUDGET
        } else {
            CALIBRATE_BUDGET
        },
        DurationArg::as_std,
    );
    let load = args.load_duration.as_std();
    if args.check_unseen && load < crate::host_unseen_cmd::MIN_LOAD {
        return Err(input_error(format!(
            "--load-duration {:.1} s: each load needs at least {} s",
            load.as_secs_f64(),
            crate::host_unseen_cmd::MIN_LOAD.as_secs()
        )));
    }
    use ticklab_host::calibrate::Tolerate;
    let tolerate = match (args.force, args.tolerate_steal) {
        (true, _) => Tolerate::Everything,
        (false, true) => Tolerate::Steal,
        (false, false) => Tolerate::Nothing,
    };
    let stop = Stop::on_signals()?;
    let sim = |s: &ticklab_schema::scenario::Scenario| {
        crate::host_twin_cmd::twin_report(s, None, false)
            .map_err(ticklab_host::calibrate::SimulatorError::new)
    };
    // The KVM part inside calibrate pins guest_halt_poll_ns: first undo a killed run's.
    restore_leftover_params()?;
    // Its phases through the one progress line (a timed log off a terminal).
    let result = crate::progress::steps("calibrate", |progress| {
        ticklab_host::calibrate::calibrate(budget, &stop, &sim, progress, tolerate)
    });
    let calibration = calibrate_outcome(result, &stop)?;
    // What the phase line only flashed: the phases fitted from although contaminated.
    let flag = match tolerate {
        Tolerate::Everything => "--force",
        Tolerate::Steal | Tolerate::Nothing => "--tolerate-steal",
    };
    for c in &calibration.measurements.contaminated {
        eprintln!(
            "calibrate: warning: fitted from the contaminated {} phase ({flag}): {}",
            c.phase, c.why
        );
    }
    use ticklab_report::calibrate::{fit_lines, flagged_lines, scenario_file, steal_line};
    eprintln!("calibrate: {}", steal_line(&calibration.measurements));
    for line in calibration.fit_quality.iter().flat_map(fit_lines) {
        eprintln!("calibrate: {line}");
    }
    for line in flagged_lines(calibration.ledger.entries().len(), &calibration.sensitivity) {
        eprintln!("calibrate: {line}");
    }
    let text = scenario_file(&calibration);
    match &args.out {
        Some(path) => {
            crate::output::write_file("--out", path, text.as_bytes())?;
            eprintln!("calibrate: wrote {}", path.display());
        }
        // The check's table is the output; the file only where asked for.
        None if args.check_unseen => {}
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    if args.check_unseen {
        let check = crate::progress::steps("check-unseen", |progress| {
            crate::host_unseen_cmd::check(&text, budget, load, &stop, progress)
        })?;
        crate::host_unseen_cmd::print(&check, args.json)?;
    }
    Ok(())
}

/// Maps a calibration error to the binary's: bad input is exit code 2, an interrupted run
/// exit code 130, having written nothing.
fn calibrate_outcome<T>(
    result: Result<T, ticklab_host::calibrate::CalibrateError>,
    stop: &Stop,
) -> anyhow::Result<T> {
    use ticklab_host::calibrate::CalibrateError;
    match result {
        Ok(c) => Ok(c),
        Err(CalibrateError::Interrupted) => Err(interrupted(
            &stop
                .reason()
                .map_or_else(|| "a stop".into(), StopReason::name),
            "calibration incomplete, nothing written",
        )),
        Err(e @ CalibrateError::Contaminated(_)) => {
            Err(crate::error::Contaminated(format!("host calibrate: {e}; nothing written")).into())
        }
        Err(e) => Err(library_error(e)),
    }
}

/// What the twin of this host predicts for the syscall loop the run measured (docs/experiments.md
/// E4): on a housekeeping CPU as booted and on a nohz_full CPU. `None` without a syscall result,
/// or (with a note on stderr) when the kernel version is unreadable or the twin refuses.
fn syscall_prediction(report: &Report) -> Option<HostPrediction> {
    let (cpu, calls, ns) = report.workloads.iter().find_map(|w| match w {
        WorkloadResult::Syscall(s) if s.calls > 0 => Some((s.cpu, s.calls, s.ns_per_call)),
        _ => None,
    })?;
    let release = match &report.source {
        Source::Host { kernel, .. } => kernel.clone(),
        Source::Twin { .. } => return None,
    };
    let Some(version) = ticklab_host::calibrate::major_minor(&release) else {
        eprintln!("ticklab: no twin prediction: kernel release {release:?} has no major.minor");
        return None;
    };
    // HZ as host run inferred it; a value the kernel cannot be built with (0 = unknown) is
    // modelled as the Kconfig default 250, and said so.
    let hz = match check_hz(report.hz) {
        Ok(hz) => hz,
        Err(_) => {
            eprintln!(
                "ticklab: twin prediction: HZ {} not inferred, modelled as 250",
                report.hz
            );
            250
        }
    };
    let nr = report.cpus.len() as u32;
    match e4::predict_host(nr, &version, hz, ns, cpu, calls) {
        Ok(mut p) => {
            // A kernel built without CONFIG_NO_HZ_FULL has no nohz_full CPU whatever the
            // boot line: say so on the prediction's line rather than print a number.
            if ticklab_host::probe::inspect::probes::running_kernel_built_with("NO_HZ_FULL")
                == Some(false)
            {
                p.nohz_full = None;
                p.nohz_full_not_possible = Some("CONFIG_NO_HZ_FULL".into());
            }
            Some(p)
        }
        Err(e) => {
            eprintln!("ticklab: no twin prediction: {e}");
            None
        }
    }
}

/// `--set` values, parsed (bad input → exit code 2 before anything runs).
pub(crate) fn parse_settings(specs: &[String]) -> anyhow::Result<Vec<ParamSetting>> {
    specs
        .iter()
        .map(|s| ParamSetting::parse(s).map_err(harness_error))
        .collect()
}

/// Applies a restore record a killed run left under /run, saying what it restored.
pub(crate) fn restore_leftover_params() -> anyhow::Result<()> {
    let record = std::path::Path::new(sysfs_params::RESTORE_RECORD);
    if !record.exists() {
        return Ok(());
    }
    for (path, value) in sysfs_params::restore_leftover(record).map_err(harness_error)? {
        eprintln!("ticklab: restored {path} = {value} (left by a killed run)");
    }
    Ok(())
}

/// Restores the parameters a run set, saying so (the guard's drop would too, but a run that
/// ends by signal leaves through `process::exit`, which runs no destructors).
pub(crate) fn restore_params(guard: &mut ParamGuard) {
    let changed: Vec<(String, String)> = guard
        .changes()
        .iter()
        .map(|(n, old, _)| (n.clone(), old.clone()))
        .collect();
    let failed = guard.restore();
    for (name, old) in changed {
        if failed.is_empty() {
            eprintln!("ticklab: {name} restored to {old}");
        }
    }
    for f in failed {
        eprintln!(
            "ticklab: could not restore {f}; the restore record under /run stays for the next run"
        );
    }
}

fn harness_error(e: HarnessError) -> anyhow::Error {
    library_error(e)
}

/// The host-only details the text report shows, as `ticklab-report` takes them.
fn extras(run: &HostRun) -> HostRunExtras {
    let d = &run.host_run;
    HostRunExtras {
        interrupted: d.interrupted.clone(),
        syscall_prediction: None,
        pingpong_mode: d.pingpong_mode.clone(),
        frame_groups: d
            .frame_groups
            .iter()
            .map(|g| FrameGroupWakeups {
                group: g.group.clone(),
                wakeup: WakeupLatency {
                    min_us: g.wakeup.min_us,
                    p50_us: g.wakeup.p50_us,
                    p99_us: g.wakeup.p99_us,
                    max_us: g.wakeup.max_us,
                },
                workers: g
                    .workers
                    .iter()
                    .map(|w| FrameWorker {
                        cpu: w.cpu,
                        ns_per_unit: w.ns_per_unit,
                        undisturbed_us: w.undisturbed_us,
                        policy: w.policy.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}
