//! `host why`: attribution over trace fixtures, and a short live run as root.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use ticklab_host::harness::stop::Stop;
use ticklab_host::probe::why::{self, NO_HRTIMER, WhyOptions, attribute};
use ticklab_host::procfs::parse_trace;

/// The live tests trace through tracefs, which `why::observe` mounts when it is not mounted
/// and unmounts when it is done: run in parallel in this one process, one test's unmount would
/// pull tracefs from under another. They take this lock in turn.
static TRACEFS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`TRACEFS`] (a panicking holder does not poison the others).
fn tracefs_lock() -> std::sync::MutexGuard<'static, ()> {
    TRACEFS.lock().unwrap_or_else(|e| e.into_inner())
}

fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(n, k)| (n.to_string(), *k)).collect()
}

#[test]
fn handmade_idle_and_nohz_full() {
    let trace = parse_trace(&fixture("handmade/trace_nohz_full_cpu2_3"));
    assert_eq!(trace.skipped, 0);
    let initially = BTreeMap::from([(2, false), (3, false)]);
    let s = 100_000_000_000;
    let got = attribute(
        &trace,
        s,
        s + 1_000_000_000,
        &[2, 3],
        &initially,
        &[3],
        None,
    );

    let cpu2 = &got[0];
    assert_eq!(cpu2.loc_traced, Some(3));
    assert_eq!(
        cpu2.interrupts_by_cause,
        pairs(&[(NO_HRTIMER, 1), ("hrtimer_wakeup", 1), ("tick", 1)])
    );
    assert_eq!(cpu2.outside_irq, pairs(&[("watchdog_timer_fn", 1)]));
    // Stopped from 100.002 (tick_stop) to 100.502 (switch away from idle).
    assert_eq!(cpu2.tick_stopped_fraction, Some(0.5));
    assert_eq!((cpu2.tick_stops, cpu2.idle_entries), (Some(1), Some(1)));
    assert!(cpu2.stop_failures.is_empty());

    let cpu3 = &got[1];
    assert_eq!(cpu3.interrupts_by_cause, pairs(&[("tick", 1)]));
    assert_eq!(cpu3.stop_failures, pairs(&[("POSIX_TIMER", 1)]));
    // nohz_full: 100.1 → 100.40002 and 100.7 → 101.0.
    let frac = cpu3.tick_stopped_fraction.unwrap();
    assert!((frac - 0.600_020).abs() < 1e-9, "{frac}");
    assert_eq!(cpu3.tick_stops, Some(2));

    // The same CPU 3 not marked nohz_full changes nothing (it never leaves a task).
    let again = attribute(&trace, s, s + 1_000_000_000, &[3], &initially, &[], None);
    assert_eq!(again[0].tick_stopped_fraction, cpu3.tick_stopped_fraction);
    // The conclusions: CPU 3 quotes the kernel's dependency; CPU 2 (housekeeping) is
    // concluded from what it did.
    let k = |full| why::conclude::KernelTick {
        nohz_full_built: Some(true),
        nohz_full_cpu: full,
        nohz_full_running: true,
    };
    let c3 = why::conclude::conclude(cpu3, k(true), 1.0);
    assert!(
        c3.sentence
            .contains("refused to stop it 1 times for POSIX_TIMER"),
        "{}",
        c3.sentence
    );
    let c2 = why::conclude::conclude(cpu2, k(false), 1.0);
    assert!(
        c2.sentence
            .contains("stopped 50 % of the window: idle (1 idle entries)"),
        "{}",
        c2.sentence
    );
    insta::assert_json_snapshot!("why_handmade", got);
}

#[test]
fn captured_trace_with_a_busy_cpu() {
    let trace = parse_trace(&fixture("x86-kvm-6.18/trace"));
    let (start, end) = (trace.lines[0].ts_ns, trace.lines.last().unwrap().ts_ns);
    let period = why::tick_period_from_trace(&trace);
    assert_eq!(period, Some((250, 4_000_000)));
    let got = attribute(
        &trace,
        start,
        end,
        &[0, 1],
        &BTreeMap::new(),
        &[],
        period.map(|p| p.1),
    );
    for c in &got {
        let by_cause: u64 = c.interrupts_by_cause.iter().map(|(_, n)| n).sum();
        assert_eq!(Some(by_cause), c.loc_traced, "cpu {}", c.cpu);
        let gap = c.tick_gap_fraction.expect("tick period known");
        assert!((0.0..=1.0).contains(&gap));
        match c.tick_stopped_fraction {
            Some(f) => assert!((0.0..=1.0).contains(&f)),
            None => assert!(c.idle_events_missing),
        }
    }
    // On this host CPU 1's idle-task events never reach the trace (switches into idle are
    // recorded, nothing after them): the event-based fraction is withheld there.
    assert_eq!(
        got.iter()
            .map(|c| c.idle_events_missing)
            .collect::<Vec<_>>(),
        vec![false, true]
    );
    // The fixture's tick callbacks are the 6.9+ name, attributed to "tick".
    assert!(
        got.iter()
            .any(|c| c.interrupts_by_cause.iter().any(|(n, _)| n == "tick"))
    );
    insta::assert_json_snapshot!("why_captured", got);
}

#[test]
#[ignore = "needs root and tracefs"]
fn live_trace_window() {
    let _tracefs = tracefs_lock();
    assert!(ticklab_host::probe::is_root(), "tracing needs root");
    assert!(
        std::fs::read_to_string("/proc/filesystems").is_ok_and(|s| s.contains("tracefs")),
        "this kernel has no tracefs"
    );
    let mounts_before = std::fs::read_to_string("/proc/mounts").unwrap();
    let opts = WhyOptions {
        window: Duration::from_millis(800),
        cpus: None,
        no_trace: false,
        save_trace: None,
        timeline: None,
    };
    let report = why::observe(&opts, &Stop::new()).expect("observe");
    assert!(
        report.method.starts_with("tracefs instance"),
        "{}",
        report.method
    );
    let lost = report.missing.iter().any(|m| m.contains("lost"));
    for c in &report.cpus {
        let traced = c.loc_traced.expect("traced");
        let by_cause: u64 = c.interrupts_by_cause.iter().map(|(_, n)| n).sum();
        assert_eq!(by_cause, traced);
        // The /proc/interrupts reads happen inside the traced window.
        if !lost
            && report
                .missing
                .iter()
                .all(|m| !m.contains("local_timer_entry"))
        {
            assert!(
                traced >= c.loc_proc.unwrap(),
                "cpu {}: {traced} < {:?}",
                c.cpu,
                c.loc_proc
            );
        }
    }
    // The instance is gone and the mount table is as it was.
    let inst = format!("instances/ticklab-{}", std::process::id());
    assert!(!PathBuf::from("/sys/kernel/tracing").join(&inst).exists());
    let tracefs_lines = |m: &str| m.lines().filter(|l| l.contains(" tracefs ")).count();
    assert_eq!(
        tracefs_lines(&std::fs::read_to_string("/proc/mounts").unwrap()),
        tracefs_lines(&mounts_before)
    );
}

fn sample_cpu0() -> why::WhyReport {
    let opts = WhyOptions {
        window: Duration::from_millis(300),
        cpus: Some(vec![0]),
        no_trace: true,
        save_trace: None,
        timeline: None,
    };
    why::observe(&opts, &Stop::new()).expect("observe")
}

#[test]
fn live_sampling_fallback() {
    let report = sample_cpu0();
    assert_eq!(report.cpus.len(), 1);
    assert!(report.cpus[0].loc_proc.is_some());
    assert!(report.cpus[0].loc_traced.is_none());
    if !ticklab_host::probe::is_root() {
        assert!(
            report.missing.iter().any(|m| m.contains("needs root")),
            "{:?}",
            report.missing
        );
    }
}

#[test]
#[ignore = "needs root (samples /proc/timer_list)"]
fn live_sampling_fallback_as_root() {
    let _tracefs = tracefs_lock();
    assert!(ticklab_host::probe::is_root(), "run as root");
    let report = sample_cpu0();
    assert!(report.cpus[0].tick_stopped_fraction.is_some());
    assert!(report.cpus[0].hrtimer_interrupts.is_some());
}

#[test]
fn a_cpu_that_is_not_online_is_refused_by_variant() {
    let opts = WhyOptions {
        window: Duration::from_millis(1),
        cpus: Some(vec![1 << 20]),
        no_trace: true,
        save_trace: None,
        timeline: None,
    };
    match why::observe(&opts, &Stop::new()) {
        Err(why::WhyError::CpuNotOnline { cpu, online }) => {
            assert_eq!(cpu, 1 << 20);
            assert!(!online.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 13: `host why --cpus` observes; it places nothing, so a CPU outside the affinity this
/// process inherited (`isolcpus=`, `taskset`) is observed like any online CPU.
#[test]
fn a_cpu_outside_the_inherited_affinity_is_observed() {
    let online = ticklab_host::harness::os::online_cpus().expect("online CPUs");
    let (first, last) = (online.first().unwrap(), online.last().unwrap());
    std::thread::spawn(move || {
        let mut only_first = nix::sched::CpuSet::new();
        only_first.set(first as usize).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &only_first).unwrap();
        let opts = WhyOptions {
            window: Duration::from_millis(50),
            cpus: Some(vec![last]),
            no_trace: true,
            save_trace: None,
            timeline: None,
        };
        let report = why::observe(&opts, &Stop::new()).expect("observe");
        assert_eq!(report.cpus.len(), 1);
        assert_eq!(report.cpus[0].cpu, last);
        assert!(report.cpus[0].loc_proc.is_some());
    })
    .join()
    .unwrap();
}

/// Issue 17: a `host why` killed with SIGKILL leaves its instance recording; the next
/// observation removes every `ticklab-*` instance whose owner is gone, and only those.
#[test]
#[ignore = "needs root and tracefs"]
fn a_dead_process_s_trace_instance_is_removed_by_the_next_observation() {
    let _tracefs = tracefs_lock();
    assert!(
        ticklab_host::probe::is_root(),
        "tracefs instances need root"
    );
    let find = || {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"tracefs")).then(|| PathBuf::from(f[1]))
        })
    };
    let mounted_here = find().is_none();
    if mounted_here {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not mount tracefs at /sys/kernel/tracing");
    }
    let tracefs = find().expect("tracefs mounted");
    // pid_max is at most 2^22: no process has pid 4194305, so this owner is gone. A live
    // owner (this test process) with the right start time must stay.
    let dead = tracefs.join("instances/ticklab-4194305-1");
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    let alive = tracefs.join(format!("instances/ticklab-{}-{start}", std::process::id()));
    std::fs::create_dir(&dead).unwrap();
    std::fs::create_dir(&alive).unwrap();
    let opts = WhyOptions {
        window: Duration::from_millis(50),
        cpus: None,
        no_trace: true,
        save_trace: None,
        timeline: None,
    };
    why::observe(&opts, &Stop::new()).expect("observe");
    let (dead_gone, alive_kept) = (!dead.exists(), alive.exists());
    let _ = std::fs::remove_dir(&alive);
    let _ = std::fs::remove_dir(&dead);
    if mounted_here {
        let _ = std::process::Command::new("umount").arg(&tracefs).status();
    }
    assert!(dead_gone, "{} stayed", dead.display());
    assert!(alive_kept, "{} was removed", alive.display());
}

#[test]
#[ignore = "needs root and tracefs"]
fn live_timeline_keeps_the_trace_invariants() {
    let _tracefs = tracefs_lock();
    assert!(ticklab_host::probe::is_root(), "tracing needs root");
    let opts = WhyOptions {
        window: Duration::from_millis(300),
        cpus: None,
        no_trace: false,
        save_trace: None,
        timeline: Some(ticklab_trace::TraceWindow::WHOLE),
    };
    let report = why::observe(&opts, &Stop::new()).expect("observe");
    let w = report.timeline.expect("a timeline with tracing");
    let mut out = Vec::new();
    ticklab_trace::write_trace(&mut out, vec![w], &[]).unwrap();
    let c = ticklab_trace::check(&String::from_utf8(out).unwrap()).unwrap();
    assert_eq!(c.tracks, report.cpus.len(), "{c:?}");
    assert!(c.by_category.get("irq").is_some_and(|&n| n > 0), "{c:?}");
}
