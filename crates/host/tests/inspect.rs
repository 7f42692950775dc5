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
fn captured_host_screen() {
    if !gzip_available() {
        eprintln!("skipped: gzip is needed to read the fixture's proc/config.gz");
        return;
    }
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

#[test]
fn live_host() {
    if !std::path::Path::new("/proc/interrupts").exists() {
        eprintln!("skipped: not a Linux host with /proc");
        return;
    }
    let ins = inspect(&InspectOptions {
        root: HostRoot::live(),
        jiffies_window: Some(std::time::Duration::from_millis(200)),
    });
    let screen = ins.to_string();
    assert!(screen.contains("kernel"), "{screen}");
    // As root timer_list must be read; otherwise it must say why not.
    match (&ins.tick, ticklab_host::probe::is_root()) {
        (Probe::Ok(t), _) => assert!(!t.cpus.is_empty()),
        (Probe::NotAvailable(why), false) => assert!(why.contains("needs root"), "{why}"),
        (Probe::NotAvailable(why), true) => {
            eprintln!("timer_list not available even as root: {why}")
        }
    }
    if let (Ok(j), Some(hz)) = (&ins.hz.jiffies, ins.hz.hz) {
        assert_eq!(j.hz, Some(hz), "{}", ins.hz.basis);
    }
}
