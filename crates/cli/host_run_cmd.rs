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
use ticklab_spec::report::{FrameGroupReport, Report, WorkloadResult};
use ticklab_spec::workload::Workload;

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
    /// Frames with jitter above this many µs count as fliers.
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
    /// Total measurement budget.
    #[arg(long, default_value = "60s")]
    pub duration: String,
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

/// Runs `host calibrate`.
pub fn calibrate(_args: &CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("host calibrate is not built yet")
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
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// The E2 frame table of one group.
fn frame_table(g: &FrameGroupReport) -> String {
    let mut s = String::from("Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)\n");
    for r in &g.rows {
        let fliers = if r.fliers == 0 {
            "0".to_string()
        } else {
            let mut list: Vec<String> = r.first_fliers.iter().map(u64::to_string).collect();
            if let Some(last) = r.last_flier
                && r.fliers > r.first_fliers.len() as u64
            {
                list.push(format!("..{last}"));
            }
            format!("{} ({})", r.fliers, list.join(","))
        };
        s += &format!(
            "{:<3} {} {} {} ({}) {} {} {} ({}) {}\n",
            r.cpu,
            r.frames,
            us(r.min_us),
            us(r.max_us),
            r.max_frame,
            us(r.avg_us),
            us(r.sigma_us),
            r.overruns,
            r.last_overrun,
            fliers
        );
    }
    s
}

fn cpu_table(r: &Report) -> String {
    let secs = r.seconds().max(1e-9);
    let mut s = format!(
        "{:>4} {:>9} {:>9} {:>8} {:>8} {:>6} {:>7}\n",
        "CPU", "LOC", "LOC/s", "RES", "CAL", "IWI", "busy%"
    );
    for c in &r.cpus {
        let busy = c
            .busy_ns
            .map(|b| format!("{:.1}", 100.0 * b as f64 / r.duration_ns.max(1) as f64))
            .unwrap_or_else(|| "-".into());
        s += &format!(
            "{:>4} {:>9} {:>9.1} {:>8} {:>8} {:>6} {:>7}\n",
            c.cpu,
            c.loc,
            c.loc as f64 / secs,
            c.res,
            c.cal,
            c.iwi,
            busy
        );
        for st in &c.idle_states {
            s += &format!(
                "     idle {:<10} usage {:>8} time {:>10.3} ms above {} below {}\n",
                st.name,
                st.usage,
                st.time_ns as f64 / 1e6,
                st.above,
                st.below
            );
        }
    }
    s
}

/// Plain-text report (until the shared renderers in `ticklab_report` take over).
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
                s += &format!(
                    "\nframes {}: {} Hz, loop={}, policy {}, fliers > {} µs\n",
                    g.group,
                    g.frequency_hz,
                    g.loop_units,
                    g.policy.as_deref().unwrap_or("?"),
                    g.flier_threshold_us
                );
                s += &frame_table(g);
                s += &format!(
                    "jitter {}: p50 {} µs  p99 {} µs  p99.9 {} µs\n",
                    g.group,
                    us(g.p50_us),
                    us(g.p99_us),
                    us(g.p999_us)
                );
                if let Some(d) = frame_details.next() {
                    s += &format!(
                        "wakeup {}: min {} µs  p50 {} µs  p99 {} µs  max {} µs\n",
                        d.group,
                        us(d.wakeup.min_us),
                        us(d.wakeup.p50_us),
                        us(d.wakeup.p99_us),
                        us(d.wakeup.max_us)
                    );
                    for wk in &d.workers {
                        s += &format!(
                            "  cpu {}: {:.3} ns/unit, undisturbed {} µs, {}\n",
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
    s += &cpu_table(r);
    match &r.energy {
        Some(e) => {
            s += &format!(
                "energy: {:.3} J, {:.3} W (RAPL package)\n",
                e.joules, e.watts
            )
        }
        None => s += "energy: not measured\n",
    }
    for w in &r.warnings {
        s += &format!("warning: {w}\n");
    }
    s
}
