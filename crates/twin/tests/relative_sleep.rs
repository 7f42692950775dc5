//! A task that sleeps its period from the end of its run (`relative = true`, a relative
//! `nanosleep` loop such as ticklab's own coordinator) wakes once per sleep *plus* run, and its
//! phase drifts against the tick grid; a fixed-grid source (the default) keeps both. On the
//! kernel's NO_HZ idle path the drift is what lets a run that restarted the tick catch a tick
//! inside it: with a 100 ms period (25 ticks at HZ=250) a fixed-grid sleeper meets the grid at
//! the same phase on every wake-up, a relative one at every phase in turn.

use ticklab_schema::scenario::Scenario;

fn scenario(relative: bool, run_ns: u64, seed: u64) -> Scenario {
    let text = format!(
        r#"
name = "relative sleeper"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "6.18"
hz = 250
nohz = "idle"

[[background]]
name = "sleeper"
kind = "hrtimer"
placement = "per_cpu"
period_ns = 100000000
wakes_task = true
relative = {relative}
provenance = "test: one task sleeping 100 ms at a time on CPU 1"
cpus = "1"

[run]
duration = "20s"
warmup = "1s"
seed = {seed}
"#
    );
    let mut s = Scenario::from_toml(&text, "relative_sleep.toml").unwrap();
    s.machine.costs.background_task_ns = run_ns;
    s
}

fn expiries(r: &ticklab_schema::report::Report) -> u64 {
    r.background
        .iter()
        .find(|b| b.name == "sleeper")
        .map(|b| b.expiries)
        .unwrap()
}

#[test]
fn a_relative_sleeper_wakes_once_per_sleep_plus_run() {
    // 20 s: 200 wake-ups on the grid; 20 s / 120 ms = 166.7 with a 20 ms run.
    let grid = ticklab_twin::simulate(&scenario(false, 20_000_000, 3), |_| {}).unwrap();
    let rel = ticklab_twin::simulate(&scenario(true, 20_000_000, 3), |_| {}).unwrap();
    assert!(expiries(&grid).abs_diff(200) <= 1, "{}", expiries(&grid));
    assert!(
        expiries(&rel).abs_diff(167) <= 1,
        "relative: {} expiries",
        expiries(&rel)
    );
}

#[test]
fn only_a_relative_sleeper_meets_the_tick_at_every_phase() {
    // A 2 ms run restarts the tick on CPU 1 at each wake-up; the next tick falls inside the
    // run with probability 2 ms / 4 ms when the phase drifts. On the grid it is all or none,
    // decided by the first expiry's phase (the seed).
    let loc_per_wake = |relative: bool, seed: u64| {
        let r = ticklab_twin::simulate(&scenario(relative, 2_000_000, seed), |_| {}).unwrap();
        r.cpus[1].loc as f64 / expiries(&r) as f64
    };
    let rel: Vec<f64> = (1..=6).map(|s| loc_per_wake(true, s)).collect();
    let (lo, hi) = rel
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    // Every seed: the wake-up, the tick retained or restarted after it, and half a tick more.
    assert!(hi - lo < 0.15, "relative: {rel:?}");
    let grid: Vec<f64> = (1..=6).map(|s| loc_per_wake(false, s)).collect();
    let (glo, ghi) = grid
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(
        ghi - glo > 0.5,
        "on the grid the phase decides all or none: {grid:?}"
    );
    let mean = rel.iter().sum::<f64>() / rel.len() as f64;
    assert!(
        glo < mean && mean < ghi,
        "relative {mean} between the grid's extremes {glo}..{ghi}"
    );
}

#[test]
fn relative_needs_a_task_waking_periodic_hrtimer() {
    let mut s = scenario(true, 30_000, 1);
    s.background[0].wakes_task = false;
    let e = ticklab_twin::simulate(&s, |_| {}).unwrap_err().to_string();
    assert!(e.contains("relative needs wakes_task"), "{e}");
}
