//! `[machine.halt_wake]` in the event loop: a halted vCPU's exit cost follows the curve at the
//! time it slept, and a machine without the section keeps its idle states' own latencies
//! (docs/host-lab.md, "The halt wake").

use ticklab_schema::machine::{HaltWake, HaltWakePoint};
use ticklab_schema::report::WorkloadResult;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;

/// The frame worker's wake-up p50 (µs) at `rate` Hz on CPU 1 of a 2-vCPU guest (no cpuidle
/// driver: HLT), with `curve` as its halt wake.
fn p50(rate: u32, curve: Option<HaltWake>) -> f64 {
    let text =
        "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.1\"\nhz = 250\nnohz = \"idle\"\n";
    let mut s = Scenario::from_toml(text, "t").expect("the base scenario is valid");
    s.machine.cpuidle_driver = "none".into();
    s.machine.halt_wake = curve;
    s.workload = Workload::parse(&format!("frames:{rate}@1:loop=0"), 2).expect("spec");
    s.run.duration_ns = 400 * 1_000_000_000 / u64::from(rate);
    s.validate().expect("valid");
    let r = ticklab_twin::run(&s, ticklab_twin::RunOptions::unlimited()).expect("runs");
    r.workloads
        .iter()
        .find_map(|w| match w {
            WorkloadResult::Frames(g) => g.wakeup.map(|p| p.p50_us),
            _ => None,
        })
        .expect("a frame group with wake-ups")
}

#[test]
fn the_wake_up_grows_with_the_sleep_by_the_curve_and_not_without_it() {
    let curve = HaltWake {
        points: vec![
            HaltWakePoint {
                slept_ns: 500_000,
                exit_ns: 5_000,
            },
            HaltWakePoint {
                slept_ns: 10_000_000,
                exit_ns: 35_000,
            },
        ],
    };
    let (fast, slow) = (2000, 100);
    let without = (p50(fast, None), p50(slow, None));
    let with = (p50(fast, Some(curve.clone())), p50(slow, Some(curve)));
    // Without the curve the exit is the state's constant: the two rates wake alike.
    assert!((without.0 - without.1).abs() < 2.0, "{without:?}");
    // With it: about the curve's cost at each sleep (~0.5 ms: 5 us, ~10 ms: 35 us) above
    // the state's own latency, so the slow rate wakes ~30 us later than the fast one.
    let rise = (with.1 - without.1) - (with.0 - without.0);
    assert!(
        (25.0..=35.0).contains(&rise),
        "with {with:?}, without {without:?}"
    );
}
