//! `probe::inspect` over the captured fixture root, and on the live host.

use std::path::PathBuf;
use ticklab_host::probe::{
    HostRoot, Probe,
    inspect::{InspectOptions, inspect},
};

fn fixture_root() -> HostRoot {
    HostRoot::at(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/x86-kvm-6.18"))
}

fn gzip_available() -> bool {
    std::process::Command::new("gzip")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn captured_host_without_the_build_config() {
    // What does not depend on reading proc/config.gz (with or without gzip).
    let ins = inspect(&InspectOptions {
        root: fixture_root(),
        jiffies_window: None,
    });
    let tick = ins.tick.ok().expect("timer_list fixture");
    assert!(
        tick.cpus
            .iter()
            .all(|c| c.device.as_deref() == Some("lapic-deadline"))
    );
    assert_eq!(
        ins.clocksource.ok().map(|c| c.current.as_str()),
        Some("tsc")
    );
    assert!(matches!(ins.nohz_full_sysfs, Probe::NotAvailable(_)));
    assert!(matches!(ins.rapl, Probe::NotAvailable(_)));
    assert_eq!(
        ins.hz.alignment.as_ref().ok().and_then(|a| a.hz),
        Some(250),
        "{}",
        ins.hz.basis
    );
}

#[test]
#[ignore = "needs gzip (reads the fixture's proc/config.gz)"]
fn captured_host_screen() {
    assert!(
        gzip_available(),
        "needs gzip to read the fixture's proc/config.gz"
    );
    let ins = inspect(&InspectOptions {
        root: fixture_root(),
        jiffies_window: None,
    });
    assert_eq!(ins.hz.hz, Some(250), "{}", ins.hz.basis);
    let tick = ins.tick.ok().expect("timer_list fixture");
    assert!(
        tick.cpus
            .iter()
            .all(|c| c.device.as_deref() == Some("lapic-deadline"))
    );
    assert_eq!(
        ins.clocksource.ok().map(|c| c.current.as_str()),
        Some("tsc")
    );
    assert!(matches!(ins.nohz_full_sysfs, Probe::NotAvailable(_)));
    assert!(matches!(ins.rapl, Probe::NotAvailable(_)));
    let screen = ins.to_string();
    insta::assert_snapshot!("inspect_captured_screen", screen);
    insta::assert_json_snapshot!("inspect_captured_json", ins);
}

#[test]
fn tree_without_timer_list_still_prints_the_rest() {
    // The handmade cpuidle tree has no /proc at all.
    let root = HostRoot::at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/handmade/cpuidle_haltpoll"),
    );
    let ins = inspect(&InspectOptions {
        root,
        jiffies_window: None,
    });
    assert!(matches!(ins.tick, Probe::NotAvailable(ref w) if w.contains("/proc/timer_list")));
    assert_eq!(ins.hz.hz, None);
    let ci = ins.cpuidle.ok().expect("cpuidle tree");
    assert_eq!(ci.driver.as_deref(), Some("haltpoll"));
    let screen = ins.to_string();
    assert!(screen.contains("HZ             unknown:"), "{screen}");
    assert!(screen.contains("haltpoll"), "{screen}");
}

fn live() -> ticklab_host::probe::inspect::Inspection {
    inspect(&InspectOptions {
        root: HostRoot::live(),
        jiffies_window: Some(std::time::Duration::from_millis(200)),
    })
}

#[test]
fn live_host() {
    let ins = live();
    let screen = ins.to_string();
    assert!(screen.contains("kernel"), "{screen}");
    // Without root, timer_list must say why it is not shown.
    match (&ins.tick, ticklab_host::probe::is_root()) {
        (Probe::Ok(t), _) => assert!(!t.cpus.is_empty()),
        (Probe::NotAvailable(why), false) => assert!(why.contains("needs root"), "{why}"),
        (Probe::NotAvailable(_), true) => {} // live_host_as_root says more
    }
    if let (Ok(j), Some(hz)) = (&ins.hz.jiffies, ins.hz.hz) {
        assert_eq!(j.hz, Some(hz), "{}", ins.hz.basis);
    }
}

#[test]
#[ignore = "needs root (reads /proc/timer_list)"]
fn live_host_as_root() {
    assert!(ticklab_host::probe::is_root(), "run as root");
    let ins = live();
    let tick = match &ins.tick {
        Probe::Ok(t) => t,
        Probe::NotAvailable(why) => panic!("timer_list not available as root: {why}"),
    };
    assert!(!tick.cpus.is_empty());
    // Two timer_list reads 200 ms apart: the jiffies rate is measured and agrees with HZ.
    let j = ins.hz.jiffies.as_ref().expect("jiffies rate as root");
    assert_eq!(j.hz, ins.hz.hz, "{}", ins.hz.basis);
    assert!(ins.hz.hz.is_some(), "{}", ins.hz.basis);
}

/// Issue 13: `host inspect` says which CPUs are isolated and that workloads can be placed on
/// them (a 4-CPU v2 host booted with `isolcpus=2-3 nohz_full=3`, cpuset 0-2 in `user.slice`).
#[test]
fn isolated_cpus_are_shown_as_placeable_within_the_cpuset() {
    let root = HostRoot::at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/handmade/cgroup_v2_isolcpus"),
    );
    let ins = inspect(&InspectOptions {
        root,
        jiffies_window: None,
    });
    let p = ins.placement.ok().expect("placement");
    assert_eq!(
        (
            p.placeable.as_str(),
            p.isolated.as_str(),
            p.isolated_placeable.as_str()
        ),
        ("0-2", "2-3", "2")
    );
    assert_eq!(p.inherited_affinity.as_deref(), Some("0-1"));
    let c = p.cpuset.as_ref().unwrap();
    assert_eq!(c.file, "/sys/fs/cgroup/user.slice/cpuset.cpus.effective");
    let screen = ins.to_string();
    assert!(
        screen.contains("isolated CPUs 2-3 (isolated, nohz_full, isolcpus=, nohz_full=): workloads can be placed on 2"),
        "{screen}"
    );
    assert!(
        screen.contains("inherited affinity 0-1: not a limit"),
        "{screen}"
    );
}

/// Issue 14: the captured Firecracker guest's `/proc/cmdline` ends with `-- --firecracker-init
/// ...`; those are init's arguments, and `host inspect` keeps them out of the kernel's line.
#[test]
fn init_arguments_after_dashes_are_not_kernel_parameters() {
    let ins = inspect(&InspectOptions {
        root: fixture_root(),
        jiffies_window: None,
    });
    let c = ins.cmdline.ok().expect("cmdline view");
    assert!(c.line.ends_with("rdinit=/process_api"), "{}", c.line);
    assert!(!c.line.contains("--"), "{}", c.line);
    let init = c.init.as_deref().expect("init arguments");
    assert!(init.starts_with("--firecracker-init --addr"), "{init}");
    assert!(
        ins.to_string()
            .contains("after `--` (init's arguments, not read by the kernel): --firecracker-init"),
        "{ins}"
    );
}
