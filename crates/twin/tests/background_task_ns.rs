//! A background source's own task length (`task_ns`, a kernel thread's measured CPU time per
//! run in the twin of a VM guest): each task it wakes runs that long, where the other sources'
//! tasks run the machine's `costs.background_task_ns`. The busy time of the CPU shows it.

use ticklab_schema::scenario::Scenario;

/// Busy ns on CPU 1 of `kvm-guest-2` over 10 s, with one source on CPU 1 waking a task 100
/// times a second that runs `task_ns` (or the machine's length when `None`), and the task
/// expiries.
fn busy_on_cpu1(task_ns: Option<u64>, kind: &str) -> (u64, u64) {
    let line = task_ns.map_or(String::new(), |t| format!("task_ns = {t}\n"));
    let text = format!(
        r#"
name = "background task length"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "6.1"
hz = 250
nohz = "idle"

[[background]]
name = "kernel thread"
kind = "{kind}"
placement = "per_cpu"
period_ns = 10000000
wakes_task = true
{line}provenance = "test: a task woken 100 times a second on CPU 1"
cpus = "1"

[run]
duration = "10s"
warmup = "1s"
seed = 2
"#
    );
    let s = Scenario::from_toml(&text, "background_task_ns.toml").unwrap();
    let r = ticklab_twin::simulate(&s, |_| {}).unwrap();
    let expiries = r
        .background
        .iter()
        .find(|b| b.name == "kernel thread")
        .map(|b| b.expiries)
        .unwrap();
    (r.cpus[1].busy_ns.unwrap(), expiries)
}

#[test]
fn each_task_runs_its_sources_length() {
    for kind in ["hrtimer", "wheel"] {
        let (base, n) = busy_on_cpu1(None, kind);
        // The hrtimer fires every 10 ms; the wheel timer rounds up to whole jiffies of its
        // level (a 4 ms tick).
        assert!((500..=1010).contains(&n), "{kind}: {n} expiries");
        for task_ns in [200_000u64, 2_000_000] {
            let (busy, m) = busy_on_cpu1(Some(task_ns), kind);
            assert_eq!(m, n, "{kind}: the same wake-ups");
            // Every run takes task_ns; the machine's length is far shorter, so the busy time
            // grows by about (task_ns - that length) per run, and is at least the runs.
            assert!(
                busy >= n * task_ns,
                "{kind} {task_ns}: busy {busy} < {n} runs"
            );
            assert!(
                busy <= n * task_ns + base + n * 100_000,
                "{kind} {task_ns}: busy {busy} against base {base}"
            );
        }
    }
}

#[test]
fn task_ns_needs_a_task() {
    let text = r#"
name = "bad"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "6.1"
hz = 250
nohz = "idle"

[[background]]
name = "timer"
kind = "wheel"
placement = "per_cpu"
period_ns = 10000000
task_ns = 50000
provenance = "test"
"#;
    let e = Scenario::from_toml(text, "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("background[0].task_ns"), "{e}");
}
