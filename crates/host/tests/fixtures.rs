//! Snapshot tests: every captured or hand-made fixture, parsed.
//!
//! The snapshots under `tests/snapshots/` were reviewed by hand against the fixture text;
//! the assertions next to each snapshot pin the facts the rest of ticklab relies on.

use std::path::PathBuf;
use ticklab_host::procfs::{
    IrqKind, is_tick_timer_callback, parse_interrupts, parse_stat, parse_timer_list, parse_trace,
    read_cpuidle,
    timer_list::{HandlerMode, handler_mode},
    trace::TraceEvent,
};

fn fixture_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(fixture_path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn timer_list_v0_10_captured() {
    let tl = parse_timer_list(&fixture("x86-kvm-6.18/proc/timer_list")).unwrap();
    assert_eq!(tl.version.as_deref(), Some("v0.10"));
    assert!(tl.unparsed.is_empty(), "{:?}", tl.unparsed);
    assert_eq!(tl.cpus.len(), 2);
    for cpu in &tl.cpus {
        assert_eq!(cpu.clock_bases.len(), 8);
        assert_eq!((cpu.nohz, cpu.highres), (Some(true), Some(true)));
        let tick = cpu.tick_timer().expect("tick hrtimer queued");
        assert_eq!(tick.callback, "tick_nohz_handler");
        // HZ=250: the tick expires on a 4 ms boundary.
        assert_eq!(tick.hard_expires_ns.unwrap() % 4_000_000, 0);
    }
    let dev = tl.tick_device(1).unwrap();
    assert_eq!(dev.device.as_deref(), Some("lapic-deadline"));
    assert_eq!(
        handler_mode(dev.event_handler.as_deref().unwrap()),
        HandlerMode::HighRes
    );
    assert_eq!(tl.broadcast.as_ref().map(|b| b.device.clone()), Some(None));
    insta::assert_json_snapshot!("timer_list_v0_10_captured", tl);
}

#[test]
fn timer_list_v0_9_handmade() {
    let tl = parse_timer_list(&fixture("handmade/timer_list_v0.9_highres_hz1000")).unwrap();
    assert!(tl.unparsed.is_empty(), "{:?}", tl.unparsed);
    assert_eq!(
        tl.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        vec![0, 1, 3]
    );
    let cpu1 = tl.cpu(1).unwrap();
    assert_eq!(cpu1.nohz_mode, Some(2));
    assert_eq!(
        (cpu1.nohz, cpu1.highres, cpu1.tick_stopped),
        (Some(true), Some(true), Some(true))
    );
    // Not first in the queue: found by name, not position.
    let tick = cpu1.tick_timer().unwrap();
    assert_eq!((tick.slot, tick.callback.as_str()), (1, "tick_sched_timer"));
    let bc = tl.broadcast.as_ref().unwrap();
    assert_eq!(bc.device.as_deref(), Some("hpet"));
    assert_eq!(
        handler_mode(bc.event_handler.as_deref().unwrap()),
        HandlerMode::Broadcast
    );
    assert_eq!(tl.tick_devices.len(), 3);
    insta::assert_json_snapshot!("timer_list_v0_9_handmade", tl);
}

#[test]
fn timer_list_v0_8_handmade_lowres() {
    let tl = parse_timer_list(&fixture("handmade/timer_list_v0.8_lowres_hz100")).unwrap();
    assert!(tl.unparsed.is_empty(), "{:?}", tl.unparsed);
    for cpu in &tl.cpus {
        assert_eq!((cpu.nohz, cpu.highres), (Some(true), Some(false)));
        assert!(
            cpu.tick_timer().is_none(),
            "lowres: the tick is not an hrtimer"
        );
        assert_eq!(cpu.clock_bases[0].get_time.as_deref(), Some("ktime_get"));
    }
    let t = &tl.cpu(0).unwrap().clock_bases[0].timers[0];
    assert_eq!(t.extra, vec!["hrtimer_start_range_ns", "cron/812"]);
    let dev = tl.tick_device(0).unwrap();
    assert_eq!(
        handler_mode(dev.event_handler.as_deref().unwrap()),
        HandlerMode::LowResNohz
    );
    insta::assert_json_snapshot!("timer_list_v0_8_handmade", tl);
}

#[test]
fn interrupts_x86_captured() {
    let irqs = parse_interrupts(&fixture("x86-kvm-6.18/proc/interrupts")).unwrap();
    assert_eq!(irqs.cpus, vec![0, 1]);
    for kind in [
        IrqKind::LocalTimer,
        IrqKind::Reschedule,
        IrqKind::FunctionCall,
        IrqKind::IrqWork,
    ] {
        let row = irqs.row_of(kind).unwrap_or_else(|| panic!("{kind:?}"));
        assert_eq!(row.name, kind.mnemonic());
        assert_eq!(row.per_cpu.len(), 2);
    }
    assert_eq!(irqs.row("ERR").unwrap().global, Some(0));
    insta::assert_json_snapshot!("interrupts_x86_captured", irqs);
}

#[test]
fn interrupts_arm64_handmade() {
    let irqs = parse_interrupts(&fixture("handmade/interrupts_arm64_cpu2_offline")).unwrap();
    assert_eq!(irqs.cpus, vec![0, 1, 3]);
    let loc = irqs.row_of(IrqKind::LocalTimer).unwrap();
    assert_eq!(loc.name, "11");
    assert_eq!(irqs.count(loc, 3), Some(650321));
    assert_eq!(irqs.count(loc, 2), None);
    assert_eq!(irqs.row_of(IrqKind::Reschedule).unwrap().name, "IPI0");
    assert_eq!(irqs.row_of(IrqKind::FunctionCall).unwrap().name, "IPI1");
    assert_eq!(irqs.row_of(IrqKind::IrqWork).unwrap().name, "IPI5");
    assert!(irqs.row_of(IrqKind::Tlb).is_none());
    insta::assert_json_snapshot!("interrupts_arm64_handmade", irqs);
}

#[test]
fn stat_captured() {
    let st = parse_stat(&fixture("x86-kvm-6.18/proc/stat")).unwrap();
    assert_eq!(st.cpus.iter().map(|c| c.0).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(st.total.columns, 10);
    assert!(st.intr_total.is_some() && st.ctxt.is_some() && st.procs_running.is_some());
    insta::assert_json_snapshot!("stat_captured", st);
}

#[test]
fn cpuidle_captured_no_driver() {
    let ci = read_cpuidle(&fixture_path("x86-kvm-6.18/sys/devices/system/cpu"));
    assert_eq!(ci.driver.as_deref(), Some("none"));
    assert_eq!(ci.governor.as_deref(), Some("menu"));
    assert!(ci.cpus.is_empty());
    insta::assert_json_snapshot!("cpuidle_captured", ci);
}

#[test]
fn cpuidle_handmade_haltpoll() {
    let ci = read_cpuidle(&fixture_path(
        "handmade/cpuidle_haltpoll/sys/devices/system/cpu",
    ));
    assert_eq!(ci.driver.as_deref(), Some("haltpoll"));
    assert_eq!(
        ci.governor.as_deref(),
        Some("haltpoll"),
        "from current_governor_ro"
    );
    assert_eq!(
        ci.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        vec![0, 1]
    );
    let s = &ci.cpus[1].states[1];
    assert_eq!(s.name.as_deref(), Some("haltpoll"));
    assert_eq!(s.disable, Some(true));
    insta::assert_json_snapshot!("cpuidle_handmade_haltpoll", ci);
}

#[test]
fn trace_captured() {
    let t = parse_trace(&fixture("x86-kvm-6.18/trace"));
    assert_eq!(t.skipped, 0);
    assert_eq!(t.entries.map(|(a, b)| a == b), Some(true));
    let ticks = t
        .lines
        .iter()
        .filter(|l| {
            matches!(&l.event, TraceEvent::HrtimerExpireEntry { function, .. } if is_tick_timer_callback(function))
        })
        .count();
    assert!(ticks > 0);
    assert!(
        t.lines
            .iter()
            .all(|l| !matches!(l.event, TraceEvent::Other { .. }))
    );
    insta::assert_json_snapshot!("trace_captured", t);
}

#[test]
fn proc_self_cgroup_and_mountinfo_captured_v1_hybrid() {
    use ticklab_host::procfs::cgroup::{parse_cgroup_mounts, parse_proc_cgroup};
    let m = parse_proc_cgroup(&fixture("x86-kvm-6.18/proc/self/cgroup")).unwrap();
    assert_eq!(m.len(), 10);
    let cpuset = m.iter().find(|m| m.has_controller("cpuset")).unwrap();
    assert_eq!((cpuset.hierarchy, cpuset.path.as_str()), (3, "/"));
    assert!(m.last().unwrap().is_unified());
    let mounts = parse_cgroup_mounts(&fixture("x86-kvm-6.18/proc/self/mountinfo"));
    assert_eq!(mounts.len(), 10, "nine v1 hierarchies and the unified one");
    let v1_cpuset = mounts
        .iter()
        .find(|h| h.v1_controllers.as_deref() == Some(&["cpuset".to_string()][..]))
        .unwrap();
    assert_eq!(v1_cpuset.mount_point, "/sys/fs/cgroup/cpuset");
    let v2: Vec<_> = mounts
        .iter()
        .filter(|h| h.v1_controllers.is_none())
        .collect();
    assert_eq!(v2.len(), 1);
    assert_eq!(v2[0].mount_point, "/sys/fs/cgroup/unified");
}

#[test]
fn placement_captured_v1_cpuset_at_the_root() {
    use ticklab_host::harness::placement::{CpuPlacement, CpusetLimit};
    use ticklab_host::probe::HostRoot;
    let p = CpuPlacement::read(&HostRoot::at(fixture_path("x86-kvm-6.18")));
    assert_eq!(
        p.cpuset,
        CpusetLimit::Cgroup {
            cgroup: "/".into(),
            file: "/sys/fs/cgroup/cpuset/cpuset.effective_cpus".into(),
            cpus: [0, 1].into_iter().collect(),
        }
    );
    assert_eq!(p.placeable().to_cpulist(), "0-1");
    assert_eq!(
        p.inherited.as_ref().map(|s| s.to_cpulist()).as_deref(),
        Some("0-1")
    );
    assert!(p.isolated.is_empty());
}

/// A 4-CPU v2 host booted with `isolcpus=2-3`: the process inherited 0-1, its session scope
/// has no cpuset file (the parent did not enable `+cpuset`), `user.slice` allows 0-2.
#[test]
fn placement_handmade_v2_walks_up_to_the_nearest_cpuset() {
    use ticklab_host::harness::placement::{CpuPlacement, CpusetLimit};
    use ticklab_host::probe::HostRoot;
    let p = CpuPlacement::read(&HostRoot::at(fixture_path("handmade/cgroup_v2_isolcpus")));
    let CpusetLimit::Cgroup { cgroup, file, cpus } = &p.cpuset else {
        panic!("{p:?}")
    };
    assert_eq!(cgroup, "/user.slice/user-0.slice/session-1.scope");
    assert_eq!(file, "/sys/fs/cgroup/user.slice/cpuset.cpus.effective");
    assert_eq!(cpus.to_cpulist(), "0-2");
    assert_eq!(p.inherited.as_ref().unwrap().to_cpulist(), "0-1");
    assert_eq!(p.isolated.to_cpulist(), "2-3");
    // Isolated CPU 2, outside the inherited affinity, inside the cpuset: placeable.
    assert_eq!(p.check(2), Ok(()));
    // Isolated CPU 3, outside the cpuset: refused, naming the cgroup, the file and the set.
    let e = p.check(3).unwrap_err().to_string();
    assert!(
        e.contains("cgroup /user.slice/user-0.slice/session-1.scope")
            && e.contains("(/sys/fs/cgroup/user.slice/cpuset.cpus.effective: 0-2)"),
        "{e}"
    );
    assert!(p.check(4).unwrap_err().to_string().contains("not online"));
    assert_eq!(
        p.to_string(),
        "0-2 (online 0-3 ∩ cpuset 0-2 of cgroup /user.slice/user-0.slice/session-1.scope, \
         from /sys/fs/cgroup/user.slice/cpuset.cpus.effective); inherited affinity 0-1; \
         isolated 2-3"
    );
}
