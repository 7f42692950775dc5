//! `ticklab host inspect | irqs | why`: thin wiring around `ticklab_host::probe`.

use crate::args::{DurationArg, MetricsFormat, parse_duration_arg};
use crate::error::input_error;
use clap::Args;
use ticklab_host::probe::{self, inspect::InspectOptions, irqs, why};
use ticklab_schema::versioned::{HOST_PROBE_SCHEMA_VERSION, Versioned};

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
}

/// Writes to stdout; a closed pipe (`| head`) ends output quietly instead of panicking.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
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

/// Runs `host irqs`.
pub(crate) fn irqs(args: &IrqsArgs) -> anyhow::Result<()> {
    let root = probe::HostRoot::live();
    let (before, after) = irqs::sample_window(&root, args.duration.as_std())
        .map_err(|e| anyhow::anyhow!("/proc/interrupts: {e}"))?;
    let rates = irqs::rates_between(&before, &after, args.all);
    if args.format == MetricsFormat::Openmetrics {
        let families = probe::irqs_metrics::metric_families(&rates);
        return emit(&ticklab_schema::openmetrics::render(&families));
    }
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &rates))?
                + "\n"),
        )
    } else {
        emit(&rates.to_string())
    }
}

/// `--cpus`: a kernel cpulist naming at least one CPU.
fn cpus_arg(list: &str) -> anyhow::Result<Vec<u32>> {
    let set = ticklab_cmdline::parse_cpulist(list, u32::MAX)
        .map_err(|e| input_error(format!("--cpus: {e}")))?;
    if set.is_empty() {
        return Err(input_error(format!("--cpus {list:?}: names no CPU")));
    }
    Ok(set.iter().collect())
}

/// Runs `host why`.
pub(crate) fn why(args: &WhyArgs) -> anyhow::Result<()> {
    let cpus = args.cpus.as_deref().map(cpus_arg).transpose()?;
    let stop = ticklab_host::harness::stop::Stop::on_signals()?;
    let opts = why::WhyOptions {
        window: args.duration.as_std(),
        cpus,
        no_trace: args.no_trace,
        save_trace: args.save_trace.clone(),
    };
    let report = why::observe(&opts, &stop).map_err(|e| {
        if matches!(e, why::WhyError::CpuNotOnline { .. }) {
            input_error(format!("--cpus: {e}"))
        } else {
            anyhow::anyhow!(e)
        }
    })?;
    if args.json {
        emit(
            &(serde_json::to_string_pretty(&Versioned::new(HOST_PROBE_SCHEMA_VERSION, &report))?
                + "\n"),
        )
    } else {
        emit(&report.to_string())
    }
}
