//! `ticklab sim | compare`: one configuration, or several command lines side by side, in the
//! twin. The scenario comes from a file and/or flags ([`build_scenario`]); the tables come
//! from `ticklab-report`.

use crate::args::{DurationArg, MachineParser, NohzArg, hz_help, hz_parser, parse_duration_arg};
use crate::error::input_error;
use crate::progress::{Progress, with_progress};
use clap::Args;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{self, Machine};
use ticklab_schema::report::Report;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

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
    /// Simulated warm-up before the window (`1s`).
    #[arg(long, value_parser = parse_duration_arg)]
    warmup: Option<DurationArg>,
    /// Seed of the run's RNG.
    #[arg(long)]
    seed: Option<u64>,
}

/// `ticklab sim` arguments.
#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Kernel command line, in the kernel's syntax.
    #[arg(long)]
    cmdline: Option<String>,
    /// Print the versioned JSON report.
    #[arg(long)]
    json: bool,
}

/// `ticklab compare` arguments.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// A kernel command line; give several to compare them side by side.
    #[arg(long, required = true)]
    cmdline: Vec<String>,
    /// Print the reports as a JSON array.
    #[arg(long)]
    json: bool,
}

/// The scenario of `--machine` (or the default laptop) before any other flag: 6.10,
/// HZ=1000, `CONFIG_NO_HZ_FULL`, no workload, 10 s after 1 s of warm-up, seed 1.
fn preset_scenario(machine: Machine) -> Scenario {
    Scenario {
        name: "sim".into(),
        machine,
        kernel: Kernel {
            version: "6.10".into(),
            hz: 1000,
            nohz: NohzBuild::Full,
            high_res: true,
            cmdline: String::new(),
            rcu_fanout_leaf: None,
            skew_tick_backport: false,
        },
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
        Some(path) => {
            let text = crate::sweep_cmd::read_input(std::path::Path::new(path))
                .map_err(|e| input_error(format!("--scenario {e}")))?;
            let origin = if path == "-" { "<stdin>" } else { path };
            Scenario::from_toml(&text, origin).map_err(|e| input_error(e.to_string()))?
        }
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
    // Validate the command line now, as the scenario's kernel release reads it (its cpulist
    // grammar), so a typo is an input error before any work starts.
    let version = s.kernel.version_tuple().map_err(input_error)?;
    ticklab_cmdline::KernelCmdline::parse_for_kernel(&s.kernel.cmdline, nr, version)
        .map_err(|e| input_error(e.to_string()))?;
    Ok(s)
}

fn simulate_with_progress(s: &Scenario) -> anyhow::Result<Report> {
    let total_ms = (s.run.warmup_ns + s.run.duration_ns) / 1_000_000;
    let mut p = Progress::new(total_ms, "simulated ms");
    let r = ticklab_twin::simulate(s, |ns| p.set(ns / 1_000_000))
        .map_err(|e| input_error(e.to_string()))?;
    p.finish();
    Ok(r)
}

/// Runs `ticklab sim`.
pub(crate) fn sim(a: &SimArgs) -> anyhow::Result<()> {
    let s = build_scenario(&a.scenario, a.cmdline.as_deref())?;
    if let [TaskGroup::PingPong { .. }] = &s.workload.groups[..] {
        return sim_pingpong(&s, a.json);
    }
    let r = simulate_with_progress(&s)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "{} — {} — HZ={} — cmdline: {:?} — workload: {}",
            s.name,
            s.machine.description,
            s.kernel.hz,
            s.kernel.cmdline,
            s.workload.label()
        );
        print!("{}", ticklab_report::cpu_table(&r));
    }
    Ok(())
}

/// `ticklab sim` with a ping-pong workload: the E3 guest model
/// (`ticklab_twin::experiments::e3::simulate_pingpong`), one summary line per measure.
fn sim_pingpong(s: &Scenario, json: bool) -> anyhow::Result<()> {
    use ticklab_twin::kernel::kvm::ExitReason;
    let o = ticklab_twin::experiments::e3::simulate_pingpong(s).map_err(input_error)?;
    let exits: Vec<(&str, f64)> = ExitReason::ALL
        .iter()
        .map(|&r| (r.name(), o.exits_per_switch(r)))
        .collect();
    if json {
        let v = serde_json::json!({
            "schema_version": ticklab_schema::report::REPORT_SCHEMA_VERSION,
            "workload": s.workload.label(),
            "machine": s.machine.name,
            "cmdline": s.kernel.cmdline,
            "switches": o.switches,
            "ns_per_switch": o.ns_per_switch(),
            "exits_per_switch": exits.iter().map(|(n, v)| (n.to_string(), *v)).collect::<std::collections::BTreeMap<_, _>>(),
            "guest_busy_pct": o.guest_busy_pct(),
            "host_cpu_pct": o.host_cpu_pct(),
            "host_poll_pct": o.host_poll_pct(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{} — {} — HZ={} — cmdline: {:?} — workload: {} (E3 guest model)",
        s.name,
        s.machine.description,
        s.kernel.hz,
        s.kernel.cmdline,
        s.workload.label()
    );
    println!(
        "{} switches: {:.1} ns/switch; guest busy {:.1} %, host CPU {:.1} % (host polling {:.1} %)",
        o.switches,
        o.ns_per_switch(),
        o.guest_busy_pct(),
        o.host_cpu_pct(),
        o.host_poll_pct()
    );
    let list: Vec<String> = exits.iter().map(|(n, v)| format!("{n} {v:.2}")).collect();
    println!("VM exits per switch: {}", list.join(", "));
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
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = with_progress(scenarios.len() as u64, "configurations", |progress| {
        let simulate = |s: &Scenario| ticklab_twin::simulate(s, |_| {});
        ticklab_twin::sweep::parallel_map(&scenarios, threads, simulate, &progress)
    });
    let reports: Vec<Report> = results
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|e| input_error(e.to_string()))?;
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
