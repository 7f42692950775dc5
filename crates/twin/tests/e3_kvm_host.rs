//! A scenario's `[machine.kvm_host]` in the guest ping-pong model: the calibrated host
//! wake-up replaces the published host (docs/model.md, "This host"), and the calibration's
//! own model (`HostTwin`) and `sim` give the same figure for the same costs.

use ticklab_schema::machine::{KvmHost, xps13_7390};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;
use ticklab_twin::experiments::e3::{self, HOST_TWIN_SWITCHES, HostTwin};

/// A guest without a cpuidle driver (HLT), HZ 250, with the native guest costs of
/// `HostTwin` and a one-way switch of 1500 ns.
fn guest(kvm_host: Option<KvmHost>, spec: &str) -> Scenario {
    let text =
        "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.1\"\nhz = 250\nnohz = \"idle\"\n";
    let mut s = Scenario::from_toml(text, "t").expect("the base scenario is valid");
    s.machine.costs = xps13_7390().costs;
    s.machine.costs.context_switch_ns = 1500;
    s.machine.cpuidle_driver = "none".into();
    s.machine.kvm_host = kvm_host;
    s.workload = Workload::parse(spec, 2).expect("spec");
    s
}

fn wake(host_wake_ns: u64, host_halt_poll_ns: Option<u64>) -> Option<KvmHost> {
    Some(KvmHost {
        host_wake_ns,
        host_halt_poll_ns,
    })
}

fn ns_per_switch(kvm_host: Option<KvmHost>, spec: &str) -> f64 {
    e3::simulate_pingpong(&guest(kvm_host, spec))
        .expect("modelled")
        .ns_per_switch()
}

#[test]
fn the_calibrated_wake_up_sets_the_cross_cpu_round_trip() {
    let cross = "pingpong:pipe@0,1:n=10000";
    let published = ns_per_switch(None, cross);
    let mut last = 0.0;
    for w in [0, 2_000, 10_000, 20_000] {
        let ns = ns_per_switch(wake(w, None), cross);
        assert!(ns > last, "wake {w}: {ns} not above {last}");
        assert_ne!(ns, published, "wake {w}: the section changed nothing");
        last = ns;
    }
    // A 20 µs wake-up of a blocked vCPU is on every switch's critical path; the published
    // host's halt polling catches those wakes instead.
    let slow = ns_per_switch(wake(20_000, None), cross);
    assert!(slow - published > 15_000.0, "{slow} vs {published}");
    // A host known to halt-poll catches the short halts: the wake-up is then off the path.
    let polled = ns_per_switch(wake(20_000, Some(200_000)), cross);
    assert!(polled < published + 1_000.0, "{polled} vs {published}");
    // Both tasks on one vCPU never wake a blocked vCPU: the section changes nothing.
    let same = "pingpong:pipe@0,0:n=10000";
    assert_eq!(
        ns_per_switch(wake(20_000, None), same),
        ns_per_switch(None, same)
    );
}

#[test]
fn host_twin_and_sim_agree_for_the_same_costs() {
    for w in [0, 2_861, 20_365] {
        let twin = HostTwin::new(1500, w, "none", "menu", 250)
            .expect("modelled")
            .predict(0)
            .ns_per_switch();
        let spec = format!("pingpong:futex@0,1:n={}", HOST_TWIN_SWITCHES / 2);
        let sim = ns_per_switch(wake(w, None), &spec);
        assert_eq!(twin, sim, "wake {w}");
    }
}
