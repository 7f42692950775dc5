//! `ticklab host noise`: OS noise seen by a busy sampler on each chosen CPU, per source
//! (docs/noise.md). Flags are checked before anything runs (bad input → exit code 2); the
//! measurement is [`ticklab_host::noise::run_noise`]; the text is
//! [`ticklab_report::noise::noise_report`]. An interrupted run (SIGINT, SIGTERM) prints what
//! it measured, marked partial, and exits with code 130.
//!
//! `--twin [SCENARIO]` runs a hog on the same CPUs in the twin of this host for the same
//! window and sets its [`Report::noise`](ticklab_schema::report::Report) beside the
//! measurement through the shared comparison; a twin report without noise accounting is said
//! to be so, with no numbers made up for it.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;

use clap::Args;
use ticklab_host::harness::{LiveSample, live_rows};
use ticklab_host::harness::{Stop, os::possible_cpu_count};
use ticklab_host::noise::{CpuDetours, HostNoise, NoiseConfig, NoiseSoFar, run_noise};
use ticklab_schema::units::parse_duration;
use ticklab_trace::{Arg, CpuTrack, Kind, TraceWriter};

use crate::args::MetricsFormat;
use crate::error::{input_error, interrupted, library_error};

/// `host noise` arguments.
#[derive(Debug, Args)]
pub(crate) struct NoiseArgs {
    /// CPUs to sample, one busy thread each, as a kernel cpulist (`1`, `0-3,8`).
    #[arg(short = 'c', long, value_name = "CPULIST")]
    pub(crate) cpus: String,
    /// Run length: `10s`, `500ms`, `2m`; a bare number is seconds (as rtla's `-d`).
    #[arg(short = 'D', short_alias = 'd', long, default_value = "10s", value_parser = ticklab_schema::units::parse_cli_duration)]
    pub(crate) duration: u64,
    /// A gap longer than this is a detour: `1us`, `500ns`; a bare number is microseconds (as
    /// rtla's `-T`). Default 1 us, rtla's.
    #[arg(long, value_parser = parse_threshold, default_value = "1us")]
    pub(crate) threshold: u64,
    /// Run the samplers SCHED_FIFO at this priority (root); SCHED_OTHER without it.
    #[arg(long, value_name = "PRIO")]
    pub(crate) priority: Option<i32>,
    /// Attribute by /proc count deltas only, without tracefs.
    #[arg(long)]
    pub(crate) no_trace: bool,
    /// Do not mlockall.
    #[arg(long)]
    pub(crate) no_mlock: bool,
    /// Print the report as JSON (the shared schema with `noise`, plus a `host_noise` object).
    #[arg(long)]
    pub(crate) json: bool,
    /// `openmetrics`: gauges for node-exporter's textfile collector instead of the report.
    #[arg(long, value_enum, default_value_t, conflicts_with = "json")]
    pub(crate) format: MetricsFormat,
    /// Write the detours as slices on CPU tracks (Chrome trace-event JSON, docs/trace.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<std::path::PathBuf>,
    /// Also run a hog on the same CPUs in the twin of this host and print its noise beside
    /// (SCENARIO as for `host run --twin`).
    #[arg(long, value_name = "SCENARIO", num_args = 0..=1, default_missing_value = "")]
    pub(crate) twin: Option<String>,
    /// Refresh a per-CPU table (LOC/s, busy %, steal %, and each sampled CPU's detours so
    /// far) of the last second on stderr once a second, as `rtla osnoise top` does (frame
    /// after frame when stderr is not a terminal). The coordinator, which wakes once a second
    /// anyway, also reads /proc/interrupts and /proc/stat then: on a sampled CPU that read is
    /// part of a detour it counts.
    #[arg(long)]
    pub(crate) live: bool,
}

/// `--threshold`: a duration, or a bare number of microseconds; at most 1 s.
fn parse_threshold(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let ns = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        parse_duration(&format!("{t}us")).map_err(|e| e.to_string())?
    } else {
        parse_duration(t).map_err(|e| e.to_string())?
    };
    if ns > 1_000_000_000 {
        return Err(format!("{s}: expected at most 1s"));
    }
    Ok(ns)
}

/// The CPUs of `-c`, checked against the possible CPUs.
fn cpus_arg(list: &str) -> anyhow::Result<Vec<u32>> {
    let set = ticklab_cmdline::parse_cpulist(list, possible_cpu_count())
        .map_err(|e| input_error(format!("-c {list:?}: {e}")))?;
    if set.is_empty() {
        return Err(input_error(format!("-c {list:?}: names no CPU")));
    }
    Ok(set.iter().collect())
}

/// The measurement, with the phase line on stderr (the noise so far and, with `--live`, the
/// last second's table); an input error when the host refuses the configuration.
fn measure(args: &NoiseArgs, config: &NoiseConfig, stop: &Stop) -> anyhow::Result<HostNoise> {
    // The phase line with the noise so far, and with --live the table of the last second.
    let mut phases = crate::progress::Phases::stderr(std::time::Duration::from_secs(1));
    phases.phase("measuring", Some(config.duration));
    let mut last = args.live.then(LiveSample::take);
    let mut progress = |so_far: &NoiseSoFar| {
        phases.rate(crate::progress::noise_rate(&so_far.cpus));
        if let Some(prev) = &mut last {
            let now = LiveSample::take();
            let rows = live_rows(prev, &now, Some(&config.cpus));
            phases.block(crate::progress::live_frame(
                "host noise",
                &rows,
                Some(&so_far.cpus),
                so_far.elapsed,
                so_far.window,
            ));
            *prev = now;
        }
        phases.tick();
    };
    let run = run_noise(config, stop, &mut progress);
    phases.finish();
    run.map_err(library_error)
}

/// Runs `host noise`.
pub(crate) fn run(args: &NoiseArgs) -> anyhow::Result<()> {
    let config = NoiseConfig {
        cpus: cpus_arg(&args.cpus)?,
        duration: std::time::Duration::from_nanos(args.duration),
        threshold_ns: args.threshold,
        fifo_priority: args.priority,
        trace: !args.no_trace,
        lock_memory: !args.no_mlock,
    };
    ticklab_host::noise::validate(&config).map_err(library_error)?;
    if let Some(path) = &args.trace {
        std::fs::File::create(path)
            .map_err(|e| input_error(format!("--trace {}: {e}", path.display())))?;
    }
    let twin = match &args.twin {
        Some(arg) => Some(crate::host_twin_cmd::twin_scenario(arg)?),
        None => None,
    };
    let stop = Stop::on_signals()?;
    let run = measure(args, &config, &stop)?;
    if let Some(path) = &args.trace {
        write_trace(path, &run)?;
    }
    let beside = match &twin {
        Some((scenario, notes)) => {
            let spec = format!("hogs:{}@{}", config.cpus.len(), args.cpus);
            let workload = ticklab_schema::workload::Workload::parse(&spec, possible_cpu_count())
                .map_err(|e| input_error(format!("--twin: {spec}: {e}")))?;
            let (report, rows) =
                crate::host_twin_cmd::beside(&run.report, &workload, scenario, None)?;
            Some((scenario, notes, report, rows))
        }
        None => None,
    };
    let mut out = std::io::stdout().lock();
    if args.format == MetricsFormat::Openmetrics {
        let mut families = ticklab_report::openmetrics::report_metrics(&run.report);
        families.extend(ticklab_report::openmetrics::noise_metrics(&run.report));
        write!(out, "{}", ticklab_report::openmetrics::render(&families))?;
    } else if args.json {
        let mut v = serde_json::to_value(&run.report)?;
        v["host_noise"] = serde_json::to_value(&run.details)?;
        if let Some((_, _, report, rows)) = &beside {
            v["twin"] = serde_json::to_value(report)?;
            v["comparison"] = serde_json::to_value(rows)?;
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        let text = ticklab_report::noise::noise_report(&run.report, Some(&run.details));
        write!(out, "{text}")?;
        if let Some((scenario, notes, report, rows)) = &beside {
            crate::host_twin_cmd::write_twin_header(&mut out, scenario, notes, report)?;
            if report.noise.is_none() {
                writeln!(
                    out,
                    "  the twin's report has no noise accounting: no predicted noise to set \
                     beside the measurement"
                )?;
            }
            write!(out, "{}", ticklab_report::comparison_tables(rows))?;
        }
    }
    out.flush()?;
    if let Some(why) = &run.details.interrupted {
        return Err(interrupted(why, "the report above is partial"));
    }
    Ok(())
}

/// The detours as slices (docs/trace.md vocabulary): on each CPU's track a `task` slice
/// `detour` per detour, its sources in the argument, time since the first sampler started.
fn write_trace(path: &std::path::Path, run: &HostNoise) -> anyhow::Result<()> {
    let t0 = run.detours.iter().map(|c| c.start_ns).min().unwrap_or(0);
    let end = run.report.duration_ns.max(1)
        + run
            .detours
            .iter()
            .map(|c| c.start_ns - t0)
            .max()
            .unwrap_or(0);
    let mut w = TraceWriter::new(1, "host noise", 0, end, crate::trace_out::limit_per_run(1));
    let name: Arc<str> = Arc::from("detour");
    for CpuDetours {
        cpu,
        start_ns,
        detours,
    } in &run.detours
    {
        let mut track = CpuTrack::new(*cpu);
        w.name_track(&track);
        let off = start_ns - t0;
        for d in detours {
            let at = off + d.at_ns;
            let sources: Vec<String> = d
                .sources
                .iter()
                .map(|s| format!("{:?} {}", s.class, s.name).to_lowercase())
                .collect();
            let label = if sources.is_empty() {
                "hardware".to_string()
            } else {
                sources.join(" + ")
            };
            w.begin(
                &mut track,
                Kind::Task,
                &name,
                at,
                Some(("sources", Arg::Str(Arc::from(label.as_str())))),
            );
            w.end(&mut track, Kind::Task, at + d.ns);
            if w.full(at) {
                break;
            }
        }
        w.close(&mut track);
    }
    crate::trace_out::save(path, vec![w], "host noise")
}

/// The guest probe of `vm --probe noise`: the CPUs checked against the guest's vCPUs, the
/// window in whole seconds (rtla's unit, at least 1), the peer when `rtla` exists.
pub(crate) fn guest_probe(
    cpus: &str,
    vcpus: u32,
    duration_ns: u64,
    rtla: &std::path::Path,
) -> anyhow::Result<ticklab_vm::GuestProbe> {
    let set = ticklab_cmdline::parse_cpulist(cpus, vcpus).map_err(|e| {
        input_error(format!(
            "--noise-cpus {cpus:?}: {e} (the guest has {vcpus} vCPUs)"
        ))
    })?;
    if set.is_empty() {
        return Err(input_error(format!("--noise-cpus {cpus:?}: names no CPU")));
    }
    let peer = if rtla.as_os_str() == "none" {
        None
    } else if rtla.is_file() {
        Some(rtla.to_path_buf())
    } else {
        eprintln!(
            "vm: {} not found: no rtla peer (scripts/setup.sh installs rtla)",
            rtla.display()
        );
        None
    };
    Ok(ticklab_vm::GuestProbe::Noise {
        cpus: set.to_string(),
        seconds: duration_ns.div_ceil(1_000_000_000).max(1) as u32,
        peer,
    })
}

/// The text of `vm --probe noise`: ticklab's report from the guest (durations labelled
/// emulated under TCG), then the peer's counts beside ticklab's, or why the peer did not run.
pub(crate) fn guest_text(
    o: &ticklab_vm::qemu::VmOutput,
    kernel: &ticklab_vm::GuestKernel,
) -> anyhow::Result<String> {
    use ticklab_vm::initramfs::PEER_MARKER;
    if o.guest_rc != 0 {
        anyhow::bail!(
            "ticklab in the guest exited with {}; console tail:\n{}",
            o.guest_rc,
            o.console
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let (json, peer) = match o.data.split_once(PEER_MARKER) {
        Some((a, b)) => (a, Some(b)),
        None => (o.data.as_str(), None),
    };
    let v: serde_json::Value = serde_json::from_str(json.trim()).map_err(|e| {
        anyhow::anyhow!(
            "the guest's output is not a host noise report: {e}; it begins {:?}",
            json.chars().take(200).collect::<String>()
        )
    })?;
    let report: ticklab_schema::report::Report = serde_json::from_value(v.clone())?;
    let details: Option<ticklab_schema::host_noise::HostNoiseDetails> = v
        .get("host_noise")
        .and_then(|d| serde_json::from_value(d.clone()).ok());
    let mut text = String::new();
    if o.accel.emulated() {
        text.push_str(
            "(guest under TCG: interference counts and sources are comparable; every duration \
             below — runtime, noise, detours, loop cost — is EMULATED time, not hardware's)\n",
        );
    }
    text += &ticklab_report::noise::noise_report(&report, details.as_ref());
    let has_osnoise = std::fs::read_to_string(&kernel.config_path)
        .map(|c| c.lines().any(|l| l.trim() == "CONFIG_OSNOISE_TRACER=y"))
        .unwrap_or(false);
    text.push_str("\npeer: rtla osnoise top on the same CPUs, for as long, after ticklab\n");
    match peer {
        None => text.push_str("  the peer did not run: no rtla binary was packed (--rtla)\n"),
        Some(out) => match ticklab_vm::rtla::parse_osnoise_top(out) {
            Ok(rows) if !rows.is_empty() => {
                if let Some(n) = &report.noise {
                    text += &ticklab_vm::rtla::beside(n, &rows);
                }
            }
            Ok(_) | Err(_) if !has_osnoise => {
                let _ = writeln!(
                    text,
                    "  the peer cannot run: {} has no CONFIG_OSNOISE_TRACER (boot the \
                     PREEMPT_RT kernel, /boot/vmlinuz-*-rt-amd64); rtla said: {}",
                    kernel.config_path.display(),
                    out.trim()
                );
            }
            Ok(_) => {
                let _ = writeln!(text, "  rtla printed no CPU row; it said: {}", out.trim());
            }
            Err(e) => {
                let _ = writeln!(text, "  {e}");
            }
        },
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::noise::DEFAULT_THRESHOLD_NS;

    #[test]
    fn bare_numbers_take_the_rtla_units() {
        assert_eq!(
            ticklab_schema::units::parse_cli_duration("10"),
            Ok(10_000_000_000)
        );
        assert_eq!(
            ticklab_schema::units::parse_cli_duration("500ms"),
            Ok(500_000_000)
        );
        assert!(ticklab_schema::units::parse_cli_duration("x").is_err());
        assert!(ticklab_schema::units::parse_cli_duration("").is_err());
        assert_eq!(parse_threshold("1us"), Ok(DEFAULT_THRESHOLD_NS));
        assert_eq!(parse_threshold("5"), Ok(5_000));
        assert_eq!(parse_threshold("500ns"), Ok(500));
        assert!(parse_threshold("2s").is_err());
        assert!(parse_threshold("-1").is_err());
    }
}
