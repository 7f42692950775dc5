//! `ticklab host run` — a workload spec on real pinned threads — and `host calibrate`.
//!
//! `host run` parses the spec and duration (bad input → exit code 2), installs the Ctrl-C /
//! SIGTERM handler, runs [`ticklab_host::harness::run_workload`] and prints the report as text
//! or JSON. An interrupted run still prints what it measured, marked as interrupted, and then
//! exits with 128 + the signal number (130 for Ctrl-C).

use std::io::Write;

use clap::Args;
use ticklab_host::harness::{
    self, HarnessError, HostRun, PingPongMode, RunConfig, Stop, StopReason,
};
use ticklab_schema::report::WorkloadResult;
use ticklab_schema::workload::Workload;

use crate::error::input_error;

/// `host run` arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workload spec, as for `ticklab sim` (e.g. `frames:1000@1:loop=0`, `hogs:2`,
    /// `pingpong:pipe@0,1:n=1000000`, `syscall:getpid@0:n=10000000`; join groups with `+`).
    #[arg(long)]
    pub workload: String,
    /// Run length (`500ms`, `10s`, `2m`): the window for hogs and frames, a cap for counted
    /// groups (ping-pong, syscall), which otherwise end the run when they finish.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Print the report as JSON (the shared schema plus a `host_run` object).
    #[arg(long)]
    pub json: bool,
    /// Frames with jitter above this many us count as fliers.
    #[arg(long, default_value_t = 10.0, value_name = "US")]
    pub flier_us: f64,
    /// SCHED_FIFO priority of frame workers (used when permitted).
    #[arg(long, default_value_t = 50, value_name = "PRIO")]
    pub fifo_priority: i32,
    /// Do not try SCHED_FIFO: frame workers stay SCHED_OTHER with timer slack 1 ns.
    #[arg(long)]
    pub no_fifo: bool,
    /// Do not mlockall while frame workers run.
    #[arg(long)]
    pub no_mlock: bool,
    /// Run ping-pong side B as a thread instead of a forked process (`perf bench sched pipe -T`).
    #[arg(long)]
    pub pingpong_threads: bool,
}

/// `host calibrate` arguments.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Total measurement budget; every phase is scaled to fit it (at least 5s).
    #[arg(long, default_value = "60s")]
    pub duration: String,
    /// Write the scenario file here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

/// Runs `host run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let duration = harness::parse_duration(&args.duration).map_err(input_error)?;
    let workload = Workload::parse(&args.workload, harness::os::possible_cpu_count())
        .map_err(|e| input_error(e.to_string()))?;
    let config = RunConfig {
        duration,
        flier_threshold_us: args.flier_us,
        fifo_priority: (!args.no_fifo).then_some(args.fifo_priority),
        lock_memory: !args.no_mlock,
        pingpong_mode: if args.pingpong_threads {
            PingPongMode::Threads
        } else {
            PingPongMode::Processes
        },
    };
    harness::validate(&workload, &config).map_err(harness_error)?;
    let stop = Stop::on_signals()?;
    let run = harness::run_workload(&workload, &config, &stop).map_err(harness_error)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &run)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", render(&run))?;
    }
    out.flush()?;
    if let Some(StopReason::Signal(sig)) = stop.reason() {
        std::process::exit(128 + sig);
    }
    Ok(())
}

/// Runs `host calibrate`: measures (progress on stderr), fits with the twin, and writes the
/// scenario file (comment header + TOML) to stdout or `--out`.
pub fn calibrate(args: &CalibrateArgs) -> anyhow::Result<()> {
    use ticklab_host::calibrate::{self as cal, CalibrateError};
    let budget = harness::parse_duration(&args.duration).map_err(input_error)?;
    let stop = Stop::on_signals()?;
    let sim = |s: &ticklab_schema::scenario::Scenario| {
        ticklab_twin::simulate(s, |_| {}).map_err(|e| e.to_string())
    };
    let started = std::time::Instant::now();
    let mut progress = |line: &str| {
        eprintln!(
            "[{:5.1} s] calibrate: {line}",
            started.elapsed().as_secs_f64()
        )
    };
    let c = match cal::calibrate(budget, &stop, &sim, &mut progress) {
        Ok(c) => c,
        Err(CalibrateError::Input(m)) => return Err(input_error(m)),
        Err(CalibrateError::Harness { phase, source }) if source.is_input() => {
            return Err(input_error(format!("{phase}: {source}")));
        }
        Err(CalibrateError::Interrupted) => {
            eprintln!("calibrate: interrupted, nothing written");
            std::process::exit(
                128 + stop.reason().map_or(2, |r| match r {
                    StopReason::Signal(s) => s,
                    _ => 2,
                }),
            );
        }
        Err(e) => return Err(e.into()),
    };
    let text = c.file_text();
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| input_error(format!("--out {}: {e}", path.display())))?;
            eprintln!("calibrate: wrote {}", path.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(())
}

fn harness_error(e: HarnessError) -> anyhow::Error {
    if e.is_input() {
        input_error(e.to_string())
    } else {
        e.into()
    }
}

fn us(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Plain-text report: the workload results, then the shared per-CPU table (with warnings).
fn render(run: &HostRun) -> String {
    let r = &run.report;
    let mut s = format!(
        "host run: {} on {} ({:.3} s{})\n",
        r.label,
        r.machine,
        r.seconds(),
        match &run.host_run.interrupted {
            Some(why) => format!(", INTERRUPTED by {why}: partial"),
            None => String::new(),
        }
    );
    let mut frame_details = run.host_run.frame_groups.iter();
    for w in &r.workloads {
        match w {
            WorkloadResult::Hogs { cpus } => {
                s += &format!("\nhogs on CPUs {cpus:?}\n");
            }
            WorkloadResult::Frames(g) => {
                s += "\n";
                s += &ticklab_report::frame_table(g);
                if let Some(d) = frame_details.next() {
                    s += &format!(
                        "wakeup {}: min {} us  p50 {} us  p99 {} us  max {} us\n",
                        d.group,
                        us(d.wakeup.min_us),
                        us(d.wakeup.p50_us),
                        us(d.wakeup.p99_us),
                        us(d.wakeup.max_us)
                    );
                    for wk in &d.workers {
                        s += &format!(
                            "  cpu {}: {:.3} ns/unit, undisturbed {} us, {}\n",
                            wk.cpu,
                            wk.ns_per_unit,
                            us(wk.undisturbed_us),
                            wk.policy
                        );
                    }
                }
            }
            WorkloadResult::PingPong(p) => {
                s += &format!(
                    "\npingpong {} CPUs {},{} ({}): {} round trips, {:.1} ns/round trip, {:.1} ns/switch\n",
                    p.method,
                    p.cpus.0,
                    p.cpus.1,
                    run.host_run.pingpong_mode,
                    p.round_trips,
                    p.ns_per_round_trip,
                    p.ns_per_switch
                );
            }
            WorkloadResult::Syscall(c) => {
                s += &format!(
                    "\nsyscall {} on CPU {}: {} calls, {:.2} ns/call\n",
                    c.syscall,
                    c.cpu.map_or("any".to_string(), |c| c.to_string()),
                    c.calls,
                    c.ns_per_call
                );
            }
        }
    }
    s += "\n";
    s += &ticklab_report::cpu_table(r);
    s
}
