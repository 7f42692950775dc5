//! Bulk-synchronous jobs in the twin (docs/noise.md "The twin"): the amplification scenarios
//! (`experiments/bsp-*.toml`), the barrier fed by the simulated machine, and the noise report's
//! invariants on busy CPUs.

mod common;

use ticklab_cmdline::NohzBuild;
use ticklab_schema::bsp::BspReport;
use ticklab_schema::machine::xeon_e5_2650v3_2s;
use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::Workload;
use ticklab_twin::Sim;
use ticklab_twin::workloads::bsp::{SyntheticMode, SyntheticNoise, closed_form_excess};

/// The amplification study's machine of `nr` CPUs (the Xeon E5-2650 v3 server of E4, its
/// costs, grown to `nr` CPUs in sockets of 32 CPUs) running a 6.6 kernel at HZ=250 with a
/// bsp job of `nr − 1` ranks on CPUs 1.. (CPU 0 keeps time and runs nothing), work 100 µs.
fn amplification_scenario(nr: u32) -> Scenario {
    let mut m = xeon_e5_2650v3_2s();
    m.name = format!("xeon-e5-2650v3-{nr}");
    m.description = format!("Xeon E5-2650 v3 costs, {nr} CPUs (bsp amplification study)");
    m.topology.threads_per_core = 2;
    m.topology.cores_per_socket = 16;
    m.topology.sockets = nr / 32;
    let workload = format!("bsp:{}@1-{}:work=100us", nr - 1, nr - 1);
    Scenario {
        name: format!("bsp amplification, {nr} CPUs"),
        workload: Workload::parse(&workload, nr).unwrap(),
        machine: m,
        kernel: Kernel::new("6.6", 250, NohzBuild::Full, ""),
        background: default_background(),
        run: Run {
            duration_ns: 10_000_000_000,
            warmup_ns: 100_000_000,
            seed: 1,
        },
    }
}

#[test]
fn amplification_scenario_files_are_current() {
    for nr in [64u32, 1024, 4096] {
        common::assert_scenario_file_current(
            &format!("bsp-{nr}.toml"),
            &format!(
                "The bsp amplification study of docs/noise.md: {nr} CPUs, {} ranks.\nWritten by crates/twin/tests/bsp.rs (UPDATE_SCENARIOS=1).",
                nr - 1
            ),
            &amplification_scenario(nr),
        );
    }
}

fn bsp(r: &Report) -> &BspReport {
    r.workloads
        .iter()
        .find_map(|w| match w {
            WorkloadResult::Bsp(b) => Some(b),
            _ => None,
        })
        .expect("a bsp result")
}

/// 16 ranks on the 64-CPU study machine for `secs` seconds under `cmdline`.
fn run16(cmdline: &str, hz: u32, secs: u64) -> Report {
    let mut s = amplification_scenario(64);
    s.workload = Workload::parse("bsp:16@1-16:work=100us", 64).unwrap();
    s.kernel.cmdline = cmdline.into();
    s.kernel.hz = hz;
    s.background.clear();
    s.run.duration_ns = secs * 1_000_000_000;
    let mut sim = Sim::new(&s).unwrap();
    sim.run(|_| {});
    sim.report()
}

#[test]
fn ticks_delay_the_barrier_and_skew_spreads_the_delay() {
    // HZ=1000, work 100 µs: aligned ticks land in about one iteration in ten, on every rank
    // at once; skewed ticks land in most iterations, on a few ranks each.
    let aligned = run16("", 1000, 1);
    let skewed = run16("skew_tick=1", 1000, 1);
    let (a, k) = (bsp(&aligned), bsp(&skewed));
    for (r, b) in [(&aligned, a), (&skewed, k)] {
        b.check().unwrap();
        let n = r.noise.as_ref().expect("a bsp run keeps the noise report");
        assert_eq!(n.cpus.len(), 16);
        for c in &n.cpus {
            c.check().unwrap();
            assert!(c.sources.iter().any(|s| s.name == "tick" && s.count >= 990));
        }
        assert_eq!(
            b.blame.iter().map(|x| x.iterations).sum::<u64>(),
            b.late_iterations
        );
    }
    let late_share = |b: &BspReport| b.late_iterations as f64 / b.iterations as f64;
    assert!(
        (0.05..0.2).contains(&late_share(a)),
        "aligned: {} of {} late",
        a.late_iterations,
        a.iterations
    );
    // skew_tick spreads the ticks by CPU number over half a period of the whole machine: 16
    // ranks of 64 CPUs span an eighth of it, so about two iterations in ten are hit.
    assert!(late_share(k) > 1.5 * late_share(a), "skewed {k:?}");
    assert!(k.excess_mean_ns > a.excess_mean_ns);
}

#[test]
fn nohz_full_on_the_ranks_takes_the_tick_away() {
    let full = run16("nohz_full=1-16", 250, 1);
    let b = bsp(&full);
    b.check().unwrap();
    let periodic = run16("", 250, 1);
    assert!(
        b.excess_mean_ns < bsp(&periodic).excess_mean_ns / 4.0,
        "nohz_full {} ns, ticking {} ns",
        b.excess_mean_ns,
        bsp(&periodic).excess_mean_ns
    );
}

#[test]
fn synthetic_noise_in_the_simulated_machine_follows_the_closed_form() {
    // nohz_full ranks without background sources: the synthetic detours dominate; the twin's
    // own (a tick per second at most) is measured with the source off and subtracted.
    let d = 200_000;
    for (mode, p) in [
        (SyntheticMode::Independent, 0.01),
        (SyntheticMode::Simultaneous, 0.2),
    ] {
        let syn = SyntheticNoise { len_ns: d, p, mode };
        let mut s = amplification_scenario(64);
        s.workload = Workload::parse("bsp:16@1-16:work=1ms", 64).unwrap();
        s.kernel.cmdline = "nohz_full=1-63".into();
        s.background.clear();
        s.run.duration_ns = 20_000_000_000;
        let run = |synthetic: bool| {
            let mut sim = Sim::new(&s).unwrap();
            if synthetic {
                assert!(sim.set_synthetic_noise(syn));
            }
            sim.run(|_| {});
            let r = sim.report();
            bsp(&r).check().unwrap();
            bsp(&r).excess_mean_ns
        };
        let base = run(false);
        let got = run(true) - base;
        let want = closed_form_excess(syn, 16);
        let err = (got - want) / want;
        assert!(
            err.abs() < 0.05,
            "{mode:?}: excess {got:.0} ns (base {base:.0}), closed form {want:.0} ns"
        );
    }
}
