//! PREEMPT_RT's softirq threads on an idle CPU (`kernel::softirq`, `kernel::sched_balance`),
//! end to end, on a guest without a cpuidle driver running 6.1.192 (whose idle loop keeps a
//! running tick unless the tick ended the last idle pass).
//!
//! One task on CPU 1 wakes ten times a second. Without PREEMPT_RT each wake-up costs CPU 1 two
//! local timer interrupts (the wake-up and the one tick the idle loop keeps). With it, every
//! tick that raises a softirq wakes the softirq thread, which ends the idle loop, and the
//! next idle entry keeps the tick again. With two CPUs at HZ=250 the periodic balance is due
//! on every tick: the duty CPU, whose tick updates jiffies before it looks at the balance,
//! never stops its tick; the other CPU's chain ends at a tick that reads jiffies before the
//! duty CPU's tick of the same instant has advanced them (the interrupts' delivery spread
//! decides the order). With four CPUs the balance is due on every other tick, and the chain
//! ends at the first tick that raises nothing.

use ticklab_schema::machine::kvm_guest;
use ticklab_schema::scenario::Scenario;

fn scenario(vcpus: u32, preempt_rt: bool, cmdline: &str) -> Scenario {
    let text = format!(
        r#"
name = "PREEMPT_RT {preempt_rt}, {vcpus} vCPUs"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "6.1.192"
hz = 250
nohz = "idle"
cmdline = "{cmdline}"
preempt_rt = {preempt_rt}

[[background]]
name = "sleeper"
kind = "hrtimer"
placement = "per_cpu"
period_ns = 100000000
wakes_task = true
provenance = "test: one task sleeping 100 ms at a time on CPU 1"
cpus = "1"

[run]
duration = "10s"
warmup = "1s"
seed = 3
"#
    );
    let mut s = Scenario::from_toml(&text, "preempt_rt.toml").unwrap();
    // The twin of a QEMU guest: no cpuidle driver, HLT.
    s.machine = kvm_guest(vcpus);
    s.machine.cpuidle_driver = "none".into();
    s
}

/// Local timer interrupts per second on `cpu`.
fn loc_per_s(s: &Scenario, cpu: u32) -> f64 {
    let r = ticklab_twin::simulate(s, |_| {}).unwrap();
    let c = r.cpus.iter().find(|c| c.cpu == cpu).unwrap();
    c.loc as f64 * 1e9 / r.duration_ns as f64
}

#[test]
fn without_preempt_rt_a_wake_up_costs_two_interrupts() {
    for vcpus in [2, 4] {
        let loc = loc_per_s(&scenario(vcpus, false, ""), 1);
        assert!((19.5..=20.5).contains(&loc), "{vcpus} vCPUs: {loc} LOC/s");
    }
}

#[test]
fn on_two_cpus_at_hz_250_the_duty_cpu_never_stops_its_tick() {
    let duty = loc_per_s(&scenario(2, true, ""), 0);
    assert!(
        duty >= 245.0,
        "CPU 0: {duty} LOC/s: the tick should keep running"
    );
    let plain = loc_per_s(&scenario(2, false, ""), 0);
    assert!(plain < 5.0, "CPU 0 without PREEMPT_RT: {plain} LOC/s");
    // The other CPU: longer than two ticks per wake-up, shorter than for ever.
    let other = loc_per_s(&scenario(2, true, ""), 1);
    assert!((25.0..200.0).contains(&other), "CPU 1: {other} LOC/s");
}

#[test]
fn on_four_cpus_the_chain_ends_at_the_first_tick_without_a_balance() {
    let rt = loc_per_s(&scenario(4, true, ""), 1);
    let plain = loc_per_s(&scenario(4, false, ""), 1);
    assert!(
        rt > plain + 5.0 && rt < 100.0,
        "PREEMPT_RT {rt} LOC/s against {plain} without"
    );
}

/// With CPU 1 taken out of the scheduler domains, CPU 0 is alone in them: its domains are
/// degenerate, it is on the null domain and never balances, so its tick stops as without
/// PREEMPT_RT.
#[test]
fn a_cpu_alone_in_the_domains_raises_no_balance() {
    let loc = loc_per_s(&scenario(2, true, "isolcpus=domain,1"), 0);
    assert!(loc < 5.0, "CPU 0: {loc} LOC/s");
}
