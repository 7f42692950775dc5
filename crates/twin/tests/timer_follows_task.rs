//! A background task that is not pinned takes its timer with it (`follows_task`,
//! docs/kernel-behaviour.md §12.11): on two CPUs with a task sleeping 20 ms at a time that
//! starts on CPU 0, a CPU hog on CPU 0 moves the task, and its timer's interrupts, to the idle
//! CPU 1; a pinned task's timer stays on CPU 0, inside the hog's tick. Without a hog both stay
//! on CPU 0. This is what the host lab measures on a two-CPU host: the idle CPU beside a hog
//! takes the hogged CPU's background wake-ups (docs/host-lab.md).

use ticklab_schema::scenario::Scenario;

fn scenario(kind: &str, follows: bool, workload: &str) -> Scenario {
    let text = format!(
        r#"
name = "timer follows task"
machine = "kvm-guest-2"
workload = "{workload}"

[kernel]
version = "6.18"
hz = 250
nohz = "idle"

[[background]]
name = "sleeper"
kind = "{kind}"
placement = "per_cpu"
period_ns = 20000000
wakes_task = true
follows_task = {follows}
provenance = "test: one task sleeping 20 ms at a time, starting on CPU 0"
cpus = "0"

[run]
duration = "10s"
warmup = "1s"
seed = 5
"#
    );
    Scenario::from_toml(&text, "timer_follows_task.toml").unwrap()
}

/// (LOC/s per CPU, RES per CPU) of a run.
fn run(kind: &str, follows: bool, workload: &str) -> (Vec<f64>, Vec<Option<u64>>) {
    let r = ticklab_twin::simulate(&scenario(kind, follows, workload), |_| {}).unwrap();
    let s = r.duration_ns as f64 / 1e9;
    (
        r.cpus.iter().map(|c| c.loc as f64 / s).collect(),
        r.cpus.iter().map(|c| c.res).collect(),
    )
}

#[test]
fn a_hog_moves_an_unpinned_task_and_its_timer_to_the_idle_cpu() {
    for kind in ["hrtimer", "wheel"] {
        let (pinned, res) = run(kind, false, "hogs:1@0");
        // The pinned sleeper's 50 wake-ups/s stay on CPU 0; CPU 1 is idle with nothing to do.
        assert!(pinned[1] < 2.0, "{kind} pinned: CPU 1 {} LOC/s", pinned[1]);
        assert_eq!(res, vec![None, None], "no IPIs modelled without followers");
        let (alone, _) = run(kind, false, "idle");
        let (moved, res) = run(kind, true, "hogs:1@0");
        // The follower: its timer went to CPU 1 with its first wake-up and stayed there,
        // waking CPU 1 as often as it wakes CPU 0 when nothing else runs.
        assert!(alone[0] > 40.0, "{kind}: {alone:?}");
        assert!(
            (moved[1] - alone[0]).abs() < 1.0,
            "{kind} follows: CPU 1 {} LOC/s, the task alone on CPU 0 {}",
            moved[1],
            alone[0]
        );
        // One IPI brought it there, in the warm-up; CPU 0 keeps only its tick (a pinned
        // hrtimer adds its own 50 interrupts/s there, a pinned wheel timer rides the tick).
        assert_eq!(res[1], Some(0), "the move happened in the warm-up");
        assert!(
            (moved[0] - 250.0).abs() < 3.0,
            "{kind}: {moved:?} vs {pinned:?}"
        );
        let expected_pinned = if kind == "hrtimer" { 300.0 } else { 250.0 };
        assert!(
            (pinned[0] - expected_pinned).abs() < 3.0,
            "{kind}: {pinned:?}"
        );
    }
}

#[test]
fn without_a_hog_the_task_and_its_timer_stay_where_they_started() {
    for kind in ["hrtimer", "wheel"] {
        let (pinned, _) = run(kind, false, "idle");
        let (follows, res) = run(kind, true, "idle");
        assert_eq!(res, vec![Some(0), Some(0)], "{kind}: nothing moved");
        for c in 0..2 {
            assert!(
                (pinned[c] - follows[c]).abs() < 0.5,
                "{kind} CPU {c}: {} vs {}",
                pinned[c],
                follows[c]
            );
        }
    }
}
