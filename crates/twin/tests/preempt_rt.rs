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

/// A guest without a cpuidle driver running 6.1.192 at HZ=250: `vcpus` vCPUs, `workload`,
/// `cmdline`, and one background source, `source` (a `[[background]]` table's keys; its CPUs
/// are 0 or 1, as the file is checked against the 2-vCPU preset before the machine is grown).
fn guest(vcpus: u32, workload: &str, preempt_rt: bool, cmdline: &str, source: &str) -> Scenario {
    let text = format!(
        r#"
name = "PREEMPT_RT {preempt_rt}, {vcpus} vCPUs, {workload}"
machine = "kvm-guest-2"
workload = "{workload}"

[kernel]
version = "6.1.192"
hz = 250
nohz = "idle"
cmdline = "{cmdline}"
preempt_rt = {preempt_rt}

[[background]]
{source}

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

/// One task on CPU 1 sleeping 100 ms at a time, on an idle guest.
fn scenario(vcpus: u32, preempt_rt: bool, cmdline: &str) -> Scenario {
    let sleeper = r#"name = "sleeper"
kind = "hrtimer"
placement = "per_cpu"
period_ns = 100000000
wakes_task = true
provenance = "test: one task sleeping 100 ms at a time on CPU 1"
cpus = "1""#;
    guest(vcpus, "idle", preempt_rt, cmdline, sleeper)
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

/// A PREEMPT_RT guest running `workload`, with one background hrtimer of `period_ms` on `cpu`
/// (0 or 1) that wakes no task (`hard`: armed `HRTIMER_MODE_HARD`).
fn with_source(vcpus: u32, workload: &str, cpu: u32, period_ms: u64, hard: bool) -> Scenario {
    let source = format!(
        r#"name = "a timer"
kind = "hrtimer"
placement = "per_cpu"
period_ns = {}
hard = {hard}
provenance = "test"
cpus = "{cpu}""#,
        period_ms * 1_000_000
    );
    guest(vcpus, workload, true, "", &source)
}

/// Per second on `cpu`: local timer interrupts and function-call IPIs.
fn loc_cal_per_s(s: &Scenario, cpu: u32) -> (f64, Option<f64>) {
    let r = ticklab_twin::simulate(s, |_| {}).unwrap();
    let c = r.cpus.iter().find(|c| c.cpu == cpu).unwrap();
    let per_s = |n: u64| n as f64 * 1e9 / r.duration_ns as f64;
    (per_s(c.loc), c.cal.map(per_s))
}

/// A hog on CPU 0 of four, the others idle: CPU 0's busy ticks kick the first idle CPU of the
/// nohz mask (CPU 1) every 32 ms for its blocked load, strictly after, so every 9 jiffies at
/// HZ=250 (27.8 a second); on PREEMPT_RT each kick wakes CPU 1's softirq thread, which
/// restarts its tick for two ticks (the restart and the periodic balance due then). CPUs 2
/// and 3 are never kicked. Without PREEMPT_RT the kicks are not modelled.
#[test]
fn the_idle_load_balancers_kicks_restart_the_first_idle_cpus_tick() {
    let rt = with_source(4, "hogs:1@0", 0, 100, false);
    let (loc1, cal1) = loc_cal_per_s(&rt, 1);
    let (loc3, cal3) = loc_cal_per_s(&rt, 3);
    let cal1 = cal1.expect("PREEMPT_RT counts the kicks");
    assert!((26.0..=29.0).contains(&cal1), "CPU 1: {cal1} kicks/s");
    assert!((50.0..=60.0).contains(&loc1), "CPU 1: {loc1} LOC/s");
    assert_eq!(cal3, Some(0.0));
    assert!(loc3 < 1.0, "CPU 3: {loc3} LOC/s");
    let mut plain = rt.clone();
    plain.kernel.preempt_rt = false;
    let (loc1, cal1) = loc_cal_per_s(&plain, 1);
    assert!(
        loc1 < 1.0 && cal1.is_none(),
        "without PREEMPT_RT: {loc1} LOC/s"
    );
}

/// On PREEMPT_RT an hrtimer not armed hard expires in the softirq thread: on an idle CPU with a
/// stopped tick each expiry ends the idle loop, so the tick restarts and runs until a tick
/// raises nothing (four CPUs: the restart's tick, whose periodic balance is due, and the next).
/// A hard one is one interrupt per expiry.
#[test]
fn on_preempt_rt_a_soft_hrtimer_wakes_the_softirq_thread() {
    let (hard, _) = loc_cal_per_s(&with_source(4, "idle", 1, 100, true), 1);
    let (soft, _) = loc_cal_per_s(&with_source(4, "idle", 1, 100, false), 1);
    assert!((9.5..=10.5).contains(&hard), "hard: {hard} LOC/s");
    assert!((25.0..=35.0).contains(&soft), "soft: {soft} LOC/s");
}
