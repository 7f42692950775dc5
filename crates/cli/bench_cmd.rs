//! `ticklab bench`: the twin's speed (simulated events per second) on E1 and E2 points, each
//! built the way its experiment runs it, measured in wall and thread CPU time.

use crate::args::{DurationArg, parse_duration_arg};
use crate::error::library_error;
use clap::Args;
use std::time::Instant;
use ticklab_report::bench::{BenchPoint, bench_header, bench_row};
use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::{e1, e2};
use ticklab_twin::{Sim, SimError};

/// `ticklab bench` arguments.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Simulated time of each point (E1 idle, E1 8 hogs, E2 without and with skew).
    #[arg(short = 'D', short_alias = 'd', long, default_value = "60s", value_parser = parse_duration_arg)]
    duration: DurationArg,
    /// Runs of each point; the best and the median are shown (a shared machine is noisy).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Keep the noise report in every point (`sim --noise`): what OS-noise accounting costs
    /// (it measures the busy CPUs, so E1's 8 hogs carry it).
    #[arg(long)]
    noise: bool,
    /// Only the point of this name, or else the points whose name contains this text
    /// (`--point "e2 no-skew"`, `--point e2`): one point under a profiler (README, "Speed").
    #[arg(long, value_name = "TEXT")]
    point: Option<String>,
}

type Build = Box<dyn Fn() -> Result<Sim, SimError>>;

/// The points: E1 integrates power, E2 does not (it reports frame tables); the last point
/// shows what power would cost E2, and `e1 nohz_full 8+noise` what the OS-noise accounting
/// (`sim --noise`) costs E1's eight hogs, whose every interrupt is a detour.
fn points(run: Run) -> Vec<(&'static str, Build)> {
    let flier = ticklab_twin::workloads::frames::DEFAULT_FLIER_NS;
    let e1 = |mode, hogs| -> Build { Box::new(move || Sim::new(&e1::scenario(mode, hogs, run))) };
    vec![
        ("e1 nohz_full idle", e1(e1::Mode::NohzFull, 0)),
        ("e1 nohz_full 8", e1(e1::Mode::NohzFull, 8)),
        (
            "e1 nohz_full 8+noise",
            Box::new(move || {
                let mut sim = Sim::new(&e1::scenario(e1::Mode::NohzFull, 8, run))?;
                sim.set_noise();
                Ok(sim)
            }),
        ),
        ("e2 no-skew", Box::new(move || e2::sim(false, run, flier))),
        ("e2 skew", Box::new(move || e2::sim(true, run, flier))),
        (
            "e2 (c) skew nohz",
            Box::new(move || e2::sim(e2::Config::C, run, flier)),
        ),
        (
            "e2 (d) no-skew periodic",
            Box::new(move || e2::sim(e2::Config::D, run, flier)),
        ),
        (
            "e2 no-skew+power",
            Box::new(move || Sim::new(&e2::scenario(false, run))),
        ),
    ]
}

/// CPU time consumed by the calling thread (ns): unlike wall time it excludes the time this
/// thread waited for a CPU, which on a shared machine is most of the noise.
fn thread_cpu_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID is available on Linux");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Builds and runs one point `repeat` times.
fn measure(
    name: &str,
    build: &Build,
    run: Run,
    repeat: u32,
    noise: bool,
) -> anyhow::Result<BenchPoint> {
    let mut p = BenchPoint {
        name: name.to_string(),
        events: 0,
        simulated_ns: run.duration_ns,
        wall_s: Vec::new(),
        thread_cpu_s: Vec::new(),
    };
    for _ in 0..repeat {
        let mut sim = build().map_err(library_error)?;
        if noise {
            sim.set_noise();
        }
        let cpu0 = thread_cpu_ns();
        let t0 = Instant::now();
        sim.run(|_| {});
        p.wall_s.push(t0.elapsed().as_secs_f64());
        p.thread_cpu_s.push((thread_cpu_ns() - cpu0) as f64 * 1e-9);
        p.events = sim.events();
    }
    Ok(p)
}

/// Runs `ticklab bench`, printing each point's line as soon as it is measured.
pub(crate) fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    let run = Run {
        duration_ns: a.duration.ns(),
        warmup_ns: 0,
        seed: 1,
    };
    let mut chosen = points(run);
    if let Some(text) = &a.point {
        // A point's full name picks it alone ("e2 no-skew" is part of "e2 no-skew+power").
        if chosen.iter().any(|(name, _)| name == text) {
            chosen.retain(|(name, _)| name == text);
        } else {
            chosen.retain(|(name, _)| name.contains(text.as_str()));
        }
        if chosen.is_empty() {
            let names: Vec<_> = points(run).into_iter().map(|(n, _)| n).collect();
            return Err(crate::error::input_error(format!(
                "--point {text:?}: no bench point's name contains it; the points are: {}",
                names.join(", ")
            )));
        }
    }
    print!("{}", bench_header());
    for (name, build) in &chosen {
        print!(
            "{}",
            bench_row(&measure(name, build, run, a.repeat, a.noise)?)
        );
    }
    Ok(())
}
