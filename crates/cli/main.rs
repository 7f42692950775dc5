//! The `ticklab` binary: argument parsing, progress and wiring. The work lives in the crates:
//! the twin and the host lab produce typed results, `ticklab-report` renders them.
//!
//! One module per group of subcommands (`twin_cmd`: sim and compare; `experiment_cmd`;
//! `bench_cmd`; `host_probe_cmd`: inspect, irqs, why, audit; `host_staleness_cmd`: staleness; `host_run_cmd`: run and calibrate; `host_unseen_cmd`: calibrate --check-unseen; `host_noise_cmd`: noise; `vm_cmd`: vm, vm compare, vm table; `vm_build_cmd`: vm build, vm kernels; `report_cmd`: plot and report --html; `sweep_cmd`: sweep, merge; `shell_cmd`: completions, man, json-schema; `man_pages`: a man page per subcommand),
//! the argument types they share in `args`, stderr progress in `progress`, and the exit-code
//! rule in `error`.

#![forbid(unsafe_code)]

mod args;
mod bench_cmd;
mod error;
mod experiment_cmd;
mod host_e3_cmd;
mod host_noise_cmd;
mod host_probe_cmd;
mod host_run_cmd;
mod host_staleness_cmd;
mod host_twin_cmd;
mod host_unseen_cmd;
mod man_pages;
mod output;
mod progress;
mod report_cmd;
mod shell_cmd;
mod sweep_cmd;
mod sweep_journal;
mod trace_out;
mod twin_cmd;
mod vm_build_cmd;
mod vm_cmd;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// A laboratory for the Linux kernel tick.
#[derive(Debug, Parser)]
#[command(name = "ticklab", version, about, after_help = args::overview())]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Command>,
    /// No progress bar or timing lines on standard error.
    #[arg(short = 'q', long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate one configuration with the twin.
    Sim(twin_cmd::SimArgs),
    /// Simulate several kernel command lines side by side.
    Compare(twin_cmd::CompareArgs),
    /// Reproduce a published experiment (e1-e4; listed below).
    #[command(
        after_help = "E5 is a benchmark of the twin's hrtimer core (scripts/hrtimer-callgrind.sh); E6 is the host lab (ticklab host ...)."
    )]
    Experiment(experiment_cmd::ExperimentArgs),
    /// Measure the twin's speed (simulated events per second).
    Bench(bench_cmd::BenchArgs),
    /// Measure and explain the real host.
    Host {
        #[command(subcommand)]
        cmd: HostCommand,
    },
    /// Boot a real kernel under QEMU, measure it with the host lab, hold the twin beside it.
    Vm(vm_cmd::VmArgs),
    /// Draw figures as SVG: an experiment's (e1-e4), or a sweep metric against a swept
    /// parameter.
    #[command(
        after_help = "Examples:\n  ticklab plot e1 -D 5s -o figures/\n  ticklab plot sweep.jsonl --metric irq_per_s --x workload -o irq.svg"
    )]
    Plot(report_cmd::PlotArgs),
    /// Write one self-contained HTML page for an experiment (e1-e4) or a sweep.
    #[command(
        after_help = "Examples:\n  ticklab report e1 --html e1.html\n  ticklab report sweep.jsonl --html sweep.html --x workload"
    )]
    Report(report_cmd::ReportArgs),
    /// Run a scenario over a grid of parameter values and seeds, in parallel (one row per run).
    Sweep(sweep_cmd::SweepArgs),
    /// Put the shard outputs of `sweep --shard I/N` back together.
    Merge(sweep_cmd::MergeArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(shell_cmd::CompletionsArgs),
    /// Print a man page (roff): `ticklab man | man -l -`, `ticklab man host run`; `--dir DIR`
    /// writes every subcommand's page.
    Man(shell_cmd::ManArgs),
    /// Print the JSON Schema of a JSON document ticklab writes (as in docs/schema/).
    JsonSchema(shell_cmd::JsonSchemaArgs),
}

#[derive(Debug, Subcommand)]
enum HostCommand {
    /// Describe the host's tick configuration.
    Inspect(host_probe_cmd::InspectArgs),
    /// Per-CPU interrupt rates over a window.
    Irqs(host_probe_cmd::IrqsArgs),
    /// Why is the tick running: per-CPU attribution of timer interrupts.
    Why(host_probe_cmd::WhyArgs),
    /// Is a set of CPUs isolated: each check pass/warn/fail with its evidence and fix
    /// (exit code 3 when one fails).
    Audit(host_probe_cmd::AuditArgs),
    /// How stale CLOCK_MONOTONIC_COARSE gets, read by a spinning thread on one CPU.
    Staleness(host_staleness_cmd::StalenessArgs),
    /// Run a workload spec on real threads.
    Run(host_run_cmd::RunArgs),
    /// OS noise: what the kernel takes from a busy pinned task, per CPU and per source.
    Noise(host_noise_cmd::NoiseArgs),
    /// Fit the twin to this host and print a scenario file.
    Calibrate(host_run_cmd::CalibrateArgs),
    /// E3 live: futex ping-pong at several guest_halt_poll_ns values (root), beside the twin
    /// calibrated at 0.
    HaltpollSweep(host_e3_cmd::SweepArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A closed or full stdout makes `print!` panic; the hook keeps that panic quiet and the
    // unwind runs every guard's destructor (tracefs instances, sysfs parameters) before the
    // policy below turns it into an exit code (crates/cli/error.rs).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if error::stdout_panic_error(info.payload()).is_none() {
            default_hook(info);
        }
    }));
    progress::set_quiet(cli.quiet);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)));
    let result = match outcome {
        Ok(r) => r.and_then(|()| std::io::Write::flush(&mut std::io::stdout()).map_err(Into::into)),
        Err(payload) => match error::stdout_panic_error(payload.as_ref()) {
            Some(io) => Err(anyhow::Error::from(io).context("writing the output to stdout")),
            None => std::panic::resume_unwind(payload),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let exit = error::exit_code(&e);
            if let error::Exit::Report(_) = exit {
                eprintln!("ticklab: {}", error::message(&e));
            }
            ExitCode::from(exit.code())
        }
    }
}

/// Runs one command.
fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        None => {
            if !cli.quiet {
                eprintln!(
                    "ticklab: no subcommand, so the main job: experiment E1 (`ticklab --help` lists the subcommands, `ticklab man` documents them)"
                );
            }
            experiment_cmd::experiment(&experiment_cmd::ExperimentArgs::e1_defaults())
        }
        Some(Command::Sim(a)) => twin_cmd::sim(&a),
        Some(Command::Compare(a)) => twin_cmd::compare(&a),
        Some(Command::Experiment(a)) => experiment_cmd::experiment(&a),
        Some(Command::Bench(a)) => bench_cmd::bench(&a),
        Some(Command::Host { cmd }) => match cmd {
            HostCommand::Inspect(a) => host_probe_cmd::inspect(&a),
            HostCommand::Irqs(a) => host_probe_cmd::irqs(&a),
            HostCommand::Why(a) => host_probe_cmd::why(&a),
            HostCommand::Audit(a) => host_probe_cmd::audit(&a),
            HostCommand::Staleness(a) => host_staleness_cmd::staleness(&a),
            HostCommand::Run(a) => host_run_cmd::run(&a),
            HostCommand::Noise(a) => host_noise_cmd::run(&a),
            HostCommand::Calibrate(a) => host_run_cmd::calibrate(&a),
            HostCommand::HaltpollSweep(a) => host_e3_cmd::sweep(&a),
        },
        Some(Command::Vm(a)) => vm_cmd::vm(&a),
        Some(Command::Plot(a)) => report_cmd::plot(&a),
        Some(Command::Report(a)) => report_cmd::report(&a),
        Some(Command::Sweep(a)) => sweep_cmd::sweep(&a),
        Some(Command::Merge(a)) => sweep_cmd::merge(&a),
        Some(Command::Completions(a)) => shell_cmd::completions(&a, Cli::command()),
        Some(Command::Man(a)) => shell_cmd::man(&a, Cli::command()),
        Some(Command::JsonSchema(a)) => shell_cmd::json_schema(&a),
    }
}
