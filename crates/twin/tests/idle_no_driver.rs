//! The idle loop without a cpuidle driver (`kernel::idle`), end to end: a CPU woken ten times a
//! second by a task's timer takes one local timer interrupt per wake-up on a kernel that stops
//! the tick on every idle entry, and two on a 6.1 stable kernel from 6.1.167, whose idle loop
//! keeps the tick until it has fired once in idle (found by the QEMU validation,
//! docs/vm-validation.md).

use ticklab_schema::scenario::Scenario;

fn scenario(version: &str) -> Scenario {
    let text = format!(
        r#"
name = "no cpuidle driver, {version}"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "{version}"
hz = 250
nohz = "idle"
cmdline = "cpuidle.off=1"

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
    Scenario::from_toml(&text, "idle_no_driver.toml").unwrap()
}

/// Local timer interrupts per second on CPU 1.
fn loc_per_s(version: &str) -> f64 {
    let r = ticklab_twin::simulate(&scenario(version), |_| {}).unwrap();
    let cpu = r.cpus.iter().find(|c| c.cpu == 1).unwrap();
    cpu.loc as f64 * 1e9 / r.duration_ns as f64
}

#[test]
fn one_interrupt_per_timer_wake_when_every_entry_stops_the_tick() {
    let loc = loc_per_s("6.1");
    assert!(
        (9.5..=10.5).contains(&loc),
        "6.1: {loc} LOC/s for 10 wakes/s"
    );
}

#[test]
fn two_interrupts_per_timer_wake_from_6_1_167() {
    let loc = loc_per_s("6.1.192");
    assert!(
        (19.5..=20.5).contains(&loc),
        "6.1.192: {loc} LOC/s for 10 wakes/s"
    );
    let before = loc_per_s("6.1.166");
    assert!((9.5..=10.5).contains(&before), "6.1.166: {before} LOC/s");
}

/// The rule on stable 6.18 from 6.18.44 (observed on this project's host, where
/// `host run --workload frames:10@1:loop=0` takes CPU 1 from 9.4 to 30.3 LOC/s): two
/// interrupts per timer wake-up, as on 6.1.192; 6.18 as first released takes one.
#[test]
fn two_interrupts_per_timer_wake_from_6_18_44() {
    let loc = loc_per_s("6.18.44");
    assert!((19.5..=20.5).contains(&loc), "6.18.44: {loc} LOC/s");
    let before = loc_per_s("6.18");
    assert!((9.5..=10.5).contains(&before), "6.18: {before} LOC/s");
}

/// The guest ping-pong model takes the same rule: woken by IPIs only, a 6.18.44 vCPU keeps
/// its tick through the ping-pong, so no switch pays a tick stop and a restart (two
/// TSC-deadline exits and their work).
#[test]
fn the_guest_ping_pong_keeps_the_tick_from_6_18_44() {
    let rt = |version: &str| {
        let mut s = scenario(version);
        s.workload =
            ticklab_schema::workload::Workload::parse("pingpong:pipe@0,1:n=2000", 2).unwrap();
        let o = ticklab_twin::experiments::e3::simulate_pingpong(&s).unwrap();
        o.elapsed_ns as f64 / o.switches as f64
    };
    let (kept, stopped) = (rt("6.18.44"), rt("6.18"));
    assert!(kept < stopped, "6.18.44 {kept} ns/switch, 6.18 {stopped}");
}
