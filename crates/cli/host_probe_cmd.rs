//! `ticklab host inspect | irqs | why | audit`: thin wiring around `ticklab_host::probe` and
//! `ticklab_host::audit`.
//!
//! `irqs` and `why` observe a window; SIGINT or SIGTERM ends it early, the report of the
//! shorter window is printed (marked), and the exit code is 130 ([`crate::error::Interrupted`]).

use crate::args::{DurationArg, MetricsFormat, parse_duration_arg};
use crate::error::{input_error, interrupted, library_error, library_error_naming};
use crate::output::emit;
use clap::Args;
use std::time::Duration;
use ticklab_host::harness::{self, stop::Stop};
use ticklab_host::probe::{self, inspect::InspectOptions, irqs, why};
use ticklab_schema::versioned::{HOST_PROBE_SCHEMA_VERSION, Versioned};
use ticklab_schema::workload::Workload;

/// `host inspect` arguments.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// Print JSON instead of the screen.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `host irqs` arguments.
#[derive(Debug, Args)]
pub(crate) struct IrqsArgs {
    /// Sampling window, e.g. `10s`, `500ms`.
    #[arg(short = 'D', short_alias = 'd', long, default_value = "5s", value_parser = parse_duration_arg)]
    pub(crate) duration: DurationArg,
    /// Show every row of /proc/interrupts, not just LOC, RES, CAL and IWI.
    #[arg(long)]
    pub(crate) all: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// `openmetrics`: gauges for node-exporter's textfile collector instead of the table.
    #[arg(long, value_enum, default_value_t, conflicts_with = "json")]
    pub(crate) format: MetricsFormat,
}

/// `host why` arguments.
#[derive(Debug, Args)]
pub(crate) struct WhyArgs {
    /// Observation window, e.g. `5s`, `500ms`.
    #[arg(short = 'D', short_alias = 'd', long, default_value = "5s", value_parser = parse_duration_arg)]
    pub(crate) duration: DurationArg,
    /// CPUs to report, as a kernel cpulist (`1`, `0-3,8`); default all online CPUs.
    #[arg(short = 'c', long)]
    pub(crate) cpus: Option<String>,
    /// Print JSON instead of the report.
    #[arg(long)]
    pub(crate) json: bool,
    /// Do not trace; sample /proc/timer_list instead (the fallback method).
    #[arg(long)]
    pub(crate) no_trace: bool,
    /// Also write the raw trace text to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) save_trace: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) trace: crate::trace_out::TraceArgs,
    /// Run this workload (the spec of `host run --workload`) while observing: it starts
    /// --settle before the window and is stopped after it, so that the report explains a
    /// CPU under a known load (`hogs:1@1`, two tasks on one CPU: `hogs:1@1+hogs:1@1`). A
    /// counted group (ping-pong, syscall) ends when its count is done, maybe inside the window.
    #[arg(long, value_name = "SPEC")]
    pub(crate) workload: Option<String>,
    /// With --workload: how long it runs before the window opens.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, requires = "workload")]
    pub(crate) settle: DurationArg,
}

/// `host audit` arguments.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// CPUs to audit, as a kernel cpulist (`1`, `2-7`); default the host's isolated set
    /// (nohz_full, isolcpus).
    #[arg(short = 'c', long)]
    pub(crate) cpus: Option<String>,
    /// Print JSON instead of the report.
    #[arg(long)]
    pub(crate) json: bool,
    /// Read /proc, /sys and /dev under this directory instead of / (a tree captured from
    /// another host).
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<std::path::PathBuf>,
}

/// Runs `host inspect`.
pub(crate) fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let report = probe::inspect::inspect(&InspectOptions::live());
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &report))?
                + "\n"),
        )
    } else {
        emit(&report.to_string())
    }
}

/// The error after a partial report, when `stop` ended the window.
fn interrupted_by(stop: &Stop) -> anyhow::Result<()> {
    match stop.reason() {
        Some(r) => Err(interrupted(
            &r.name(),
            "the report above covers a shorter window",
        )),
        None => Ok(()),
    }
}

/// Runs `host irqs`.
pub(crate) fn irqs(args: &IrqsArgs) -> anyhow::Result<()> {
    let root = probe::HostRoot::live();
    let stop = Stop::on_signals()?;
    let proc_err = |e| anyhow::anyhow!("/proc/interrupts: {e}");
    let before = irqs::snapshot(&root).map_err(proc_err)?;
    let cut = crate::progress::measure(
        crate::progress::Window {
            settle: Duration::ZERO,
            window: args.duration.as_std(),
            cpus: None,
            after: "reporting",
            live: false,
            command: "host irqs",
        },
        || stop.sleep(args.duration.as_std()),
    );
    let after = irqs::snapshot(&root).map_err(proc_err)?;
    let rates = irqs::rates_between(&before, &after, args.all);
    let window = after.at.duration_since(before.at);
    if window.as_nanos() < u128::from(ticklab_host::harness::MIN_RATE_WINDOW_NS) {
        eprintln!(
            "ticklab: warning: the window lasted {:.3} ms, under {} ms: per-second rates rest \
             on a handful of interrupts (give -D 1s or more)",
            window.as_secs_f64() * 1e3,
            ticklab_host::harness::MIN_RATE_WINDOW_NS / 1_000_000
        );
    }
    if args.format == MetricsFormat::Openmetrics {
        let families = probe::irqs_metrics::metric_families(&rates);
        return emit(&ticklab_report::openmetrics::render(&families));
    }
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &rates))?
                + "\n"),
        )?;
    } else {
        if cut {
            eprintln!(
                "ticklab: window cut to {:.3} s of {:.3} s",
                after.at.duration_since(before.at).as_secs_f64(),
                args.duration.as_std().as_secs_f64()
            );
        }
        emit(&rates.to_string())?;
    }
    interrupted_by(&stop)
}

/// `--cpus`: a kernel cpulist naming at least one CPU; `N` (the last CPU) is the highest
/// online CPU, as the kernel resolves it on this host.
fn cpus_arg(list: &str) -> anyhow::Result<Vec<u32>> {
    let nr_cpus = ticklab_host::harness::os::online_cpus()
        .and_then(|s| s.last())
        .map_or(u32::MAX, |c| c + 1);
    let set = ticklab_cmdline::parse_cpulist(list, nr_cpus)
        .map_err(|e| input_error(format!("--cpus: {e}")))?;
    if set.is_empty() {
        return Err(input_error(format!("--cpus {list:?}: names no CPU")));
    }
    Ok(set.iter().collect())
}

/// Runs `host why`.
pub(crate) fn why(args: &WhyArgs) -> anyhow::Result<()> {
    let cpus = args.cpus.as_deref().map(cpus_arg).transpose()?;
    if let Some(path) = &args.save_trace {
        // Refuse an unwritable path before the window, not after it (the file is rewritten
        // with the trace at the end).
        if crate::output::is_stdout(path) {
            return Err(input_error(
                "--save-trace -: the raw trace goes to a file (stdout carries the report)",
            ));
        }
        crate::output::check_target("--save-trace", path)?;
    }
    let stop = Stop::on_signals()?;
    let opts = why::WhyOptions {
        window: args.duration.as_std(),
        cpus,
        no_trace: args.no_trace,
        save_trace: args.save_trace.clone(),
        timeline: args.trace.trace.as_ref().map(|_| args.trace.window()),
    };
    if args.trace.trace.is_some() && args.no_trace {
        return Err(input_error(
            "--trace: the timeline comes from tracing; drop --no-trace",
        ));
    }
    let workload = match &args.workload {
        Some(spec) => {
            let w = Workload::parse(spec, harness::os::possible_cpu_count())
                .map_err(|e| input_error(format!("--workload: {e}")))?;
            let config = harness::RunConfig {
                // Covers the settle time and the window; stopped as soon as the window ends.
                duration: args.settle.as_std() + args.duration.as_std() + Duration::from_secs(5),
                ..harness::RunConfig::default()
            };
            harness::validate(&w, &config)
                .map_err(|e| input_error(format!("--workload {spec}: {e}")))?;
            Some((spec.clone(), w, config))
        }
        None => None,
    };
    let progress = crate::progress::Window {
        settle: if workload.is_some() {
            args.settle.as_std()
        } else {
            Duration::ZERO
        },
        window: args.duration.as_std(),
        cpus: opts.cpus.as_deref(),
        after: "reading the trace",
        live: false,
        command: "host why",
    };
    let observed = crate::progress::measure(progress, || match &workload {
        None => Ok(why::observe(&opts, &stop)),
        Some((spec, w, config)) => {
            let over = Stop::new();
            std::thread::scope(|s| {
                let runner = std::thread::Builder::new()
                    .name("ticklab-why-load".into())
                    .spawn_scoped(s, || harness::run_workload(w, config, &over))?;
                // The window opens once the workload's threads have run for --settle.
                stop.sleep(args.settle.as_std());
                let r = why::observe(&opts, &stop);
                over.request();
                match runner.join() {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => eprintln!("ticklab: warning: workload {spec}: {e}"),
                    Err(_) => anyhow::bail!("the workload thread panicked"),
                }
                Ok::<_, anyhow::Error>(r.map(|mut r| {
                    r.workload = Some(spec.clone());
                    r
                }))
            })
        }
    })?;
    let mut report = observed.map_err(|e| library_error_naming("--cpus", e))?;
    if let Some(path) = &args.trace.trace {
        let Some(w) = report.timeline.take() else {
            anyhow::bail!(
                "--trace: no timeline without tracing ({})",
                report.missing.join("; ")
            );
        };
        crate::trace_out::save(path, vec![w], "ticklab host why (tracefs)")?;
    }
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &report))?
                + "\n"),
        )?;
    } else {
        emit(&report.to_string())?;
    }
    interrupted_by(&stop)
}

/// Runs `host audit`: the report (or JSON) on stdout, then exit code 3 if a check failed.
pub(crate) fn audit(args: &AuditArgs) -> anyhow::Result<()> {
    let root = match &args.root {
        Some(dir) => {
            if !dir.join("proc").is_dir() && !dir.join("sys").is_dir() {
                return Err(input_error(format!(
                    "--root {}: expected a directory holding proc/ and sys/",
                    dir.display()
                )));
            }
            probe::HostRoot::at(dir)
        }
        None => probe::HostRoot::live(),
    };
    let cpus = match &args.cpus {
        Some(list) => {
            let nr = ticklab_host::audit::possible_cpus(&root);
            let set = ticklab_cmdline::parse_cpulist(list, nr)
                .map_err(|e| input_error(format!("--cpus: {e}")))?;
            if set.is_empty() {
                return Err(input_error(format!("--cpus {list:?}: names no CPU")));
            }
            Some(set)
        }
        None => None,
    };
    let report = ticklab_host::audit::audit(&root, cpus.as_ref()).map_err(|e| match e {
        ticklab_host::audit::AuditError::CpuNotOnline { .. } => library_error_naming("--cpus", e),
        ticklab_host::audit::AuditError::NothingIsolated => library_error(e),
    })?;
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &report))?
                + "\n"),
        )?;
    } else {
        emit(&report.to_string())?;
    }
    if report.failed() {
        let failed: Vec<&str> = report
            .checks
            .iter()
            .filter(|c| c.status == ticklab_host::audit::Status::Fail)
            .map(|c| c.id)
            .collect();
        return Err(crate::error::AuditFailed(format!(
            "{} check(s) failed: {}",
            failed.len(),
            failed.join(", ")
        ))
        .into());
    }
    Ok(())
}
