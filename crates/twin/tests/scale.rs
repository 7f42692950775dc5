//! The twin at scale (README "Speed"): `experiments/scale-4096.toml`, the `kvm-guest-2`
//! preset grown to 4096 vCPUs, HZ=1000, one hog per CPU, one simulated hour (about 1.5·10^10
//! events: every CPU ticks, since a hog keeps a NO_HZ_IDLE CPU busy). The file is written
//! from the preset here, so it stays what its name says; the hour itself is a benchmark
//! (`ticklab sim --scenario experiments/scale-4096.toml --yes`), not a test.

mod common;

use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::kvm_guest;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::Workload;
use ticklab_twin::Sim;

/// `kvm_guest(nr)` (the preset of this project's development machine, with its costs),
/// a 6.6 NO_HZ_IDLE kernel at HZ=1000 and `nr` hogs, one per CPU, for `duration_ns`.
fn scale_scenario(nr: u32, duration_ns: u64) -> Scenario {
    Scenario {
        name: format!("scale, {nr} CPUs, one hog each"),
        workload: Workload::parse(&format!("hogs:{nr}"), nr).unwrap(),
        machine: kvm_guest(nr),
        kernel: Kernel::new("6.6", 1000, NohzBuild::Idle, ""),
        background: default_background(),
        run: Run {
            duration_ns,
            warmup_ns: 0,
            seed: 1,
        },
    }
}

#[test]
fn the_scale_scenario_file_is_current() {
    common::assert_scenario_file_current(
        "scale-4096.toml",
        "The twin at scale (README \"Speed\"): kvm-guest-2 grown to 4096 vCPUs, HZ=1000,\none hog per CPU, one hour. Written by crates/twin/tests/scale.rs (UPDATE_SCENARIOS=1).",
        &scale_scenario(4096, 3_600_000_000_000),
    );
}

/// A short run of the scale machine: every CPU ticks at HZ (the hogs keep them busy), so the
/// events are about CPUs × HZ × seconds, and the run's memory is set up before it starts.
#[test]
fn every_hogged_cpu_ticks_on_the_scale_machine() {
    let nr = 4096;
    let s = scale_scenario(nr, 20_000_000);
    let mut sim = Sim::new(&s).unwrap();
    sim.run(|_| {});
    // 20 ms at HZ=1000, less the first period on the CPUs whose tick starts late in it.
    let ticks = u64::from(nr) * 20;
    let events = sim.events();
    assert!(
        events >= ticks * 9 / 10 && events < 2 * ticks,
        "{events} events for {ticks} ticks"
    );
}

/// Prefetching the next event's CPU is a hint to the processor: on (the default at 4096 CPUs)
/// or off (the default at 64), the run's report is the same, byte for byte. So is packing the
/// hrtimer slabs (the default at 4096 CPUs, asked for here at 64).
#[test]
fn prefetching_the_next_cpu_changes_no_output() {
    // (CPUs, workload, ms): hogs and an idle machine (idle entry and exit, IPIs).
    for (nr, workload, ms) in [
        (64, "hogs:64", 200),
        (64, "idle", 500),
        (4096, "hogs:4096", 5),
    ] {
        let mut s = scale_scenario(nr, ms * 1_000_000);
        s.workload = Workload::parse(workload, nr).unwrap();
        let run = |on: Option<bool>, pack: bool| {
            let mut sim = Sim::new(&s).unwrap();
            if let Some(on) = on {
                sim.set_prefetch(on);
            }
            if pack {
                sim.pack_hrtimer_slabs();
            }
            sim.run(|_| {});
            serde_json::to_string(&sim.report()).unwrap()
        };
        let report = |on| run(on, false);
        let default = report(None);
        assert_eq!(
            default,
            run(None, true),
            "{nr} CPUs, {workload}, slabs packed"
        );
        assert_eq!(
            default,
            report(Some(true)),
            "{nr} CPUs, {workload}, prefetch on"
        );
        assert_eq!(
            default,
            report(Some(false)),
            "{nr} CPUs, {workload}, prefetch off"
        );
    }
}
