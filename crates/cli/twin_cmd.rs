//! `ticklab sim | compare | experiment | bench`: the twin's commands.

use crate::error::input_error;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine;
use ticklab_schema::report::Report;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::units::parse_duration;
use ticklab_schema::workload::Workload;
use ticklab_twin::experiments::{e1, e2};

/// Tick build option on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NohzArg {
    /// CONFIG_HZ_PERIODIC.
    Periodic,
    /// CONFIG_NO_HZ_IDLE.
    Idle,
    /// CONFIG_NO_HZ_FULL.
    Full,
}

/// What to simulate: a scenario file, or a machine preset plus flags.
#[derive(Debug, Clone, Args)]
pub struct ScenarioArgs {
    /// Scenario file (TOML); flags given as well override its values.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Machine preset.
    #[arg(long)]
    pub machine: Option<String>,
    /// CONFIG_HZ (100, 250, 300, 1000).
    #[arg(long)]
    pub hz: Option<u32>,
    /// Tick build option.
    #[arg(long, value_enum)]
    pub nohz: Option<NohzArg>,
    /// Kernel version MAJOR.MINOR (selects era switches).
    #[arg(long = "kernel-version")]
    pub kernel_version: Option<String>,
    /// Workload spec (`idle`, `hogs:2`, `hogs:4@4-7`).
    #[arg(long)]
    pub workload: Option<String>,
    /// Measured simulated time (`10s`, `500ms`).
    #[arg(long)]
    pub duration: Option<String>,
    /// Simulated warm-up before the window.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Seed of the run's RNG.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `ticklab sim` arguments.
#[derive(Debug, Args)]
pub struct SimArgs {
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
pub struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// A kernel command line; give several to compare them side by side.
    #[arg(long, required = true)]
    cmdline: Vec<String>,
    /// Print the reports as a JSON array.
    #[arg(long)]
    json: bool,
}

/// `ticklab experiment` arguments.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Which experiment (`e1`, `e2`).
    pub name: String,
    /// Measured simulated time per point (default: 30s for e1, 1h for e2).
    #[arg(long)]
    pub duration: Option<String>,
    /// E2: frames with more jitter than this are fliers (µs).
    #[arg(long = "flier-us", default_value_t = 10.0)]
    pub flier_us: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON (`schema_version`, one row per (mode, load), band checks).
    #[arg(long)]
    pub json: bool,
}

/// `ticklab bench` arguments.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Simulated time of each point (E1 idle, E1 8 hogs, E2 without and with skew).
    #[arg(long, default_value = "60s")]
    pub duration: String,
    /// Runs of each point; the best and the median are shown (a shared machine is noisy).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

fn duration_arg(flag: &str, s: &str) -> anyhow::Result<u64> {
    parse_duration(s).map_err(|e| input_error(format!("--{flag}: {e}")))
}

/// Builds the scenario from a file and/or flags; `cmdline` overrides the kernel's.
pub fn build_scenario(a: &ScenarioArgs, cmdline: Option<&str>) -> anyhow::Result<Scenario> {
    let mut s = match &a.scenario {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| input_error(format!("--scenario {path}: cannot read: {e}")))?;
            Scenario::from_toml(&text, path).map_err(|e| input_error(e.to_string()))?
        }
        None => {
            let name = a.machine.as_deref().unwrap_or("xps13-7390");
            let m = machine::preset(name).ok_or_else(|| {
                input_error(format!(
                    "--machine {name}: expected one of {}",
                    machine::PRESETS.join(", ")
                ))
            })?;
            Scenario {
                name: "sim".into(),
                machine: m,
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
    };
    if a.scenario.is_some() && a.machine.is_some() {
        return Err(input_error(
            "--machine and --scenario: give one (the file names its machine)",
        ));
    }
    if let Some(hz) = a.hz {
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(input_error(format!(
                "--hz {hz}: expected 100, 250, 300 or 1000"
            )));
        }
        s.kernel.hz = hz;
    }
    if let Some(n) = a.nohz {
        s.kernel.nohz = match n {
            NohzArg::Periodic => NohzBuild::Periodic,
            NohzArg::Idle => NohzBuild::Idle,
            NohzArg::Full => NohzBuild::Full,
        };
    }
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
    if let Some(d) = &a.duration {
        s.run.duration_ns = duration_arg("duration", d)?;
    }
    if let Some(d) = &a.warmup {
        s.run.warmup_ns = duration_arg("warmup", d)?;
    }
    if let Some(seed) = a.seed {
        s.run.seed = seed;
    }
    // Validate the command line now, so a typo is an input error before any work starts.
    ticklab_cmdline::KernelCmdline::parse(&s.kernel.cmdline, nr)
        .map_err(|e| input_error(e.to_string()))?;
    Ok(s)
}

/// A progress bar on stderr, shown only for runs that last more than about two seconds.
struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    started: Instant,
    unit: &'static str,
}

impl Progress {
    fn new(total: u64, unit: &'static str) -> Progress {
        Progress {
            bar: None,
            total,
            started: Instant::now(),
            unit,
        }
    }

    fn set(&mut self, pos: u64) {
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(2) {
            let bar = ProgressBar::new(self.total);
            let style = ProgressStyle::with_template(&format!(
                "{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {} (eta {{eta}})",
                self.unit
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
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
pub fn sim(a: &SimArgs) -> anyhow::Result<()> {
    let s = build_scenario(&a.scenario, a.cmdline.as_deref())?;
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

/// Runs `ticklab compare`.
pub fn compare(a: &CompareArgs) -> anyhow::Result<()> {
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
    let mut p = Progress::new(scenarios.len() as u64, "configurations");
    let p_ref = std::sync::Mutex::new(&mut p);
    let results = ticklab_twin::sweep::parallel_map(
        &scenarios,
        threads,
        |s| ticklab_twin::simulate(s, |_| {}),
        &|done| {
            if let Ok(mut p) = p_ref.lock() {
                p.set(done as u64);
            }
        },
    );
    p.finish();
    let mut reports = Vec::new();
    for r in results {
        reports.push(r.map_err(|e| input_error(e.to_string()))?);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        let rows: Vec<(String, &Report)> = scenarios
            .iter()
            .zip(&reports)
            .map(|(s, r)| (s.name.clone(), r))
            .collect();
        print!("{}", ticklab_report::compare_table(&rows));
    }
    Ok(())
}

/// Runs `ticklab experiment NAME`.
pub fn experiment(a: &ExperimentArgs) -> anyhow::Result<()> {
    match a.name.to_ascii_lowercase().as_str() {
        "e1" | "aggressive-nohz" => experiment_e1(a),
        "e2" | "skew-tick" => experiment_e2(a),
        other => Err(input_error(format!(
            "experiment {other:?}: expected e1 or e2 (E3-E6 are not built into the twin yet)"
        ))),
    }
}

fn experiment_e2(a: &ExperimentArgs) -> anyhow::Result<()> {
    let duration_ns = duration_arg("duration", a.duration.as_deref().unwrap_or("1h"))?;
    if !(a.flier_us.is_finite() && a.flier_us >= 0.0) {
        return Err(input_error(format!(
            "--flier-us {}: expected a non-negative number of microseconds",
            a.flier_us
        )));
    }
    let flier_ns = (a.flier_us * 1e3).round() as u64;
    let run = Run {
        duration_ns,
        warmup_ns: 1_000_000_000,
        seed: a.seed,
    };
    let p = std::sync::Mutex::new(Progress::new(2, "configurations"));
    let t0 = Instant::now();
    let outcomes = e2::run(run, flier_ns, 2, |done| {
        if let Ok(mut p) = p.lock() {
            p.set(done as u64);
        }
    })
    .map_err(|e| input_error(e.to_string()))?;
    if let Ok(p) = p.into_inner() {
        p.finish();
    }
    // The twin's speed goes to stderr: stdout stays byte-identical for a seed.
    let wall = t0.elapsed().as_secs_f64();
    let events: Vec<String> = outcomes
        .iter()
        .map(|o| {
            format!(
                "{} {:.1} M",
                if o.skew { "skew" } else { "no-skew" },
                o.events as f64 / 1e6
            )
        })
        .collect();
    eprintln!(
        "ticklab: simulated events: {}; {wall:.1} s wall for both configurations on 2 threads",
        events.join(", ")
    );
    if a.json {
        let out = serde_json::json!({
            "schema_version": ticklab_schema::report::REPORT_SCHEMA_VERSION,
            "experiment": "e2",
            "seed": a.seed,
            "duration_ns": duration_ns,
            "flier_us": a.flier_us,
            "configurations": outcomes.iter().map(e2::json).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "E2 — frame-scheduler jitter on a 64-CPU 2012 server (4 × Sandy Bridge-EP 8C/16T), \
         3.0-rt, HZ=1000 (assumed), MAXSMP rcu leaf fan-out {}",
        e2::MAXSMP_RCU_FANOUT
    );
    println!(
        "twin: {} simulated s per configuration after 1 s warm-up, seed {}; jitter budget {} us\n",
        duration_ns as f64 / 1e9,
        a.seed,
        e2::BUDGET_US
    );
    for o in &outcomes {
        println!(
            "({}) {} — cmdline {:?}",
            if o.skew { 'b' } else { 'a' },
            if o.skew {
                "skew_tick=1, periodic tick on the isolated CPUs"
            } else {
                "no skew, nohz on"
            },
            e2::cmdline(o.skew)
        );
        for g in o.groups() {
            print!("{}", ticklab_report::frame_table(g));
        }
        println!();
    }
    println!("Per-group summary (us):");
    println!(
        "{:<7} {:<5} | {:>8} {:>8} {:>8} {:>8} | {:>9} {:>8}",
        "config", "group", "max", "avg", "sigma", "p99.9", "fliers", "overruns"
    );
    for o in &outcomes {
        for g in o.groups() {
            let s = e2::summary(g);
            println!(
                "{:<7} {:<5} | {:>8.2} {:>8.4} {:>8.4} {:>8.2} | {:>9} {:>8}",
                if o.skew { "skew" } else { "no-skew" },
                s.group,
                s.max_us,
                s.avg_us,
                s.sigma_us,
                s.p999_us,
                s.fliers,
                s.overruns
            );
        }
    }
    println!("\nTick-time shared state (twin):");
    for o in &outcomes {
        for line in ticklab_report::cpu::lock_lines(&o.report) {
            println!("  {:<7} {}", if o.skew { "skew" } else { "no-skew" }, line);
        }
    }
    Ok(())
}

fn experiment_e1(a: &ExperimentArgs) -> anyhow::Result<()> {
    let duration_ns = duration_arg("duration", a.duration.as_deref().unwrap_or("30s"))?;
    let run = Run {
        duration_ns,
        warmup_ns: 2_000_000_000,
        seed: a.seed,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let total = (e1::Mode::ALL.len() * e1::LOADS.len()) as u64;
    let p = std::sync::Mutex::new(Progress::new(total, "points"));
    let rows = e1::run(run, threads, |done| {
        if let Ok(mut p) = p.lock() {
            p.set(done as u64);
        }
    })
    .map_err(|e| input_error(e.to_string()))?;
    if let Ok(p) = p.into_inner() {
        p.finish();
    }
    let table: Vec<e1::Row> = rows.iter().map(|(row, _)| row.clone()).collect();
    let checks = e1::check(&table);
    if a.json {
        let out = serde_json::json!({
            "schema_version": ticklab_schema::report::REPORT_SCHEMA_VERSION,
            "experiment": "e1",
            "seed": a.seed,
            "duration_ns": duration_ns,
            "rows": table,
            "checks": checks,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "E1 — nohz_full_aggressive on a Dell XPS 13 7390 (i7-10510U, 8 CPUs), HZ=1000, nohz_full=all"
    );
    println!(
        "twin: {} simulated s per point after 2 s warm-up, seed {}; published: the 2023 RFC (5-min averages)\n",
        duration_ns as f64 / 1e9,
        a.seed
    );
    println!(
        "{:<6} | {:>10} {:>10} | {:>10} {:>10} | {:>7} {:>7} | {:>7} {:>7}",
        "load",
        "irq/s nf",
        "published",
        "irq/s aggr",
        "published",
        "W nf",
        "publ.",
        "W aggr",
        "publ."
    );
    println!("{}", "-".repeat(92));
    for load in e1::LOADS {
        let label = e1::load_label(load);
        let find = |m: e1::Mode| table.iter().find(|r| r.mode == m && r.load == label);
        if let (Some(n), Some(g)) = (find(e1::Mode::NohzFull), find(e1::Mode::Aggressive)) {
            println!(
                "{:<6} | {:>10.1} {:>10.1} | {:>10.1} {:>10.1} | {:>7.3} {:>7.3} | {:>7.3} {:>7.3}",
                label,
                n.irq_per_s,
                n.published_irq_per_s,
                g.irq_per_s,
                g.published_irq_per_s,
                n.watts,
                n.published_watts,
                g.watts,
                g.published_watts
            );
        }
    }
    println!("\nWhat aggressive costs (twin):");
    println!(
        "{:<6} | {:>16} {:>18} {:>18} {:>8} {:>12}",
        "load", "max jiffies gap", "max stale at irq", "mean coarse stale", "hangs", "max irq"
    );
    for r in table.iter().filter(|r| r.mode == e1::Mode::Aggressive) {
        println!(
            "{:<6} | {:>13.1} ms {:>15.1} ms {:>15.2} ms {:>8} {:>9.1} us",
            r.load,
            r.max_jiffies_gap_ms,
            r.max_reader_staleness_ms,
            r.mean_coarse_staleness_ms,
            r.hrtimer_hangs,
            r.max_irq_us
        );
    }
    let nf_gap = table
        .iter()
        .filter(|r| r.mode == e1::Mode::NohzFull)
        .map(|r| r.max_jiffies_gap_ms)
        .fold(0.0, f64::max);
    println!("(nohz_full for reference: max jiffies gap {nf_gap:.1} ms)");
    let hangs: u64 = table.iter().map(|r| r.hrtimer_hangs).sum();
    println!(
        "hrtimer hang back-off (\"hrtimer: interrupt took N ns\"): {}",
        if hangs == 0 {
            "not reached in any point".to_string()
        } else {
            format!("{hangs} hangs")
        }
    );
    println!("\nAcceptance bands:");
    let mut failed = 0;
    for c in &checks {
        if !c.ok {
            failed += 1;
        }
        println!(
            "  {:<4} {:<36} {:>10.3}  target {:>10.3}  {}",
            if c.ok { "ok" } else { "FAIL" },
            c.what,
            c.value,
            c.target,
            c.band
        );
    }
    println!(
        "{} of {} checks inside their bands",
        checks.len() - failed,
        checks.len()
    );
    Ok(())
}

/// Runs `ticklab bench`: simulated events per second on E1 and E2 points.
/// CPU time consumed by the calling thread (ns): unlike wall time it excludes the time this
/// thread waited for a CPU, which on a shared machine is most of the noise.
fn thread_cpu_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID is available on Linux");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    let duration_ns = duration_arg("duration", &a.duration)?;
    let run = Run {
        duration_ns,
        warmup_ns: 0,
        seed: 1,
    };
    // Each point builds its simulation the way its experiment runs it: E1 integrates power,
    // E2 does not (it reports frame tables); the last point shows what power would cost E2.
    type Build = Box<dyn Fn() -> Result<ticklab_twin::Sim, ticklab_twin::SimError>>;
    let flier = ticklab_twin::workloads::frames::DEFAULT_FLIER_NS;
    let points: Vec<(&str, Build)> = vec![
        (
            "e1 nohz_full idle",
            Box::new(move || ticklab_twin::Sim::new(&e1::scenario(e1::Mode::NohzFull, 0, run))),
        ),
        (
            "e1 nohz_full 8",
            Box::new(move || ticklab_twin::Sim::new(&e1::scenario(e1::Mode::NohzFull, 8, run))),
        ),
        ("e2 no-skew", Box::new(move || e2::sim(false, run, flier))),
        ("e2 skew", Box::new(move || e2::sim(true, run, flier))),
        (
            "e2 no-skew+power",
            Box::new(move || ticklab_twin::Sim::new(&e2::scenario(false, run))),
        ),
    ];
    println!(
        "{:<18} {:>11} {:>9} {:>22} {:>22}",
        "point", "events", "x real", "M events/s wall", "M events/s thread CPU"
    );
    println!(
        "{:<18} {:>11} {:>9} {:>22} {:>22}",
        "", "", "(best)", "best / median", "best / median"
    );
    for (name, build) in &points {
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut events = 0;
        for _ in 0..a.repeat {
            let mut sim = build().map_err(|e| input_error(e.to_string()))?;
            let cpu0 = thread_cpu_ns();
            let t0 = Instant::now();
            sim.run(|_| {});
            walls.push(t0.elapsed().as_secs_f64());
            cpus.push((thread_cpu_ns() - cpu0) as f64 * 1e-9);
            events = sim.events();
        }
        let rate = |secs: &mut Vec<f64>| {
            secs.sort_by(f64::total_cmp);
            let best = events as f64 / secs[0] / 1e6;
            let median = events as f64 / secs[secs.len() / 2] / 1e6;
            format!("{best:>10.2} / {median:<9.2}")
        };
        let real = duration_ns as f64 / 1e9 / walls.iter().copied().fold(f64::MAX, f64::min);
        println!(
            "{:<18} {:>11} {:>9.0} {:>22} {:>22}",
            name,
            events,
            real,
            rate(&mut walls),
            rate(&mut cpus)
        );
    }
    Ok(())
}
